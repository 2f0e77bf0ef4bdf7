"""bf16 DNNL subgraphs against fp32 ones on the model fixtures (bf16_agreement.py: on numpy).

For each net of tests/fixtures/models (random weights, exported by MXNet),
runs the evaluation images of benchmarks/int8_agreement.py through the DNNL
backend in float32 and in bfloat16 (`optimize_for('DNNL', dtype='bfloat16')`)
and prints, as that script measures INT8: top-1 agreement, mean cosine of the
logits, and mean cosine of the logits less their float32 mean over the images
(the image-dependent part; '-' where the float32 logits do not depend on the
image: collapsed, as that script says).

Run: python benchmarks/dnnl_bf16_agreement.py
"""
from __future__ import annotations

import sys

from int8_agreement import COLLAPSED, FIXTURES, RECORD, Agreement, agreement, forward, model_images

import minimx as mx

MODELS = sorted(RECORD["models"])
# The tests' bounds (the centred one where the fp32 logits depend on the image).
MIN_COSINE, MIN_CENTRED_COSINE = 0.9999, 0.999


def measure(model: str) -> Agreement:
    """bf16 DNNL subgraphs against float32 ones on `model`'s evaluation images."""
    sym, args, auxs = mx.model.load_checkpoint(str(FIXTURES / "models" / model), 0)
    _, evaluation = model_images(model)
    fp32 = forward((sym, args, auxs), evaluation, "DNNL")
    bf16 = sym.optimize_for("DNNL", args={"data": mx.nd.array(evaluation)}, dtype="bfloat16")
    return agreement(fp32, forward((bf16, args, auxs), evaluation, None))


def main() -> int:
    print(f"bf16 against fp32 DNNL subgraphs over {RECORD['images']['eval_count']} images")
    print("| model | top-1 | cosine | centred cosine |")
    print("|---|---:|---:|---:|")
    for model in MODELS:
        a = measure(model)
        collapsed = a.centred_cosine is None or a.fp32_spread < COLLAPSED
        centred = "- (collapsed)" if collapsed else f"{a.centred_cosine:.4f}"
        print(f"| {model} | {a.top1:.3f} | {a.cosine:.6f} | {centred} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
