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

from .helpers import SETTINGS, run_requantized, run_with_threads

F32 = np.float32
# The kernel is built where the CPU has AVX512-VNNI (the last test covers a build without).
kernel = pytest.mark.skipif(onednn.available() and not depthwise.dw8_available(),
                            reason="this CPU has no AVX512-VNNI: the build has no kernel")


def expected(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, factor: np.ndarray,
             relu: bool, dst: np.dtype, stride: int = 1) -> np.ndarray:
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
    acc = acc[:, :, ::stride, ::stride]   # padding 1: output (h - 1) // stride + 1
    y = q.accumulate(acc, bias) * q.channel_view(factor, 4)
    if relu:
        y = np.maximum(y, F32(0))
    return q.saturate(y, dst)


def run_dw8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, factor: np.ndarray,
            relu: bool, dst: np.dtype, stride: int = 1) -> np.ndarray:
    """dw8_conv in a plan: NCHW uint8 data in, NCHW out."""
    op = onednn.dw8_conv(x.shape, stride=stride, bias=bias is not None, relu=relu,
                         dst_dtype=dst)
    return run_requantized(op, x, w, bias, factor, dst)


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
@pytest.mark.parametrize("stride, c", [(1, 32), (2, 64)])
def test_matches_the_numpy_kernels_integers(relu, dst, bias, stride, c):
    x, w, b, factor = case(2, c, 16, 14, seed=1, bias=bias, scale=1 / 300)
    out = run_dw8(x, w, b, factor, relu, np.dtype(dst), stride)
    np.testing.assert_array_equal(out, expected(x, w, b, factor, relu, np.dtype(dst), stride))
    assert 0 < (out == np.iinfo(dst).max).mean() < 0.5   # the scale saturates some, not all


@kernel
@SETTINGS
@given(n=st.integers(1, 3), vectors=st.integers(1, 10), h=st.integers(14, 30),
       w=st.integers(14, 30), seed=st.integers(0, 1000), relu=st.booleans(),
       scale=st.sampled_from([1 / 2000, 1 / 300, 1 / 40]))
def test_any_size_batch_and_channel_count(n, vectors, h, w, seed, relu, scale):
    """Odd sizes, several images (bands of rows), 16 to 160 channels (the
    kernel's blocks of 64, a last block of 16, 32 or 48; two pixels of 32 or
    four of 16 at once), scales from mostly-unsaturated to mostly-saturated."""
    x, wt, b, factor = case(n, 16 * vectors, h, w, seed, bias=True, scale=scale)
    np.testing.assert_array_equal(run_dw8(x, wt, b, factor, relu, np.dtype(np.uint8)),
                                  expected(x, wt, b, factor, relu, np.dtype(np.uint8)))


@kernel
@SETTINGS
@given(n=st.integers(1, 3), blocks=st.integers(1, 3), h=st.integers(13, 30),
       w=st.integers(13, 30), seed=st.integers(0, 1000), relu=st.booleans(),
       dst=st.sampled_from([np.uint8, np.int8]))
def test_stride_2_any_size_batch_and_channel_count(n, blocks, h, w, seed, relu, dst):
    """Stride 2 on even and odd sizes (the last output column reading the
    padding or not), one to three blocks of 64 channels."""
    x, wt, b, factor = case(n, 64 * blocks, h, w, seed, bias=True)
    np.testing.assert_array_equal(run_dw8(x, wt, b, factor, relu, np.dtype(dst), 2),
                                  expected(x, wt, b, factor, relu, np.dtype(dst), 2))


@kernel
@pytest.mark.parametrize("c, w", [(80, 17), (96, 15), (144, 14), (160, 13)])
@pytest.mark.parametrize("dst", [np.uint8, np.int8])
def test_a_last_block_of_16_or_32_channels_in_groups_of_pixels(c, w, dst):
    """Past blocks of 64 channels, a last block of 16 or 32 takes four or two
    pixels at once, each pixel's bytes loaded and stored apart; widths that
    leave the last group short of pixels."""
    x, wt, b, factor = case(2, c, 9, w, seed=c + w, bias=True)
    np.testing.assert_array_equal(run_dw8(x, wt, b, factor, True, np.dtype(dst)),
                                  expected(x, wt, b, factor, True, np.dtype(dst)))


def exact_cases() -> None:
    """Layers whose rows split into bands among the threads (the kernel reads
    OpenMP's thread count), each checked bit for bit."""
    for n, c, h, w, stride, relu, dst in [(1, 32, 61, 17, 1, True, np.uint8),
                                          (1, 144, 28, 28, 1, False, np.int8),
                                          (3, 80, 14, 15, 1, True, np.int8),
                                          (1, 512, 14, 14, 1, False, np.uint8),
                                          (1, 128, 59, 21, 2, True, np.uint8),
                                          (2, 64, 15, 16, 2, False, np.int8)]:
        x, wt, b, factor = case(n, c, h, w, seed=c, bias=True)
        np.testing.assert_array_equal(run_dw8(x, wt, b, factor, relu, np.dtype(dst), stride),
                                      expected(x, wt, b, factor, relu, np.dtype(dst), stride))


@kernel
@pytest.mark.parametrize("threads", [2, 3])
def test_rows_split_among_threads_the_same_sums(threads):
    # Three threads split the tasks (image, band of rows, channel block) unevenly.
    run_with_threads("tests.onednn.test_depthwise", "exact_cases", threads)


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
@pytest.mark.parametrize("largest", [2**24 - 9 * 255 * 128, 2**24 - 9 * 255 * 128 + 1,
                                     2**31 - 2**7])
