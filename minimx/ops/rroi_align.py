"""``_contrib_RROIAlign`` (MXNet 1.9's src/operator/contrib/rroi_align.cc, from Caffe2's
RoIAlignRotated): ROI Align over rotated boxes, for text detection. Each roi is
(batch index, centre x, centre y, width, height, angle in degrees, anticlockwise); each
output bin averages bilinear samples on a grid that turns with the box, with ROIAlign's
boundary rules (`roi.align_taps`). MXNet has no backward for it, and neither has this.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import DTypeError, ShapeError
from .infer import merge, merge_dtype
from .params import Params
from .registry import OpContext, OpDef, Param, register
from .roi import align_taps

Array = np.ndarray


def _shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    data, rois = in_shapes
    if data is not None and len(data) != 4:
        raise ShapeError(f"{p.label}: data must be (batch, channels, height, width), got {data}")
    if rois is not None and (len(rois) != 2 or rois[1] != 6):
        raise ShapeError(f"{p.label}: rois must be (num_rois, 6), got {rois}")
    if data is None or rois is None:
        return in_shapes, out_shapes
    return in_shapes, [merge(out_shapes[0], (rois[0], data[1], *p.pooled_size))]


def _type(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    data, rois = in_types
    if data is not None and rois is not None and data != rois:
        raise DTypeError(f"{p.label}: data ({np.dtype(data).name}) and rois "
                         f"({np.dtype(rois).name}) must share a dtype")
    return in_types, [merge_dtype(out_types[0], data if data is not None else rois)]


def _samples(p: Params, roi: Array) -> tuple[Array, Array, int]:
    """The (PH, PW, grid_h, grid_w) sample coordinates y and x of one roi on the map, in
    the roi's dtype as MXNet's kernel computes them, and the samples per bin."""
    t = roi.dtype.type
    ph, pw = p.pooled_size
    cx, cy, width, height = (v * t(p.spatial_scale) for v in roi[1:5])
    theta = t(float(roi[5]) * math.pi / 180.0)
    width, height = max(width, t(1)), max(height, t(1))   # malformed rois: 1 x 1
    bin_h, bin_w = height / t(ph), width / t(pw)
    grid_h = p.sampling_ratio if p.sampling_ratio > 0 else math.ceil(height / t(ph))
    grid_w = p.sampling_ratio if p.sampling_ratio > 0 else math.ceil(width / t(pw))

    def axis(start, bins: int, size, grid: int) -> Array:
        steps = (np.arange(grid, dtype=roi.dtype) + t(0.5)) * size / t(grid)
        return start + np.arange(bins, dtype=roi.dtype)[:, None] * size + steps

    yy = axis(-height / t(2), ph, bin_h, grid_h)[:, None, :, None]
    xx = axis(-width / t(2), pw, bin_w, grid_w)[None, :, None, :]
    cos, sin = np.cos(theta), np.sin(theta)
    return yy * cos - xx * sin + cy, xx * cos + yy * sin + cx, grid_h * grid_w


def _forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    data, rois = inputs
    _, channels, height, width = data.shape
    out = np.empty((len(rois), channels, *p.pooled_size), data.dtype)
    for n, roi in enumerate(rois):
        y, x, count = _samples(p, roi)
        y_low, y_high, wy_low, wy_high = align_taps(y, height)
        x_low, x_high, wx_low, wx_high = align_taps(x, width)
        maps = data[int(roi[0])]
        values = (wy_low * wx_low * maps[:, y_low, x_low]
                  + wy_low * wx_high * maps[:, y_low, x_high]
                  + wy_high * wx_low * maps[:, y_high, x_low]
                  + wy_high * wx_high * maps[:, y_high, x_high])
        out[n] = values.sum(axis=(-2, -1)) / data.dtype.type(count)
    return out


register(OpDef(
    "_contrib_RROIAlign", _forward, inputs=("data", "rois"),
    params=(Param("pooled_size", "shape", doc="RROI align output shape (h,w)"),
            Param("spatial_scale", "float", doc="Ratio of input feature map height (or width) "
                  "to raw image height (or width)."),
            Param("sampling_ratio", "int", -1, "Samples per bin along each axis; "
                  "non-positive: ceil(roi size / pooled size).")),
    infer_shape=_shape, infer_type=_type, bfloat16="refuse",
    doc="Rotated ROI Align: rois (num_rois, 6) as [batch_index, x, y, w, h, theta "
        "(degrees)]; output (num_rois, channels, pooled_h, pooled_w). No gradient."))
