"""Winograd F(4x4, 3x3) and F(2x2, 3x3) convolution: a 3x3, stride-1
convolution with 4x (2.25x) fewer multiplications than oneDNN's direct one.

Each 4x4 output tile comes from a 6x6 input tile through 36 products per
channel pair instead of 144 (Lavin and Gray, "Fast Algorithms for
Convolutional Neural Networks", 2015); each 2x2 tile from a 4x4 one through
16 instead of 36. F(2x2) reads 16/9 of the direct weights, F(4x4) 4x: where
the weights come from memory for few tiles (a 14x14 image), the smaller
tile costs less (`minimx.backends.dnnl.winograd`). The data transforms are C loops in
``native/winograd.c`` around a oneDNN matmul; the weight transform is here
(``winograd_weights``), applied once when ``minimx.onednn.constant`` fills
the weight cache. ``winograd_supports`` says which convolutions qualify.

>>> winograd_supports((1, 16, 8, 8), (32, 16, 3, 3), post_ops=[PostOp.eltwise("relu")])
True
>>> winograd_supports((1, 16, 8, 8), (32, 16, 3, 3), stride=2)
False
>>> winograd_weights(np.ones((32, 16, 3, 3), np.float32)).shape
(36, 16, 32)
>>> winograd_weights(np.ones((32, 16, 3, 3), np.float32), tile=2).shape
(16, 16, 32)
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..base import BackendError
from ._loader import native
from .primitives import PostOp, Primitive, build_primitive, post_op_args, spatial_param
from .runtime import FLOAT32, as_dims

# U = G g G^T, by output tile side: for the interpolation points 0, 1, -1, 2,
# -2 and infinity (F(4x4)), and 0, 1, -1 and infinity (F(2x2)).
_G = {4: np.array([[1 / 4, 0, 0],
                   [-1 / 6, -1 / 6, -1 / 6],
                   [-1 / 6, 1 / 6, -1 / 6],
                   [1 / 24, 1 / 12, 1 / 6],
                   [1 / 24, -1 / 12, 1 / 6],
                   [0, 0, 1]]),
      2: np.array([[1, 0, 0],
                   [1 / 2, 1 / 2, 1 / 2],
                   [1 / 2, -1 / 2, 1 / 2],
                   [0, 0, 1]])}
TILES = tuple(_G)   # the output tile sides wino_conv computes

WINOGRAD_CHANNELS = 16   # channel counts must be multiples of this (VL in winograd.c)
WINOGRAD_POST_OPS = ("relu", "clip")


def winograd_weights(w: np.ndarray, tile: int = 4) -> np.ndarray:
    """3x3 weights ``(O, C, 3, 3)`` in the domain of F(tile x tile, 3x3),
    ``(a * a, C, O)`` with ``a = tile + 2``: entry ``[a * i + j, c, o]`` is
    ``(G w[o, c] G^T)[i, j]``."""
    g = _G[tile]
    u = np.einsum("ik,ockl,jl->ijco", g, w.astype(np.float64), g)
    return u.reshape(len(g) ** 2, w.shape[1], w.shape[0]).astype(FLOAT32)


def winograd_supports(src_shape: Sequence[int], weight_shape: Sequence[int], *,
                      stride=None, dilate=None, num_group: int = 1,
                      post_ops: Sequence[PostOp] = ()) -> bool:
    """Whether ``wino_conv`` can run this convolution: 2-D, 3x3, stride 1,
    dense, ungrouped, channels multiples of 16, post-ops
    ``[relu|clip] [sum [relu|clip]]``."""
    if len(src_shape) != 4 or len(weight_shape) != 4:
        return False
    # The post-op chain as a word: "a" an activation the transform applies, "s" a sum.
    chain = "".join("s" if op.kind == "sum" else "a" if op.alg in WINOGRAD_POST_OPS else "?"
                    for op in post_ops)
    return (tuple(weight_shape[2:]) == (3, 3) and num_group == 1
            and spatial_param(stride, 2, 1, "stride", 1) == (1, 1)
            and spatial_param(dilate, 2, 1, "dilate", 1) == (1, 1)
            and src_shape[1] % WINOGRAD_CHANNELS == 0
            and weight_shape[0] % WINOGRAD_CHANNELS == 0
            and re.fullmatch("a?(sa?)?", chain) is not None)


def wino_conv(src_shape: Sequence[int], weight_shape: Sequence[int], *, pad=None,
              bias: bool = False, post_ops: Sequence[PostOp] = (), tile: int = 4
              ) -> Primitive:
    """A 3x3, stride-1 convolution (MXNet weights ``(O, C, 3, 3)``) computed by
    Winograd F(tile x tile, 3x3), ``tile`` 4 or 2: 4x or 2.25x fewer
    multiplications than ``conv``, with fp32 rounding errors a few times
    larger (F(2x2)'s less so). src and dst are NHWC (``acdb``); the weights
    argument takes MXNet's weights (``constant`` transforms them). See
    ``winograd_supports``. Arguments: src, weights, [bias], dst."""
    src = as_dims(src_shape, "wino_conv src")
    w = as_dims(weight_shape, "wino_conv weights")
    if not winograd_supports(src, w, post_ops=post_ops) or w[1] != src[1]:
        raise BackendError(f"wino_conv: data {src}, weights {w} and post-ops "
                           f"{[op.alg or op.kind for op in post_ops]} are not a Winograd "
                           "case (see winograd_supports)")
    if tile not in TILES:
        raise BackendError(f"wino_conv: tile {tile!r} is not one of {TILES}")
    p = spatial_param(pad, 2, 0, "wino_conv pad", 0)
    if any(2 * pp + x < 3 for pp, x in zip(p, src[2:], strict=True)):
        raise BackendError(f"wino_conv: 3x3 kernel is larger than the padded input {src}")
    out = [x + 2 * pp - 2 for x, pp in zip(src[2:], p, strict=True)]
    return build_primitive(
        "wino_conv", f"src {src} weights {w} pad {p} tile {tile}",
        native().lib.mmx_wino_conv_init, list(src), w[0], list(p), list(p), tile, int(bias),
        *post_op_args(post_ops, (src[0], w[0], *out), "wino_conv", nan_safe=True),
        post_ops=post_ops, user={"weights": (w, lambda a: winograd_weights(a, tile))})
