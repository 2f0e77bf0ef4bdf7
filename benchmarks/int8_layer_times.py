"""Per layer, INT8: minimx's DNNL plan against MXNet 1.9.1's MKLDNN INT8 path, same checkpoint.

Both sides run the INT8 checkpoint `dnnl_int8_models.export` makes (MXNet's
quantize_model_mkldnn, naive calibration, first convolution excluded) and
report per-primitive times: minimx's through its profiler, each step timed
by its plan (layer_times.minimx_steps), MXNet's oneDNN 2 through
MKLDNN_VERBOSE=1 (its worker, dnnl_int8_mxnet_worker.py, in MXNet's venv),
whose figures include what the verbose output costs, so they flatter MXNet.
Each step's figure is the median over --iters forwards. The k-th
convolution of one is set against the k-th of the other (MXNet runs the
convolutions of a plain CNN in graph order, as minimx does); the other steps
(reorders at the edges, pooling, the classifier) are summed per kind. The
wall time of a forward is printed for both, minimx's with the profiler off,
MXNet's with its verbose output on.

Run: python benchmarks/int8_layer_times.py [--model mobilenetv2_1.0] [--batch 1]
     [--iters 20] [--dir /tmp/minimx_int8_models]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

from dnnl_int8_models import WORKER, Minimx, export  # noqa: E402
from dnnl_throughput import MXNET_PYTHON  # noqa: E402
from layer_times import Step, minimx_steps, report, steps_of  # noqa: E402


def mxnet_steps(prefix: str, batch: int, iters: int) -> tuple[list[Step], float]:
    """MXNet's oneDNN steps (MKLDNN_VERBOSE), and its median forward wall time (us)."""
    env = dict(os.environ, MKLDNN_VERBOSE="1")
    out = subprocess.run([MXNET_PYTHON, str(WORKER), "serve", prefix, str(batch)],
                         input=f"{iters}\n", env=env, check=True, capture_output=True,
                         text=True).stdout
    after = out.split("ready\n", 1)[1].splitlines()
    wall = statistics.median(json.loads(after[-1])) * 1e6
    return steps_of(after[:-1], iters), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenetv2_1.0")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/minimx_int8_models"))
    args = parser.parse_args()
    prefix = f"{export(args.model, args.dir)}-int8"
    path = Minimx(prefix, (args.batch, 3, 224, 224))
    path.run(3)
    our_wall = statistics.median(path.run(args.iters)) * 1e6
    ours = minimx_steps(path.ex, args.iters)
    theirs, their_wall = mxnet_steps(prefix, args.batch, args.iters)
    print(f"{args.model} INT8 batch {args.batch}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, "
          f"median of {args.iters} forwards")
    report(ours, theirs, "MXNet", ("convolution",))
    print(f"forward wall time: minimx {our_wall:.0f} us; MXNet {their_wall:.0f} us with its "
          "verbose output on")


if __name__ == "__main__":
    main()
