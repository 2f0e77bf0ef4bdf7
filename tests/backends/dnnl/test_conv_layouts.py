"""Layout choice per convolution (`conv_layout`): a CNN's first convolution
(3 input channels) writes the layout the rest of the network runs in, so that
nothing is reordered between it and the next convolution, unless its output
fits in the L2 cache; a depthwise
network runs its float32 convolutions in 16-channel blocks (padded where its
channel counts are not whole blocks). The values do not change."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl import conv_layout
from minimx.backends.dnnl.conv_layout import BLOCKED, network_layout
from minimx.backends.dnnl.state import DnnlState

from .helpers import assert_close, bind, outputs, partitioned, random_arrays

data = mx.sym.var("data")
SHAPE = {"data": (2, 3, 32, 32)}

# The layout choices apply where oneDNN's network layout is unblocked (AVX-512).
UNBLOCKED = network_layout().islower()
# bfloat16 models run in float32 where oneDNN's ISA has no bf16 instructions.
bf16_isa = pytest.mark.skipif(onednn.available() and not onednn.bf16_native(),
                              reason="oneDNN's ISA here has no bfloat16")
layout_choice = pytest.mark.skipif(
    not UNBLOCKED, reason=f"oneDNN runs convolutions in the blocked {network_layout()} here")


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
    else:
        assert_bf16_close(got, outputs(sym, args, aux))
    steps = plan_steps(ex)
    kinds = [op.kind for op in steps]
    first = kinds.index("conv")
    assert "reorder" not in kinds[first:kinds.index("conv", first + 1)]
    return [op for op in steps if op.kind == "conv"]


def assert_bf16_close(actual: list, expected: list) -> None:
    """Within a few bfloat16 steps (2**-8 each) of the output's scale: each layer
    rounds its result once."""
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=0, atol=2.0 ** -5 * float(np.abs(e).max()))


def plan_steps(ex) -> list:
    """The primitives of the plan of the one DNNL subgraph `ex` runs."""
    (state,) = [s for s in ex._runner._states.values() if isinstance(s, DnnlState)]
    return [op for op, _ in state.compiled.plan.steps]


@layout_choice
def test_first_convolution_writes_the_network_layout_and_values_hold(monkeypatch):
    """Its output larger than the L2 cache (here: made so), a first convolution
    writes the network layout, reading it too."""
    monkeypatch.setenv("MINIMX_DNNL_BLOCKED_LAYOUT", "0")
    monkeypatch.setattr(conv_layout, "l2_cache_bytes", lambda: 0)
    convs = run(stem())
    assert [op.desc("dst").layout for op in convs] == [network_layout()] * 3
    assert convs[0].desc("src").layout == network_layout()
    assert not any("ref" in op.impl for op in convs)


@layout_choice
def test_first_convolution_with_output_in_cache_reads_nchw_and_values_hold(monkeypatch):
    """Its output within the L2 cache, a first convolution reads NCHW and
    writes what oneDNN picks for that; the next layer reorders it."""
    monkeypatch.setenv("MINIMX_DNNL_BLOCKED_LAYOUT", "0")
    assert conv_layout.l2_cache_bytes() > 0
    monkeypatch.setattr(conv_layout, "l2_cache_bytes", lambda: 1 << 30)
    args, aux = random_arrays(stem(), SHAPE)
    ex = bind(partitioned(stem(), SHAPE), args, aux)
    assert_close([o.asnumpy() for o in ex.forward()], outputs(stem(), args, aux))
    first, *rest = [op for op in plan_steps(ex) if op.kind == "conv"]
    assert first.desc("src").layout == "abcd" and first.desc("dst").layout != network_layout()
    assert [op.desc("dst").layout for op in rest] == [network_layout()] * 2


def resnet_stem() -> mx.sym.Symbol:
    """ResNet's first layers: conv 7x7/2 (3 -> 16) with BatchNorm and relu, max
    pooling 3x3/2, then a 1x1 convolution."""
    x = mx.sym.Convolution(data, kernel=(7, 7), stride=(2, 2), pad=(3, 3), num_filter=16,
                           no_bias=True, name="first")
    x = mx.sym.relu(mx.sym.BatchNorm(x, fix_gamma=False, name="bn"))
    x = mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
    return mx.sym.Convolution(x, kernel=(1, 1), num_filter=32, name="next")


@layout_choice
def test_a_pooled_first_convolution_reads_nchw_whatever_its_size(monkeypatch):
    """Read by a max pooling, a first convolution reads NCHW and writes blocks
    even where its output would not fit in the L2 cache (made so): the pooling
    runs on the blocks, and the pooled tensor is reordered for the next one."""
    monkeypatch.setattr(conv_layout, "l2_cache_bytes", lambda: 0)
    args, aux = random_arrays(resnet_stem(), SHAPE)
    ex = bind(partitioned(resnet_stem(), SHAPE), args, aux)
    assert_close([o.asnumpy() for o in ex.forward()], outputs(resnet_stem(), args, aux))
    steps = plan_steps(ex)
    first, second = [op for op in steps if op.kind == "conv"]
    assert first.desc("src").layout == "abcd" and first.desc("dst").layout == BLOCKED
    (pool,) = [op for op in steps if op.kind == "pooling"]
    assert pool.desc("src").layout == BLOCKED
    assert second.desc("dst").layout == network_layout()


@layout_choice
@pytest.mark.parametrize("filters", [
    pytest.param(32, id="whole-blocks"),
    pytest.param(24, id="padded-blocks"),
])
def test_depthwise_network_runs_in_channel_blocks_and_values_hold(filters):
    convs = run(stem(filters))
    assert [op.desc("dst").layout for op in convs] == [BLOCKED] * 3
    assert [op.desc("src").layout for op in convs[1:]] == [BLOCKED] * 2
    assert not any("ref" in op.impl for op in convs)


@layout_choice
def test_dense_network_keeps_the_network_layout(monkeypatch):
    monkeypatch.setattr(conv_layout, "l2_cache_bytes", lambda: 0)
    assert {op.desc("dst").layout for op in run(dense())} == {network_layout()}


@layout_choice
@bf16_isa
def test_bfloat16_runs_in_channel_blocks_where_every_block_is_whole():
    """In bfloat16 too, where every convolution writes whole 16-channel blocks,
    unless the CPU has AMX, whose kernels are NHWC ones (`run` checks that
    nothing is reordered after the first)."""
    convs = run(stem(32), "bfloat16")
    want = network_layout() if "amx" in onednn.isa() else BLOCKED
    assert [op.desc("dst").layout for op in convs[1:]] == [want] * 2
    assert not any("ref" in op.impl for op in convs)
    assert {op.desc("dst").dtype for op in convs} == {onednn.BFLOAT16}


@layout_choice
@bf16_isa
def test_bfloat16_with_channels_off_the_blocks_keeps_the_network_layout():
    """24 channels: no channel blocks in bfloat16, and the first convolution
    writes the network layout though its output fits in the L2 cache."""
    assert BLOCKED not in {op.desc("dst").layout for op in run(stem(24), "bfloat16")}


@st.composite
def depthwise_networks(draw, widths: tuple[int, ...] = (8, 16, 24, 40, 48)) -> mx.sym.Symbol:
    """A random depthwise CNN: a stem convolution and a depthwise one, then
    steps among depthwise (stride 1 or 2), pointwise, residual add, channel
    concat, pooling and BatchNorm, with channel counts among `widths` (which fill
    16-channel blocks or not); global pooling and a classifier at the end."""
    channels = draw(st.sampled_from(widths))
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=channels, name="stem")
    x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=channels,
                           num_group=channels, name="dw")
    for step in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["dw", "pw", "add", "concat", "pool", "bn"]))
        name = f"s{step}"
        if kind == "dw":
            stride = draw(st.sampled_from([1, 2]))
            x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), stride=(stride, stride),
                                   num_filter=channels, num_group=channels, name=name)
        elif kind == "pw":
            channels = draw(st.sampled_from(widths))
            x = mx.sym.Convolution(x, kernel=(1, 1), num_filter=channels, name=name)
        elif kind == "add":
            y = mx.sym.Convolution(x, kernel=(1, 1), num_filter=channels, name=name)
            x = mx.sym.relu(x + y)
        elif kind == "concat":
            y = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=channels,
                                   num_group=channels, name=name)
            x, channels = mx.sym.Concat(x, y, dim=1), 2 * channels
        elif kind == "pool":
            x = mx.sym.Pooling(x, kernel=(3, 3), pad=(1, 1), stride=(1, 1), name=name,
                               pool_type=draw(st.sampled_from(["max", "avg"])))
        else:
            x = mx.sym.clip(mx.sym.BatchNorm(x, fix_gamma=False, name=name), a_min=0, a_max=6)
    x = mx.sym.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="avg")
    return mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=10, name="fc")


@bf16_isa
@given(depthwise_networks(widths=(16, 32, 48)))
@settings(max_examples=15, deadline=None)
def test_bfloat16_depthwise_networks_in_channel_blocks_keep_to_the_numpy_values(sym):
    shapes = {"data": (2, 3, 12, 12)}
    args, aux = random_arrays(sym, shapes)
    for name, w in args.items():   # activations of O(1) through the layers
        if name.endswith("weight"):
            args[name] = (w / np.sqrt(np.prod(w.shape[1:]))).astype(np.float32)
    ex = bind(sym.optimize_for("DNNL", args, aux, dtype="bfloat16"), args, aux)
    assert_bf16_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
    if UNBLOCKED and "amx" not in onednn.isa():
        assert BLOCKED in {op.desc("dst").layout for op in plan_steps(ex) if op.kind == "conv"}


@given(depthwise_networks())
@settings(max_examples=25, deadline=None)
def test_depthwise_networks_in_channel_blocks_compute_the_numpy_values(sym):
    shapes = {"data": (2, 3, 12, 12)}
    args, aux = random_arrays(sym, shapes)
    ex = bind(partitioned(sym, shapes), args, aux)
    assert_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
    if UNBLOCKED:  # elsewhere the values are what is checked
        assert BLOCKED in {op.desc("dst").layout for op in plan_steps(ex) if op.kind == "conv"}
