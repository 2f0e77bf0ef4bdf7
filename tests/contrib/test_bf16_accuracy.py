"""bfloat16 keeps a trained model's accuracy: the digits CNN of the INT8 test
(trained by minimx on scikit-learn's bundled digits), converted by
`amp.convert_model` and run on the numpy kernels in bfloat16, stays within 0.5
points of float32, with and without its parameters converted offline."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.base import BFLOAT16
from minimx.contrib import amp
from minimx.graph import Graph

from .test_int8_accuracy import TOLERANCE, accuracy, model, predict  # noqa: F401 (fixture)


@pytest.mark.parametrize("optional", [False, True], ids=["fp32-params", "bf16-params"])
def test_bf16_on_numpy_is_within_half_a_point(model, optional, monkeypatch):  # noqa: F811
    sym, args, auxs, (_, test_x, _, test_y) = model
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    bsym, bargs, bauxs = amp.convert_model(sym, args, auxs, cast_optional_params=optional)
    casts = [n for n in Graph(bsym.outputs).nodes if n.op == "amp_cast"]
    # data, then each convolution's and the FC's parameters unless converted
    # offline, and back to float32 before Flatten and SoftmaxOutput.
    assert len(casts) == (10 if not optional else 4)
    assert all(a.dtype == np.float32 for a in args.values())   # the caller's stay
    assert {bargs[n].dtype for n in ("conv0_weight", "fc_weight")} == \
        {BFLOAT16 if optional else np.dtype(np.float32)}
    fp32_probs = predict(sym, args, auxs, test_x)
    bf16_probs = predict(bsym, bargs, bauxs, test_x)
    assert bf16_probs.dtype == np.float32
    # Not the same numbers: the convolutions ran in bfloat16.
    assert 0 < np.abs(bf16_probs - fp32_probs).max() < 0.1
    fp32, bf16 = accuracy(fp32_probs, test_y), accuracy(bf16_probs, test_y)
    assert abs(bf16 - fp32) <= TOLERANCE, (fp32, bf16)


def test_bf16_digits_agree_with_fp32_on_nearly_every_image(model, monkeypatch):  # noqa: F811
    sym, args, auxs, (_, test_x, _, _) = model
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    bsym, bargs, bauxs = amp.convert_model(sym, args, auxs)
    same = predict(sym, args, auxs, test_x).argmax(1) == predict(bsym, bargs, bauxs,
                                                                 test_x).argmax(1)
    assert same.mean() >= 0.99
    assert mx.contrib.amp.list_lp16_ops("bfloat16") == ["Convolution", "FullyConnected"]
