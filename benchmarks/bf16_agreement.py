"""bfloat16 against fp32 on the model fixtures: how close `amp.convert_model` keeps them.

For each net of tests/fixtures/models (random weights, exported by MXNet),
minimx converts it with `mx.contrib.amp.convert_model` (bfloat16: convolutions
and fully connected layers, parameters converted offline with
``cast_optional_params=True``, and without) and runs both models on the
evaluation images of the INT8 agreement benchmark, on the numpy kernels (which
compute bfloat16 operators in float32 and round each result, as MXNet's CPU
kernels do). Figures, as int8_agreement.py measures INT8: top-1 agreement,
mean cosine of the logits, mean cosine of the logits less their fp32 mean over
the images (the image-dependent part). MXNet 1.9.1's figures and bf16 outputs
for the same conversion and images come from tests/fixtures/amp
(`tools/mxnet_fixtures.py --only amp`); the last column is the largest
difference between minimx's bf16 logits and MXNet's.

Run: python benchmarks/bf16_agreement.py
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
from int8_agreement import COLLAPSED, FIXTURES, RECORD, Agreement, agreement, model_images

import minimx as mx
from minimx.contrib import amp


def converted_outputs(model: str, optional: bool) -> tuple:
    """(fp32, bf16) outputs of `model` on the evaluation images."""
    _, evaluation = model_images(model)
    sym, args, auxs = mx.model.load_checkpoint(str(FIXTURES / "models" / model), 0)
    results = []
    for net in ((sym, args, auxs), amp.convert_model(sym, args, auxs,
                                                     cast_optional_params=optional)):
        ex = net[0].simple_bind(mx.cpu(), grad_req="null", data=evaluation.shape)
        ex.copy_params_from(net[1], net[2])
        results.append(ex.forward(data=mx.nd.array(evaluation))[0].asnumpy())
    return tuple(results)


def cells(a: Agreement) -> str:
    centred = "-" if a.centred_cosine is None else f"{a.centred_cosine:.5f}"
    return f"{a.top1:.3f} | {a.cosine:.6f} | {centred}"


def main() -> int:
    os.environ["MINIMX_SUBGRAPH_BACKEND"] = "NONE"   # the numpy kernels
    theirs = json.loads((FIXTURES / "amp" / "bf16_agreement.json").read_text())
    mxnet_bf16 = np.load(FIXTURES / "amp" / "bf16_outputs.npz")
    print(f"bf16 against fp32 over {RECORD['images']['eval_count']} images, numpy kernels "
          "(top-1 agreement | cosine | centred cosine)")
    print("| model | minimx top-1 | cosine | centred | bf16 params: top-1 | cosine | centred "
          "| MXNet top-1 | cosine | centred | vs MXNet's bf16 | note |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for model in RECORD["models"]:
        runs = [converted_outputs(model, optional) for optional in (False, True)]
        found = [agreement(*run) for run in runs]
        mxnets = Agreement(*(theirs[model][k] for k in Agreement._fields))
        gap = np.abs(runs[0][1] - mxnet_bf16[f"{model}:bf16"]).max()
        spread = found[0].fp32_spread
        note = (f"collapsed: the fp32 logits move {spread:.0e} over the images (centred "
                "cosine is rounding noise)" if spread < COLLAPSED else "")
        print(f"| {model} | {' | '.join(map(cells, [*found, mxnets]))} | {gap:.2g} | {note} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
