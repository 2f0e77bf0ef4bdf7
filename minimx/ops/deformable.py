"""Deformable convolutions (MXNet 1.9.1's _contrib_DeformableConvolution and DCNv2's
_contrib_ModulatedDeformableConvolution), as src/operator/contrib/nn/deformable_im2col.h and
modulated_deformable_im2col.h compute them on the CPU.

Each output pixel's kernel tap k reads the data at its usual place moved by an offset
(offset channels ``(group, k, [dy, dx])``), bilinearly; DCNv2 then scales the sample by a
mask (channels ``(group, k)``). The deformable groups split the data's channels, each
group with its own offsets. The sampled columns are laid out as Convolution's
``(C, K, N, out)`` so that the product with the weight (and its gradients) is
`conv.py`'s grouped GEMM. Only the kernel taps are looped over.

The two operators differ in where a sample counts, exactly as MXNet's CPU kernels:
- DeformableConvolution samples only points in ``[0, H) x [0, W)``; a point in the last
  row or column reads that row or column (no interpolation towards the outside).
- ModulatedDeformableConvolution samples points in ``(-1, H) x (-1, W)``; corners outside
  the image count as 0. MXNet 1.9.1 has no CPU backward for it ("only implemented in
  GPU"); minimx's is the exact gradient of this forward, as MXNet's GPU kernel computes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

from ..base import OperatorError, ShapeError
from .bias import with_bias_grad
from .conv import KERNEL_PARAMS, batch_chunks, conv_window, grouped, ungrouped
from .infer import merge_at
from .registry import GradReads, OpContext, OpDef, Param, Params, register
from .window import Window

Array = np.ndarray


@dataclass(frozen=True)
class _Corners:
    """The four bilinear corners of every sample point of one kernel tap, each array
    (4, N, G, P) for N images, G deformable groups and P output pixels: flat index into
    an image plane, the corner's weight, and that weight's derivatives along y and x
    (all zero where the corner is not read)."""

    flat: Array
    weight: Array
    d_y: Array
    d_x: Array


def _axis(pos: Array, size: int, modulated: bool) -> tuple[Array, Array, Array, Array]:
    """Along one axis: the (low, high) index clipped to the image and whether each is read
    (both (2, ...)), the fraction towards high and its derivative by the position."""
    t = pos.dtype.type
    inside = (pos > -1) & (pos < size) if modulated else (pos >= 0) & (pos < size)
    low = np.floor(np.where(inside, pos, 0)).astype(np.int64)
    if modulated:
        frac, slope, high = pos - low.astype(pos.dtype), np.ones_like(pos), low + 1
    else:
        # MXNet snaps a point past the last row onto it: both corners are that row.
        last = low >= size - 1
        frac = np.where(last, t(0), pos - low.astype(pos.dtype))
        slope = np.where(last, t(0), t(1))
        high = np.where(last, low, low + 1)
    read = np.stack([(low >= 0) & (low < size), (high >= 0) & (high < size)]) & inside
    return np.stack([np.clip(low, 0, size - 1), np.clip(high, 0, size - 1)]), read, frac, slope


def _corners(y: Array, x: Array, height: int, width: int, modulated: bool) -> _Corners:
    iy, vy, fy, sy = _axis(y, height, modulated)
    ix, vx, fx, sx = _axis(x, width, modulated)
    one = y.dtype.type(1)
    wy, dwy = np.stack([one - fy, fy]), np.stack([-sy, sy])
    wx, dwx = np.stack([one - fx, fx]), np.stack([-sx, sx])
    pairs = [(a, b) for a in (0, 1) for b in (0, 1)]
    valid = np.stack([vy[a] & vx[b] for a, b in pairs])
    return _Corners(
        flat=np.stack([iy[a] * width + ix[b] for a, b in pairs]),
        weight=np.stack([wy[a] * wx[b] for a, b in pairs]) * valid,
        d_y=np.stack([dwy[a] * wx[b] for a, b in pairs]) * valid,
        d_x=np.stack([wy[a] * dwx[b] for a, b in pairs]) * valid,
    )


class _Geometry:
    """One call's shapes: the data as (N, G, C/G, H*W) planes and the sample points of
    each kernel tap, from the offsets (N, G*K*2, Ho, Wo)."""

    def __init__(self, p: Params, data: Array, offset: Array, modulated: bool) -> None:
        self.win: Window = _window(p, _op_name(modulated))
        n, c, self.height, self.width = data.shape
        self.groups = p.num_deformable_group
        self.out = tuple(offset.shape[2:])
        self.taps = prod(self.win.kernel)
        self.modulated = modulated
        self.planes = data.reshape(n, self.groups, c // self.groups, -1)
        self.offset = offset.reshape(n, self.groups, self.taps, 2, -1)

    def corners(self, k: int) -> _Corners:
        """Kernel tap k's corners: its base point on the output grid moved by its offset."""
        i, j = divmod(k, self.win.kernel[1])
        dtype = self.offset.dtype
        rows = (np.arange(self.out[0]) * self.win.stride[0] - self.win.pad[0]
                + i * self.win.dilate[0]).astype(dtype)
        cols = (np.arange(self.out[1]) * self.win.stride[1] - self.win.pad[1]
                + j * self.win.dilate[1]).astype(dtype)
        base_y = np.repeat(rows, self.out[1])
        base_x = np.tile(cols, self.out[0])
        y = base_y + self.offset[:, :, k, 0]
        x = base_x + self.offset[:, :, k, 1]
        return _corners(y, x, self.height, self.width, self.modulated)

    def values(self, c: _Corners) -> Array:
        """(4, N, G, C/G, P): the data at each corner."""
        return np.stack([np.take_along_axis(self.planes, f[:, :, None], axis=3) for f in c.flat])


