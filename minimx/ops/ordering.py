"""Ordering: `topk`, `sort`, `argsort`, `argmax`, `argmin` and `argmax_channel`, with MXNet 1.9's
parameters and outputs (src/operator/tensor/ordering_op-inl.h,
broadcast_reduce_op_index.cc).

Equal values come out in the order MXNet's CPU sort leaves them: libstdc++'s
unstable `std::sort` (or `std::partial_sort` when topk keeps fewer than an eighth
of the axis), replayed by stdsort.py for the rows that hold ties; rows without
ties take numpy's sort, which agrees there. `topk` with ret_typ "value" and
`sort` have a hidden second output, the indices, which their gradient reads
to put the output gradient back in place. Indices come as floats (or the
`dtype` asked for), as in MXNet.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from .infer import Dims, checked_axis, from_input, merge_dtype
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register, zero_gradients
from .stdsort import std_partial_sort, std_sort

Array = np.ndarray

INDEX_DTYPES = ("float16", "float32", "float64", "int32", "int64", "uint8")


def mxnet_order(x: Array, axis: int, ascend: bool, k: int) -> Array:
    """Indices of the first `k` of `x` sorted along `axis`, ties as MXNet orders them."""
    rows = np.moveaxis(x, axis, -1)
    n = rows.shape[-1]
    if ascend:
        full = np.argsort(rows, axis=-1, kind="stable")
    else:  # largest first: -rows would wrap unsigned values
        full = n - 1 - np.flip(np.argsort(np.flip(rows, -1), axis=-1, kind="stable"), -1)
    order = full[..., :k]
    if n == 0 or order.size == 0:
        return np.moveaxis(order, -1, axis)
    flat_rows, flat_order = rows.reshape(-1, n), order.reshape(-1, k)
    # A row's sorted values, to find the rows with ties (or NaN) that need std::sort's order.
    ordered = np.take_along_axis(flat_rows, full.reshape(-1, n), -1)
    tied = (ordered[:, 1:] == ordered[:, :-1]).any(-1) | np.isnan(ordered).any(-1)
    for r in np.flatnonzero(tied):
        flat_order[r] = _std_order(flat_rows[r].tolist(), ascend, k)
    return np.moveaxis(flat_order.reshape(order.shape), -1, axis)


def _std_order(values: list, ascend: bool, k: int) -> list[int]:
    """The first `k` indices of `values` as MXNet's TopKSort sorts them (ordering_op-inl.h):
    a full std::sort when k is more than an eighth of them, else std::partial_sort."""
    def less(i: int, j: int) -> bool:
        return values[i] < values[j] if ascend else values[i] > values[j]
    indices = list(range(len(values)))
    if k * 8 > len(values):
        std_sort(indices, less)
    else:
        std_partial_sort(indices, k, less)
    return indices[:k]


def _sort_axis(p: Params, x: Array) -> tuple[Array, int]:
    """The array sorted along its axis (flattened when axis is None) and that axis."""
    if p.axis is None:
        return x.reshape(-1), 0
    return x, checked_axis(p.axis, x.ndim, f"axis={p.axis}")


def _sort_shape(p: Params, dshape: Dims) -> tuple[Dims, int]:
    if p.axis is None:
        return (int(np.prod(dshape)),), 0
    return dshape, checked_axis(p.axis, len(dshape), f"axis={p.axis}")


def _scatter(p: Params, x: Array, order: Array, g: Array) -> Array:
    """The input gradient of values taken at `order` along the sort axis: g put back in
    place. Reads only `x`'s shape."""
    shape, axis = _sort_shape(p, x.shape)
    grad = np.zeros(shape, x.dtype)
    np.put_along_axis(grad, order.astype(np.int64), g.reshape(order.shape), axis)
    return grad.reshape(x.shape)


# -- topk ----------------------------------------------------------------------------

RET_TYPES = ("both", "indices", "mask", "value")


def _topk_outputs(p: Params) -> list[str]:
    # MXNet's outputs: "value" keeps the indices as a hidden second output.
    return ["output0", "output1"] if p.ret_typ in ("value", "both") else ["output"]


def _k(p: Params, size: int) -> int:
    if p.k > size:
        raise ShapeError(f"topk: k={p.k} is more than the {size} elements along the axis")
    return size if p.k < 1 else p.k


def _topk_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    dshape = in_shapes[0]
    if p.ret_typ == "mask":
        return [dshape]
    shape, axis = _sort_shape(p, dshape)
    part = shape[:axis] + (_k(p, shape[axis]) if shape[axis] else 0,) + shape[axis + 1:]
    return [part, part] if p.ret_typ in ("value", "both") else [part]


def _topk_parts(p: Params, x: Array) -> tuple[Array, Array, int]:
    """(values, indices along the axis) of the top k, and the axis."""
    data, axis = _sort_axis(p, x)
    k = _k(p, data.shape[axis])
    order = mxnet_order(data, axis, p.is_ascend, k)
    return np.take_along_axis(data, order, axis), order, axis


def _topk_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
    x = inputs[0]
    values, order, axis = _topk_parts(p, x)
    indices = order.astype(p.dtype)
    if p.ret_typ == "mask":
        data, _ = _sort_axis(p, x)
        mask = np.zeros(data.shape, x.dtype)
        np.put_along_axis(mask, order, 1, axis)
        return [mask.reshape(x.shape)]
    if p.ret_typ == "indices":
        return [indices]
    return [values, indices]


def _topk_backward(p, ctx, inputs, outputs, out_grads):
    x = inputs[0]
    if p.ret_typ not in ("value", "both"):
        return [np.zeros(x.shape, x.dtype)]
    return [_scatter(p, x, outputs[1], out_grads[0])]


