"""pwdw_conv (minimx's kernel for a 1x1 convolution and the depthwise one
reading it): its float32 sums exactly, oneDNN's two primitives within a few
last bits, NaN passed through, and what it takes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimx import onednn
from minimx.backends.dnnl.conv_layout import BLOCKED
from minimx.onednn import pointwise_depthwise as pd

from .helpers import SETTINGS

F32, F64 = np.float32, np.float64
kernel = pytest.mark.skipif(onednn.available() and not pd.pwdw_available(),
                            reason="this CPU has no AVX-512: the build has no kernel")
NONE, RELU, RELU6 = (-np.inf, np.inf), (0.0, np.inf), (0.0, 6.0)


def fma(acc: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """acc + a * b rounded once to float32, as a fused multiply-add (the
    float64 product of two float32 values is exact)."""
    return (acc.astype(F64) + a.astype(F64) * b.astype(F64)).astype(F32)


def clamp(y: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    """min(max(y, lo), hi) with NaN passing through."""
    lo, hi = bounds
    return np.where(np.isnan(y), y, np.minimum(np.maximum(y, F32(lo)), F32(hi)))


def expected(x, w1, b1, w2, b2, stride, bounds) -> np.ndarray:
    """The kernel's steps in numpy: each sum from the bias, the 1x1 one over
    the input channels in order, the depthwise one over the taps row by row
    (a padding row skipped, a padding column adding zero), then the bounds."""
    n, c, h, wd = x.shape
    e = np.broadcast_to(b1.reshape(1, -1, 1, 1), (n, w1.shape[0], h, wd)).astype(F32)
    for k in range(c):
        e = fma(e, w1[:, k, 0, 0].reshape(1, -1, 1, 1), x[:, k:k + 1])
    e = clamp(e, bounds[0])
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    padded = np.zeros((n, e.shape[1], h + 2, wd + 2), F32)
    padded[:, :, 1:h + 1, 1:wd + 1] = e
    y = np.broadcast_to(b2.reshape(1, -1, 1, 1), (n, e.shape[1], oh, ow)).astype(F32)
    for r in range(3):
        rows = np.arange(oh) * stride + r        # padded row indices
        inside = ((rows >= 1) & (rows <= h)).reshape(1, 1, -1, 1)
        for col in range(3):
            taps = padded[:, :, rows][:, :, :, col:col + stride * ow:stride]
            y = np.where(inside, fma(y, w2[:, 0, r, col].reshape(1, -1, 1, 1), taps), y)
    return clamp(y, bounds[1])


def run_kernel(x, w1, b1, w2, b2, stride, bounds) -> np.ndarray:
    """pwdw_conv in a plan: plain float32 in, reordered to and from nChw16c."""
    op = onednn.pwdw_conv(x.shape, w1.shape[0], stride=stride, bounds=bounds)
    plan = onednn.Plan("pwdw")
    y = plan.add(op, src=plan.reorder(plan.input(x.shape), op.desc("src")),
                 weights=plan.constant(onednn.constant(op, "weights", w1)),
                 bias=plan.constant(b1),
                 dw_weights=plan.constant(onednn.constant(op, "dw_weights", w2)),
                 dw_bias=plan.constant(b2))
    plan.output(plan.reorder(y, onednn.MemoryDesc.plain(y.shape)))
    (out,) = plan.run([x])
    return out


def case(n: int, c: int, h: int, w: int, oc: int, seed: int):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (n, c, h, w)).astype(F32),
            rng.normal(0, 0.5, (oc, c, 1, 1)).astype(F32), rng.normal(0, 0.5, oc).astype(F32),
            rng.normal(0, 0.5, (oc, 1, 3, 3)).astype(F32), rng.normal(0, 0.2, oc).astype(F32))


@kernel
@SETTINGS
@given(n=st.integers(1, 3), c=st.integers(1, 40), h=st.integers(1, 30), w=st.integers(1, 30),
       oc=st.sampled_from([16, 32, 48, 80]), stride=st.sampled_from([1, 2]),
       seed=st.integers(0, 99), bounds=st.sampled_from([(NONE, NONE), (RELU6, RELU6),
                                                        (RELU, NONE)]))
def test_the_kernels_float32_sums_exactly(n, c, h, w, oc, stride, seed, bounds):
    # Input channels in one block and in two (a part one), 1-5 blocks out (a
    # group of two and a lone one), widths of every register-block split.
    args = case(n, c, h, w, oc, seed)
    np.testing.assert_array_equal(run_kernel(*args, stride, bounds),
                                  expected(*args, stride, bounds))


@kernel
@pytest.mark.parametrize("stride", [1, 2])
def test_onednns_two_primitives_within_a_few_last_bits(stride):
    """Against oneDNN's 1x1 and depthwise convolutions in nChw16c, relu6 after each."""
    x, w1, b1, w2, b2 = case(1, 24, 56, 56, 144, 0)
    relu6 = [onednn.PostOp.eltwise("clip", 0.0, 6.0)]
    plan = onednn.Plan("onednn")
    y = plan.reorder(plan.input(x.shape), onednn.MemoryDesc.with_layout(x.shape, BLOCKED))
    for w, b, kw in ((w1, b1, {}), (w2, b2, dict(stride=(stride,) * 2, pad=(1, 1),
                                                  num_group=144))):
        conv = onednn.conv(y.desc, w.shape, bias=True, dst_layout=BLOCKED, post_ops=relu6,
                           **kw)
        y = plan.add(conv, src=y, weights=plan.constant(onednn.constant(conv, "weights", w)),
                     bias=plan.constant(b))
    plan.output(plan.reorder(y, onednn.MemoryDesc.plain(y.shape)))
    (theirs,) = plan.run([x])
    np.testing.assert_allclose(run_kernel(x, w1, b1, w2, b2, stride, (RELU6, RELU6)), theirs,
                               rtol=1e-5, atol=1e-5)


