"""A DNNL subgraph whose first convolution reads NHWC gets its three-channel
NCHW input converted by minimx's kernel (`onednn.nhwc_input`): the same
outputs as with oneDNN's reorder (MINIMX_DNNL_NHWC_INPUT=0), whole and in
batch parts, in float32 and bfloat16."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl import conv_layout
from minimx.backends.dnnl.state import DnnlState

from .helpers import assert_close, bind, image_by_image, outputs, partitioned, random_arrays

kernel = pytest.mark.skipif(onednn.available() and not onednn.nhwc.nhwc_input_available(),
                            reason="this CPU has no AVX-512: the build has no kernel")

data = mx.sym.var("data")
SHAPE = {"data": (4, 3, 20, 24)}


def net() -> mx.sym.Symbol:
    x = mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16,
                                       name="c0"))
    x = mx.sym.Convolution(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=16,
                           name="c1")
    return mx.sym.FullyConnected(x, num_hidden=10, name="fc")


def run(sym, args: dict, aux: dict) -> tuple[np.ndarray, onednn.Plan]:
    ex = bind(sym, args, aux)
    out = ex.forward(is_train=False)[0].asnumpy()
    (state,) = [s for s in ex._runner.operator_states().values() if isinstance(s, DnnlState)]
    return out, state.compiled.plan


@pytest.fixture
def nhwc_first_conv(monkeypatch):
    """float32's first convolution in NHWC (where its output outgrows L2), as at a
    large batch."""
    monkeypatch.setattr(conv_layout, "l2_cache_bytes", lambda: 0)


@kernel
@pytest.mark.parametrize("in_parts", [False, True])
def test_float32_input_made_nhwc_by_the_kernel(nhwc_first_conv, monkeypatch, in_parts):
    if in_parts:
        image_by_image(monkeypatch)
    sym = net()
    args, aux = random_arrays(sym, SHAPE)
    part = partitioned(sym, SHAPE)
    ours, plan = run(part, args, aux)
    assert plan.step_names()[0][1].startswith("reorder[nhwc_input")
    assert plan.loop_count == (SHAPE["data"][0] if in_parts else 1)
    assert_close([ours], outputs(sym, args, aux))
    monkeypatch.setenv("MINIMX_DNNL_NHWC_INPUT", "0")
    theirs, plan = run(partitioned(sym, SHAPE), args, aux)
    assert "nhwc_input" not in str(plan)
    np.testing.assert_array_equal(ours, theirs)


@kernel
@pytest.mark.skipif(onednn.available() and not onednn.bf16_native(),
                    reason="no bfloat16 instructions: the model runs in float32")
def test_bfloat16_input_made_nhwc_by_the_kernel(monkeypatch):
    sym = net()
    args, aux = random_arrays(sym, SHAPE)
    bf16 = sym.optimize_for("DNNL", args=args, aux=aux, dtype="bfloat16")
    ours, plan = run(bf16, args, aux)
    assert "reorder[nhwc_input" in str(plan) and "bfloat16" in str(plan)
    monkeypatch.setenv("MINIMX_DNNL_NHWC_INPUT", "0")
    theirs, plan = run(sym.optimize_for("DNNL", args=args, aux=aux, dtype="bfloat16"),
                       args, aux)
    assert "nhwc_input" not in str(plan)
    np.testing.assert_array_equal(ours, theirs)
