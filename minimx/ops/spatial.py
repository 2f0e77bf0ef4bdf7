"""Spatial transformer operators: GridGenerator, BilinearSampler and
SpatialTransformer, as MXNet 1.9.1's src/operator/grid_generator-inl.h,
bilinear_sampler.cc and spatial_transformer.cc compute them on the CPU.

A sampling grid holds, for every output pixel, the source position (x, y)
normalised to [-1, 1] over the input's width and height. Bilinear sampling
reads the four pixels around each position; pixels outside the image count as
zero. SpatialTransformer is an affine GridGenerator followed by
BilinearSampler in one operator. The hidden outputs are MXNet's (they count in
a model file's outputs): the target grid, the source grid, a scratch buffer.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, merge, merge_at
from .registry import GradReads, OpDef, Param, Params, register

Array = np.ndarray


def _check_ndim(what: str, name: str, shape: Dims, ndim: int) -> None:
    if len(shape) != ndim:
        raise ShapeError(f"{what}: {name} must be {ndim}-D, got {shape}")


def _target(what: str, p: Params) -> tuple[int, int]:
    """target_shape as (height, width); both must be positive."""
    if len(p.target_shape) != 2 or min(p.target_shape) <= 0:
        raise OperatorError(f"{what}: target_shape={p.target_shape} must be two positive "
                            "sizes (height, width)")
    return p.target_shape


def _affine_grid(h: int, w: int, dtype: np.dtype) -> Array:
    """(3, h*w): the target positions (x, y, 1), row-major, normalised to [-1, 1].
    A size of 1 divides by zero and gives NaN, as MXNet's."""
    index = np.arange(h * w)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = -1.0 + (index % w) * 2.0 / np.float64(w - 1)
        y = -1.0 + (index // w) * 2.0 / np.float64(h - 1)
    return np.stack([x, y, np.ones(h * w)]).astype(dtype)


# -- bilinear sampling (shared by BilinearSampler and SpatialTransformer) --------------------

def _corners(grid: Array, h: int, w: int) -> tuple[list, Array, Array]:
    """For a (N, 2, Ho, Wo) grid over an h x w image: the four corners around each
    position as (flat index into the image, weight, in-image mask), each (N, Ho, Wo),
    and the top-left weights along y and x. Positions and weights are computed in the
    grid's dtype, as MXNet's kernel does."""
    x = (grid[:, 0] + 1) * (w - 1) / 2
    y = (grid[:, 1] + 1) * (h - 1) / 2
    with np.errstate(invalid="ignore"):
        # Clipping before the cast keeps huge positions (all four corners outside) integral.
        x0 = np.clip(np.floor(x), -2, w).astype(np.int64)
        y0 = np.clip(np.floor(y), -2, h).astype(np.int64)
    # The weights of the top-left corner, rounded to the grid's dtype as MXNet's; the
    # other weights (1 - these) are exact in float64, as MXNet computes them.
    wx = (1 - (x - np.floor(x))).astype(np.float64)
    wy = (1 - (y - np.floor(y))).astype(np.float64)
    corners = []
    for dy, weight_y in ((0, wy), (1, 1 - wy)):
        for dx, weight_x in ((0, wx), (1, 1 - wx)):
            yy, xx = y0 + dy, x0 + dx
            inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            flat = np.clip(yy, 0, h - 1) * w + np.clip(xx, 0, w - 1)
            corners.append((flat, weight_y * weight_x, inside))
    return corners, wy, wx


def _corner_values(data: Array, flat: Array, inside: Array) -> Array:
    """(N, C, Ho, Wo): the data at one corner of every position, 0 outside the image."""
    n, c = data.shape[:2]
    values = data.reshape(n, c, -1)[np.arange(n)[:, None, None], :, flat]  # (N, Ho, Wo, C)
    return np.moveaxis(values, -1, 1) * inside[:, None]


def bilinear_sample(data: Array, grid: Array) -> Array:
    """(N, C, Ho, Wo): `data` (N, C, H, W) sampled at `grid` (N, 2, Ho, Wo), zero
    outside the image."""
    corners, _, _ = _corners(grid, *data.shape[2:])
    out = sum(_corner_values(data, flat, inside) * weight[:, None]
              for flat, weight, inside in corners)
    return np.asarray(out).astype(data.dtype)


def bilinear_sample_grads(data: Array, grid: Array, grad: Array) -> tuple[Array, Array]:
    """The gradients of `bilinear_sample` with respect to data and grid, given the
    output gradient `grad` (N, C, Ho, Wo)."""
    n, c, h, w = data.shape
    corners, wy, wx = _corners(grid, h, w)
    # Each output pixel adds grad * weight to the in-image corners it read; the others
    # add nothing, even with a NaN weight (a NaN position), as MXNet skips them.
    flat = np.stack([f for f, _, _ in corners])                        # (4, N, Ho, Wo)
    weight = np.stack([np.where(m, wt, 0) for _, wt, m in corners])[:, :, None] * grad[None]
    image = (np.arange(n)[:, None] * c + np.arange(c))[None, :, :, None, None] * (h * w)
    gdata = np.bincount((image + flat[:, :, None]).ravel(), weight.ravel(),
                        minlength=n * c * h * w).reshape(data.shape)
    tl, tr, bl, br = (_corner_values(data, f, m) for f, _, m in corners)
    cross = tl - tr - bl + br
    # d(out)/d(y) and d(out)/d(x) per channel, summed against the gradient.
    gy = -(grad * (tr - br + cross * wx[:, None])).sum(axis=1) * (h - 1) / 2
    gx = -(grad * (bl - br + cross * wy[:, None])).sum(axis=1) * (w - 1) / 2
    return gdata.astype(data.dtype), np.stack([gx, gy], axis=1).astype(grid.dtype)


# -- GridGenerator ------------------------------------------------------------------------------

def _grid_shape(p, in_shapes, out_shapes):
    dshape = in_shapes[0]
    if dshape is None:
        return in_shapes, out_shapes
    if p.transform_type == "affine":
        h, w = _target("GridGenerator", p)
        _check_ndim("GridGenerator", "an affine data (batch, 6)", dshape, 2)
        if dshape[1] not in (0, 6):
            raise ShapeError(f"GridGenerator: affine data must be (batch, 6), got {dshape}")
        shapes = [(dshape[0], 2, h, w), (3, h * w)]
    else:
        _check_ndim("GridGenerator", "a warp flow (batch, 2, h, w)", dshape, 4)
        if dshape[1] not in (0, 2):
            raise ShapeError(f"GridGenerator: warp flow must be (batch, 2, h, w), got {dshape}")
        shapes = [dshape, (2, *dshape[2:])]
    return in_shapes, [merge(o, s) for o, s in zip(out_shapes, shapes, strict=True)]


def _warp_scale(h: int, w: int, dtype: np.dtype) -> Array:
    """(1, 2, 1, 1): half the width and height less one, pixels per normalised unit."""
    return np.array([(w - 1) / 2, (h - 1) / 2], dtype).reshape(1, 2, 1, 1)


def _grid_forward(p, ctx, inputs):
    data = inputs[0]
    _grid_shape(p, [data.shape], [None, None])
    if p.transform_type == "affine":
        h, w = p.target_shape
        grid_dst = _affine_grid(h, w, data.dtype)
        out = data.reshape(-1, 2, 3) @ grid_dst
        return [out.reshape(len(data), 2, h, w), grid_dst]
    h, w = data.shape[2:]
    grid_dst = np.stack(np.meshgrid(np.arange(w), np.arange(h))).astype(data.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):  # a 1-pixel side: inf, as MXNet
        out = (data + grid_dst) / _warp_scale(h, w, data.dtype) - 1
    return [out.astype(data.dtype), grid_dst]


def _grid_backward(p, ctx, inputs, outputs, out_grads):
    g = out_grads[0]
    if p.transform_type == "affine":
        grid_dst = outputs[1]
        return [(g.reshape(len(g), 2, -1) @ grid_dst.T).reshape(inputs[0].shape)]
    with np.errstate(divide="ignore", invalid="ignore"):
        return [(g / _warp_scale(*g.shape[2:], g.dtype)).astype(g.dtype)]


register(OpDef(
    name="GridGenerator", outputs=("output", "grid_dst"), visible_outputs=lambda p: 1,
    doc="Generates a 2-D sampling grid for BilinearSampler: from affine matrices "
        "(batch, 6) or from optical flows (batch, 2, h, w).",
    params=(Param("transform_type", "str", doc="The type of transformation: affine "
                  "(data: affine matrices (batch, 6)) or warp (data: optical flows "
                  "(batch, 2, h, w)).", choices=("affine", "warp")),
            Param("target_shape", "shape", (0, 0), "The output (H, W), required by affine "
                  "and ignored by warp.")),
    forward=_grid_forward, backward=_grid_backward,
    backward_reads=lambda p: GradReads(
        outputs=("grid_dst",) if p.transform_type == "affine" else ()),
    infer_shape=_grid_shape, bfloat16="refuse",
))


# -- BilinearSampler ----------------------------------------------------------------------------

def _sampler_shape(p, in_shapes, out_shapes):
    dshape, gshape = in_shapes
    if dshape is None or gshape is None:
        return in_shapes, out_shapes
    _check_ndim("BilinearSampler", "data (batch, channels, h, w)", dshape, 4)
    _check_ndim("BilinearSampler", "grid (batch, 2, h, w)", gshape, 4)
    if gshape[1] not in (0, 2):
        raise ShapeError(f"BilinearSampler: grid must be (batch, 2, h, w), got {gshape}")
    ins = list(in_shapes)
    merge_at(ins, 1, (dshape[0], 2, *gshape[2:]), "BilinearSampler: data and grid batches")
    n, (ho, wo) = ins[1][0], gshape[2:]
    ins[0] = (n, *dshape[1:])
    return ins, [merge(out_shapes[0], (n, dshape[1], ho, wo)),
                 merge(out_shapes[1], (n, ho, wo, 2))]


def _sampler_forward(p, ctx, inputs):
    data, grid = inputs
    _sampler_shape(p, [data.shape, grid.shape], [None, None])
    n, _, ho, wo = grid.shape
    # MXNet's CPU kernel never writes its scratch output.
    return [bilinear_sample(data, grid), np.zeros((n, ho, wo, 2), data.dtype)]


def _sampler_backward(p, ctx, inputs, outputs, out_grads):
    return list(bilinear_sample_grads(*inputs, out_grads[0]))


register(OpDef(
    name="BilinearSampler", inputs=("data", "grid"), outputs=("output", "tmp"),
    visible_outputs=lambda p: 1,
    doc="Samples (N, C, H, W) data bilinearly at a grid (N, 2, Ho, Wo) of source "
        "positions (x, y) normalised to [-1, 1]; positions outside the image read zeros.",
    params=(Param("cudnn_off", "bool", None, "whether to turn cudnn off (no effect on the "
                  "CPU)"),),
    forward=_sampler_forward, backward=_sampler_backward,
    backward_reads=GradReads(inputs=("data", "grid")),
    infer_shape=_sampler_shape, bfloat16="refuse",
))


# -- SpatialTransformer -------------------------------------------------------------------------

def _transformer_shape(p, in_shapes, out_shapes):
    h, w = _target("SpatialTransformer", p)
    dshape, lshape = in_shapes
    if dshape is None or lshape is None:
        return in_shapes, out_shapes
    _check_ndim("SpatialTransformer", "data (batch, channels, h, w)", dshape, 4)
    _check_ndim("SpatialTransformer", "loc (batch, 6)", lshape, 2)
    ins = list(in_shapes)
    merge_at(ins, 1, (dshape[0], 6), "SpatialTransformer: loc must be (batch, 6)")
    n = ins[1][0]
    ins[0] = (n, *dshape[1:])
    shapes = [(n, dshape[1], h, w), (3, h * w), (n, 2, h * w)]
    return ins, [merge(o, s) for o, s in zip(out_shapes, shapes, strict=True)]


def _transformer_forward(p, ctx, inputs):
    data, loc = inputs
    _transformer_shape(p, [data.shape, loc.shape], [None] * 3)
    h, w = p.target_shape
    grid_dst = _affine_grid(h, w, data.dtype)
    grid_src = (loc.reshape(-1, 2, 3) @ grid_dst).astype(data.dtype)
    out = bilinear_sample(data, grid_src.reshape(len(data), 2, h, w))
    return [out, grid_dst, grid_src]


def _transformer_backward(p, ctx, inputs, outputs, out_grads):
    data, loc = inputs
    _, grid_dst, grid_src = outputs
    g = out_grads[0]
    gdata, ggrid = bilinear_sample_grads(data, grid_src.reshape(len(g), 2, *g.shape[2:]), g)
    gloc = ggrid.reshape(len(g), 2, -1) @ grid_dst.T
    return [gdata, gloc.reshape(loc.shape).astype(loc.dtype)]


register(OpDef(
    name="SpatialTransformer", inputs=("data", "loc"),
    outputs=("output", "grid_dst", "grid_src"), visible_outputs=lambda p: 1,
    doc="Applies a spatial transformer to (N, C, H, W) data: the affine maps `loc` "
        "(N, 6) give each output pixel's source position, sampled bilinearly.",
    params=(Param("target_shape", "shape", (0, 0), "output shape(h, w) of spatial "
                  "transformer: (y, x)"),
            Param("transform_type", "str", doc="transformation type", choices=("affine",)),
            Param("sampler_type", "str", doc="sampling type", choices=("bilinear",)),
            Param("cudnn_off", "bool", None, "whether to turn cudnn off (no effect on the "
                  "CPU)")),
    forward=_transformer_forward, backward=_transformer_backward,
    backward_reads=GradReads(inputs=("data",), outputs=("grid_dst", "grid_src")),
    infer_shape=_transformer_shape, bfloat16="refuse",
))
