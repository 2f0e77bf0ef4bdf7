"""bfloat16 inference throughput: minimx DNNL in bf16 against minimx in fp32 and OpenVINO in bf16.

For ResNet-50 v1 and MobileNet v1 1.0 at batch 1 and 16, binds the model
twice - partitioned by DNNL in float32, and in bfloat16
(`partition(..., 'DNNL', dtype='bfloat16')`) - and, where its venv is,
starts OpenVINO on the same weights (MXNet 1.9.1's checkpoint and its
`mx.onnx.export_model` ONNX, dnnl_throughput's `exported`) with
INFERENCE_PRECISION_HINT bf16, the latency hint and OMP_NUM_THREADS threads
(peer_worker.py). Every output is first checked against minimx fp32's
(within --tolerance, relative: bf16 rounds), then all paths are timed in
alternating rounds (dnnl_throughput's `alternate`: img/s from the median
forward, the ratios from the same run), after checking that the machine is
quiet. On a CPU without bf16 instructions the bf16 bind warns and runs
float32, and the script says so. After the table: each row's MAC floor at
this CPU's bfloat16 peak (roofline.py), how close minimx comes to it, and
the most a runtime computing the same products could lead OpenVINO by.

Run: python benchmarks/dnnl_bf16.py [--models resnet50_v1 mobilenet1.0]
     [--batches 1 16] [--rounds 5] [--iters 5] [--no-openvino]
ONEDNN_VERBOSE=1 shows the kernels oneDNN picks for each.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import roofline  # noqa: E402
from dnnl_throughput import (  # noqa: E402
    MXNET_PYTHON,
    PEER_PYTHON,
    Minimx,
    alternate,
    check_agreement,
    closing_check,
    exported,
    peer_arguments,
    peer_worker,
    ready_to_time,
)

import minimx as mx  # noqa: E402
from minimx import onednn  # noqa: E402

MODELS = ["resnet50_v1", "mobilenet1.0"]
FP32, BF16, OPENVINO = "minimx DNNL", "minimx DNNL bf16", "OpenVINO bf16"


def measure(model: str, batch: int, args: argparse.Namespace) -> dict[str, float]:
    has_mxnet = os.path.exists(MXNET_PYTHON)   # it exports the weights the peers read
    prefix = exported(model, args.models_dir) if has_mxnet else None
    paths: dict[str, object] = {FP32: Minimx(model, batch, "DNNL", prefix),
                                BF16: Minimx(model, batch, "DNNL", prefix, dtype="bfloat16")}
    if has_mxnet and args.openvino and os.path.exists(PEER_PYTHON["openvino"]):
        paths[OPENVINO] = peer_worker("openvino", args.models_dir / f"{model}.onnx", batch,
                                      "bf16")
    check_agreement(paths, batch, args.tolerance)
    return alternate(paths, batch, args.rounds, args.iters)


def main() -> None:
    parser = peer_arguments(__doc__.splitlines()[0], MODELS, tolerance=5e-2)
    parser.add_argument("--no-openvino", dest="openvino", action="store_false",
                        help="leave OpenVINO out")
    args = parser.parse_args()
    ready_to_time()
    if not onednn.bf16_native():
        print(f"NOTE: oneDNN's ISA here ({onednn.isa()}) has no bf16: minimx bf16 runs fp32")
    peaks = roofline.peaks()
    roofline.report(peaks)
    floors = []
    print("img/s (batch / median forward time); ratios from the same alternating rounds")
    print("| model | batch | minimx fp32 | minimx bf16 | OpenVINO bf16 | bf16 / fp32 "
          "| minimx bf16 / OpenVINO bf16 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for model in args.models:
        for batch in args.batches:
            rates = measure(model, batch, args)
            ov = rates.get(OPENVINO)
            print(f"| {model} | {batch} | {rates[FP32]:.1f} | {rates[BF16]:.1f} | "
                  f"{'-' if ov is None else f'{ov:.1f}'} | {rates[BF16] / rates[FP32]:.2f} | "
                  f"{'-' if ov is None else f'{rates[BF16] / ov:.2f}'} |", flush=True)
            if ov is not None:
                floors.append(f"{model} batch {batch}: " + roofline.floor_line(
                    mx.models.get_model(model), (batch, 3, 224, 224), peaks, "bfloat16",
                    rates, BF16, OPENVINO))
    print("\n".join(floors))
    closing_check()


if __name__ == "__main__":
    sys.exit(main())
