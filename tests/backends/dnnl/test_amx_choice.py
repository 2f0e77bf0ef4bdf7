"""Which INT8 kernel a quantized convolution gets: oneDNN's AMX ones where it
has 64 input and output channels or more, its AVX512-VNNI ones below
(`quantized.AMX_MIN_CHANNELS`), through `onednn.conv`'s `avoid`; the values
are the numpy kernels' either way."""
from __future__ import annotations

import numpy as np

import minimx as mx
from minimx import onednn

from .helpers import forward_quantized, partitioned, quantized_mkldnn, vnni

data = mx.sym.var("data")
SHAPE = (2, 3, 16, 16)


def net() -> mx.sym.Symbol:
    """conv 3x3 (3 -> 32, left in float32), 1x1 32 -> 64, 1x1 64 -> 64, 1x1
    64 -> 32, pooling, a classifier."""
    x = mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=32,
                                       name="c0"))
    x = mx.sym.relu(mx.sym.Convolution(x, kernel=(1, 1), num_filter=64, name="narrow"))
    x = mx.sym.relu(mx.sym.Convolution(x, kernel=(1, 1), num_filter=64, name="wide"))
    x = mx.sym.relu(mx.sym.Convolution(x, kernel=(1, 1), num_filter=32, name="thin"))
    return mx.sym.FullyConnected(mx.sym.flatten(mx.sym.Pooling(
        x, kernel=(1, 1), global_pool=True, pool_type="avg")), num_hidden=10, name="fc")


@vnni
def test_avoid_passes_over_the_kernels_it_names():
    """Avoiding the kernel oneDNN picks first gives another of its own (not the
    reference one) for a 1x1 INT8 convolution, which every x86 ISA with VNNI has
    several of, with the same integers."""
    int8 = onednn.Int8(src=np.dtype(np.uint8), dst=np.dtype(np.int32), bias=np.int32,
                       src_scale=False, weight_scales=None, dst_scale=False)
    src = onednn.MemoryDesc.ordered((1, 32, 4, 4), "acdb", np.uint8)
    first = onednn.conv(src, (16, 32, 1, 1), int8=int8)
    other = onednn.conv(src, (16, 32, 1, 1), int8=int8, avoid=first.impl)
    assert other.impl != first.impl and not other.impl.startswith("ref")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (1, 32, 4, 4)).astype(np.uint8)
    w = rng.integers(-128, 128, (16, 32, 1, 1)).astype(np.int8)
    sums = [run(op, x, w) for op in (first, other)]
    np.testing.assert_array_equal(sums[0], sums[1])
    np.testing.assert_array_equal(sums[0], np.einsum("nchw,oc->nohw", x.astype(np.int64),
                                                     w[:, :, 0, 0].astype(np.int64)))


@vnni
def test_avoiding_every_kernel_keeps_onednns_first_choice():
    """Where only oneDNN's reference kernel is left (every name has a colon),
    the convolution keeps the kernel oneDNN picks first."""
    int8 = onednn.Int8(src=np.dtype(np.uint8), dst=np.dtype(np.int32), bias=np.int32,
                       src_scale=False, weight_scales=None, dst_scale=False)
    src = onednn.MemoryDesc.ordered((1, 32, 4, 4), "acdb", np.uint8)
    first = onednn.conv(src, (16, 32, 1, 1), int8=int8)
    assert onednn.conv(src, (16, 32, 1, 1), int8=int8, avoid=":").impl == first.impl


def run(op: onednn.Primitive, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """`op`'s int32 output on data `x` (NCHW) and weights `w`."""
    plan = onednn.Plan("avoid")
    slot = plan.input(x.shape, dtype=np.uint8)
    y = plan.add(op, src=plan.reorder(slot, op.desc("src")),
                 weights=plan.constant(onednn.constant(op, "weights", w)))
    plan.output(plan.reorder(y))
    (out,) = plan.run([x])
    return out


@vnni
def test_fewer_than_64_channels_run_off_the_tiles(monkeypatch):
    # oneDNN's kernels for every layer: minimx's would take the 32 -> 64 one
    monkeypatch.setenv("MINIMX_DNNL_POINTWISE_INT8", "0")
    qsym, qargs, qaux, x = quantized_mkldnn(net(), SHAPE, excluded_sym_names=["c0"])
    got, (state,) = forward_quantized(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    np.testing.assert_array_equal(got, forward_quantized(qsym, qargs, qaux, x)[0])
    convs = [name for owner, name in state.compiled.plan.step_names()
             if owner.startswith("quantized") and name.startswith("conv")]
    assert len(convs) == 3 and "amx" not in convs[0] and "amx" not in convs[2]
    if "amx" in onednn.isa():
        assert "amx" in convs[1]