@kernel
def test_nan_passes_through_the_bounds():
    x, w1, b1, w2, b2 = case(1, 8, 6, 6, 16, 1)
    x[0, 3, 2, 2] = np.nan
    got = run_kernel(x, w1, b1, w2, b2, 1, (NONE, NONE))
    assert np.isnan(got[0, :, 1:4, 1:4]).all()        # the pixels whose taps read it
    assert np.count_nonzero(np.isnan(got)) == 16 * 9
    np.testing.assert_array_equal(got, expected(x, w1, b1, w2, b2, 1, (NONE, NONE)))


def test_supports_only_what_the_kernel_takes_and_pays_for():
    ok = dict(dw_stride=(1, 1), dw_pad=(1, 1), dw_num_group=96)
    src, w1, w2 = (1, 16, 56, 56), (96, 16, 1, 1), (96, 1, 3, 3)
    assert pd.pwdw_supports(src, w1, w2, **ok) == pd.pwdw_available()
    assert pd.pwdw_supports(src, w1, w2, **{**ok, "dw_stride": (2, 2)}) == pd.pwdw_available()
    assert not pd.pwdw_supports(src, w1, w2, **{**ok, "dw_stride": (3, 3)})
    assert not pd.pwdw_supports(src, w1, w2, **{**ok, "dw_pad": (0, 0)})
    assert not pd.pwdw_supports(src, w1, w2, **{**ok, "dw_dilate": (2, 2)})
    assert not pd.pwdw_supports(src, w1, w2, **{**ok, "dw_num_group": 48})
    assert not pd.pwdw_supports(src, w1, w2, stride=(2, 2), **ok)
    assert not pd.pwdw_supports(src, w1, w2, pad=(1, 1), **ok)
    assert not pd.pwdw_supports(src, (88, 16, 1, 1), (88, 1, 3, 3),
                                **{**ok, "dw_num_group": 88})    # not whole blocks
    assert not pd.pwdw_supports(src, (96, 16, 3, 3), w2, **ok)
    wide = (1, pd.MAX_IN_CHANNELS + 1, 56, 56)
    assert not pd.pwdw_supports(wide, (96, wide[1], 1, 1), w2, **ok)
