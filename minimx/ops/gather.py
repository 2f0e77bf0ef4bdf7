"""Indexing by coordinates: `gather_nd`, `scatter_nd`, `batch_take`,
`_ravel_multi_index`, `_unravel_index` and `_contrib_index_copy`, with MXNet
1.9's parameters (src/operator/tensor/indexing_op.h, ravel.h,
contrib/index_copy-inl.h).

Coordinates may be floats, as in MXNet: they are truncated to integers. Where
MXNet's kernels write outside the output for an out-of-range coordinate
(scatter_nd, index_copy), the coordinate is refused; gather_nd refuses it as
MXNet does, after wrapping negatives once. Coordinate inputs get zero gradients.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import IndexRangeError, OperatorError, ShapeError
from .indexing import integer_indices
from .infer import Dims, Shape, first_input_dtype, from_input, merge, merge_dtype
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register, zero_gradients

Array = np.ndarray


def _coordinates(what: str, indices: Array, sizes: Dims, wrap: bool) -> tuple[Array, ...]:
    """The rows of `indices` as integer coordinates into axes of `sizes`: truncated,
    negatives wrapped once if `wrap`; `IndexRangeError` for any left outside."""
    low = np.array([-s if wrap else 0 for s in sizes]).reshape((-1,) + (1,) * (indices.ndim - 1))
    high = np.array(sizes).reshape(low.shape) - 1
    bad = (indices < low) | (indices > high)   # raw values, as MXNet checks them
    if bad.any():
        axis = int(np.nonzero(bad)[0][0])
        value = indices[axis][bad[axis]].flat[0]
        raise IndexRangeError(f"{what}: index {value} is out of bounds for axis {axis} with "
                              f"size {sizes[axis]}")
    idx = np.trunc(indices).astype(np.int64)
    return tuple(np.where(row < 0, row + size, row) for row, size in zip(idx, sizes, strict=True))


def _nd_rule(what: str, data: Dims, indices: Dims) -> int:
    """How many leading data axes `indices` (M, ...) addresses: M, checked. As in
    MXNet, indices have at least two axes (the coordinates, then the places)."""
    if len(indices) < 2 or not 0 < indices[0] <= len(data):
        raise ShapeError(f"{what}: indices {indices} must have at least two axes, the "
                         f"first of length 1 to {len(data)} (data {data})")
    return indices[0]


# -- gather_nd -----------------------------------------------------------------------------

def _infer_gather_nd(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    data, indices = in_shapes
    if data is None or indices is None or not indices or not indices[0]:
        return in_shapes, out_shapes
    m = _nd_rule("gather_nd", data, indices)
    return in_shapes, [merge(out_shapes[0], indices[1:] + data[m:])]


def _gather_nd_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    data, indices = inputs
    m = _nd_rule("gather_nd", data.shape, indices.shape)
    return data[_coordinates("gather_nd", indices, data.shape[:m], wrap=True)]


def _gather_nd_backward(p, ctx, inputs, outputs, out_grads):
    data, indices = inputs
    m = _nd_rule("gather_nd", data.shape, indices.shape)
    grad = np.zeros(data.shape, data.dtype)
    np.add.at(grad, _coordinates("gather_nd", indices, data.shape[:m], wrap=True), out_grads[0])
    return [grad, np.zeros(indices.shape, indices.dtype)]


register(OpDef(
    "gather_nd", _gather_nd_forward, inputs=("data", "indices"),
    infer_shape=_infer_gather_nd, infer_type=first_input_dtype,
    backward=_gather_nd_backward, backward_reads=GradReads(inputs=("indices",)),
    doc="Gathers slices of data at the coordinates in indices (M, ...): "
        "out[y] = data[indices[0, y], ..., indices[M-1, y]]."))


# -- scatter_nd ----------------------------------------------------------------------------

def _scatter_data_shape(p: Params, indices: Dims) -> Dims:
    m = _nd_rule("scatter_nd", p.shape, indices)
    return indices[1:] + p.shape[m:]


def _infer_scatter_nd(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    data, indices = in_shapes
    if indices is not None and indices and indices[0]:
        try:
            data = merge(data, _scatter_data_shape(p, indices))
        except ShapeError:
            raise ShapeError(f"scatter_nd: data {data} does not fit indices {indices} and "
                             f"shape={p.shape}") from None
    return [data, indices], [merge(out_shapes[0], p.shape)]


def _scatter_nd_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    data, indices = inputs
    if data.shape != _scatter_data_shape(p, indices.shape):
        raise ShapeError(f"scatter_nd: data {data.shape} does not fit indices "
                         f"{indices.shape} and shape={p.shape}")
    m = indices.shape[0]
    out = np.zeros(p.shape, data.dtype)
    # Repeated coordinates: the last write wins (MXNet leaves it undefined).
    out[_coordinates("scatter_nd", indices, p.shape[:m], wrap=False)] = data
    return out


def _scatter_nd_backward(p, ctx, inputs, outputs, out_grads):
    data, indices = inputs
    m = indices.shape[0]
    # MXNet's gradient gathers every coordinate's output gradient, repeated ones too.
    grad = out_grads[0][_coordinates("scatter_nd", indices, p.shape[:m], wrap=False)]
    return [grad.astype(data.dtype, copy=False), np.zeros(indices.shape, indices.dtype)]


register(OpDef(
    "scatter_nd", _scatter_nd_forward, inputs=("data", "indices"),
    params=(Param("shape", "shape", doc="Shape of output."),),
    infer_shape=_infer_scatter_nd, infer_type=first_input_dtype,
    backward=_scatter_nd_backward, backward_reads=GradReads(inputs=("indices",)),
    doc="Scatters data into a new array of the given shape at the coordinates in indices "
        "(the inverse of gather_nd); other elements are 0."))


# -- batch_take ----------------------------------------------------------------------------

def _batch_take_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    a, indices = in_shapes
    # MXNet takes N-d data but reads past its rows beyond 2-D; only (N, K) is taken here.
    if len(a) != 2:
        raise ShapeError(f"batch_take: data must be 2-D (rows, columns), got {a}")
    if a[0] and all(indices) and a[0] != math.prod(indices):
        raise ShapeError(f"batch_take: indices {indices} must hold one index per row of "
                         f"data {a}")
    return [indices]


def _batch_take_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    a, indices = inputs
    _batch_take_rule(p, [a.shape, indices.shape])
    cols = integer_indices("batch_take", indices.reshape(-1), a.shape[1], "clip")
    return a[np.arange(a.shape[0]), cols].reshape(indices.shape)


register(OpDef(
    "batch_take", _batch_take_forward, inputs=("a", "indices"),
    infer_shape=from_input(_batch_take_rule), infer_type=first_input_dtype,
    doc="Takes one element per row of a 2-D array: out[i] = a[i, indices[i]], indices "
        "clipped into range."))


# -- ravel_multi_index and unravel_index -------------------------------------------------

def _given_shape(p: Params, what: str) -> Dims:
    if p.shape is None:
        raise OperatorError(f"{what}: parameter shape is required")
    return p.shape


def _ravel_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    data = in_shapes[0]
    _given_shape(p, "ravel_multi_index")
    if len(data) != 2 or (data[0] and data[0] != len(p.shape)):
        raise ShapeError(f"ravel_multi_index: data {data} must be 2-D with one row per axis "
                         f"of shape={p.shape}")
    return [data[1:]]


def _unravel_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    data = in_shapes[0]
    _given_shape(p, "unravel_index")
    if len(data) != 1:
        raise ShapeError(f"unravel_index: data {data} must be 1-D")
    return [(len(p.shape),) + data]


def _ravel_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    data = inputs[0]
    _ravel_rule(p, [data.shape])
    strides = np.cumprod((1,) + p.shape[:0:-1])[::-1]
    # No bounds check, as MXNet: coordinates past an axis run into the next.
    return (strides @ np.trunc(data).astype(np.int64)).astype(data.dtype)


def _unravel_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    data = inputs[0]
    _unravel_rule(p, [data.shape])
    flat = np.trunc(data).astype(np.int64)
    out = np.empty((len(p.shape),) + data.shape, np.int64)
    for axis in range(len(p.shape) - 1, 0, -1):
        # C's division and remainder, as MXNet's kernel: negative indices stay negative.
        out[axis] = np.fmod(flat, p.shape[axis])
        flat = (flat - out[axis]) // p.shape[axis]
    out[0] = flat   # the first coordinate is not bounded
    return out.astype(data.dtype)


for _name, _forward, _rule, _doc in (
        ("_ravel_multi_index", _ravel_forward, _ravel_rule,
         "Flat indices of the coordinates in data (one row per axis of shape)."),
        ("_unravel_index", _unravel_forward, _unravel_rule,
         "Coordinates (one row per axis of shape) of the flat indices in data.")):
    register(OpDef(
        _name, _forward, aliases=(_name[1:],),
        params=(Param("shape", "shape", None, "Shape of the array into which the multi-"
                      "indices apply."),),
        infer_shape=from_input(_rule), backward=zero_gradients, backward_reads=GradReads(),
        doc=_doc))


# -- index_copy ----------------------------------------------------------------------------

def _infer_index_copy(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    old, index, new = in_shapes
    old = merge(old, out_shapes[0])
    if index is not None and len(index) != 1:
        raise ShapeError(f"index_copy: index_vector must be 1-D, got {index}")
    if old is not None and new is not None and (
            len(old) != len(new) or any(a and b and a != b for a, b in zip(
                old[1:], new[1:], strict=True))):
        raise ShapeError(f"index_copy: new_tensor {new} must have old_tensor {old}'s shape "
                         "but for its first axis")
    if new is not None:
        index = merge(index, new[:1])
    return [old, index, new], [old]


def _infer_index_copy_type(p: Params, in_types: list, out_types: list):
    t = merge_dtype(merge_dtype(in_types[0], in_types[2]), out_types[0])
    return [t, in_types[1], t], [t]


def _rows(old: Array, index: Array) -> tuple[Array, ...]:
    """The rows index_vector names, as integers; `OperatorError` for one outside."""
    return _coordinates("index_copy", index[None], old.shape[:1], wrap=False)


def _index_copy_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    old, index, new = inputs
    out = old.copy()
    out[_rows(old, index)] = new   # a repeated row: the last copy wins, as in MXNet
    return out


def _index_copy_backward(p, ctx, inputs, outputs, out_grads):
    old, index, new = inputs
    rows, g = _rows(old, index), out_grads[0]
    grad_old = g.copy()
    grad_old[rows] = 0
    return [grad_old, np.zeros(index.shape, index.dtype), g[rows].astype(new.dtype)]


register(OpDef(
    "_contrib_index_copy", _index_copy_forward,
    inputs=("old_tensor", "index_vector", "new_tensor"),
    infer_shape=_infer_index_copy, infer_type=_infer_index_copy_type,
    backward=_index_copy_backward, backward_reads=GradReads(inputs=("index_vector",)),
    doc="old_tensor with the rows named in index_vector replaced by new_tensor's rows, "
        "in order."))