def _as_columns(taps: list[Array], n: int) -> Array:
    """Per-tap samples (N, G, C/G, P) -> Convolution's column layout (C, K, N, P)."""
    stacked = np.stack(taps, axis=1)                   # (N, K, G, C/G, P)
    return np.ascontiguousarray(stacked.reshape(n, len(taps), -1, stacked.shape[-1])
                                .transpose(2, 1, 0, 3))


def _sample(geo: _Geometry, mask: Array | None) -> Array:
    """The deformable im2col: columns (C, K, N, P), masked when DCNv2."""
    taps = []
    for k in range(geo.taps):
        c = geo.corners(k)
        sampled = (c.weight[:, :, :, None] * geo.values(c)).sum(axis=0)
        taps.append(sampled if mask is None else sampled * mask[:, :, k, None])
    return _as_columns(taps, geo.planes.shape[0])


def _sample_grads(geo: _Geometry, dcols: Array, mask: Array | None
                  ) -> tuple[Array, Array, Array | None]:
    """Gradients of `_sample` for column gradients (C, K, N, P): data, offset, mask."""
    n, groups, per_group, plane = geo.planes.shape
    ddata = np.zeros(geo.planes.size, np.float64)
    doffset = np.zeros(geo.offset.shape, dcols.dtype)
    dmask = None if mask is None else np.zeros(mask.shape, dcols.dtype)
    # Where each (image, group, channel) plane starts in the flat data.
    starts = (np.arange(n * groups * per_group) * plane).reshape(n, groups, per_group, 1)
    for k in range(geo.taps):
        c = geo.corners(k)
        values = geo.values(c)
        grad = dcols[:, k].reshape(groups, per_group, n, -1).transpose(2, 0, 1, 3)
        if mask is not None and dmask is not None:
            dmask[:, :, k] = (grad * (c.weight[:, :, :, None] * values).sum(axis=0)).sum(2)
            grad = grad * mask[:, :, k, None]
        doffset[:, :, k, 0] = (grad * (c.d_y[:, :, :, None] * values).sum(axis=0)).sum(2)
        doffset[:, :, k, 1] = (grad * (c.d_x[:, :, :, None] * values).sum(axis=0)).sum(2)
        ddata += np.bincount((starts + c.flat[:, :, :, None]).ravel(),
                             (c.weight[:, :, :, None] * grad).ravel(), minlength=ddata.size)
    return ddata.astype(dcols.dtype).reshape(n, -1, geo.height, geo.width), doffset, dmask


