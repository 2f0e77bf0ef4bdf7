"""Layout choice per convolution (`conv_layout`): a CNN's first convolution
(3 input channels) writes the layout the rest of the network runs in, so that
nothing is reordered between it and the next convolution; a depthwise
network whose channel counts fill 16-channel blocks runs its float32
convolutions in those blocks. The values do not change."""
from __future__ import annotations

import pytest

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl.conv_layout import BLOCKED, network_layout
from minimx.backends.dnnl.state import DnnlState

from .helpers import assert_close, bind, outputs, partitioned, random_arrays

data = mx.sym.var("data")
SHAPE = {"data": (2, 3, 32, 32)}

pytestmark = pytest.mark.skipif(
    not network_layout().islower(),
    reason=f"oneDNN runs convolutions in the blocked {network_layout()} here anyway")


def stem(filters: int = 32) -> mx.sym.Symbol:
    """MobileNet's first layers: conv 3x3/2 (3 -> filters), depthwise 3x3,
    pointwise 1x1 (-> 2 * filters) with a residual sum, global pooling."""
    x = mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                       num_filter=filters, no_bias=True, name="first"))
    x = mx.sym.relu(mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters,
                                       num_group=filters, no_bias=True, name="dw"))
    y = mx.sym.Convolution(x, kernel=(1, 1), num_filter=filters, name="pw")
    y = mx.sym.relu(y + x)
    return mx.sym.Pooling(y, kernel=(1, 1), global_pool=True, pool_type="avg")


def dense() -> mx.sym.Symbol:
    """The stem without its depthwise convolution (a dense 3x3 instead)."""
    x = mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                       num_filter=32, name="first"))
    return mx.sym.Convolution(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=32,
                              name="second")


def run(sym: mx.sym.Symbol, dtype: str = "float32") -> list:
    """Runs `sym` in a DNNL subgraph, checks its outputs against the numpy
    path, and gives the plan's convolutions."""
    args, aux = random_arrays(sym, SHAPE)
    part = partitioned(sym, SHAPE) if dtype == "float32" else \
        sym.optimize_for("DNNL", args, aux, dtype=dtype)
    ex = bind(part, args, aux)
    got = [o.asnumpy() for o in ex.forward()]
    if dtype == "float32":
        assert_close(got, outputs(sym, args, aux))
    (state,) = [s for s in ex._runner._states.values() if isinstance(s, DnnlState)]
    steps = state.compiled.plan.steps
    kinds = [op.kind for op, _ in steps]
    first = kinds.index("conv")
    assert "reorder" not in kinds[first:kinds.index("conv", first + 1)]
    return [op for op, _ in steps if op.kind == "conv"]


def test_first_convolution_writes_the_network_layout_and_values_hold(monkeypatch):
    monkeypatch.setenv("MINIMX_DNNL_BLOCKED_LAYOUT", "0")
    convs = run(stem())
    assert [op.desc("dst").layout for op in convs] == [network_layout()] * 3
    assert not any("ref" in op.impl for op in convs)


def test_depthwise_network_runs_in_channel_blocks_and_values_hold():
    convs = run(stem())
    assert [op.desc("dst").layout for op in convs] == [BLOCKED] * 3
    assert [op.desc("src").layout for op in convs[1:]] == [BLOCKED] * 2
    assert not any("ref" in op.impl for op in convs)


@pytest.mark.parametrize("sym", [
    pytest.param(stem(24), id="channels-not-whole-blocks"),
    pytest.param(dense(), id="no-depthwise"),
])
def test_other_networks_keep_the_network_layout(sym):
    assert {op.desc("dst").layout for op in run(sym)} == {network_layout()}


def test_bfloat16_keeps_the_network_layout():
    if not onednn.bf16_native():
        pytest.skip(f"oneDNN's ISA here ({onednn.isa()}) has no bfloat16")
    assert BLOCKED not in {op.desc("dst").layout for op in run(stem(), "bfloat16")}
