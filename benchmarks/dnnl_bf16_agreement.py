"""bf16 DNNL subgraphs against fp32 ones on the model fixtures (bf16_agreement.py: on numpy).

For each net of tests/fixtures/models (random weights, exported by MXNet),
runs the evaluation images of benchmarks/int8_agreement.py through the DNNL
backend in float32, and in bfloat16 two ways: the float32 model partitioned
with `optimize_for('DNNL', dtype='bfloat16')`, and the model converted by
`mx.contrib.amp.convert_model` (amp_cast nodes, float32 parameters) and
partitioned by DNNL as it is. Prints, as int8_agreement.py measures INT8,
top-1 agreement, mean cosine of the logits, and mean cosine of the logits
less their float32 mean over the images (the image-dependent part; '-' where
the float32 logits do not depend on the image: collapsed, as that script
says), and the number of DNNL subgraphs of the converted model.

Run: python benchmarks/dnnl_bf16_agreement.py
"""
from __future__ import annotations

import sys

import numpy as np
from int8_agreement import COLLAPSED, FIXTURES, RECORD, Agreement, agreement, model_images

import minimx as mx
from minimx.contrib import amp
from minimx.graph import Graph

MODELS = sorted(RECORD["models"])
# The tests' bounds (the centred one where the fp32 logits depend on the image).
MIN_COSINE, MIN_CENTRED_COSINE = 0.9999, 0.999


def dnnl_forward(model: tuple, data: np.ndarray, **options: str) -> tuple[np.ndarray, int]:
    """`model`'s output on `data` partitioned by DNNL with `options`, and its subgraphs."""
    sym, args, auxs = model
    part = sym.optimize_for("DNNL", args={"data": mx.nd.array(data), **args}, aux=auxs,
                            **options)
    ex = part.simple_bind(mx.cpu(), grad_req="null", data=data.shape,
                          type_dict={k: v.dtype for k, v in args.items()})
    ex.copy_params_from(args, auxs)
    subgraphs = sum(n.op == "_sg_dnnl" for n in Graph(part.outputs).nodes)
    return ex.forward(data=mx.nd.array(data))[0].asnumpy(), subgraphs


def measure(model: str) -> tuple[Agreement, Agreement, int]:
    """(bf16 option, AMP-converted) against fp32 DNNL subgraphs on `model`'s
    evaluation images, and the converted model's number of DNNL subgraphs."""
    fp32_model = mx.model.load_checkpoint(str(FIXTURES / "models" / model), 0)
    _, evaluation = model_images(model)
    fp32, _ = dnnl_forward(fp32_model, evaluation)
    option, _ = dnnl_forward(fp32_model, evaluation, dtype="bfloat16")
    converted, subgraphs = dnnl_forward(amp.convert_model(*fp32_model), evaluation)
    return agreement(fp32, option), agreement(fp32, converted), subgraphs


def cells(a: Agreement) -> str:
    collapsed = a.centred_cosine is None or a.fp32_spread < COLLAPSED
    centred = "- (collapsed)" if collapsed else f"{a.centred_cosine:.4f}"
    return f"{a.top1:.3f} | {a.cosine:.6f} | {centred}"


def main() -> int:
    print(f"bf16 against fp32 DNNL subgraphs over {RECORD['images']['eval_count']} images "
          "(top-1 agreement | cosine | centred cosine)")
    print("| model | dtype='bfloat16': top-1 | cosine | centred | amp.convert_model: top-1 "
          "| cosine | centred | its subgraphs |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for model in MODELS:
        option, converted, subgraphs = measure(model)
        print(f"| {model} | {cells(option)} | {cells(converted)} | {subgraphs} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
