"""Region-of-interest pooling of two-stage detectors: _contrib_ROIAlign and ROIPooling,
as MXNet 1.9's src/operator/contrib/roi_align.cc and src/operator/roi_pooling.cc.

Both take feature maps (N, C, H, W) and rois (R, 5) rows [batch_index, x1, y1, x2, y2]
in image coordinates, scaled to the map by spatial_scale, and give (R, C', PH, PW).
ROIAlign's bilinear sampling is separable: each output bin is a row of height
weights times the map times a row of width weights: two matrix products pool a roi.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, merge
from .registry import GradReads, OpDef, Param, Params, register

Array = np.ndarray
_INT32 = np.dtype(np.int32)  # MXNet's index type without MXNET_USE_INT64_TENSOR_SIZE


def _check_inputs(what: str, dshape: Dims | None, rshape: Dims | None) -> None:
    if dshape is not None and len(dshape) != 4:
        raise ShapeError(f"{what}: data should be a 4-D tensor (N, C, H, W), got {dshape}")
    if rshape is not None and (len(rshape) != 2 or rshape[1] not in (0, 5)):
        raise ShapeError(f"{what}: rois should be a 2-D tensor of shape (num_rois, 5), "
                         f"got {rshape}")


def _pooled(p: Params) -> tuple[int, int]:
    """pooled_size, after MXNet's parameter checks (spatial_scale's range included)."""
    if len(p.pooled_size) != 2 or min(p.pooled_size) <= 0:
        raise OperatorError(f"pooled_size must be two positive sizes (h, w), got "
                            f"{p.pooled_size}")
    if not 0 <= p.spatial_scale <= 1:
        raise OperatorError(f"spatial_scale={p.spatial_scale} exceeds the bound [0, 1]")
    return p.pooled_size


def _roi_shape(what: str, channels: Callable[[Params, int], int], n_out: int):
    def infer(p, in_shapes, out_shapes):
        dshape, rshape = in_shapes
        _check_inputs(what, dshape, rshape)
        if dshape is None or rshape is None:
            return in_shapes, out_shapes
        oshape = (rshape[0], channels(p, dshape[1]), *_pooled(p))
        return in_shapes, [merge(o, oshape) for o in out_shapes[:n_out]] + out_shapes[n_out:]
    return infer


# -- ROIAlign -------------------------------------------------------------------------------

def _align_channels(p: Params, channels: int) -> int:
    if not p.position_sensitive:
        return channels
    bins = math.prod(_pooled(p))
    if channels and channels % bins:
        raise ShapeError(f"ROIAlign: position_sensitive needs channels ({channels}) divisible "
                         f"by pooled_size {p.pooled_size}")
    return channels // bins


def _axis_weights(start, size_bins: int, bin_size, grid: int, extent: int, dtype) -> Array:
    """(bins, extent) weights: row i averages, over `grid` samples in bin i, the bilinear
    weights MXNet's pre_calc_for_bilinear_interpolate gives each map position. Samples
    beyond [-1, extent] weigh nothing; the others clamp to the map."""
    t = dtype.type
    bins = np.arange(size_bins, dtype=dtype)[:, None]
    steps = np.arange(grid, dtype=dtype)[None, :] + t(0.5)
    low, high, w_low, w_high = align_taps(start + bins * bin_size + steps * bin_size / t(grid),
                                          extent)
    weights = np.zeros((size_bins, extent), dtype)
    rows = np.broadcast_to(np.arange(size_bins)[:, None], low.shape)
    np.add.at(weights, (rows, low), w_low)
    np.add.at(weights, (rows, high), w_high)
    return weights


def align_taps(coord: Array, extent: int) -> tuple[Array, Array, Array, Array]:
    """The two map positions along one axis that ROI Align's bilinear samples at `coord`
    read, and their weights: zero beyond [-1, extent], clamped to the map otherwise."""
    t = coord.dtype.type
    inside = (coord >= -1) & (coord <= extent)
    coord = np.maximum(coord, t(0))
    low = coord.astype(np.int64)
    at_end = low >= extent - 1
    low = np.where(at_end, extent - 1, low)
    high = np.where(at_end, extent - 1, low + 1)
    frac = np.where(at_end, t(0), coord - low.astype(coord.dtype))
    return low, high, np.where(inside, t(1) - frac, t(0)), np.where(inside, frac, t(0))


def _support(weights: Array) -> slice:
    """The map positions (columns of `weights`) a roi reads: pooling only those is cheaper."""
    used = np.flatnonzero(weights.any(axis=0))
    return slice(used[0], used[-1] + 1) if len(used) else slice(0, 0)


def _align_weights(p: Params, roi: Array, height: int, width: int
                   ) -> tuple[Array, Array, slice, slice]:
    """The height (PH, H') and width (PW, W') weights of one roi, count division included,
    restricted to the rows H' and columns W' of the map it reads."""
    t = roi.dtype.type
    ph, pw = _pooled(p)
    offset = t(0.5) if p.aligned else t(0)
    x1, y1, x2, y2 = (v * t(p.spatial_scale) - offset for v in roi[1:5])
    roi_w, roi_h = x2 - x1, y2 - y1
    if p.aligned and not (roi_w > 0 and roi_h > 0):
        raise ShapeError(f"ROIAlign: aligned=True needs rois of positive size, got {roi}")
    if not p.aligned:
        roi_w, roi_h = max(roi_w, t(1)), max(roi_h, t(1))
    bin_h, bin_w = roi_h / t(ph), roi_w / t(pw)
    grid_h = p.sample_ratio if p.sample_ratio > 0 else math.ceil(roi_h / t(ph))
    grid_w = p.sample_ratio if p.sample_ratio > 0 else math.ceil(roi_w / t(pw))
    wy = _axis_weights(y1, ph, bin_h, grid_h, height, roi.dtype) / t(grid_h * grid_w)
    wx = _axis_weights(x1, pw, bin_w, grid_w, width, roi.dtype)
    rows, cols = _support(wy), _support(wx)
    return wy[:, rows], wx[:, cols], rows, cols


def _align_maps(p: Params, maps: Array) -> Array:
    """One image's maps as (C', PH, PW, H, W) or (C', H, W) (position-sensitive or not)."""
    if not p.position_sensitive:
        return maps
    return maps.reshape(-1, *_pooled(p), *maps.shape[1:])


def _align_forward(p, ctx, inputs):
    data, rois = inputs
    _check_inputs("ROIAlign", data.shape, rois.shape)
    channels = _align_channels(p, data.shape[1])
    out = np.zeros((len(rois), channels, *_pooled(p)), data.dtype)
    rois = rois.astype(data.dtype, copy=False)
    batches = _roi_batches(p, rois, data.shape[0], skip_negative=True)
    for n, (roi, batch) in enumerate(zip(rois, batches, strict=True)):
        if batch < 0:  # MXNet's documented "ignored" roi
            continue
        wy, wx, rows, cols = _align_weights(p, roi, *data.shape[2:])
        if not (wy.size and wx.size):  # every sample falls outside the map
            continue
        maps = _align_maps(p, data[batch, :, rows, cols])
        if p.position_sensitive:  # output bin (i, j) reads its own channel group
            out[n] = np.einsum("ph,cpqhw,qw->cpq", wy, maps, wx, optimize=True)
        else:
            out[n] = wy @ maps @ wx.T
    return out


def _align_backward(p, ctx, inputs, outputs, out_grads):
    data, rois = inputs
    grad = np.zeros(data.shape, out_grads[0].dtype)
    pattern = "ph,cpq,qw->cpqhw" if p.position_sensitive else "ph,cpq,qw->chw"
    boxes = rois.astype(grad.dtype, copy=False)
    batches = _roi_batches(p, boxes, data.shape[0], skip_negative=True)
    for n, (roi, batch) in enumerate(zip(boxes, batches, strict=True)):
        if batch < 0:
            continue
        wy, wx, rows, cols = _align_weights(p, roi, *data.shape[2:])
        if not (wy.size and wx.size):
            continue
        part = np.einsum(pattern, wy, out_grads[0][n], wx, optimize=True)
        grad[batch, :, rows, cols] += part.reshape(grad.shape[1], *part.shape[-2:])
    return [grad, np.zeros(rois.shape, rois.dtype)]


register(OpDef(
    name="_contrib_ROIAlign", inputs=("data", "rois"),
    doc="ROI Align (Mask R-CNN): bilinear samples of each roi bin averaged, no quantization; "
        "rois with a negative batch index give zeros.",
    params=(
        Param("pooled_size", "shape", doc="ROI Align output roi feature map height and "
              "width: (h, w)"),
        Param("spatial_scale", "float", doc="Ratio of input feature map height (or w) to raw "
              "image height (or w)."),
        Param("sample_ratio", "int", -1,
              "Optional sampling ratio of ROI align, using adaptive size by default."),
        Param("position_sensitive", "bool", False, "Whether to perform position-sensitive "
              "RoI pooling (channels are divided by ph*pw)."),
        Param("aligned", "bool", False, "Center-aligned ROIAlign introduced in Detectron2."),
    ),
    forward=_align_forward, backward=_align_backward, backward_reads=GradReads(("rois",)),
    infer_shape=_roi_shape("ROIAlign", _align_channels, 1),
))


# -- ROIPooling --------------------------------------------------------------------------------

def _round_half_away(x) -> int:
    """std::round: halves go away from zero (numpy's round goes to even)."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _bin_edges(start: int, length: int, bins: int, extent: int, t) -> list[tuple[int, int]]:
    """[start, end) of each of `bins` bins over `length` map cells from `start`, clipped."""
    size = t(length) / t(bins)
    return [(min(max(math.floor(t(i) * size) + start, 0), extent),
             min(max(math.ceil(t(i + 1) * size) + start, 0), extent)) for i in range(bins)]


def _pool_forward(p, ctx, inputs):
    data, rois = inputs
    _check_inputs("ROIPooling", data.shape, rois.shape)
    batch_size, channels, height, width = data.shape
    ph, pw = _pooled(p)
    t = data.dtype.type
    out = np.zeros((len(rois), channels, ph, pw), data.dtype)
    argmax = np.full(out.shape, -1, _INT32)
    plane = np.arange(channels) * height * width
    for n, roi in enumerate(rois.astype(data.dtype, copy=False)):
        batch = int(roi[0])
        if not 0 <= batch < batch_size:
            continue
        x1, y1, x2, y2 = (_round_half_away(v * t(p.spatial_scale)) for v in roi[1:5])
        rows = _bin_edges(y1, max(y2 - y1 + 1, 1), ph, height, t)
        cols = _bin_edges(x1, max(x2 - x1 + 1, 1), pw, width, t)
        for i, (h0, h1) in enumerate(rows):
            for j, (w0, w1) in enumerate(cols):
                if h1 <= h0 or w1 <= w0:
                    continue
                window = data[batch, :, h0:h1, w0:w1].reshape(channels, -1)
                best = window.argmax(axis=1)
                out[n, :, i, j] = window[np.arange(channels), best]
                h, w = np.divmod(best, w1 - w0)
                argmax[n, :, i, j] = batch * channels * height * width + plane + \
                    (h + h0) * width + w + w0
    return out, argmax


def _pool_backward(p, ctx, inputs, outputs, out_grads):
    data, rois = inputs
    index = outputs[1].reshape(-1)
    chosen = index >= 0
    grad = np.zeros(data.size, out_grads[0].dtype)
    np.add.at(grad, index[chosen], out_grads[0].reshape(-1)[chosen])
    return [grad.reshape(data.shape), np.zeros(rois.shape, rois.dtype)]


def _pool_type(p, in_types, out_types):
    dtype = in_types[0] if in_types[0] is not None else in_types[1]
    return [dtype, dtype], [dtype, _INT32]


register(OpDef(
    name="ROIPooling", inputs=("data", "rois"), outputs=("output", "maxidx"),
    visible_outputs=lambda p: 1,
    doc="Max pooling of each roi (Fast R-CNN) into pooled_size bins; empty bins and rois "
        "of another batch give 0.",
    params=(
        Param("pooled_size", "shape", doc="ROI pooling output shape (h,w)"),
        Param("spatial_scale", "float", doc="Ratio of input feature map height (or w) to raw "
              "image height (or w)."),
    ),
    forward=_pool_forward, backward=_pool_backward,
    backward_reads=GradReads((), ("maxidx",)),
    infer_shape=_roi_shape("ROIPooling", lambda p, c: c, 2), infer_type=_pool_type,
))


# -- PSROIPooling ------------------------------------------------------------------------------
# R-FCN's position-sensitive average pooling: output bin (i, j) of channel d averages, over
# the bin's cells, input channel (d * group + gi) * group + gj, (gi, gj) the bin's group.
# Every bin of every roi is a rectangle sum, read from (and, backward, spread through) a
# summed-area table in float64, so the pass is vectorized over rois and bins.

# Parameters DeformablePSROIPooling declares as well
PS_SCALE = Param("spatial_scale", "float", doc="Ratio of input feature map height (or w) to "
                 "raw image height (or w). Equals the reciprocal of total stride in "
                 "convolutional layers")
PS_OUTPUT_DIM = Param("output_dim", "int", doc="fix output dim")
PS_POOLED_SIZE = Param("pooled_size", "int", doc="fix pooled size")


def _ps_group(p: Params) -> int:
    return p.group_size or p.pooled_size


def _check_ps(what: str, p: Params, dshape: Dims | None, rshape: Dims | None) -> None:
    """The checks PSROIPooling and DeformablePSROIPooling share."""
    _check_inputs(what, dshape, rshape)
    if not 0 <= p.spatial_scale <= 1:
        raise OperatorError(f"spatial_scale={p.spatial_scale} exceeds the bound [0, 1]")
    if p.pooled_size <= 0 or p.output_dim <= 0 or _ps_group(p) <= 0:
        raise OperatorError(f"pooled_size ({p.pooled_size}), output_dim ({p.output_dim}) and "
                            f"group_size ({p.group_size}) must be positive")
    need = p.output_dim * _ps_group(p) ** 2
    if dshape is not None and 0 < dshape[1] < need:
        raise ShapeError(f"{what}: data has {dshape[1]} channels, output_dim x "
                         f"group_size^2 = {need} needed")


def _ps_shape(p, in_shapes, out_shapes):
    dshape, rshape = in_shapes
    _check_ps("PSROIPooling", p, dshape, rshape)
    if rshape is None:
        return in_shapes, out_shapes
    oshape = (rshape[0], p.output_dim, p.pooled_size, p.pooled_size)
    return in_shapes, [merge(out_shapes[0], oshape)]


def _round_half_away_array(x: Array) -> Array:
    """C's round, in float64 (exact for float32 inputs)."""
    x = x.astype(np.float64)
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _roi_batches(p: Params, rois: Array, batch_size: int, skip_negative: bool = False
                 ) -> Array:
    """Each roi's image index; MXNet reads out of bounds for a missing image, we refuse.
    With `skip_negative` a negative index is allowed: it marks a roi to skip (ROIAlign)."""
    batch = rois[:, 0].astype(np.int64)
    lowest = 0 if not skip_negative else -np.inf
    if len(batch) and not (lowest <= batch.min() and batch.max() < batch_size):
        raise OperatorError(f"{p.label}: rois name images {sorted(set(batch.tolist()))}, the "
                            f"data has {batch_size}")
    return batch


def _ps_bins(p: Params, rois: Array, shape: tuple[int, ...], dtype: np.dtype
             ) -> tuple[tuple[Array, ...], Array]:
    """The index arrays (batch, channel, row0, col0, row1, col1), broadcasting to (R, D, P,
    P), of every output bin's rectangle, and the bins' areas in `dtype` (MXNet's math)."""
    batch_size, _, height, width = shape
    t, size, group = dtype.type, p.pooled_size, _ps_group(p)
    batch = _roi_batches(p, rois, batch_size)
    scale = t(np.float32(p.spatial_scale))
    corners = _round_half_away_array(rois[:, 1:5])
    start = corners[:, :2].astype(dtype) * scale
    end = (corners[:, 2:] + 1).astype(dtype) * scale
    bin_size = np.maximum(end - start, t(0.1)) / t(size)
    steps = np.arange(size + 1, dtype=dtype)
    edges = steps[None, :, None] * bin_size[:, None, :] + start[:, None, :]  # (R, P+1, xy)
    lo = np.floor(edges[:, :-1]).astype(np.int64)
    hi = np.ceil(edges[:, 1:]).astype(np.int64)
    limit = np.array([width, height])
    lo, hi = np.clip(lo, 0, limit), np.clip(hi, 0, limit)
    cell = np.clip(np.floor(steps[:-1] * t(group) / t(size)).astype(np.int64), 0, group - 1)
    channel = ((np.arange(p.output_dim)[:, None, None] * group + cell[:, None]) * group
               + cell[None, :])                                             # (D, P, P)
    rows = (lo[:, None, :, None, 1], hi[:, None, :, None, 1])
    cols = (lo[:, None, None, :, 0], hi[:, None, None, :, 0])
    area = ((rows[1] - rows[0]) * (cols[1] - cols[0])).astype(dtype)
    return (batch[:, None, None, None], channel[None], rows[0], cols[0], rows[1], cols[1]), area


def _ps_forward(p, ctx, inputs):
    data, rois = inputs
    _ps_shape(p, [data.shape, rois.shape], [None])
    (b, c, r0, c0, r1, c1), area = _ps_bins(p, rois, data.shape, data.dtype)
    table = np.zeros(data.shape[:2] + (data.shape[2] + 1, data.shape[3] + 1))
    table[:, :, 1:, 1:] = data.astype(np.float64).cumsum(2).cumsum(3)
    sums = table[b, c, r1, c1] - table[b, c, r0, c1] - table[b, c, r1, c0] + table[b, c, r0, c0]
    sums = sums.astype(data.dtype)
    return np.divide(sums, area, out=np.zeros(sums.shape, data.dtype), where=area > 0)


def _ps_backward(p, ctx, inputs, outputs, out_grads):
    data, rois = inputs
    grad = out_grads[0]
    (b, c, r0, c0, r1, c1), area = _ps_bins(p, rois, data.shape, grad.dtype)
    share = np.divide(grad, area, out=np.zeros(grad.shape, grad.dtype), where=area > 0)
    spread = np.zeros(data.shape[:2] + (data.shape[2] + 1, data.shape[3] + 1))
    for rows, cols, sign in ((r0, c0, 1), (r0, c1, -1), (r1, c0, -1), (r1, c1, 1)):
        np.add.at(spread, (b, c, rows, cols), sign * share.astype(np.float64))
    total = spread.cumsum(2).cumsum(3)[:, :, :-1, :-1]
    return [total.astype(grad.dtype), np.zeros(rois.shape, rois.dtype)]


register(OpDef(
    name="_contrib_PSROIPooling", inputs=("data", "rois"), bfloat16="refuse",
    doc="Position-sensitive ROI average pooling (R-FCN): (N, output_dim * group_size^2, H, "
        "W) maps and (R, 5) rois give (R, output_dim, pooled_size, pooled_size).",
    params=(
        PS_SCALE, PS_OUTPUT_DIM, PS_POOLED_SIZE,
        Param("group_size", "int", 0, "fix group size (0: pooled_size)"),
    ),
    forward=_ps_forward, backward=_ps_backward, backward_reads=GradReads(("rois",)),
    infer_shape=_ps_shape,
))
