"""Per layer, INT8: minimx's DNNL plan against MXNet 1.9.1's MKLDNN INT8 path, same checkpoint.

Both sides run the INT8 checkpoint `dnnl_int8_models.export` makes (MXNet's
quantize_model_mkldnn, naive calibration, first convolution excluded) and
report per-primitive times: minimx's through its profiler, each step timed
by its plan (layer_times.minimx_steps), MXNet's oneDNN 2 through
MKLDNN_VERBOSE=1 (its worker, dnnl_int8_mxnet_worker.py, in MXNet's venv),
whose figures include what the verbose output costs, so they flatter MXNet.
The two alternate in --rounds rounds of --iters forwards (MXNet's worker
stays up), as layer_times.py does, since on a VM whose speed swings within
seconds only figures taken in the same stretch compare; each step's figure
is the median over the rounds of its median over a round's forwards. The k-th
convolution of one is set against the k-th of the other (MXNet runs the
convolutions of a plain CNN in graph order, as minimx does); the other steps
(reorders at the edges, pooling, the classifier) are summed per kind. The
wall time of a forward is printed for both, minimx's with the profiler off,
MXNet's with its verbose output on.

Run: python benchmarks/int8_layer_times.py [--model mobilenetv2_1.0] [--batch 1]
     [--iters 20] [--rounds 1] [--dir /tmp/minimx_int8_models]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

from dnnl_int8_models import WORKER, Minimx, export  # noqa: E402
from dnnl_throughput import SETTLE, WARMUP, Worker  # noqa: E402
from layer_times import median_steps, minimx_steps, report, steps_of  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenetv2_1.0")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/minimx_int8_models"))
    args = parser.parse_args()
    prefix = f"{export(args.model, args.dir)}-int8"
    path = Minimx(prefix, (args.batch, 3, 224, 224))
    path.run(3)
    mxnet = Worker([str(WORKER), "serve", prefix, str(args.batch)],
                   dict(os.environ, MKLDNN_VERBOSE="1"))
    ours, theirs, our_walls, their_walls = [], [], [], []
    for _ in range(args.rounds):
        # The other side's OpenMP threads spin for a while after its last forward.
        time.sleep(SETTLE)
        path.run(WARMUP)
        our_walls.append(statistics.median(path.run(args.iters)) * 1e6)
        ours.append(minimx_steps(path.ex, args.iters))
        time.sleep(SETTLE)
        lines, times = mxnet.run_logged(args.iters)
        theirs.append(steps_of(lines, args.iters))
        their_walls.append(statistics.median(times) * 1e6)
    mxnet.close()
    print(f"{args.model} INT8 batch {args.batch}, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, "
          f"median over {args.rounds} alternating rounds of the median of {args.iters} forwards")
    report(median_steps(ours), median_steps(theirs), "MXNet", ("convolution",))
    print(f"forward wall time: minimx {statistics.median(our_walls):.0f} us; MXNet "
          f"{statistics.median(their_walls):.0f} us with its verbose output on")


if __name__ == "__main__":
    main()
