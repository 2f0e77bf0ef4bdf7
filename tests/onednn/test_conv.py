"""Convolution and deconvolution primitives against naive numpy references."""
from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from minimx import onednn
from minimx.onednn import PostOp

from . import reference
from .helpers import ATOL, RTOL, SETTINGS, random, run


def per_axis(draw, nsp: int, low: int, high: int) -> tuple[int, ...]:
    """One integer in [low, high] for each of the nsp spatial axes."""
    return tuple(draw(st.integers(low, high)) for _ in range(nsp))


@st.composite
def conv_cases(draw):
    nsp = draw(st.sampled_from([1, 2, 2, 2, 3]))
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cg, og = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    kernel = per_axis(draw, nsp, 1, 3)
    stride = per_axis(draw, nsp, 1, 3)
    pad = per_axis(draw, nsp, 0, 2)
    dilate = per_axis(draw, nsp, 1, 2)
    extra = 3 if nsp == 3 else 6
    size = tuple(draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), d * (k - 1) + extra))
                 for k, p, d in zip(kernel, pad, dilate, strict=True))
    return dict(n=draw(st.integers(1, 2)), c=cg * groups, o=og * groups, size=size,
                kernel=kernel, stride=stride, pad=pad, dilate=dilate, groups=groups,
                bias=draw(st.booleans()), seed=draw(st.integers(0, 2**16)))


@SETTINGS
@given(conv_cases())
def test_conv_matches_reference(case):
    x = random((case["n"], case["c"], *case["size"]), case["seed"])
    w = random((case["o"], case["c"] // case["groups"], *case["kernel"]), case["seed"] + 1)
    b = random((case["o"],), case["seed"] + 2) if case["bias"] else None
    op = onednn.conv(x.shape, w.shape, stride=case["stride"], pad=case["pad"],
                   dilate=case["dilate"], num_group=case["groups"], bias=case["bias"])
    out = run(op, {"src": x, "weights": w, "bias": b})
    expected = reference.conv(x, w, b, case["stride"], case["pad"], case["dilate"],
                              case["groups"])
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


def test_conv_bn_relu_sum_relu_fused():
    """conv + BatchNorm (folded into weights and bias) + relu + residual sum + relu."""
    x, w = random((2, 8, 7, 7), 1), random((16, 8, 3, 3), 2)
    gamma, beta = random((16,), 3, 0.5, 1.5), random((16,), 4)
    mean, var, eps = random((16,), 5), random((16,), 6, 0.5, 2.0), 1e-3
    residual = random((2, 16, 7, 7), 7)
    alpha = gamma / np.sqrt(var + eps)
    folded_w = (w * alpha[:, None, None, None]).astype(np.float32)
    folded_b = (beta - alpha * mean).astype(np.float32)
    op = onednn.conv(x.shape, w.shape, pad=1, bias=True,
                   post_ops=[PostOp.eltwise("relu"), PostOp.sum(), PostOp.eltwise("relu")])
    assert op.has_sum
    out = run(op, {"src": x, "weights": folded_w, "bias": folded_b}, dst=residual)
    bn = reference.batch_norm(reference.conv(x, w, None, (1, 1), (1, 1), (1, 1), 1),
                              mean, var, gamma, beta, eps)
    expected = np.maximum(np.maximum(bn, 0) + residual, 0)
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


def test_conv_binary_add_post_ops_broadcast_and_full():
    x, w = random((1, 4, 6, 6), 1), random((8, 4, 3, 3), 2)
    per_channel, full = random((1, 8, 1, 1), 3), random((1, 8, 4, 4), 4)
    op = onednn.conv(x.shape, w.shape, post_ops=[PostOp.binary(per_channel.shape),
                                               PostOp.eltwise("tanh"),
                                               PostOp.binary(full.shape)])
    assert op.args == ("src", "weights", "dst", "post0_src1", "post2_src1")
    out = run(op, {"src": x, "weights": w, "post0_src1": per_channel, "post2_src1": full})
    expected = np.tanh(reference.conv(x, w, None, (1, 1), (0, 0), (1, 1), 1) + per_channel)
    np.testing.assert_allclose(out, expected + full, rtol=RTOL, atol=ATOL)


def test_conv_picks_blocked_layouts_and_a_jit_kernel():
    op = onednn.conv((1, 64, 14, 14), (64, 64, 3, 3), pad=1)
    assert op.desc("weights").layout != "abcd"
    assert op.desc("dst").layout != "abcd"
    assert "ref" not in op.impl


def test_conv_writes_the_dst_layout_asked_for():
    x, w = random((1, 3, 9, 9), 1), random((8, 3, 3, 3), 2)
    op = onednn.conv(x.shape, w.shape, stride=2, pad=1, dst_layout="acdb")
    assert op.desc("dst").layout == "acdb"
    out = run(op, {"src": x, "weights": w})
    expected = reference.conv(x, w, None, (2, 2), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


@st.composite
def deconv_cases(draw):
    nsp = draw(st.sampled_from([1, 2, 2, 3]))
    groups = draw(st.sampled_from([1, 1, 2]))
    cg, og = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel = per_axis(draw, nsp, 1, 3)
    stride = per_axis(draw, nsp, 1, 3)
    dilate = per_axis(draw, nsp, 1, 2)
    pad = per_axis(draw, nsp, 0, 1)
    adj = tuple(draw(st.integers(0, min(p, s - 1))) for p, s in zip(pad, stride, strict=True))
    size = per_axis(draw, nsp, 2, 3 if nsp == 3 else 5)
    assume(all((x - 1) * s - 2 * p + d * (k - 1) + 1 + a >= 1
               for x, s, p, d, k, a in zip(size, stride, pad, dilate, kernel, adj, strict=True)))
    return dict(n=draw(st.integers(1, 2)), c=cg * groups, og=og, size=size, kernel=kernel,
                stride=stride, pad=pad, adj=adj, dilate=dilate, groups=groups,
                bias=draw(st.booleans()), seed=draw(st.integers(0, 2**16)))


@SETTINGS
@given(deconv_cases())
def test_deconv_matches_reference(case):
    x = random((case["n"], case["c"], *case["size"]), case["seed"])
    w = random((case["c"], case["og"], *case["kernel"]), case["seed"] + 1)
    b = random((case["og"] * case["groups"],), case["seed"] + 2) if case["bias"] else None
    op = onednn.deconv(x.shape, w.shape, stride=case["stride"], pad=case["pad"],
                     adj=case["adj"], dilate=case["dilate"], num_group=case["groups"],
                     bias=case["bias"])
    out = run(op, {"src": x, "weights": w, "bias": b})
    expected = reference.deconv(x, w, b, case["stride"], case["pad"], case["adj"],
                                case["dilate"], case["groups"])
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)