# -- the operators ------------------------------------------------------------------------------

def _op_name(modulated: bool) -> str:
    return "ModulatedDeformableConvolution" if modulated else "DeformableConvolution"


def _window(p: Params, op: str) -> Window:
    """Convolution's checks, and MXNet's: only 2-D kernels are implemented."""
    if len(p.kernel) != 2:
        raise OperatorError(f"{op}: kernel={p.kernel} must be 2-D (h, w)")
    return conv_window(p, op, 2)

def _inputs(modulated: bool):
    def names(p: Params) -> tuple[str, ...]:
        head = ("data", "offset", "mask", "weight") if modulated else ("data", "offset", "weight")
        return head if p.no_bias else (*head, "bias")
    return names


def _infer_shape(modulated: bool):
    op = _op_name(modulated)

    def infer(p: Params, in_shapes: list, out_shapes: list):
        win = _window(p, op)
        ins, outs = list(in_shapes), list(out_shapes)
        if ins[0] is None:
            return ins, outs
        if len(ins[0]) != 4:
            raise ShapeError(f"{op}: data must be 4-D (batch, channel, height, width), got "
                             f"{ins[0]}")
        n, c, height, width = ins[0]
        dg = p.num_deformable_group
        if dg < 1 or (c and c % dg) or (c and c % p.num_group):
            raise ShapeError(f"{op}: data channels {c} must divide into num_group="
                             f"{p.num_group} and num_deformable_group={dg}")
        if modulated and p.num_filter % dg:
            raise ShapeError(f"{op}: num_filter={p.num_filter} must divide into "
                             f"num_deformable_group={dg}")
        if modulated and n > p.im2col_step and n % p.im2col_step:
            raise ShapeError(f"{op}: batch size {n} must be at most or a multiple of "
                             f"im2col_step={p.im2col_step}")
        for i, s in enumerate((height, width)):
            if s and win.span(i) > s + 2 * win.pad[i]:
                raise ShapeError(f"{op}: dilated kernel size {win.span(i)} exceeds input "
                                 f"size {s} padded to {s + 2 * win.pad[i]} (data {ins[0]})")
        out = tuple(win.out_size(s, i) if s else 0 for i, s in enumerate((height, width)))
        taps = prod(win.kernel)
        merge_at(ins, 1, (n, dg * taps * 2, *out), "offset")
        weight = 3 if modulated else 2
        if modulated:
            merge_at(ins, 2, (n, dg * taps, *out), "mask")
        merge_at(ins, weight, (p.num_filter, c // p.num_group, *win.kernel), "weight")
        if not p.no_bias:
            merge_at(ins, weight + 1, (p.num_filter,), "bias")
        merge_at(outs, 0, (n, p.num_filter, *out), "output")
        return ins, outs
    return infer


def _split(p: Params, inputs: list, modulated: bool):
    """(data, offset, mask or None, weight, bias or None)."""
    mask = inputs[2] if modulated else None
    rest = inputs[3:] if modulated else inputs[2:]
    return inputs[0], inputs[1], mask, rest[0], None if p.no_bias else rest[1]


def _chunks(p: Params, data: Array, geo_out: tuple[int, ...]) -> list[slice]:
    """Batches whose columns fit in `workspace` MB (MXNet's meaning of it off cuDNN)."""
    per_sample = data.shape[1] * prod(p.kernel) * prod(geo_out) * data.itemsize
    return batch_chunks(data.shape[0], per_sample, p.workspace)


def _forward(modulated: bool):
    def forward(p: Params, ctx: OpContext, inputs: list) -> Array:
        data, offset, mask, weight, bias = _split(p, inputs, modulated)
        out = tuple(offset.shape[2:])
        y = np.empty((data.shape[0], p.num_filter, *out), data.dtype)
        wg = weight.reshape(p.num_group, p.num_filter // p.num_group, -1)
        for b in _chunks(p, data, out):
            geo = _Geometry(p, data[b], offset[b], modulated)
            cols = _sample(geo, None if mask is None else _group_mask(geo, mask[b]))
            cols = cols.reshape(p.num_group, -1, cols.shape[2] * cols.shape[3])
            y[b] = ungrouped(np.matmul(wg, cols), geo.planes.shape[0], out)
        if bias is not None:
            y += bias.reshape(1, -1, 1, 1)
        return y
    return forward


def _group_mask(geo: _Geometry, mask: Array) -> Array:
    return mask.reshape(mask.shape[0], geo.groups, geo.taps, -1)


def _backward(modulated: bool):
    def backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                 out_grads: list) -> list:
        data, offset, mask, weight, _ = _split(p, inputs, modulated)
        dy = out_grads[0]
        out = tuple(offset.shape[2:])
        wt = weight.reshape(p.num_group, p.num_filter // p.num_group, -1).transpose(0, 2, 1)
        grads = [np.empty(data.shape, dy.dtype), np.empty(offset.shape, dy.dtype)]
        if mask is not None:
            grads.append(np.empty(mask.shape, dy.dtype))
        dw = np.zeros((p.num_group, p.num_filter // p.num_group, wt.shape[1]), dy.dtype)
        for b in _chunks(p, data, out):
            geo = _Geometry(p, data[b], offset[b], modulated)
            gmask = None if mask is None else _group_mask(geo, mask[b])
            cols = _sample(geo, gmask)
            dyg = grouped(dy[b], p.num_group)
            dw += np.matmul(dyg, cols.reshape(p.num_group, -1, dyg.shape[2]).transpose(0, 2, 1))
            dcols = np.matmul(wt, dyg).reshape(cols.shape)
            ddata, doffset, dmask = _sample_grads(geo, dcols, gmask)
            grads[0][b], grads[1][b] = ddata, doffset.reshape(grads[1][b].shape)
            if dmask is not None:
                grads[2][b] = dmask.reshape(grads[2][b].shape)
        return with_bias_grad(p, [*grads, dw.reshape(weight.shape)], dy)
    return backward


def _params(modulated: bool) -> tuple[Param, ...]:
    extra = (Param("im2col_step", "int", 64, "Maximum number of images per im2col "
                   "computation; the batch size must be at most or divisible by it."),
             ) if modulated else ()
    return KERNEL_PARAMS + (
        Param("num_filter", "int", doc="Convolution filter(channel) number"),
        Param("num_group", "int", 1, "Number of group partitions."),
        Param("num_deformable_group", "int", 1, "Number of deformable group partitions."),
        Param("workspace", "int", 1024, "Maximum temperal workspace allowed for convolution "
              "(MB); bounds the number of images per im2col batch."),
        Param("no_bias", "bool", False, "Whether to disable bias parameter."),
        *extra,
        Param("layout", "str", None, "Only NCHW (the default).",
              choices=("NCW", "NCHW", "NCDHW")),
    )


for _name, _modulated, _doc in (
    ("_contrib_DeformableConvolution", False,
     """Compute 2-D deformable convolution on 4-D input (https://arxiv.org/abs/1703.06211).

    data (batch, channel, height, width), offset (batch, num_deformable_group * kh * kw
    * 2, out_height, out_width), weight (num_filter, channel/num_group, kh, kw),
    bias (num_filter,). Samples outside the image read 0."""),
    ("_contrib_ModulatedDeformableConvolution", True,
     """Compute 2-D modulated deformable convolution (DCNv2, https://arxiv.org/abs/1811.11168).

    As _contrib_DeformableConvolution, with a mask (batch, num_deformable_group * kh * kw,
    out_height, out_width) scaling each sample; corners outside the image read 0."""),
):
    register(OpDef(
        name=_name,
        forward=_forward(_modulated),
        backward=_backward(_modulated),
        backward_reads=GradReads(("data", "offset", "mask", "weight") if _modulated
                                 else ("data", "offset", "weight")),
        params=_params(_modulated),
        inputs=_inputs(_modulated),
        infer_shape=_infer_shape(_modulated),
        bfloat16="refuse",
        doc=_doc,
    ))
