"""Slices: `slice` (begin, end and step per axis, None for a default), its
assignments `_slice_assign` / `_slice_assign_scalar` (what `x[a:b] = y` runs),
`slice_like` (the leading part of each axis, as long as another array's) and the
legacy `Crop` (a window of an image batch's height and width).

The index rules are MXNet 1.9's (src/operator/tensor/matrix_op-inl.h,
GetIndexRange): bounds past either end are clamped, negative bounds count
from the end. An empty result is an error, as for `slice_axis`. The gradient
puts the output gradient back where the slice came from; the rest is zero.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from .infer import Dims, Shape, checked_axis, first_input_dtype, from_input, merge
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register

Array = np.ndarray
Index = tuple[slice, ...]


def _axis_range(p: Params, i: int, size: int) -> tuple[int, int, int]:
    """(begin, end, step) of axis `i`, clamped as MXNet's GetIndexRange; end -1 is
    "before index 0" for a negative step."""
    step = p.step[i] if i < len(p.step) and p.step[i] is not None else 1
    if step == 0:
        raise ShapeError(f"slice: step={p.step} has a 0 step on axis {i}")
    begin, end = p.begin[i], p.end[i]
    if step > 0:
        b, e = (0 if begin is None else begin), (size if end is None else end)
        b, e = (b + size if b < 0 else b), (e + size if e < 0 else e)
        b = max(b, 0)
    else:
        b, e = (size - 1 if begin is None else begin), (-1 if end is None else end)
        b, e = (b + size if b < 0 else b), (e + size if e < 0 and end is not None else e)
        b = min(b, size - 1)
    return (b if 0 <= b < size else -1), min(max(e, -1), size), step


def _slice_length(b: int, e: int, step: int) -> int:
    if b < 0:
        return 0
    return max((e - b - 1) // step + 1, 0) if step > 0 else max((b - e - 1) // -step + 1, 0)


def _check_lengths(p: Params, ndim: int) -> None:
    if len(p.begin) != len(p.end) or len(p.step) not in (0, len(p.begin)):
        raise ShapeError(f"slice: begin={p.begin}, end={p.end} and step={p.step} must have "
                         "one length (step may be empty)")
    if len(p.begin) > ndim:
        raise ShapeError(f"slice: begin={p.begin} has more axes than the {ndim}-d input")


def _slice_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    dshape = in_shapes[0]
    _check_lengths(p, len(dshape))
    out = list(dshape)
    for i, size in enumerate(dshape[:len(p.begin)]):
        if not size:
            continue  # unknown stays unknown
        out[i] = _slice_length(*_axis_range(p, i, size))
        if not out[i]:
            raise ShapeError(f"slice: begin={p.begin}, end={p.end}, step={p.step} leave "
                             f"axis {i} of input {dshape} empty")
    return [tuple(out)]


def _slice_index(p: Params, shape: Dims) -> Index:
    _slice_rule(p, [shape])  # ShapeError on bad or empty slices
    index = []
    for i, size in enumerate(shape[:len(p.begin)]):
        b, e, step = _axis_range(p, i, size)
        index.append(slice(b, None if e < 0 else e, step))
    return tuple(index)


def _scatter_back(x: Array, index: Index, g: Array) -> Array:
    grad = np.zeros(x.shape, x.dtype)
    grad[index] = g
    return grad


register(OpDef(
    "slice", lambda p, ctx, inputs: inputs[0][_slice_index(p, inputs[0].shape)].copy(),
    params=(Param("begin", "optional_ints", doc="Starting indices (None: the default)."),
            Param("end", "optional_ints", doc="Ending indices, excluded (None: the default)."),
            Param("step", "optional_ints", (), "Steps, which may be negative (default 1).")),
    infer_shape=from_input(_slice_rule), aliases=("crop",),
    backward=lambda p, ctx, inputs, outputs, out_grads: [
        _scatter_back(inputs[0], _slice_index(p, inputs[0].shape), out_grads[0])],
    backward_reads=GradReads(),
    doc="Slices a region of the array: begin, end and step per leading axis.",
    named_inputs=False))


_SLICE_PARAMS = (Param("begin", "optional_ints", doc="starting indices for the slice operation, "
                        "supports negative indices."),
                 Param("end", "optional_ints", doc="ending indices for the slice operation, "
                       "supports negative indices."),
                 Param("step", "optional_ints", (), "step for the slice operation, supports "
                       "negative values."))


def _slice_assign_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    lhs, rhs = inputs
    index = _slice_index(p, lhs.shape)
    window = lhs[index].shape
    if rhs.shape != window:
        raise ShapeError(f"_slice_assign: rhs {rhs.shape} must have the slice's shape {window} "
                         f"(lhs {lhs.shape}, begin={p.begin}, end={p.end}, step={p.step})")
    out = lhs.copy()
    out[index] = rhs
    return out


def _infer_slice_assign(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    lhs = merge(in_shapes[0], out_shapes[0])
    rhs = in_shapes[1] if lhs is None else merge(in_shapes[1], _slice_rule(p, [lhs])[0])
    return [lhs, rhs], [lhs]


def _slice_assign_scalar_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    out = inputs[0].copy()
    out[_slice_index(p, out.shape)] = p.scalar
    return out


# MXNet registers no gradient for either.
register(OpDef(
    "_slice_assign", _slice_assign_forward, inputs=("lhs", "rhs"), params=_SLICE_PARAMS,
    infer_shape=_infer_slice_assign, infer_type=first_input_dtype, aliases=("_crop_assign",),
    doc="lhs with the slice begin:end:step replaced by rhs."))
register(OpDef(
    "_slice_assign_scalar", _slice_assign_scalar_forward,
    params=(Param("scalar", "float", 0.0, "The scalar value for assignment."), *_SLICE_PARAMS),
    aliases=("_crop_assign_scalar",), named_inputs=False,
    doc="The input with the slice begin:end:step set to scalar."))


# -- slice_like ---------------------------------------------------------------------

def _like_axes(p: Params, dshape: Dims, like: Dims) -> list[int]:
    if not p.axes:
        if len(dshape) != len(like):
            raise ShapeError(f"slice_like: without axes, data {dshape} and shape_like {like} "
                             "must have one ndim")
        return list(range(len(dshape)))
    axes = [checked_axis(a, len(dshape), f"slice_like (axes={p.axes})") for a in p.axes]
    for a in axes:
        if a >= len(like):
            raise ShapeError(f"slice_like: axis {a} of axes={p.axes} is beyond shape_like {like}")
    return axes


def _like_shape(p: Params, dshape: Dims, like: Dims) -> Dims:
    out = list(dshape)
    for a in _like_axes(p, dshape, like):
        if dshape[a] and like[a] and like[a] > dshape[a]:
            raise ShapeError(f"slice_like: shape_like {like} is longer than data {dshape} "
                             f"on axis {a}")
        out[a] = like[a]
    return tuple(out)


def _infer_slice_like(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    dshape, like = in_shapes
    if dshape is None or like is None:
        return in_shapes, out_shapes
    return in_shapes, [merge(out_shapes[0], _like_shape(p, dshape, like))]


def _like_index(p: Params, dshape: Dims, like: Dims) -> Index:
    out = _like_shape(p, dshape, like)
    return tuple(slice(0, n) for n in out)


def _slice_like_backward(p, ctx, inputs, outputs, out_grads):
    x, like = inputs
    return [_scatter_back(x, _like_index(p, x.shape, like.shape), out_grads[0]),
            np.zeros(like.shape, like.dtype)]


register(OpDef(
    "slice_like", lambda p, ctx, inputs: inputs[0][
        _like_index(p, inputs[0].shape, inputs[1].shape)].copy(),
    inputs=("data", "shape_like"),
    params=(Param("axes", "shape", (), "Axes sliced to shape_like's lengths (default all); "
                  "negative axes count from the end."),),
    infer_shape=_infer_slice_like, infer_type=first_input_dtype,
    backward=_slice_like_backward, backward_reads=GradReads(),
    doc="Slices the data like the second input: from 0 to shape_like's length on each axis."))


# -- Crop ---------------------------------------------------------------------------

def _crop_window(p: Params, in_shapes: list[Dims]) -> tuple[Dims, Dims]:
    """Crop's output (height, width), from h_w or the second input, and its offset."""
    data = in_shapes[0]
    if p.num_args not in (1, 2) or len(data) != 4:
        raise ShapeError(f"Crop: takes one or two inputs (num_args={p.num_args}), the first "
                         f"(N, C, H, W), got {in_shapes}")
    if p.num_args == 2:
        if len(in_shapes[1]) != 4:
            raise ShapeError(f"Crop: crop_like {in_shapes[1]} must be (N, C, H, W)")
        hw = in_shapes[1][2:]
    else:
        hw = p.h_w
    if len(hw) != 2 or len(p.offset) != 2 or min(hw) < 1:
        raise ShapeError(f"Crop: h_w={p.h_w} and offset={p.offset} must be two sizes and two "
                         "offsets (h_w positive with one input)")
    free = (data[2] - hw[0], data[3] - hw[1])
    offset = (free[0] // 2, free[1] // 2) if p.center_crop else p.offset
    if all(data[2:]) and not (0 <= offset[0] <= free[0] and 0 <= offset[1] <= free[1]):
        raise ShapeError(f"Crop: a {hw} window at offset {offset} does not fit data {data}")
    return hw, offset


def _crop_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    return [in_shapes[0][:2] + _crop_window(p, in_shapes)[0]]


def _crop_index(p: Params, inputs: list[Array]) -> Index:
    (h, w), (top, left) = _crop_window(p, [a.shape for a in inputs])
    return (slice(None), slice(None), slice(top, top + h), slice(left, left + w))


register(OpDef(
    "Crop", lambda p, ctx, inputs: inputs[0][_crop_index(p, inputs)].copy(),
    variadic="num_args", bfloat16="refuse",
    params=(Param("num_args", "int", doc="Number of inputs: the data, and optionally an "
                  "array whose height and width the output takes."),
            Param("offset", "shape", (0, 0), "Crop offset coordinate: (y, x)."),
            Param("h_w", "shape", (0, 0), "Crop height and width: (h, w)."),
            Param("center_crop", "bool", False, "Crop at the center, ignoring offset.")),
    infer_shape=from_input(_crop_rule), infer_type=first_input_dtype,
    backward=lambda p, ctx, inputs, outputs, out_grads: [
        _scatter_back(inputs[0], _crop_index(p, inputs), out_grads[0]),
        *(np.zeros(a.shape, a.dtype) for a in inputs[1:])],
    backward_reads=GradReads(),
    doc="Crops a (h, w) window of an (N, C, H, W) batch at offset, or at its center; "
        "(h, w) is h_w, or the height and width of the second input."))