def test_a_large_bias_gives_the_float32_sums_rounding(largest):
    """A block adds its bias to the integer sums where float32 would add it
    exactly (every bias within 2^24 less the largest sum of nine taps), else
    in float32 as the numpy kernel: biases on both sides of that bound, and
    some so large that float32 rounds the bias and its sum with the products;
    blocks of 64 channels decide apart (the first folds, the second not)."""
    x, w, _, _ = case(1, 128, 9, 11, seed=largest % 1000, bias=False)
    b = np.random.default_rng(0).integers(-40000, 40000, 128).astype(np.int32)
    b[64:] = np.random.default_rng(1).integers(-largest, largest, 64)
    b[70], b[127] = largest, -largest
    factor = np.full(128, 100 / largest, F32)   # outputs near 100: rounding shows
    want = expected(x, w, b, factor, False, np.dtype(np.int8))
    np.testing.assert_array_equal(run_dw8(x, w, b, factor, False, np.dtype(np.int8)), want)


@kernel
@pytest.mark.parametrize("dst", [np.uint8, np.int8])
@pytest.mark.parametrize("relu", [False, True])
def test_an_infinite_factor_makes_nan_of_zero_sums_saturated_as_the_kernel(dst, relu):
    """An infinite factor (a zero output range over a wide input range) times a
    zero sum is NaN: the numpy kernel's `saturate` and oneDNN's convolutions
    give it 127 in int8 and 0 in uint8, relu or not."""
    x, w, b, _ = case(1, 16, 14, 14, seed=4, bias=False)
    x[0, :, 3:8, 3:8] = 0   # zero sums inside
    factor = np.full(16, np.inf, F32)
    with np.errstate(invalid="ignore"):
        want = expected(x, w, b, factor, relu, np.dtype(dst))
    assert (want == (127 if dst == np.int8 else 0)).sum() >= 16 * 9
    np.testing.assert_array_equal(run_dw8(x, w, b, factor, relu, np.dtype(dst)), want)


@kernel
@pytest.mark.parametrize("shape, weight, dtype, options, why", [
    ((1, 32, 28, 28), (32, 1, 3, 3), np.int8, {}, "int8 data"),
    ((1, 24, 28, 28), (24, 1, 3, 3), np.uint8, {}, "channels not a multiple of 16"),
    ((1, 48, 28, 28), (48, 1, 3, 3), np.uint8, {"stride": (2, 2)}, "stride 2, 48 channels"),
    ((1, 96, 28, 28), (96, 1, 3, 3), np.uint8, {"stride": (2, 2)}, "stride 2, 96 channels"),
    ((1, 64, 28, 28), (64, 1, 3, 3), np.uint8, {"stride": (3, 3)}, "stride 3"),
    ((1, 64, 28, 28), (64, 1, 3, 3), np.uint8, {"stride": (1, 2)}, "unequal strides"),
    ((1, 64, 12, 28), (64, 1, 3, 3), np.uint8, {"stride": (2, 2)}, "6 output rows"),
    ((1, 32, 28, 28), (32, 1, 3, 3), np.uint8, {"pad": (0, 0)}, "no padding"),
    ((1, 32, 28, 28), (32, 1, 3, 3), np.uint8, {"dilate": (2, 2)}, "dilation"),
    ((1, 32, 6, 28), (32, 1, 3, 3), np.uint8, {}, "6 rows: not measured"),
    ((1, 32, 28, 28), (32, 1, 5, 5), np.uint8, {"pad": (2, 2)}, "5x5"),
    ((1, 32, 28, 28), (64, 1, 3, 3), np.uint8, {"num_group": 32}, "two filters a channel"),
    ((1, 32, 28, 28), (32, 32, 3, 3), np.uint8, {"num_group": 1}, "not depthwise"),
])
def test_what_it_leaves_to_onednn(shape, weight, dtype, options, why):
    options = {"pad": (1, 1), "num_group": shape[1], **options}
    assert not depthwise.dw8_supports(shape, weight, np.dtype(dtype), **options), why
    assert depthwise.dw8_supports(shape, (shape[1], 1, 3, 3), np.dtype(np.uint8),
                                  pad=(1, 1), num_group=shape[1]) == (shape[1] % 16 == 0
                                                                      and shape[2] >= 7)


@kernel
def test_a_float_destination_is_refused():
    with pytest.raises(BackendError, match="dst must be uint8 or int8"):
        onednn.dw8_conv((1, 16, 14, 14), bias=False, relu=False, dst_dtype=np.float32)


@kernel
@pytest.mark.parametrize("stride, channels", [(3, 64), (2, 32), (2, 96), (0, 64)])
def test_a_stride_it_cannot_run_is_refused_naming_it(stride, channels):
    with pytest.raises(BackendError, match=f"stride {stride} with {channels} channels"):
        onednn.dw8_conv((1, channels, 14, 14), stride=stride, bias=False, relu=False,
                        dst_dtype=np.uint8)


@pytest.mark.without_dnnl
def test_a_build_without_the_kernel_leaves_every_convolution_to_onednn(monkeypatch):
    monkeypatch.setattr(depthwise, "dw8_available", lambda: False)
    assert not depthwise.dw8_supports((1, 32, 28, 28), (32, 1, 3, 3), np.dtype(np.uint8),
                                      pad=(1, 1), num_group=32)
