"""first_conv (minimx's kernel for a float32 first convolution quantized on the
way out): its float32 steps exactly, and oneDNN's three steps but for a last
bit that moves a rare quantized value by one."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimx import BackendError, onednn
from minimx.onednn import stem as fc

from .helpers import SETTINGS

F32, F64 = np.float32, np.float64
kernel = pytest.mark.skipif(onednn.available() and not fc.first_conv_available(),
                            reason="this CPU has no AVX-512: the build has no kernel")


def expected(x: np.ndarray, w: np.ndarray, bias: np.ndarray, lo: float, hi: float,
             scale: float, dst: np.dtype) -> np.ndarray:
    """The kernel's steps in numpy, NHWC: the float32 sum from the bias, one
    fused multiply-add per tap in (channel, row, column) order (a float64
    product is exact, and its sum rounds once to float32), the bounds, the
    float32 product with the scale, rounding half to even, saturation."""
    n, _, h, wd = x.shape
    oh, ow = (h - 1) // 2 + 1, (wd - 1) // 2 + 1
    padded = np.zeros((n, 3, 2 * oh + 1, 2 * ow + 1), F32)
    padded[:, :, 1:h + 1, 1:wd + 1] = x[:, :, :2 * oh, :2 * ow]
    acc = np.broadcast_to(bias.reshape(1, -1, 1, 1), (n, w.shape[0], oh, ow)).astype(F32)
    for c in range(3):
        for ky in range(3):
            for kx in range(3):
                taps = padded[:, c, ky:ky + 2 * oh:2, kx:kx + 2 * ow:2][:, None].astype(F64)
                acc = (acc.astype(F64) + w[:, c, ky, kx].reshape(1, -1, 1, 1).astype(F64) * taps
                       ).astype(F32)
    y = np.minimum(np.maximum(acc, F32(lo)), F32(hi)) * F32(scale)
    info = np.iinfo(dst)
    return np.clip(np.rint(y), info.min, info.max).astype(dst).transpose(0, 2, 3, 1)


def run_kernel(x: np.ndarray, w: np.ndarray, bias: np.ndarray, lo: float, hi: float,
               scale: float, dst: np.dtype) -> np.ndarray:
    """first_conv in a plan: NCHW float32 in, its NHWC bytes out."""
    op = onednn.first_conv(x.shape, w.shape[0], lo=lo, hi=hi, scale=scale, dst_dtype=dst)
    plan = onednn.Plan("first_conv")
    y = plan.add(op, src=plan.input(x.shape),
                 weights=plan.constant(onednn.constant(op, "weights", w)),
                 bias=plan.constant(bias))
    n, c, h, wd = y.shape
    plan.output(plan.view(y, onednn.MemoryDesc.plain((n, h, wd, c), dst)))
    (out,) = plan.run([x])
    return out


def case(n: int, h: int, w: int, oc: int, seed: int):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (n, 3, h, w)).astype(F32),
            rng.normal(0, 0.5, (oc, 3, 3, 3)).astype(F32), rng.normal(0, 0.2, oc).astype(F32))


@kernel
@SETTINGS
@given(n=st.integers(1, 2), h=st.integers(1, 40), w=st.integers(1, 40),
       oc=st.sampled_from([16, 32, 48]), seed=st.integers(0, 99),
       bounds=st.sampled_from([(-np.inf, np.inf), (0.0, np.inf), (0.0, 6.0)]),
       dst=st.sampled_from([np.dtype(np.uint8), np.dtype(np.int8)]))
def test_the_kernels_float32_steps_exactly(n, h, w, oc, seed, bounds, dst):
    # Widths cover a row's first pixel, whole strips of 8 and the pixels after;
    # 48 channels a pair of vectors and a single one.
    x, wt, bias = case(n, h, w, oc, seed)
    scale = 60.0
    np.testing.assert_array_equal(run_kernel(x, wt, bias, *bounds, scale, dst),
                                  expected(x, wt, bias, *bounds, scale, dst))


@kernel
def test_the_kernels_float32_steps_exactly_on_a_whole_image():
    """At 224x224 about one output in 10**5 lies within a float32 last bit of a
    rounding boundary: enough of them that another order of the sums shows."""
    x, wt, bias = case(2, 224, 224, 32, 1)
    got = run_kernel(x, wt, bias, 0.0, 6.0, 40.0, np.dtype(np.uint8))
    np.testing.assert_array_equal(got, expected(x, wt, bias, 0.0, 6.0, 40.0, np.dtype(np.uint8)))


@kernel
def test_onednns_three_steps_but_for_a_rare_last_bit():
    """Against what the plan runs without the kernel: the input reordered to
    NHWC, oneDNN's float32 convolution with relu, a binary multiply into uint8."""
    x, wt, bias = case(2, 224, 224, 32, 0)
    scale = 60.0
    conv = onednn.conv(onednn.MemoryDesc.ordered(x.shape, "acdb", F32), wt.shape,
                       stride=(2, 2), pad=(1, 1), bias=True, dst_layout="acdb",
                       post_ops=[onednn.PostOp.eltwise("relu")])
    plan = onednn.Plan("onednn", own_kernels=False)
    y = plan.add(conv, src=plan.reorder(plan.input(x.shape), conv.desc("src")),
                 weights=plan.constant(onednn.constant(conv, "weights", wt)),
                 bias=plan.constant(bias))
    q = plan.add(onednn.binary(y.desc, (1, 1, 1, 1), "mul", dst_dtype=np.dtype(np.uint8)),
                 src=y, src1=plan.constant(np.full((1, 1, 1, 1), scale, F32)))
    n, c, h, w = q.shape
    plan.output(plan.view(q, onednn.MemoryDesc.plain((n, h, w, c), np.uint8)))
    (theirs,) = plan.run([x])
    ours = run_kernel(x, wt, bias, 0.0, np.inf, scale, np.dtype(np.uint8))
    differ = ours.astype(int) - theirs.astype(int)
    assert np.abs(differ).max() <= 1
    assert np.count_nonzero(differ) <= 1e-4 * differ.size


def test_supports_only_what_the_kernel_takes():
    ok = dict(stride=(2, 2), pad=(1, 1))
    assert fc.first_conv_supports((1, 3, 224, 224), (32, 3, 3, 3), **ok) == \
        fc.first_conv_available()
    assert not fc.first_conv_supports((1, 4, 224, 224), (32, 4, 3, 3), **ok)
    assert not fc.first_conv_supports((1, 3, 224, 224), (24, 3, 3, 3), **ok)
    assert not fc.first_conv_supports((1, 3, 224, 224), (32, 3, 3, 3), stride=(1, 1),
                                      pad=(1, 1))
    assert not fc.first_conv_supports((1, 3, 224, 224), (32, 3, 7, 7), stride=(2, 2),
                                      pad=(3, 3))
    assert not fc.first_conv_supports((1, 3, 224, 224), (32, 3, 3, 3), dilate=(2, 2), **ok)


@kernel
def test_refuses_a_float_dst():
    with pytest.raises(BackendError, match="first_conv: dst must be uint8 or int8"):
        onednn.first_conv((1, 3, 8, 8), 16, lo=0, hi=1, scale=1, dst_dtype=F32)
