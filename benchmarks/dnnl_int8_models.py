"""INT8 inference end to end: minimx DNNL INT8 against minimx DNNL fp32 and MXNet 1.9.1 INT8.

For each model and batch size: MXNet 1.9.1 (its venv, MINIMX_MXNET_PYTHON)
builds the gluon model-zoo network with random weights and quantizes it with
quantize_model_mkldnn (naive calibration on random data, first convolution
excluded, as MXNet's examples do), writing both checkpoints to --dir (default
/tmp/minimx_int8_models; nothing is written to the repository). minimx binds
the INT8 checkpoint and the float one with the DNNL backend; an MXNet worker
binds the INT8 checkpoint (MKLDNN_QUANTIZE). The three are timed in
alternating rounds after a quiet check, as benchmarks/dnnl_throughput.py
does; the figure is batch / median forward time. Under each row: the MAC
floor of the INT8 graph at this CPU's peak rates (roofline.py: quantized
layers at the VNNI peak, the float first convolution at the FMA one), how
close minimx comes to it, and the most any runtime computing the same
products could lead MXNet by. The `qnet` row is the small
quantized test fixture (tests/fixtures/quantized_net, 8x8 images), minimx
only; its forwards take some 60 us, so it runs QNET_ITERS times --iters
forwards a round (five alone gave rounds of 0.3 ms, and ratios from 0.46 to
1.16 between runs).

Run: python benchmarks/dnnl_int8_models.py [--models resnet50_v1 ...]
     [--batches 1 16] [--rounds 5] [--iters 5]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402
import roofline  # noqa: E402
from dnnl_throughput import (  # noqa: E402
    MXNET_PYTHON,
    Worker,
    alternate,
    closing_check,
    quiet_check,
    time_forwards,
)

import minimx as mx  # noqa: E402
from minimx import onednn  # noqa: E402

WORKER = Path(__file__).with_name("dnnl_int8_mxnet_worker.py")
QNET = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "quantized_net"
QNET_ITERS = 40


class Minimx:
    """A minimx executor of checkpoint `prefix` partitioned by DNNL, for `shape`."""

    def __init__(self, prefix: str, shape: tuple[int, ...]) -> None:
        sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
        sym = mx.subgraph.partition(sym, "DNNL", shapes={"data": shape})
        data = np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32)
        feeds = {**args, "data": mx.nd.array(data)}
        # bind, not simple_bind: an INT8 checkpoint's int8 arguments keep their dtype.
        self.ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()},
                           grad_req="null", aux_states=auxs)
        self.run(1)

    def run(self, n: int) -> list[float]:
        return time_forwards(self.ex, n)


def export(model: str, out: Path) -> str:
    """The checkpoint prefix of `model` (without -fp32/-int8), made by MXNet once."""
    prefix = out / model
    if not Path(f"{prefix}-int8-symbol.json").exists():
        subprocess.run([MXNET_PYTHON, str(WORKER), "export", model, "1", str(out)], check=True,
                       stderr=subprocess.DEVNULL)
    return str(prefix)


def report(label: str, rates: dict[str, float]) -> None:
    ours = rates["minimx INT8"]
    cells = [f"{name} {rate:8.1f}" + ("" if name == "minimx INT8" else f" (x{ours / rate:.2f})")
             for name, rate in rates.items()]
    print(f"{label:22s}: " + " | ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet50_v1", "resnet18_v1",
                                                        "mobilenet1.0", "mobilenetv2_1.0"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=5, help="timed forwards per path per round")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/minimx_int8_models"))
    args = parser.parse_args()
    onednn.require()
    os.environ.pop("MINIMX_SUBGRAPH_BACKEND", None)  # each path partitions explicitly
    quiet_check()
    rates = roofline.peaks()
    roofline.report(rates)
    print("img/s (batch / median forward time); ratio = minimx INT8 / other")
    for batch in args.batches:
        shape = (batch, 3, 8, 8)
        report(f"qnet batch {batch:2d}", alternate({
            "minimx INT8": Minimx(str(QNET / "qnet_naive"), shape),
            "minimx fp32": Minimx(str(QNET / "qnet_fp32_mkldnn"), shape)}, batch, args.rounds,
            args.iters * QNET_ITERS))
    have_mxnet = os.path.exists(MXNET_PYTHON)
    for model in args.models if have_mxnet else []:
        args.dir.mkdir(parents=True, exist_ok=True)
        prefix = export(model, args.dir)
        for batch in args.batches:
            shape = (batch, 3, 224, 224)
            paths: dict[str, object] = {"minimx INT8": Minimx(f"{prefix}-int8", shape),
                                        "minimx fp32": Minimx(f"{prefix}-fp32", shape),
                                        "MXNet INT8": Worker([str(WORKER), "serve",
                                                              f"{prefix}-int8", str(batch)])}
            measured = alternate(paths, batch, args.rounds, args.iters)
            report(f"{model} batch {batch:2d}", measured)
            qsym = mx.model.load_checkpoint(f"{prefix}-int8", 0)[0]
            print(" " * 24 + roofline.floor_line(qsym, shape, rates, "float32", measured,
                                                 "minimx INT8", "MXNet INT8"))
    if not have_mxnet:
        print(f"no MXNet at {MXNET_PYTHON}: the model rows need it to quantize")
    closing_check()


if __name__ == "__main__":
    sys.exit(main())
