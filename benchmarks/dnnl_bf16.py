"""bfloat16 inference throughput: minimx DNNL in bf16 against minimx DNNL in fp32.

For ResNet-50 v1 and MobileNet v1 1.0 at batch 1 and 16, binds the model
twice - partitioned by DNNL in float32, and in bfloat16
(`partition(..., 'DNNL', dtype='bfloat16')`) - and times both in alternating
rounds (dnnl_throughput's `alternate`: img/s from the median forward, the
ratio from the same run), after checking that the machine is quiet. On a
CPU without bf16 instructions the bf16 bind warns and runs float32, and the
script says so. An OpenVINO bf16 column is not here yet (it needs the ONNX
export and peer worker of benchmarks' perf work).

Run: python benchmarks/dnnl_bf16.py [--models resnet50_v1 mobilenet1.0]
     [--batches 1 16] [--rounds 5] [--iters 5]
ONEDNN_VERBOSE=1 shows the kernels oneDNN picks for each.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

from dnnl_throughput import Minimx, alternate, closing_check, quiet_check  # noqa: E402

from minimx import onednn  # noqa: E402

MODELS = ["resnet50_v1", "mobilenet1.0"]


def measure(model: str, batch: int, args: argparse.Namespace) -> dict[str, float]:
    paths = {"fp32": Minimx(model, batch, "DNNL"),
             "bf16": Minimx(model, batch, "DNNL", dtype="bfloat16")}
    return alternate(paths, batch, args.rounds, args.iters)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=5, help="timed forwards per path per round")
    args = parser.parse_args()
    onednn.require()
    os.environ.pop("MINIMX_SUBGRAPH_BACKEND", None)  # each path partitions explicitly
    quiet_check()
    if not onednn.bf16_native():
        print(f"NOTE: oneDNN's ISA here ({onednn.isa()}) has no bf16: both columns run fp32")
    print("img/s (batch / median forward time) of minimx DNNL; ratio = bf16 / fp32")
    print("| model | batch | fp32 | bf16 | bf16 / fp32 |")
    print("|---|---:|---:|---:|---:|")
    for model in args.models:
        for batch in args.batches:
            rates = measure(model, batch, args)
            print(f"| {model} | {batch} | {rates['fp32']:.1f} | {rates['bf16']:.1f} | "
                  f"{rates['bf16'] / rates['fp32']:.2f} |", flush=True)
    closing_check()


if __name__ == "__main__":
    sys.exit(main())
