"""Beyond classification: minimx DNNL against MXNet 1.9.1 MKLDNN on BERT, SSD and FCN.

BERT-base (bert_12_768_12, sequence 128), SSD-MobileNet 512 (ssd_512_mobilenet1.0_voc,
1x3x512x512) and FCN-ResNet50 (fcn_resnet50_voc, 1x3x480x480), batch 1. MXNet's venv
(MINIMX_MXNET_PYTHON, default /work/venvs/mxnet191/bin/python, with GluonCV and
GluonNLP) builds each model at that size with tools/seeded_weights.py's weights and
exports it once to --models-dir (families_mxnet_worker.py); minimx loads the same
files. Each side's outputs on the same inputs are compared before timing (first
output; the run stops on a disagreement), then both are timed in alternating rounds
in one run (dnnl_throughput.alternate): MXNet with its MKLDNN subgraph backend on
(its default), minimx partitioned by DNNL. The figures are forwards per second
(1 / median forward time); each model's line also gives the share of its operator
nodes inside oneDNN subgraphs (families_coverage.py's counting). OMP_NUM_THREADS
defaults to the number of cores.

Run: python benchmarks/families_throughput.py [--models ...] [--rounds 5] [--iters 5]
     [--models-dir DIR] [--tolerance 1e-3]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402
from dnnl_throughput import (  # noqa: E402  (beside this script)
    MXNET_PYTHON,
    Worker,
    alternate,
    check_agreement,
    closing_check,
    quiet_check,
    time_forwards,
)
from families_coverage import dnnl_coverage  # noqa: E402  (beside this script)

import minimx as mx  # noqa: E402
from minimx import onednn  # noqa: E402

WORKER = Path(__file__).parent / "families_mxnet_worker.py"
MODELS = ["bert_12_768_12", "ssd_512_mobilenet1.0_voc", "fcn_resnet50_voc"]


def exported(model: str, models_dir: Path) -> dict[str, np.ndarray]:
    """The inputs of `model`'s export in `models_dir`, which MXNet's venv writes the
    first time (graph, seeded weights, inputs)."""
    inputs = models_dir / f"{model}-inputs.npz"
    if not inputs.exists():
        subprocess.run([MXNET_PYTHON, str(WORKER), "export", model, str(models_dir)],
                       check=True, stdout=subprocess.DEVNULL)
    with np.load(inputs) as npz:
        return {k: npz[k] for k in npz.files}


class Minimx:
    """The export `prefix` (epoch 0) bound by minimx for `inputs`, partitioned by DNNL."""

    def __init__(self, prefix: Path, inputs: dict[str, np.ndarray]) -> None:
        sym, args, auxs = mx.model.load_checkpoint(str(prefix), 0)
        shapes = {k: v.shape for k, v in inputs.items()}
        self.total, self.outside = dnnl_coverage(sym, shapes)
        sym = mx.subgraph.partition(sym, "DNNL", shapes=shapes)
        self.ex = sym.simple_bind(mx.cpu(), grad_req="null", **shapes)
        values = {**args, **auxs, **inputs}
        for name, arr in {**self.ex.arg_dict, **self.ex.aux_dict}.items():
            arr[:] = values[name]
        self.run(1)

    def run(self, n: int) -> list[float]:
        return time_forwards(self.ex, n)

    def output(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """The first output of a forward on `inputs` (by name)."""
        return self.ex.forward(**inputs)[0].asnumpy()


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return "unknown CPU"


def measure(model: str, args: argparse.Namespace) -> None:
    inputs = exported(model, args.models_dir)
    ours = Minimx(args.models_dir / model, inputs)
    env = dict(os.environ, MXNET_MKLDNN_ENABLED="1")
    paths = {"minimx DNNL": ours,
             "MXNet MKLDNN": Worker([str(WORKER), "serve", model, str(args.models_dir)], env)}
    check_agreement(paths, 1, args.tolerance, inputs)
    rates = alternate(paths, 1, args.rounds, args.iters)
    inside = ours.total - sum(ours.outside.values())
    left = ", ".join(f"{op} {n}" for op, n in ours.outside.most_common()) or "-"
    print(f"{model:26s}: minimx DNNL {rates['minimx DNNL']:6.2f}/s | MXNet MKLDNN "
          f"{rates['MXNet MKLDNN']:6.2f}/s (x{rates['minimx DNNL'] / rates['MXNet MKLDNN']:.2f})"
          f" | in oneDNN {inside} of {ours.total} operator nodes "
          f"({100 * inside / ours.total:.0f}%); outside: {left}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=5, help="timed forwards per path per round")
    parser.add_argument("--models-dir", type=Path,
                        default=Path(tempfile.gettempdir(), "minimx-family-models"),
                        help="where MXNet's exports (graph, weights, inputs) are kept")
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="largest output difference allowed, relative to the largest output")
    args = parser.parse_args()
    onednn.require()
    if not os.path.exists(MXNET_PYTHON):
        raise SystemExit(f"MXNet's venv is needed (MINIMX_MXNET_PYTHON={MXNET_PYTHON})")
    os.environ.pop("MINIMX_SUBGRAPH_BACKEND", None)  # minimx partitions explicitly
    print(f"CPU: {cpu_name()}")
    quiet_check()
    print("forwards/s (batch 1: 1 / median forward time); ratio = minimx DNNL / MXNet MKLDNN")
    for model in args.models:
        measure(model, args)
    closing_check()


if __name__ == "__main__":
    sys.exit(main())
