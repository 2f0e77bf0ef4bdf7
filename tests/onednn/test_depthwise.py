"""dw8_conv (minimx's INT8 depthwise 3x3 kernel) against the numpy kernel's
integers: exact, for every shape, type and option it takes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimx import BackendError, onednn
from minimx.onednn import depthwise
from minimx.ops import quantization as q

from .helpers import SETTINGS

F32 = np.float32
# The kernel is built where the CPU has AVX512-VNNI (the last test covers a build without).
kernel = pytest.mark.skipif(onednn.available() and not depthwise.dw8_available(),
                            reason="this CPU has no AVX512-VNNI: the build has no kernel")


def expected(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, factor: np.ndarray,
             relu: bool, dst: np.dtype) -> np.ndarray:
    """The numpy kernel's steps (backends.mkldnn_ops.QuantizedConv), with its
    own functions after an int64 depthwise sum: float32(acc) + float32(bias)
    (`accumulate`), times the factor, relu, then rounded half to even and
    saturated (`saturate`)."""
    n, c, h, wd = x.shape
    padded = np.zeros((n, c, h + 2, wd + 2), np.int64)
    padded[:, :, 1:-1, 1:-1] = x
    acc = np.zeros(x.shape, np.int64)
    for i in range(3):
        for j in range(3):
            acc += padded[:, :, i:i + h, j:j + wd] * w[:, 0, i, j].reshape(1, c, 1, 1)
    y = q.accumulate(acc, bias) * q.channel_view(factor, 4)
    if relu:
        y = np.maximum(y, F32(0))
    return q.saturate(y, dst)


def run_dw8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, factor: np.ndarray,
            relu: bool, dst: np.dtype) -> np.ndarray:
    """dw8_conv in a plan: NCHW uint8 data in, NCHW out."""
    op = onednn.dw8_conv(x.shape, bias=bias is not None, relu=relu, dst_dtype=dst)
    plan = onednn.Plan("dw8")
    src = plan.reorder(plan.input(x.shape, dtype=np.uint8), op.desc("src"))
    args = {"src": src, "weights": plan.constant(onednn.constant(op, "weights", w)),
            "post0_src1": plan.constant(onednn.constant(op, "post0_src1",
                                                        factor.reshape(1, -1, 1, 1)))}
    if bias is not None:
        args["bias"] = plan.constant(onednn.constant(op, "bias", bias))
    y = plan.add(op, **args)
    plan.output(plan.reorder(y, onednn.MemoryDesc.plain(y.shape, dst)))
    (out,) = plan.run([x])
    return out


def case(n: int, c: int, h: int, w: int, seed: int, bias: bool, scale: float = 1 / 500):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, c, h, w)).astype(np.uint8)
    weights = rng.integers(-127, 128, (c, 1, 3, 3)).astype(np.int8)
    b = rng.integers(-40000, 40000, c).astype(np.int32) if bias else None
    factor = (rng.uniform(0.5, 1.5, c) * scale).astype(F32)
    return x, weights, b, factor


@kernel
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("dst", [np.uint8, np.int8])
@pytest.mark.parametrize("bias", [False, True])
def test_matches_the_numpy_kernels_integers(relu, dst, bias):
    x, w, b, factor = case(2, 32, 16, 14, seed=1, bias=bias)
    out = run_dw8(x, w, b, factor, relu, np.dtype(dst))
    np.testing.assert_array_equal(out, expected(x, w, b, factor, relu, np.dtype(dst)))
    assert 0 < (out == np.iinfo(dst).max).mean() < 0.5   # the scale saturates some, not all


@kernel
@SETTINGS
@given(n=st.integers(1, 3), blocks=st.integers(1, 4), h=st.integers(14, 30),
       w=st.integers(14, 30), seed=st.integers(0, 1000), relu=st.booleans(),
       scale=st.sampled_from([1 / 2000, 1 / 300, 1 / 40]))
def test_any_size_batch_and_channel_count(n, blocks, h, w, seed, relu, scale):
    """Odd sizes, several images (bands of rows split between threads), 16 to
    64 channels, scales from mostly-unsaturated to mostly-saturated."""
    x, wt, b, factor = case(n, 16 * blocks, h, w, seed, bias=True, scale=scale)
    np.testing.assert_array_equal(run_dw8(x, wt, b, factor, relu, np.dtype(np.uint8)),
                                  expected(x, wt, b, factor, relu, np.dtype(np.uint8)))


@kernel
def test_a_zero_range_factor_saturates_as_the_kernel():
    """A zero calibrated range makes the factor float32's largest: every
    nonzero sum saturates, zeros stay zero."""
    x, w, b, _ = case(1, 16, 14, 14, seed=4, bias=True)
    factor = np.full(16, np.finfo(F32).max, F32)
    with np.errstate(over="ignore"):   # the numpy kernel's products overflow to inf too
        want = expected(x, w, b, factor, False, np.dtype(np.int8))
    np.testing.assert_array_equal(run_dw8(x, w, b, factor, False, np.dtype(np.int8)), want)


@kernel
@pytest.mark.parametrize("shape, weight, dtype, options, why", [
    ((1, 32, 28, 28), (32, 1, 3, 3), np.int8, {}, "int8 data"),
    ((1, 24, 28, 28), (24, 1, 3, 3), np.uint8, {}, "channels not a multiple of 16"),
    ((1, 32, 28, 28), (32, 1, 3, 3), np.uint8, {"stride": (2, 2)}, "stride 2"),
    ((1, 32, 28, 28), (32, 1, 3, 3), np.uint8, {"pad": (0, 0)}, "no padding"),
    ((1, 32, 28, 28), (32, 1, 3, 3), np.uint8, {"dilate": (2, 2)}, "dilation"),
    ((1, 32, 13, 28), (32, 1, 3, 3), np.uint8, {}, "13 rows: oneDNN is as fast"),
    ((1, 32, 28, 28), (32, 1, 5, 5), np.uint8, {"pad": (2, 2)}, "5x5"),
    ((1, 32, 28, 28), (64, 1, 3, 3), np.uint8, {"num_group": 32}, "two filters a channel"),
    ((1, 32, 28, 28), (32, 32, 3, 3), np.uint8, {"num_group": 1}, "not depthwise"),
])
def test_what_it_leaves_to_onednn(shape, weight, dtype, options, why):
    options = {"pad": (1, 1), "num_group": shape[1], **options}
    assert not depthwise.dw8_supports(shape, weight, np.dtype(dtype), **options), why
    assert depthwise.dw8_supports(shape, (shape[1], 1, 3, 3), np.dtype(np.uint8),
                                  pad=(1, 1), num_group=shape[1]) == (shape[1] % 16 == 0
                                                                      and shape[2] >= 14)


@kernel
def test_a_float_destination_is_refused():
    with pytest.raises(BackendError, match="dst must be uint8 or int8"):
        onednn.dw8_conv((1, 16, 14, 14), bias=False, relu=False, dst_dtype=np.float32)


@pytest.mark.without_dnnl
def test_a_build_without_the_kernel_leaves_every_convolution_to_onednn(monkeypatch):
    monkeypatch.setattr(depthwise, "dw8_available", lambda: False)
    assert not depthwise.dw8_supports((1, 32, 28, 28), (32, 1, 3, 3), np.dtype(np.uint8),
                                      pad=(1, 1), num_group=32)
