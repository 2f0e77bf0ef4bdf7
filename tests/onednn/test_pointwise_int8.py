"""pw8_conv (minimx's INT8 1x1 kernel) against the numpy kernel's integers:
exact, for every shape, type and option it takes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimx import BackendError, onednn
from minimx.onednn import pointwise
from minimx.ops import quantization as q

from .helpers import SETTINGS, run_requantized, run_with_threads

F32 = np.float32
# The kernel is built where the CPU has AVX512-VNNI (the last test covers a build without).
kernel = pytest.mark.skipif(onednn.available() and not pointwise.pw8_available(),
                            reason="this CPU has no AVX512-VNNI: the build has no kernel")


def expected(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, factor: np.ndarray,
             relu: bool, dst: np.dtype) -> np.ndarray:
    """The numpy kernel's steps (backends.mkldnn_ops.QuantizedConv) after an
    int64 1x1 sum: float32(acc) + float32(bias) (`accumulate`), times the
    factor, relu, then rounded half to even and saturated (`saturate`)."""
    acc = np.einsum("nkhw,ok->nohw", x.astype(np.int64), w[:, :, 0, 0].astype(np.int64))
    y = q.accumulate(acc, bias) * q.channel_view(factor, 4)
    if relu:
        y = np.maximum(y, F32(0))
    return q.saturate(y, dst)


def run_pw8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, factor: np.ndarray,
            relu: bool, dst: np.dtype) -> np.ndarray:
    """pw8_conv in a plan: NCHW 8-bit data in, NCHW out."""
    op = onednn.pw8_conv(x.shape, w.shape[0], src_dtype=x.dtype, bias=bias is not None,
                         relu=relu, dst_dtype=dst)
    return run_requantized(op, x, w, bias, factor, dst)


def case(n: int, k: int, oc: int, h: int, w: int, seed: int, bias: bool,
         scale: float = 1 / 300, src: type = np.uint8):
    rng = np.random.default_rng(seed)
    info = np.iinfo(src)
    x = rng.integers(info.min, info.max + 1, (n, k, h, w)).astype(src)
    weights = rng.integers(-127, 128, (oc, k, 1, 1)).astype(np.int8)
    b = rng.integers(-40000, 40000, oc).astype(np.int32) if bias else None
    factor = (rng.uniform(0.5, 1.5, oc) * scale).astype(F32)
    return x, weights, b, factor


@kernel
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("src", [np.uint8, np.int8])
@pytest.mark.parametrize("dst", [np.uint8, np.int8])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("k, oc", [(16, 96), (24, 144), (32, 192), (32, 16)])
def test_matches_the_numpy_kernels_integers(relu, src, dst, bias, k, oc):
    """MobileNet v2's expansions (96 = a group of 64 and two vectors after it,
    144 = two groups and one vector) and its 16-channel projection, on uint8
    data and on int8 (run as uint8 plus 128, the sums compensated)."""
    x, w, b, factor = case(2, k, oc, 9, 13, seed=k + oc, bias=bias, src=src)
    out = run_pw8(x, w, b, factor, relu, np.dtype(dst))
    np.testing.assert_array_equal(out, expected(x, w, b, factor, relu, np.dtype(dst)))
    assert 0 < (out == np.iinfo(dst).max).mean() < 0.5   # the scale saturates some, not all
    if relu or dst == np.uint8:
        assert (out == 0).mean() > 0.1   # and the bottom is reached


@kernel
@SETTINGS
@given(n=st.integers(1, 3), lanes=st.one_of(st.integers(1, 8), st.sampled_from([16, 40, 256])),
       vectors=st.integers(1, 13),
       h=st.integers(2, 9), w=st.integers(2, 9), seed=st.integers(0, 1000),
       relu=st.booleans(), src=st.sampled_from([np.uint8, np.int8]),
       dst=st.sampled_from([np.uint8, np.int8]),
       scale=st.sampled_from([1 / 3000, 1 / 300, 1 / 30]))
def test_any_channel_counts_and_pixel_count(n, lanes, vectors, h, w, seed, relu, src, dst,
                                            scale):
    """4 to 32 input channels, and 64, 160 and 1024 (summed in steps of 32), 16
    to 208 output channels (groups of 64 and the vectors after them), pixel
    counts that leave the last tile of four overlapping the one before and
    make one to eight blocks of tiles, scales from mostly-unsaturated to
    mostly-saturated."""
    x, wt, b, factor = case(n, 4 * lanes, 16 * vectors, h, w, seed, bias=True, scale=scale,
                            src=src)
    np.testing.assert_array_equal(run_pw8(x, wt, b, factor, relu, np.dtype(dst)),
                                  expected(x, wt, b, factor, relu, np.dtype(dst)))


def exact_cases() -> None:
    """Layers whose work splits among the threads (the kernel reads OpenMP's
    thread count), each checked bit for bit: many blocks of tiles, split
    block by block, and few, split by channels (the 7x7 ones)."""
    for n, k, oc, h, w, relu, src, dst in [(1, 16, 96, 37, 29, True, np.int8, np.uint8),
                                           (3, 24, 144, 7, 9, False, np.uint8, np.int8),
                                           (1, 32, 16, 5, 3, True, np.int8, np.int8),
                                           (2, 96, 576, 14, 14, True, np.int8, np.uint8),
                                           (1, 320, 1280, 7, 7, False, np.int8, np.int8),
                                           (1, 64, 208, 7, 7, True, np.uint8, np.uint8)]:
        x, wt, b, factor = case(n, k, oc, h, w, seed=oc, bias=True, src=src)
        np.testing.assert_array_equal(run_pw8(x, wt, b, factor, relu, np.dtype(dst)),
                                      expected(x, wt, b, factor, relu, np.dtype(dst)))


@kernel
@pytest.mark.parametrize("threads", [2, 3])
def test_tiles_split_among_threads_the_same_sums(threads):
    run_with_threads("tests.onednn.test_pointwise_int8", "exact_cases", threads)


@kernel
@pytest.mark.parametrize("dst", [np.uint8, np.int8])
@pytest.mark.parametrize("relu", [False, True])
def test_a_degenerate_factor_saturates_as_the_numpy_kernel(dst, relu):
    """A factor of a million takes sums past int32's range (the epilogue must
    clamp before it rounds); float32's largest (a zero calibrated range)
    saturates every nonzero sum and keeps a zero sum 0; an infinite one makes
    NaN of a zero sum, which the numpy kernel's `saturate` takes to 127 in
    int8, 0 in uint8."""
    x, w, b, _ = case(1, 16, 80, 4, 5, seed=4, bias=False)
    x[0, :, 0, 0] = 0   # a zero sum
    for value in (1e6, np.finfo(F32).max, np.inf):
        factor = np.full(80, value, F32)
        with np.errstate(over="ignore", invalid="ignore"):
            want = expected(x, w, b, factor, relu, np.dtype(dst))
        np.testing.assert_array_equal(run_pw8(x, w, b, factor, relu, np.dtype(dst)), want)


@kernel
@pytest.mark.parametrize("src", [np.uint8, np.int8])
@pytest.mark.parametrize("largest", [2**24 - 16 * 255 * 128, 2**24 - 16 * 255 * 128 + 1,
                                     2**24 + 1, 2**31 - 2**7])
def test_a_large_bias_gives_the_float32_sums_rounding(src, largest):
    """The kernel adds the bias to the integer sums where float32 would add it
    exactly (every bias within 2^24 less the largest sum), else in float32 as
    the numpy kernel: biases on both sides of that bound, and some so large
    that float32 rounds the bias and its sum with the products."""
    x, w, _, _ = case(2, 16, 80, 5, 7, seed=largest % 1000, bias=False, src=src)
    rng = np.random.default_rng(0)
    b = rng.integers(-largest, largest, 80).astype(np.int32)
    b[3], b[70] = largest, -largest
    factor = np.full(80, 100 / largest, F32)   # outputs near 100: rounding shows
    want = expected(x, w, b, factor, False, np.dtype(np.int8))
    np.testing.assert_array_equal(run_pw8(x, w, b, factor, False, np.dtype(np.int8)), want)


@kernel
@pytest.mark.parametrize("shape, weight, dtype, options, why", [
    ((1, 16, 28, 28), (96, 16, 1, 1), np.int32, {}, "int32 data"),
    ((1, 18, 28, 28), (96, 18, 1, 1), np.uint8, {}, "input channels not a multiple of 4"),
    ((1, 36, 28, 28), (96, 36, 1, 1), np.uint8, {}, "36 input channels: not 32 a step"),
    ((1, 1056, 7, 7), (2112, 1056, 1, 1), np.uint8, {}, "more than 1024 input channels"),
    ((1, 16, 28, 28), (24, 16, 1, 1), np.uint8, {}, "output channels not a multiple of 16"),
    ((1, 16, 28, 28), (96, 16, 1, 1), np.uint8, {"stride": (2, 2)}, "stride 2"),
    ((1, 16, 28, 28), (96, 16, 1, 1), np.uint8, {"pad": (1, 1)}, "padding"),
    ((1, 16, 28, 28), (96, 8, 1, 1), np.uint8, {"num_group": 2}, "two groups"),
    ((1, 16, 28, 28), (96, 16, 3, 3), np.uint8, {}, "3x3"),
    ((1, 16, 1, 3), (96, 16, 1, 1), np.uint8, {}, "three pixels: less than a tile"),
])
def test_what_it_leaves_to_onednn(shape, weight, dtype, options, why):
    assert not pointwise.pw8_supports(shape, weight, np.dtype(dtype), **options), why
    assert pointwise.pw8_supports((1, 16, 28, 28), (96, 16, 1, 1), np.dtype(np.uint8))
    assert pointwise.pw8_supports((1, 16, 28, 28), (96, 16, 1, 1), np.dtype(np.int8))


@kernel
@pytest.mark.parametrize("src, dst, what", [(np.uint8, np.float32, "dst"),
                                            (np.float32, np.uint8, "src")])
def test_a_float_type_is_refused_naming_the_argument(src, dst, what):
    with pytest.raises(BackendError, match=f"{what} must be uint8 or int8"):
        onednn.pw8_conv((1, 16, 14, 14), 96, src_dtype=src, bias=False, relu=False,
                        dst_dtype=dst)


@kernel
def test_a_shape_it_cannot_run_is_refused_by_the_builder():
    with pytest.raises(BackendError, match="pw8_conv src .1, 40, 14, 14."):
        onednn.pw8_conv((1, 40, 14, 14), 96, src_dtype=np.uint8, bias=False, relu=False,
                        dst_dtype=np.uint8)


@pytest.mark.without_dnnl
def test_a_build_without_the_kernel_leaves_every_convolution_to_onednn(monkeypatch):
    monkeypatch.setattr(pointwise, "pw8_available", lambda: False)
    assert not pointwise.pw8_supports((1, 16, 28, 28), (96, 16, 1, 1), np.dtype(np.uint8))
