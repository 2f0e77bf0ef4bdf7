"""wino_conv (Winograd F(4x4, 3x3) and F(2x2, 3x3)) against the numpy reference convolution.

fp32 tolerance: |out - expected| <= WINO_TOL * sqrt(C) * max|y|, with y the
float64 convolution plus bias before any post-op (relu, leaky relu and clip
do not enlarge an error, and the sum adds an exact fp32 addend). Winograd's
transforms scale values by up to 8 (A^T) and by fractions such as 1/6 and
1/24 (G), so its rounding errors are a few times those of a direct
convolution and grow with the channels summed: measured, the largest error
relative to max|y| was at most 1.1e-6 * sqrt(C) for C from 16 to 512
(1.8e-5 at C = 512); WINO_TOL allows about 4 times that.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimx import BackendError, MinimxError, onednn
from minimx.onednn import PostOp, winograd
from minimx.onednn._loader import native
from minimx.onednn.primitives import build_primitive, post_op_args

from . import reference
from .helpers import SETTINGS, random, run

WINO_TOL = 4e-6


def wino_atol(c: int, y: np.ndarray) -> float:
    """The absolute tolerance for C input channels and the pre-post-op result y."""
    return WINO_TOL * math.sqrt(c) * float(np.abs(y).max())


def apply_post_ops(y: np.ndarray, post_ops: Sequence[PostOp],
                   addend: np.ndarray | None) -> np.ndarray:
    """y after the chain, as oneDNN defines it (sum: y + scale * addend)."""
    for op in post_ops:
        if op.kind == "sum":
            y = y + op.alpha * addend
        else:
            y = reference.ELTWISE[op.alg](y, op.alpha, op.beta)
    return y


def check_wino(n: int, c: int, o: int, size: tuple[int, int], pad: tuple[int, int],
               bias: bool, post_ops: Sequence[PostOp] = (), seed: int = 0,
               tile: int = 4) -> onednn.Primitive:
    """Runs wino_conv (F(tile x tile, 3x3)) on random data (a random addend
    when there is a sum) and compares it with the reference; returns the
    primitive."""
    x, w = random((n, c, *size), seed), random((o, c, 3, 3), seed + 1)
    b = random((o,), seed + 2) if bias else None
    op = onednn.wino_conv(x.shape, w.shape, pad=pad, bias=bias, post_ops=post_ops, tile=tile)
    y = reference.conv(x, w, b, (1, 1), pad, (1, 1), 1)
    addend = random(y.shape, seed + 3) if op.has_sum else None
    out = run(op, {"src": x, "weights": w, "bias": b}, dst=addend)
    np.testing.assert_allclose(out, apply_post_ops(y, post_ops, addend), rtol=0,
                               atol=wino_atol(c, y))
    return op


@st.composite
def wino_cases(draw):
    pad = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    # Each padded axis holds at least one 3x3 window.
    size = tuple(draw(st.integers(max(1, 3 - 2 * p), 13)) for p in pad)
    return dict(n=draw(st.integers(1, 5)), c=draw(st.sampled_from([16, 32, 48])),
                o=draw(st.sampled_from([16, 32, 48])), size=size, pad=pad,
                bias=draw(st.booleans()), seed=draw(st.integers(0, 2**16)),
                tile=draw(st.sampled_from(winograd.TILES)))


@SETTINGS
@given(wino_cases())
def test_wino_conv_matches_reference(case):
    """Odd sizes, sizes not a multiple of 4 and smaller than a tile, pads
    differing by axis: the partial tiles at the edges and the zero padding
    are handled, and height and width are not swapped."""
    op = check_wino(**case)
    assert op.kind == "wino_conv" and op.impl.startswith(f"wino_{case['tile']}x3+")
    assert op.desc("src").layout == op.desc("dst").layout == "acdb"


@pytest.mark.parametrize("n,c,o", [(6, 64, 64), (6, 32, 32), (5, 32, 32)])
def test_batch_in_chunks_smaller_than_the_batch(n, c, o):
    """Batches whose transformed tiles exceed the chunk budget run in chunks
    of a divisor of N images (2, 3 and 1 with today's 2 MiB budget): every
    chunk reads its own images and adds into its own part of dst."""
    tiles = 7 * 7  # 28x28 outputs
    post_ops = [PostOp.eltwise("relu"), PostOp.sum(), PostOp.eltwise("relu")]
    op = check_wino(n, c, o, (28, 28), (1, 1), True, post_ops, seed=n + c)
    whole_batch = 36 * n * tiles * (c + o) * 4  # transformed input and output, bytes
    assert op.scratchpad_nbytes < whole_batch, "the case no longer runs in chunks"


@pytest.mark.parametrize("post_ops", [
    pytest.param([PostOp.eltwise("relu")], id="relu"),
    pytest.param([PostOp.eltwise("relu", 0.1)], id="leaky-relu"),
    pytest.param([PostOp.eltwise("clip", -2.0, 3.0)], id="clip"),
    pytest.param([PostOp.sum()], id="sum"),
    pytest.param([PostOp.sum(0.5)], id="sum-scaled"),
    pytest.param([PostOp.eltwise("relu"), PostOp.sum()], id="relu-sum"),
    pytest.param([PostOp.sum(), PostOp.eltwise("relu")], id="sum-relu"),
    pytest.param([PostOp.eltwise("relu"), PostOp.sum(), PostOp.eltwise("relu")],
                 id="relu-sum-relu"),
    pytest.param([PostOp.eltwise("clip", -2.0, 3.0), PostOp.sum(-1.5),
                  PostOp.eltwise("clip", -1.0, 1.0)], id="clip-sum-clip"),
])
@pytest.mark.parametrize("tile", winograd.TILES)
def test_post_op_chains(post_ops, tile):
    """Every chain the output transform applies: activation, sum into dst's
    previous content, activation after the sum, each with its parameters."""
    check_wino(2, 16, 32, (6, 7), (1, 1), True, post_ops, tile=tile)


# The interpolation points of F(tile x tile, 3x3), infinity aside.
POINTS = {4: [0, 1, -1, 2, -2], 2: [0, 1, -1]}
# A row of G may be scaled if B^T's row is scaled inversely: Lavin and Gray's
# F(2, 3), which winograd.c's B^T follows, takes row 0 with the other sign.
ROW_SIGNS = {4: [1, 1, 1, 1, 1, 1], 2: [-1, 1, 1, 1]}


def g_matrix(tile: int) -> np.ndarray:
    """F(tile, 3)'s G from its definition: rows f_a * (1, a, a^2) for the
    points a (f_a = 1 / prod_{b != a}(a - b)), and (0, 0, 1) for infinity;
    signed by ROW_SIGNS."""
    points = POINTS[tile]
    rows = [np.array([1, a, a * a]) / math.prod(a - b for b in points if b != a)
            for a in points]
    return np.vstack(rows + [np.array([0, 0, 1])]) * np.array(ROW_SIGNS[tile])[:, None]


@pytest.mark.parametrize("tile", winograd.TILES)
def test_winograd_weights_are_g_w_gt(tile):
    """Entry [a i + j, c, o] is (G w[o, c] G^T)[i, j], for every channel pair
    (a = tile + 2)."""
    w = random((32, 16, 3, 3), 1)
    g = g_matrix(tile)
    a = tile + 2
    expected = np.array([[g @ w[o, c].astype(np.float64) @ g.T for o in range(32)]
                         for c in range(16)])  # (C, O, a, a)
    u = onednn.winograd_weights(w, tile)
    assert u.shape == (a * a, 16, 32) and u.dtype == np.float32
    np.testing.assert_allclose(u, expected.reshape(16, 32, a * a).transpose(2, 0, 1),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("tile", winograd.TILES)
def test_centred_delta_kernel_is_the_identity(tile):
    """A kernel with a single 1 at the centre of w[k, k] (pad 1) returns its
    input: the transforms invert each other up to rounding."""
    x = random((2, 16, 9, 10), 1)
    w = np.zeros((16, 16, 3, 3), np.float32)
    w[np.arange(16), np.arange(16), 1, 1] = 1
    out = run(onednn.wino_conv(x.shape, w.shape, pad=1, tile=tile), {"src": x, "weights": w})
    np.testing.assert_allclose(out, x, rtol=0, atol=wino_atol(16, x))


@pytest.mark.parametrize("build,message", [
    pytest.param(lambda: onednn.wino_conv((1, 8, 8, 8), (16, 8, 3, 3)), "not a Winograd case",
                 id="in-channels-not-16k"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 8, 8), (24, 16, 3, 3)),
                 "not a Winograd case", id="out-channels-not-16k"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 8, 8), (16, 16, 5, 5)), "not a Winograd case",
                 id="kernel-5x5"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 8), (16, 16, 3)), "not a Winograd case",
                 id="conv-1d"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 8, 8), (16, 32, 3, 3)), "not a Winograd case",
                 id="channel-mismatch"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 8, 8), (16, 16, 3, 3),
                                        post_ops=[PostOp.binary((1, 16, 1, 1))]),
                 r"post-ops \['add'\] are not a Winograd case", id="binary-post-op"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 8, 8), (16, 16, 3, 3),
                                        post_ops=[PostOp.eltwise("tanh")]),
                 r"post-ops \['tanh'\] are not a Winograd case", id="tanh-post-op"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 8, 8), (16, 16, 3, 3),
                                        post_ops=[PostOp.sum(), PostOp.sum()]),
                 "not a Winograd case", id="two-sums"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 2, 8), (16, 16, 3, 3)),
                 "larger than the padded input", id="input-smaller-than-kernel"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 8, 8), (16, 16, 3, 3), pad=-1),
                 "wino_conv pad", id="negative-pad"),
    pytest.param(lambda: onednn.wino_conv((1, 16, 8, 8), (16, 16, 3, 3), tile=3),
                 r"tile 3 is not one of \(4, 2\)", id="tile-3"),
])
def test_unsupported_cases_raise_backend_error(build, message):
    """Refused in Python with a message naming what does not fit, before C sees it."""
    with pytest.raises(BackendError, match=message) as info:
        build()
    assert isinstance(info.value, MinimxError)


SRC, W = (2, 16, 8, 8), (32, 16, 3, 3)


@pytest.mark.parametrize("src,weight,kw,supported", [
    (SRC, W, {}, True),
    (SRC, W, dict(stride=1, dilate=(1, 1)), True),
    (SRC, W, dict(post_ops=[PostOp.eltwise("relu", 0.1), PostOp.sum(0.5),
                            PostOp.eltwise("clip", 0.0, 6.0)]), True),
    (SRC, W, dict(post_ops=[PostOp.sum(), PostOp.eltwise("relu")]), True),
    (SRC, W, dict(stride=2), False),
    (SRC, W, dict(stride=(1, 2)), False),
    (SRC, W, dict(dilate=2), False),
    (SRC, (32, 8, 3, 3), dict(num_group=2), False),
    (SRC, (32, 16, 1, 1), {}, False),
    (SRC, (32, 16, 3, 5), {}, False),
    ((2, 8, 8, 8), (32, 8, 3, 3), {}, False),
    (SRC, (24, 16, 3, 3), {}, False),
    ((2, 16, 8, 8, 8), (32, 16, 3, 3, 3), {}, False),
    (SRC, W, dict(post_ops=[PostOp.eltwise("tanh")]), False),
    (SRC, W, dict(post_ops=[PostOp.eltwise("relu"), PostOp.eltwise("relu")]), False),
    (SRC, W, dict(post_ops=[PostOp.sum(), PostOp.sum()]), False),
    (SRC, W, dict(post_ops=[PostOp.binary((1, 32, 1, 1))]), False),
])
def test_winograd_supports(src, weight, kw, supported):
    """2-D, 3x3, stride 1, dense, ungrouped, 16k channels, [act] [sum [act]]."""
    assert onednn.winograd_supports(src, weight, **kw) is supported


def test_public_names_are_the_winograd_modules():
    """minimx.onednn re-exports the Winograd binding, so callers need not know its module."""
    assert (onednn.wino_conv, onednn.winograd_supports, onednn.winograd_weights) == \
        (winograd.wino_conv, winograd.winograd_supports, winograd.winograd_weights)


def native_wino_conv(src: tuple[int, ...], oc: int, post_ops: Sequence[PostOp] = (),
                     tile: int = 4) -> onednn.Primitive:
    """mmx_wino_conv_init called past wino_conv's checks (pad 1, no bias)."""
    return build_primitive("wino_conv", "past the checks", native().lib.mmx_wino_conv_init,
                           list(src), oc, [1, 1], [1, 1], tile, 0,
                           *post_op_args(post_ops, (src[0], oc, *src[2:]), "wino_conv"))


@pytest.mark.parametrize("src,oc,post_ops,tile,detail", [
    pytest.param((1, 8, 8, 8), 16, [], 4,
                 "requirement failed: c % VL == 0 && oc % VL == 0: invalid_arguments",
                 id="channels"),
    pytest.param((1, 16, 8, 8), 16, [], 3,
                 "requirement failed: tile == 4 || tile == 2: invalid_arguments", id="tile"),
    pytest.param((1, 16, 8, 8), 16, [PostOp.eltwise("tanh")], 4,
                 "requirement failed: po->alg == MMX_ELTWISE_RELU || "
                 "po->alg == MMX_ELTWISE_CLIP: unimplemented", id="tanh"),
    pytest.param((1, 16, 8, 8), 16, [PostOp.sum(), PostOp.sum()], 2,
                 "requirement failed: po->kind == MMX_POST_ELTWISE && *act == ACT_NONE: "
                 "unimplemented", id="two-sums"),
])
def test_native_refusals_name_the_failed_requirement(src, oc, post_ops, tile, detail):
    """winograd.c keeps the shim's error rule: what C refuses raises
    BackendError with the innermost failed condition and oneDNN's status
    name, not the call that passed the failure on."""
    message = f"oneDNN wino_conv past the checks failed: {detail}"
    with pytest.raises(BackendError, match=f"^{re.escape(message)}$"):
        native_wino_conv(src, oc, post_ops, tile)


def test_one_primitive_in_two_plans():
    """Each plan step running a wino_conv binds its own transformed tiles in
    its plan's scratchpad: two plans of one primitive give the same result."""
    x, w = random((3, 16, 10, 10), 5), random((32, 16, 3, 3), 6)
    op = onednn.wino_conv(x.shape, w.shape, pad=1, post_ops=[PostOp.eltwise("relu")])
    first, second = (run(op, {"src": x, "weights": w}) for _ in range(2))
    y = reference.conv(x, w, None, (1, 1), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(first, np.maximum(y, 0), rtol=0, atol=wino_atol(16, y))
    np.testing.assert_array_equal(first, second)
