"""Detection operators in ONNX: ``_contrib_ROIAlign`` as RoiAlign.

MXNet's rois are rows ``[batch_index, x1, y1, x2, y2]``; ONNX takes the boxes and
the batch indices as two inputs. A roi with a negative batch index gives zeros (minimx
skips it; MXNet 1.9.1 leaves its outputs uninitialised). The sampling is the same
(Detectron's): bins averaged over `sample_ratio` (or ceil(roi size / bins)) samples a
side; ``aligned`` is ONNX's ``half_pixel`` (coordinates shifted by half a pixel, rois
of any size), its absence ``output_half_pixel`` (rois at least one pixel a side).
"""
from __future__ import annotations

import numpy as np

from .emitter import Emitter, Site, Unsupported
from .registry import translates

_INT64 = np.dtype(np.int64)


@translates("_contrib_ROIAlign")
def _roi_align(e: Emitter, s: Site) -> None:
    if s.p.position_sensitive:
        raise Unsupported("position_sensitive=True: ONNX's RoiAlign pools every channel "
                          "in every bin")
    data, rois = s.inputs
    boxes = e.add("Slice", [rois, e.ints(f"{s.name}_box_start", [1]),
                            e.ints(f"{s.name}_box_end", [5]), e.ints(f"{s.name}_axis", [1])])
    column = e.add("Gather", [rois, e.const(f"{s.name}_batch_column", 0, _INT64)], axis=1)
    batch = e.add("Cast", [column], to=_INT64)  # truncated, as minimx reads it
    zero = e.const(f"{s.name}_zero", 0, _INT64)
    pooled = e.add("RoiAlign", [data, boxes, e.add("Max", [batch, zero])], mode="avg",
                   output_height=s.p.pooled_size[0], output_width=s.p.pooled_size[1],
                   sampling_ratio=s.p.sample_ratio, spatial_scale=float(s.p.spatial_scale),
                   coordinate_transformation_mode="half_pixel" if s.p.aligned
                   else "output_half_pixel")
    skipped = e.add("Reshape", [e.add("Less", [batch, zero]),
                                e.ints(f"{s.name}_per_roi", [-1, 1, 1, 1])])
    e.add("Where", [skipped, e.const(f"{s.name}_zeros", 0, s.dtype), pooled], s.outputs[0])
