"""Ordering and indexing operators in ONNX: ``argmax``/``argmin`` as ArgMax/ArgMin,
``topk``, ``sort`` and ``argsort`` as TopK, ``take`` as Gather, ``gather_nd`` as
GatherND, ``one_hot``.

MXNet gives indices as floats (or topk's and argsort's `dtype`), ONNX as int64: a
Cast follows. Ties: ArgMax and ArgMin give the first index, as MXNet does; ONNX's
TopK puts the lower index first among equal values (its specification since opset
11), as minimx's stable sorts do in both directions; MXNet 1.9.1's own sort keeps no
such promise for descending order, so graphs with ties may differ from MXNet there.
"""
from __future__ import annotations

import numpy as np

from .emitter import Emitter, OnnxNode, Site, Unsupported
from .registry import translates

_INT64 = np.dtype(np.int64)


def _flat_or_axis(e: Emitter, s: Site) -> tuple[str, int]:
    """The input, flattened when the operator's axis is None, and the (non-negative)
    axis the operator works along."""
    if s.p.axis is None:
        return e.add("Reshape", [s.inputs[0], e.ints(f"{s.name}_flat", [-1])]), 0
    return s.inputs[0], s.p.axis % s.ndim


def axis_size(e: Emitter, x: str, axis: int) -> str:
    """The size of `x` along (non-negative) `axis`, as a 1-D int64 tensor (free
    dimensions included)."""
    return e.add("Shape", [x], start=axis, end=axis + 1)


def _cast_indices(e: Emitter, indices: str, dtype: np.dtype, out: str) -> None:
    if dtype == _INT64:
        e.add("Identity", [indices], out)
    else:
        e.add("Cast", [indices], out, to=dtype)


@translates("argmax", "argmin")
def _arg_extreme(e: Emitter, s: Site) -> None:
    op_type = "ArgMax" if s.node.op == "argmax" else "ArgMin"
    x, axis = _flat_or_axis(e, s)
    keep = s.p.keepdims or s.p.axis is None  # the flat index comes as (1,)
    index = e.add(op_type, [x], axis=axis, keepdims=int(keep), select_last_index=0)
    if s.p.axis is None and s.p.keepdims:  # MXNet: (1,) * ndim
        index = e.add("Reshape", [index, e.ints(f"{s.name}_shape", [1] * s.ndim)])
    elif not keep and s.ndim == 1:  # MXNet keeps (1,) where ONNX gives a scalar
        index = e.add("Reshape", [index, e.ints(f"{s.name}_shape", [1])])
    _cast_indices(e, index, s.dtype, s.outputs[0])


def _top(e: Emitter, s: Site, k: int, ascend: bool, values: str | None = None
         ) -> tuple[str, str, int]:
    """TopK along the operator's axis, its values named `values` (a fresh name if
    None): (the searched input, the int64 indices, the axis). `k` < 1 takes the whole
    axis."""
    x, axis = _flat_or_axis(e, s)
    count = e.ints(f"{s.name}_k", [k]) if k >= 1 else axis_size(e, x, axis)
    values = values or e.fresh(f"{s.name}_values")
    indices = e.fresh(f"{s.name}_indices")
    e.nodes.append(OnnxNode("TopK", [x, count], [values, indices],
                            {"axis": axis, "largest": int(not ascend), "sorted": 1}, values))
    return x, indices, axis


def _mask(e: Emitter, s: Site, x: str, indices: str, axis: int) -> None:
    """Ones where the top k of `x` are, zeros elsewhere, in the input's shape."""
    zeros = e.add("Expand", [e.const(f"{s.name}_zero", 0, s.dtype), e.add("Shape", [x])])
    ones = e.add("Expand", [e.const(f"{s.name}_one", 1, s.dtype), e.add("Shape", [indices])])
    flat = s.p.axis is None
    mask = e.add("ScatterElements", [zeros, indices, ones], None if flat else s.outputs[0],
                 axis=axis)
    if flat:
        e.add("Reshape", [mask, e.add("Shape", [s.inputs[0]])], s.outputs[0])


@translates("topk")
def _topk(e: Emitter, s: Site) -> None:
    values = s.outputs[0] if s.p.ret_typ in ("value", "both") else None
    x, indices, axis = _top(e, s, s.p.k, s.p.is_ascend, values)
    if s.p.ret_typ == "mask":
        _mask(e, s, x, indices, axis)
        return
    if s.p.ret_typ == "indices":
        _cast_indices(e, indices, s.p.dtype, s.outputs[0])
        return
    _cast_indices(e, indices, s.p.dtype, s.outputs[1])  # hidden for ret_typ "value"


@translates("sort")
def _sort(e: Emitter, s: Site) -> None:
    _, indices, _ = _top(e, s, 0, s.p.is_ascend, s.outputs[0])
    _cast_indices(e, indices, np.dtype(np.float32), s.outputs[1])  # the hidden indices


@translates("argsort")
def _argsort(e: Emitter, s: Site) -> None:
    _, indices, _ = _top(e, s, 0, s.p.is_ascend)
    _cast_indices(e, indices, s.p.dtype, s.outputs[0])


@translates("take")
def _take(e: Emitter, s: Site) -> None:
    """Gather, with the indices truncated to integers (the Cast) and brought into
    range as `mode` says: ONNX's Gather reads a negative index from the end and
    fails on one past it."""
    if s.p.mode == "raise":
        raise Unsupported("mode='raise': ONNX's Gather has no such check (it reads "
                          "negative indices from the end); use clip or wrap")
    axis = s.p.axis % s.ndim
    indices = e.add("Cast", [s.inputs[1]], to=_INT64)
    size = axis_size(e, s.inputs[0], axis)
    if s.p.mode == "wrap":
        indices = e.add("Mod", [indices, size])  # integer Mod takes the divisor's sign
    else:
        last = e.add("Sub", [size, e.ints(f"{s.name}_one", [1])])
        indices = e.add("Max", [e.add("Min", [indices, last]), e.ints(f"{s.name}_zero", [0])])
    e.add("Gather", [s.inputs[0], indices], s.outputs[0], axis=axis)


@translates("gather_nd")
def _gather_nd(e: Emitter, s: Site) -> None:
    """GatherND: MXNet's indices (M, ...) hold each index tuple along the first axis,
    ONNX's along the last (a Transpose); truncated to integers, negative ones read
    from the end as both do."""
    indices = e.add("Cast", [s.inputs[1]], to=_INT64)   # at least 2-D, as gather_nd checks
    rank = len(s.in_shapes[1])
    e.add("GatherND", [s.inputs[0], e.add("Transpose", [indices], perm=[*range(1, rank), 0])],
          s.outputs[0])


@translates("one_hot")
def _one_hot(e: Emitter, s: Site) -> None:
    """Each index against 0..depth-1. Not ONNX's OneHot, which reads negative indices
    from the end (MXNet's give a row of off_value) and takes few output dtypes."""
    indices = e.add("Unsqueeze", [e.add("Cast", [s.inputs[0]], to=_INT64),
                                  e.ints(f"{s.name}_last", [-1])])
    hot = e.add("Equal", [indices, e.ints(f"{s.name}_depth", list(range(s.p.depth)))])
    dtype = np.dtype(s.p.dtype)
    e.add("Where", [hot, e.const(f"{s.name}_on", s.p.on_value, dtype),
                    e.const(f"{s.name}_off", s.p.off_value, dtype)], s.outputs[0])
