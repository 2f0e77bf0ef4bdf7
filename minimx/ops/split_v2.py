"""`_split_v2` (`mx.sym.split_v2`, `mx.nd.split_v2`): split an axis into the pieces
that start at `indices`, or into `sections` equal pieces, as MXNet 1.9's
SplitOpShape and SplitOpForward (src/operator/tensor/matrix_op-inl.h).

MXNet's Python wrapper turns ``indices_or_sections=(1, 3)`` into ``indices=(0, 1, 3)``:
the operator's indices are the start of each piece, the first one 0. With
`squeeze_axis`, every piece must have length 1 and loses the axis.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, Shape, checked_axis, merge
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register
from .tensor import MAX_SPLIT_OUTPUTS

Array = np.ndarray


def split_v2_params(indices_or_sections: Any) -> dict[str, Any]:
    """The operator's parameters for MXNet's Python ``split_v2(ary, indices_or_sections)``:
    a number of equal sections, or the starts of the pieces after the first."""
    if isinstance(indices_or_sections, (int, np.integer)) \
            and not isinstance(indices_or_sections, bool):
        return {"indices": [], "sections": int(indices_or_sections)}
    if isinstance(indices_or_sections, tuple):
        return {"indices": [0, *indices_or_sections], "sections": 0}
    raise OperatorError("split_v2: indices_or_sections must be an int or a tuple of ints, "
                        f"got {type(indices_or_sections).__name__} {indices_or_sections!r}")


def _count(p: Params) -> int:
    n = p.sections if p.sections > 0 else len(p.indices)
    if not 1 <= n <= MAX_SPLIT_OUTPUTS:
        raise OperatorError(f"_split_v2: indices={p.indices}, sections={p.sections} give {n} "
                            f"outputs; it must be between 1 and {MAX_SPLIT_OUTPUTS}")
    return n


def piece_bounds(p: Params, size: int) -> list[tuple[int, int]]:
    """(start, stop) of every piece along an axis of `size`."""
    if p.sections > 0:
        if size % p.sections:
            raise ShapeError(f"_split_v2: an axis of {size} cannot be split into "
                             f"sections={p.sections} equal pieces")
        starts = [i * (size // p.sections) for i in range(p.sections)]
    else:
        starts = list(p.indices)
    stops = [*starts[1:], size]
    if starts[0] != 0 or any(not 0 <= a < b <= size for a, b in zip(starts, stops, strict=True)):
        raise ShapeError(f"_split_v2: indices={p.indices} must rise from 0 within the axis "
                         f"of {size}")
    if p.squeeze_axis and any(b - a != 1 for a, b in zip(starts, stops, strict=True)):
        raise ShapeError(f"_split_v2: squeeze_axis=True needs pieces of length 1; "
                         f"indices={p.indices}, sections={p.sections} split an axis of {size}")
    return list(zip(starts, stops, strict=True))


def _piece_shape(dshape: Dims, axis: int, length: int, squeeze: bool) -> Dims:
    if squeeze:
        return dshape[:axis] + dshape[axis + 1:]
    return dshape[:axis] + (length,) + dshape[axis + 1:]


def _infer_split(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    dshape = in_shapes[0]
    if dshape is None:
        return in_shapes, out_shapes
    axis = checked_axis(p.axis, len(dshape), f"_split_v2 (axis={p.axis})")
    if not dshape[axis]:
        return in_shapes, out_shapes
    pieces = [_piece_shape(dshape, axis, b - a, p.squeeze_axis)
              for a, b in piece_bounds(p, dshape[axis])]
    return in_shapes, [merge(o, s) for o, s in zip(out_shapes, pieces, strict=True)]


def _split_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
    x = inputs[0]
    axis = checked_axis(p.axis, x.ndim, f"_split_v2 (axis={p.axis})")
    return [np.take(x, range(a, b), axis).reshape(_piece_shape(x.shape, axis, b - a,
                                                                p.squeeze_axis))
            for a, b in piece_bounds(p, x.shape[axis])]


def _split_backward(p, ctx, inputs, outputs, out_grads):
    x = inputs[0]
    axis = checked_axis(p.axis, x.ndim, f"_split_v2 (axis={p.axis})")
    parts = [g.reshape(_piece_shape(x.shape, axis, b - a, squeeze=False))
             for g, (a, b) in zip(out_grads, piece_bounds(p, x.shape[axis]), strict=True)]
    return [np.concatenate(parts, axis).astype(x.dtype, copy=False)]


register(OpDef(
    "_split_v2", _split_forward,
    params=(Param("indices", "shape", doc="Indices of splits. The elements should denote the "
                  "boundaries of at which split is performed along the axis."),
            Param("axis", "int", 1, "Axis along which to split."),
            Param("squeeze_axis", "bool", False, "If true, removes the axis with length 1 "
                  "from the shapes of the output arrays."),
            Param("sections", "int", 0, "Number of sections if equally splitted. Default to 0 "
                  "which means split by indices.")),
    outputs=lambda p: [f"output{i}" for i in range(_count(p))],
    infer_shape=_infer_split, backward=_split_backward, backward_reads=GradReads(),
    named_inputs=False,
    doc="Splits an axis into pieces starting at indices, or into sections equal pieces."))