def _topk_type(p: Params, in_types: list, out_types: list):
    t = merge_dtype(in_types[0], out_types[0] if p.ret_typ in ("value", "both", "mask")
                    else None)
    types = {"value": [t, p.dtype], "both": [t, p.dtype], "mask": [t], "indices": [p.dtype]}
    return [t], [merge_dtype(o, n) for o, n in zip(out_types, types[p.ret_typ], strict=True)]


def _topk_reads(p: Params) -> GradReads:
    return GradReads(outputs=("output1",) if p.ret_typ in ("value", "both") else ())


_AXIS_PARAM = Param("axis", "int", -1, "Axis along which to sort; None: the flattened array.",
                    nullable=True)

register(OpDef(
    "topk", _topk_forward,
    params=(_AXIS_PARAM,
            Param("k", "int", 1, "Number of top elements to select; k < 1 sorts the whole "
                  "axis."),
            Param("ret_typ", "str", "indices", "The return type: value, indices, mask or "
                  "both (values and indices).", choices=RET_TYPES),
            Param("is_ascend", "bool", False, "Choose the k smallest instead of the k "
                  "largest elements."),
            Param("dtype", "dtype", np.dtype("float32"), "DType of the output indices.",
                  choices=INDEX_DTYPES)),
    outputs=_topk_outputs,
    visible_outputs=lambda p: 2 if p.ret_typ == "both" else 1,
    infer_shape=from_input(_topk_rule), infer_type=_topk_type,
    backward=_topk_backward, backward_reads=_topk_reads,
    doc="Returns the top k elements (values, indices or a mask) along an axis."))


# -- sort and argsort ---------------------------------------------------------------------

def _sorted(p: Params, x: Array) -> tuple[Array, Array]:
    data, axis = _sort_axis(p, x)
    order = mxnet_order(data, axis, p.is_ascend, data.shape[axis])
    return np.take_along_axis(data, order, axis), order


def _sort_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    shape, _ = _sort_shape(p, in_shapes[0])
    return [shape, shape]


def _sort_type(p: Params, in_types: list, out_types: list):
    t = merge_dtype(in_types[0], out_types[0])
    return [t], [t, merge_dtype(out_types[1], np.dtype(np.float32))]


_ASCEND_PARAM = Param("is_ascend", "bool", True, "Whether to sort in ascending or "
                      "descending order.")

register(OpDef(
    "sort", lambda p, ctx, inputs: [a if i == 0 else a.astype(np.float32)
                                    for i, a in enumerate(_sorted(p, inputs[0]))],
    params=(_AXIS_PARAM, _ASCEND_PARAM),
    outputs=("output0", "output1"), visible_outputs=lambda p: 1,
    infer_shape=from_input(_sort_rule), infer_type=_sort_type,
    backward=lambda p, ctx, inputs, outputs, out_grads: [
        _scatter(p, inputs[0], outputs[1], out_grads[0])],
    backward_reads=GradReads(outputs=("output1",)),
    doc="Sorts the elements along an axis.", named_inputs=False))


def _index_type(p: Params, in_types: list, out_types: list):
    return in_types, [merge_dtype(out_types[0], p.dtype)]


register(OpDef(
    "argsort", lambda p, ctx, inputs: _sorted(p, inputs[0])[1].astype(p.dtype),
    params=(_AXIS_PARAM, _ASCEND_PARAM,
            Param("dtype", "dtype", np.dtype("float32"), "DType of the output indices.",
                  choices=INDEX_DTYPES)),
    infer_shape=from_input(lambda p, shapes: _sort_rule(p, shapes)[:1]),
    infer_type=_index_type,
    backward=zero_gradients,
    backward_reads=GradReads(),
    doc="The indices that sort the array along an axis.", named_inputs=False))


# -- argmax and argmin ----------------------------------------------------------------------

def _arg_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    dshape = in_shapes[0]
    if p.axis is None:  # the index into the flattened input
        return [(1,) * len(dshape) if p.keepdims else (1,)]
    axis = checked_axis(p.axis, len(dshape), f"axis={p.axis}")
    if p.keepdims:
        return [dshape[:axis] + (1,) + dshape[axis + 1:]]
    return [dshape[:axis] + dshape[axis + 1:] or (1,)]


def _arg_op(name: str, fn, doc: str) -> OpDef:
    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
        x = inputs[0]
        index = fn(x) if p.axis is None else fn(x, axis=checked_axis(p.axis, x.ndim, name))
        return np.asarray(index, x.dtype).reshape(_arg_rule(p, [x.shape])[0])

    return OpDef(
        name, forward,
        params=(Param("axis", "int", None, "The axis along which to search; None: the "
                      "flattened input."),
                Param("keepdims", "bool", False, "Keep the reduced axis with size one.")),
        infer_shape=from_input(_arg_rule),
        backward=zero_gradients,
        backward_reads=GradReads(), doc=doc, named_inputs=False)


register(_arg_op("argmax", np.argmax, "Index of the largest element (the first of ties)."))
register(_arg_op("argmin", np.argmin, "Index of the smallest element (the first of ties)."))
def _channel_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    dshape = in_shapes[0]
    if len(dshape) < 2:
        raise ShapeError(f"argmax_channel: data of shape {dshape} has no channel axis (1)")
    return [dshape[:1] + dshape[2:]]


register(OpDef(
    "argmax_channel",
    lambda p, ctx, inputs: np.asarray(np.argmax(inputs[0], axis=1), inputs[0].dtype),
    infer_shape=from_input(_channel_rule), backward=zero_gradients, backward_reads=GradReads(),
    doc="Index of the largest element along the channel axis (1; the first of ties).",
    named_inputs=False))
