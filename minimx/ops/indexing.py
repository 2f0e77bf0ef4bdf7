"""Indexing by arrays: `take`, `pick` (alias `choose_element_0index`), `one_hot` and
the legacy `_onehot_encode` / `fill_element_0index`, and `where`, with MXNet 1.9's
parameters (src/operator/tensor/indexing_op.h, broadcast_reduce_op.h,
control_flow_op.h).

Indices may be floats, as in MXNet: they are truncated to integers, then
clipped or wrapped into range by `mode`. The index inputs get zero gradients.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import (
    Dims,
    Shape,
    checked_axis,
    first_input_dtype,
    from_input,
    merge,
    merge_all,
    merge_dtype,
)
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register, zero_gradients

Array = np.ndarray
_READS_INDICES = GradReads(inputs=("indices",))


def integer_indices(what: str, indices: Array, size: int, mode: str) -> Array:
    """`indices` truncated to integers and brought into [0, size) by `mode`
    (clip, wrap, or raise: an error for any index outside)."""
    idx = np.trunc(indices).astype(np.int64) if indices.dtype.kind == "f" else \
        indices.astype(np.int64)
    if mode == "wrap":
        return np.mod(idx, size)
    # MXNet 1.9 checks the indices as given, before truncating: 1.4 is out for size 2.
    if mode == "raise" and indices.size and (indices.min() < 0 or indices.max() > size - 1):
        raise OperatorError(f"{what}: indices {indices.min()}..{indices.max()} are outside "
                            f"[0, {size}) (or past {size - 1} before truncation) with "
                            "mode='raise'")
    return np.clip(idx, 0, size - 1)


def _zeros_like(a: Array) -> Array:
    return np.zeros(a.shape, a.dtype)


# -- take ------------------------------------------------------------------------------

def _take_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    a, indices = in_shapes
    axis = checked_axis(p.axis, len(a), f"take (axis={p.axis})")
    return [a[:axis] + indices + a[axis + 1:]]


def _take_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    a, indices = inputs
    axis = checked_axis(p.axis, a.ndim, f"take (axis={p.axis})")
    return np.take(a, integer_indices("take", indices, a.shape[axis], p.mode), axis=axis)


def _take_backward(p, ctx, inputs, outputs, out_grads):
    a, indices = inputs
    axis = checked_axis(p.axis, len(a.shape), "take")
    idx = integer_indices("take", indices, a.shape[axis], p.mode)
    # Move the taken axis first: the gradient adds up rows taken more than once.
    grad = np.zeros((a.shape[axis], *a.shape[:axis], *a.shape[axis + 1:]), a.dtype)
    g = np.moveaxis(out_grads[0].reshape(a.shape[:axis] + (idx.size,) + a.shape[axis + 1:]),
                    axis, 0)
    np.add.at(grad, idx.reshape(-1), g)
    return [np.moveaxis(grad, 0, axis), _zeros_like(indices)]


register(OpDef(
    "take", _take_forward, inputs=("a", "indices"),
    params=(Param("axis", "int", 0, "The axis of input array to be taken."),
            Param("mode", "str", "clip", "How out-of-bound indices behave.",
                  choices=("clip", "raise", "wrap"))),
    infer_shape=from_input(_take_rule), infer_type=first_input_dtype,
    backward=_take_backward, backward_reads=_READS_INDICES,
    doc="Takes elements from an input array along the given axis."))


# -- pick --------------------------------------------------------------------------------

def _pick_axis(p: Params, ndim: int) -> int:
    if p.axis is None:
        raise OperatorError("pick: axis=None is not supported (as in MXNet); give an axis")
    return checked_axis(p.axis, ndim, f"pick (axis={p.axis})")


def _picked_shape(p: Params, dshape: Dims, keepdims: bool, index_ndim: int | None = None) -> Dims:
    axis = _pick_axis(p, len(dshape))
    if len(dshape) == 1 and index_ndim == 1:
        return (1,)  # MXNet's ReduceAxisShapeImpl: (1,) from 1-D data, keepdims or not
    return dshape[:axis] + ((1,) if keepdims else ()) + dshape[axis + 1:]


def _infer_pick(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    dshape, index = in_shapes
    if dshape is None:
        return in_shapes, out_shapes
    # As MXNet 1.9's PickOpShape, whatever keepdims: an index with the data's ndim has
    # the axis kept as 1; any other (or unknown) index has the data's shape less the axis.
    # (A 0-d index of 1-D data, which MXNet cannot give, picks a 0-d result.)
    kept = index is not None and len(index) == len(dshape)
    index = merge(index, _picked_shape(p, dshape, kept))
    out = _picked_shape(p, dshape, p.keepdims, len(index))
    return [dshape, index], [merge(out_shapes[0], out)]


def _pick_positions(p: Params, x: Array, index: Array) -> tuple[int, Array]:
    """The axis, and the index as integers shaped to index `x` along it (kept as size 1)."""
    axis = _pick_axis(p, x.ndim)
    idx = integer_indices("pick", index, x.shape[axis], p.mode)
    return axis, idx.reshape(x.shape[:axis] + (1,) + x.shape[axis + 1:])


def _pick_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    x, index = inputs
    axis, idx = _pick_positions(p, x, index)
    return np.take_along_axis(x, idx, axis).reshape(
        _picked_shape(p, x.shape, p.keepdims, index.ndim))


def _pick_backward(p, ctx, inputs, outputs, out_grads):
    x, index = inputs
    axis, idx = _pick_positions(p, x, index)
    grad = np.zeros(x.shape, x.dtype)
    np.put_along_axis(grad, idx, out_grads[0].reshape(idx.shape), axis)
    return [grad, _zeros_like(index)]


register(OpDef(
    "pick", _pick_forward, inputs=("data", "index"),
    params=(Param("axis", "int", -1, "The axis to picking the elements.", nullable=True),
            Param("keepdims", "bool", False, "If true, the picked axis is left in the "
                  "result with size one."),
            Param("mode", "str", "clip", "How out-of-bound indices behave.",
                  choices=("clip", "wrap"))),
    infer_shape=_infer_pick, infer_type=first_input_dtype,
    backward=_pick_backward, backward_reads=GradReads(inputs=("index",)),
    aliases=("choose_element_0index",),
    doc="Picks one element along an axis per position of index."))


# -- one_hot -----------------------------------------------------------------------------

def _one_hot_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    indices = inputs[0]
    idx = np.trunc(indices).astype(np.int64) if indices.dtype.kind == "f" else indices
    hot = idx[..., None] == np.arange(p.depth)  # an index outside [0, depth) is all off
    return np.where(hot, p.on_value, p.off_value).astype(p.dtype)


def _one_hot_type(p: Params, in_types: list, out_types: list):
    return in_types, [merge_dtype(out_types[0], p.dtype)]


register(OpDef(
    "one_hot", _one_hot_forward, inputs=("indices",),
    params=(Param("depth", "int", doc="Depth of the one hot dimension."),
            Param("on_value", "float", 1.0, "The value assigned to the locations "
                  "represented by indices."),
            Param("off_value", "float", 0.0, "The value assigned to the other locations."),
            Param("dtype", "dtype", np.dtype("float32"), "DType of the output",
                  choices=("float16", "float32", "float64", "int32", "int64", "int8",
                           "uint8"))),
    infer_shape=from_input(lambda p, shapes: [shapes[0] + (p.depth,)]),
    infer_type=_one_hot_type,
    backward=zero_gradients,
    backward_reads=GradReads(), doc="Returns a one-hot array."))


# -- the legacy row-wise pair: _onehot_encode and fill_element_0index ----------------------
# NDArray functions of MXNet 0.x on (N, K) arrays and N indices, one per row.

def _row_positions(what: str, rows: Shape, indices: Shape) -> None:
    if rows is not None and (len(rows) != 2 or (indices is not None and
                                                 indices != (rows[0],))):
        raise ShapeError(f"{what}: needs an (N, K) array and N indices, got {rows} and "
                         f"{indices}")


def _row_indices(what: str, indices: Array, rows: Dims) -> Array:
    _row_positions(what, rows, indices.shape)
    return integer_indices(what, indices, rows[1], "raise")


def _onehot_encode_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    indices, like = inputs
    _row_positions("_onehot_encode", like.shape, indices.shape)
    # MXNet truncates each index; one outside [0, K) gives a row of zeros.
    hot = np.trunc(indices)[:, None] == np.arange(like.shape[1])
    return hot.astype(like.dtype)


def _infer_onehot_encode(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    like = merge(in_shapes[1], out_shapes[0])
    _row_positions("_onehot_encode", like, in_shapes[0])
    return [in_shapes[0], like], [like]


register(OpDef(
    "_onehot_encode", _onehot_encode_forward, inputs=("lhs", "rhs"),
    infer_shape=_infer_onehot_encode,
    infer_type=lambda p, ins, outs: (ins, [merge_dtype(ins[1], outs[0])]),
    doc="Row i of the result (rhs's shape and dtype) is 1 at column lhs[i], 0 elsewhere "
        "(deprecated in MXNet: use one_hot)."))


def _fill_element_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    data, values, indices = inputs
    cols = _row_indices("fill_element_0index", indices, data.shape)
    out = data.copy()
    out[np.arange(len(cols)), cols] = values
    return out


def _infer_fill_element(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    data = merge(in_shapes[0], out_shapes[0])
    _row_positions("fill_element_0index", data, in_shapes[1])
    _row_positions("fill_element_0index", data, in_shapes[2])
    return [data, *in_shapes[1:]], [data]


register(OpDef(
    "fill_element_0index", _fill_element_forward, inputs=("lhs", "mhs", "rhs"),
    infer_shape=_infer_fill_element, infer_type=first_input_dtype,
    doc="lhs with lhs[i, rhs[i]] set to mhs[i] for every row i."))


# -- where -------------------------------------------------------------------------------

def _condition_shape(cond: Shape, x: Shape) -> None:
    """MXNet's where takes a condition of x's shape, or a vector over x's first axis."""
    if cond is None or x is None or cond == x or len(cond) == len(x):
        return
    if len(cond) != 1 or (cond[0] and x[0] and cond[0] != x[0]):
        raise ShapeError(f"where: condition {cond} must have x's shape {x} or be a vector of "
                         "its first axis's length")


