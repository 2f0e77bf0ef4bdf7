"""Deformable position-sensitive ROI pooling (Deformable ConvNets' R-FCN head):
_contrib_DeformablePSROIPooling, as MXNet 1.9.1's CPU kernel
(src/operator/contrib/deformable_psroi_pooling.cc).

Output bin (ph, pw) of channel d averages `sample_per_part`^2 bilinear samples of input
channel (d * group + gh) * group + gw over the bin, the bin shifted by trans (one (x, y)
offset per class and part cell, times trans_std and the roi's size). Samples outside
[-0.5, size - 0.5] are skipped; the others clamp to the map. The hidden output top_count
holds how many samples each bin averaged; backward divides by it.
Every roi, bin and sample is one numpy array axis, so both passes are vectorized.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, merge
from .registry import GradReads, OpDef, Param, Params, register
from .roi import (
    PS_OUTPUT_DIM,
    PS_POOLED_SIZE,
    PS_SCALE,
    _check_ps,
    _roi_batches,
    _round_half_away_array,
)

Array = np.ndarray
WHAT = "DeformablePSROIPooling"


def _part(p: Params) -> int:
    return p.part_size or p.pooled_size  # MXNet's Init: 0 means pooled_size


def _check_trans(p: Params, tshape: Dims | None, num_rois: int | None) -> None:
    """trans is (num_rois, 2 * classes, part_size, part_size), output_dim a multiple of
    classes: MXNet only checks it is 4-D, then indexes it as if it were this."""
    if tshape is None:
        return
    part = _part(p)
    if (len(tshape) != 4 or tshape[1] <= 0 or tshape[1] % 2 or p.output_dim % (tshape[1] // 2)
            or tshape[2:] != (part, part) or num_rois not in (None, tshape[0])):
        raise ShapeError(f"{WHAT}: trans should be (num_rois={num_rois}, 2 * classes, "
                         f"part_size={part}, part_size) with output_dim={p.output_dim} a "
                         f"multiple of classes, got {tshape}")


def _shape(p, in_shapes, out_shapes):
    dshape, rshape = in_shapes[:2]
    _check_ps(WHAT, p, dshape, rshape)
    if p.group_size <= 0 or p.sample_per_part <= 0 or p.part_size < 0:
        raise OperatorError(f"group_size ({p.group_size}) and sample_per_part "
                            f"({p.sample_per_part}) must be positive, part_size "
                            f"({p.part_size}) not negative")
    if not 0 <= p.trans_std <= 1:
        raise OperatorError(f"trans_std={p.trans_std} exceeds the bound [0, 1]")
    if not p.no_trans:
        _check_trans(p, in_shapes[2], None if rshape is None else rshape[0])
    if rshape is None:
        return in_shapes, out_shapes
    oshape = (rshape[0], p.output_dim, p.pooled_size, p.pooled_size)
    return in_shapes, [merge(o, oshape) for o in out_shapes]


@dataclass
class _Samples:
    """Every sample, with axes (roi, output channel, bin row, bin column, sample row,
    sample column): where it reads (image, channel, the corners' rows and columns), its
    bilinear fractions and whether it counts; per roi the (width, height) it spans; per
    bin the trans entries it reads (class, part row, part column)."""

    batch: Array
    channel: Array
    y0: Array
    y1: Array
    x0: Array
    x1: Array
    dy: Array
    dx: Array
    valid: Array
    roi_size: Array
    trans_at: tuple[Array, Array, Array]


def _samples(p: Params, data: Array, rois: Array, trans: Array | None) -> _Samples:
    """MXNet's arithmetic, in the data's dtype and order of operations."""
    dtype = data.dtype
    t, size, group, part, spp = dtype.type, p.pooled_size, p.group_size, _part(p), \
        p.sample_per_part
    height, width = data.shape[2:]
    batch = _roi_batches(p, rois, data.shape[0])
    scale = t(np.float32(p.spatial_scale))
    corners = _round_half_away_array(rois[:, 1:5])
    start = corners[:, :2].astype(dtype) * scale - t(0.5)              # (R, xy)
    end = (corners[:, 2:] + 1).astype(dtype) * scale - t(0.5)
    roi_size = np.maximum(end - start, t(0.1))
    bin_size = roi_size / t(size)
    sub_size = bin_size / t(spp)
    steps = np.arange(size, dtype=dtype)
    part_cell = np.floor(steps / t(size) * t(part)).astype(np.int64)   # (P,)
    group_cell = np.clip(np.floor(steps * t(group) / t(size)).astype(np.int64), 0, group - 1)
    classes = 1 if trans is None else trans.shape[1] // 2
    klass = np.arange(p.output_dim) // (p.output_dim // classes)        # (D,)
    trans_at = (klass[:, None, None], part_cell[:, None], part_cell[None, :])
    # (R, D, P, P) bin origins, then shifted by trans
    x = (steps * bin_size[:, :1] + start[:, :1])[:, None, None, :]
    y = (steps * bin_size[:, 1:] + start[:, 1:])[:, None, :, None]
    if trans is not None:
        std = t(np.float32(p.trans_std))
        rows = np.arange(len(rois))[:, None, None, None]
        klass_x, part_h, part_w = 2 * trans_at[0], trans_at[1], trans_at[2]
        x = x + trans[rows, klass_x, part_h, part_w] * std * roi_size[:, :1, None, None]
        y = y + trans[rows, klass_x + 1, part_h, part_w] * std * roi_size[:, 1:, None, None]
    sub = np.arange(spp, dtype=dtype)
    x = x[..., None, None] + sub * sub_size[:, 0, None, None, None, None, None]
    y = y[..., None, None] + sub[:, None] * sub_size[:, 1, None, None, None, None, None]
    valid = (x >= -0.5) & (x <= width - 0.5) & (y >= -0.5) & (y <= height - 0.5)
    # Without trans the positions do not depend on the channel: counts need that axis
    valid = np.broadcast_to(valid, (len(rois), p.output_dim, size, size, spp, spp))
    x = np.clip(x, t(0), t(width - 1))
    y = np.clip(y, t(0), t(height - 1))
    x0, y0 = np.floor(x), np.floor(y)
    channel = (np.arange(p.output_dim)[:, None, None] * group + group_cell[:, None]) * group \
        + group_cell[None, :]
    return _Samples(batch[:, None, None, None, None, None], channel[None, ..., None, None],
                    y0.astype(np.int64), np.ceil(y).astype(np.int64), x0.astype(np.int64),
                    np.ceil(x).astype(np.int64), y - y0, x - x0, valid, roi_size, trans_at)


def _corners(s: _Samples, data: Array) -> tuple[Array, Array, Array, Array]:
    """The four pixels each sample reads, MXNet's value11, value12, value21, value22."""
    return (data[s.batch, s.channel, s.y0, s.x0], data[s.batch, s.channel, s.y1, s.x0],
            data[s.batch, s.channel, s.y0, s.x1], data[s.batch, s.channel, s.y1, s.x1])


def _forward(p, ctx, inputs):
    data, rois = inputs[:2]
    _shape(p, [x.shape for x in inputs], [None, None])
    s = _samples(p, data, rois, None if p.no_trans else inputs[2])
    v00, v01, v10, v11 = _corners(s, data)
    one = data.dtype.type(1)
    value = ((one - s.dx) * (one - s.dy) * v00 + (one - s.dx) * s.dy * v01
             + s.dx * (one - s.dy) * v10 + s.dx * s.dy * v11)
    total = np.where(s.valid, value, 0).sum(axis=(4, 5), dtype=data.dtype)
    count = s.valid.sum(axis=(4, 5)).astype(data.dtype)
    out = np.divide(total, count, out=np.zeros(total.shape, data.dtype), where=count > 0)
    return out, count


def _backward(p, ctx, inputs, outputs, out_grads):
    data, rois = inputs[:2]
    trans = None if p.no_trans else inputs[2]
    count = outputs[1]
    grad = out_grads[0]
    s = _samples(p, data, rois, trans)
    one = grad.dtype.type(1)
    share = np.divide(grad, count, out=np.zeros(grad.shape, grad.dtype), where=count > 0)
    share = np.where(s.valid, share[..., None, None], 0)
    data_grad = np.zeros(data.shape, grad.dtype)
    for rows, cols, weight in ((s.y0, s.x0, (one - s.dx) * (one - s.dy)),
                               (s.y1, s.x0, (one - s.dx) * s.dy),
                               (s.y0, s.x1, s.dx * (one - s.dy)),
                               (s.y1, s.x1, s.dx * s.dy)):
        np.add.at(data_grad, (s.batch, s.channel, rows, cols), weight * share)
    grads = [data_grad, np.zeros(rois.shape, rois.dtype)]
    if trans is None:
        return grads
    u00, u01, u10, u11 = _corners(s, data)
    std = grad.dtype.type(np.float32(p.trans_std))
    diff_x = (u11 * s.dy + u10 * (one - s.dy) - u01 * s.dy - u00 * (one - s.dy)) * \
        (std * share * s.roi_size[:, 0, None, None, None, None, None])
    diff_y = (u11 * s.dx + u01 * (one - s.dx) - u10 * s.dx - u00 * (one - s.dx)) * \
        (std * share * s.roi_size[:, 1, None, None, None, None, None])
    trans_grad = np.zeros(trans.shape, grad.dtype)
    rows = np.arange(len(rois))[:, None, None, None]
    klass, part_h, part_w = s.trans_at
    # Bins sharing a part cell add to one entry: add.at, with each bin's samples summed
    np.add.at(trans_grad, (rows, 2 * klass, part_h, part_w), diff_x.sum(axis=(4, 5)))
    np.add.at(trans_grad, (rows, 2 * klass + 1, part_h, part_w), diff_y.sum(axis=(4, 5)))
    return grads + [trans_grad]


def _inputs(p: Params) -> tuple[str, ...]:
    return ("data", "rois") if p.no_trans else ("data", "rois", "trans")


register(OpDef(
    name="_contrib_DeformablePSROIPooling", inputs=_inputs, outputs=("output", "top_count"),
    visible_outputs=lambda p: 1, bfloat16="refuse",
    doc="Performs deformable position-sensitive region-of-interest pooling on inputs "
        "(https://arxiv.org/abs/1703.06211): (N, output_dim * group_size^2, H, W) maps, (R, 5) "
        "rois and (R, 2 * classes, part_size, part_size) trans give (R, output_dim, "
        "pooled_size, pooled_size).",
    params=(
        PS_SCALE, PS_OUTPUT_DIM, Param("group_size", "int", doc="fix group size"),
        PS_POOLED_SIZE,
        Param("part_size", "int", 0, "fix part size (0: pooled_size)"),
        Param("sample_per_part", "int", 1, "fix samples per part"),
        Param("trans_std", "float", 0.0, "fix transition std"),
        Param("no_trans", "bool", False, "Whether to disable trans parameter."),
    ),
    forward=_forward, backward=_backward, infer_shape=_shape,
    backward_reads=lambda p: GradReads(_inputs(p), ("top_count",)),
))
