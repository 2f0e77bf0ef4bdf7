"""Detection operators in ONNX: ``_contrib_ROIAlign`` as RoiAlign, ``ROIPooling`` as
MaxRoiPool, ``_contrib_box_decode`` in arithmetic.

MXNet's rois are rows ``[batch_index, x1, y1, x2, y2]``; RoiAlign takes the boxes
and the batch indices as two inputs. A roi with a batch index outside the batch gives
zeros (minimx skips it; MXNet 1.9.1 leaves its outputs uninitialised). The sampling is the same
(Detectron's): bins averaged over `sample_ratio` (or ceil(roi size / bins)) samples a
side; ``aligned`` is ONNX's ``half_pixel`` (coordinates shifted by half a pixel, rois
of any size), its absence ``output_half_pixel`` (rois at least one pixel a side).
"""
from __future__ import annotations

import numpy as np

from .emitter import Emitter, Site, Unsupported
from .ordering import axis_size
from .registry import translates

_INT64 = np.dtype(np.int64)


def _roi_batches(e: Emitter, s: Site) -> tuple[str, str, str]:
    """(boxes, batch indices, skipped) of the rois: the indices truncated (as minimx
    reads them) and clamped into the batch, `skipped` (num_rois, 1, 1, 1) where they
    were not in it (such rois give zeros)."""
    data, rois = s.inputs
    boxes = e.add("Slice", [rois, e.ints(f"{s.name}_box_start", [1]),
                            e.ints(f"{s.name}_box_end", [5]), e.ints(f"{s.name}_axis", [1])])
    column = e.add("Gather", [rois, e.const(f"{s.name}_batch_column", 0, _INT64)], axis=1)
    batch = e.add("Cast", [column], to=_INT64)
    zero = e.const(f"{s.name}_zero", 0, _INT64)
    last = e.add("Sub", [axis_size(e, data, 0), e.ints(f"{s.name}_one", [1])])
    clamped = e.add("Min", [e.add("Max", [batch, zero]), last])
    skipped = e.add("Reshape", [e.add("Not", [e.add("Equal", [batch, clamped])]),
                                e.ints(f"{s.name}_per_roi", [-1, 1, 1, 1])])
    return boxes, clamped, skipped


def _zeros_where(e: Emitter, s: Site, skipped: str, pooled: str) -> None:
    e.add("Where", [skipped, e.const(f"{s.name}_zeros", 0, s.dtype), pooled], s.outputs[0])


@translates("_contrib_ROIAlign")
def _roi_align(e: Emitter, s: Site) -> None:
    if s.p.position_sensitive:
        raise Unsupported("position_sensitive=True: ONNX's RoiAlign pools every channel "
                          "in every bin")
    boxes, batch, skipped = _roi_batches(e, s)
    pooled = e.add("RoiAlign", [s.inputs[0], boxes, batch], mode="avg",
                   output_height=s.p.pooled_size[0], output_width=s.p.pooled_size[1],
                   sampling_ratio=s.p.sample_ratio, spatial_scale=float(s.p.spatial_scale),
                   coordinate_transformation_mode="half_pixel" if s.p.aligned
                   else "output_half_pixel")
    _zeros_where(e, s, skipped, pooled)


@translates("ROIPooling")
def _roi_pooling(e: Emitter, s: Site) -> None:
    """MaxRoiPool: the same corners (rounded, half away from zero) and bins (floor and
    ceil of the bin size) as MXNet's Caffe-derived kernel; the argmax output has no
    ONNX form."""
    boxes, batch, skipped = _roi_batches(e, s)
    column = e.add("Unsqueeze", [e.add("Cast", [batch], to=s.in_dtypes[1]),
                                 e.ints(f"{s.name}_column_axis", [1])])
    rois = e.add("Concat", [column, boxes], axis=1)
    pooled = e.add("MaxRoiPool", [s.inputs[0], rois], pooled_shape=list(s.p.pooled_size),
                   spatial_scale=float(s.p.spatial_scale))
    _zeros_where(e, s, skipped, pooled)


@translates("_contrib_box_decode")
def _box_decode(e: Emitter, s: Site) -> None:
    """Offsets (B, N, 4) against anchors (N boxes, centre or corner) to corner boxes,
    in the data's dtype and in MXNet's order of operations."""
    data, t = s.inputs[0], s.dtype
    anchors = e.add("Reshape", [s.inputs[1], e.ints(f"{s.name}_anchor_shape", [1, -1, 4])])
    half = e.const(f"{s.name}_half", 0.5, t)
    first, second = _pairs(e, s, anchors)
    if s.p.format == "corner":
        size = e.add("Sub", [second, first])
        centre = e.add("Add", [first, e.add("Mul", [size, half])])
    else:
        centre, size = first, second
    std = e.const(f"{s.name}_std", [s.p.std0, s.p.std1, s.p.std2, s.p.std3], t)
    moved, scaled = _pairs(e, s, e.add("Mul", [data, std]))
    centre = e.add("Add", [e.add("Mul", [moved, size]), centre])
    if s.p.clip > 0:
        scaled = e.add("Min", [scaled, e.const(f"{s.name}_clip", s.p.clip, t)])
    half_size = e.add("Mul", [e.add("Mul", [e.add("Exp", [scaled]), size]), half])
    e.add("Concat", [e.add("Sub", [centre, half_size]), e.add("Add", [centre, half_size])],
          s.outputs[0], axis=-1)


def _pairs(e: Emitter, s: Site, boxes: str) -> tuple[str, str]:
    """The first two and the last two of the four numbers of each box."""
    start, middle, end = (e.ints(f"{s.name}_at{k}", [k]) for k in (0, 2, 4))
    axis = e.ints(f"{s.name}_last_axis", [-1])
    return (e.add("Slice", [boxes, start, middle, axis]),
            e.add("Slice", [boxes, middle, end, axis]))
