"""Layout choice per convolution: a CNN's first convolution (3 input channels)
writes the layout the rest of the network runs in, so that nothing is
reordered between it and the next convolution; the values do not change."""
from __future__ import annotations

import pytest

import minimx as mx
from minimx.backends.dnnl.lower import network_layout
from minimx.backends.dnnl.state import DnnlState

from .helpers import assert_close, bind, outputs, partitioned, random_arrays

data = mx.sym.var("data")
SHAPE = {"data": (1, 3, 32, 32)}


def stem() -> mx.sym.Symbol:
    """MobileNet's first layers: conv 3x3/2 (3 -> 32), depthwise 3x3, pointwise 1x1."""
    x = mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                       num_filter=32, no_bias=True, name="first"))
    x = mx.sym.relu(mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=32,
                                       num_group=32, no_bias=True, name="dw"))
    return mx.sym.Convolution(x, kernel=(1, 1), num_filter=64, no_bias=True, name="pw")


def test_first_convolution_writes_the_network_layout_and_values_hold():
    if not network_layout().islower():
        pytest.skip(f"oneDNN runs convolutions in the blocked {network_layout()} here")
    sym = stem()
    args, aux = random_arrays(sym, SHAPE)
    ex = bind(partitioned(sym, SHAPE), args, aux)
    assert_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
    (state,) = [s for s in ex._runner._states.values() if isinstance(s, DnnlState)]
    kinds = [op.kind for op, _ in state.compiled.plan.steps]
    first = kinds.index("conv")
    assert "reorder" not in kinds[first:kinds.index("conv", first + 1)]
    op = state.compiled.plan.steps[first][0]
    assert op.desc("dst").layout == network_layout() and "ref" not in op.impl