def _infer_where(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    cond, x, y = in_shapes
    try:
        shape = merge_all([x, y, out_shapes[0]])
        if cond is not None and shape is not None and len(cond) == len(shape):
            shape = merge(shape, cond)
            cond = shape
    except ShapeError:
        raise ShapeError(f"where: condition {cond}, x {x} and y {y} -> {out_shapes[0]} "
                         "do not fit") from None
    _condition_shape(cond, shape)
    return [cond, shape, shape], [shape]


def _mask(cond: Array, x: Array) -> Array:
    _condition_shape(cond.shape, x.shape)
    return (cond != 0).reshape(cond.shape + (1,) * (x.ndim - cond.ndim))


def _where_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    cond, x, y = inputs
    if x.shape != y.shape:
        raise ShapeError(f"where: x {x.shape} and y {y.shape} must have one shape")
    return np.where(_mask(cond, x), x, y).astype(x.dtype)


def _where_backward(p, ctx, inputs, outputs, out_grads):
    cond, x, y = inputs
    g, mask = out_grads[0], _mask(cond, x)
    return [_zeros_like(cond), np.where(mask, g, 0).astype(g.dtype),
            np.where(mask, 0, g).astype(g.dtype)]


def _where_type(p: Params, in_types: list, out_types: list):
    t = merge_dtype(merge_dtype(in_types[1], in_types[2]), out_types[0])
    return [in_types[0], t, t], [t]


register(OpDef(
    "where", _where_forward, inputs=("condition", "x", "y"),
    infer_shape=_infer_where, infer_type=_where_type,
    backward=_where_backward, backward_reads=GradReads(inputs=("condition",)),
    doc="Elements of x where the condition is non-zero, of y elsewhere."))
