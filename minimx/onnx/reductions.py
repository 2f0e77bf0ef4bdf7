"""Reductions in ONNX: ``sum``, ``mean``, ``max``, ``min``, ``prod``, the NaN-skipping
``nansum`` and ``nanprod`` (NaN replaced by 0 or 1 first), and ``norm`` as ReduceL1 or
ReduceL2.

MXNet keeps one dimension when every axis goes without keepdims, where ONNX would give
a scalar: a Reshape to (1,) follows. ReduceSum takes its axes as an input from opset 13,
the others as an attribute until opset 18.
"""
from __future__ import annotations

import numpy as np

from .emitter import Emitter, Site
from .registry import translates

_REDUCTIONS = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax",
               "min": "ReduceMin", "prod": "ReduceProd", "nansum": "ReduceSum",
               "nanprod": "ReduceProd"}
_NAN_COUNTS_AS = {"nansum": 0, "nanprod": 1}


def _reduced_axes(s: Site) -> list[int]:
    axis = s.p.axis
    given = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    chosen = {a % s.ndim for a in given} if given else set(range(s.ndim))
    if getattr(s.p, "exclude", False):  # norm has no exclude
        chosen = set(range(s.ndim)) - chosen if given else set()
    return sorted(chosen)


def _reduce(e: Emitter, s: Site, op_type: str, x: str, out: str | None = None) -> str:
    """`op_type` of `x` over the node's axes, shaped as MXNet shapes it; returns its name."""
    axes = _reduced_axes(s)
    if not axes:
        return e.add("Identity", [x], out)
    to_scalar = len(axes) == s.ndim and not s.p.keepdims
    keepdims = int(s.p.keepdims or to_scalar)
    reduced_out = None if to_scalar else out
    if op_type == "ReduceSum":
        reduced = e.add(op_type, [x, e.ints(f"{s.name}_axes", axes)], reduced_out,
                        keepdims=keepdims)
    else:
        reduced = e.add(op_type, [x], reduced_out, axes=axes, keepdims=keepdims)
    if not to_scalar:
        return reduced
    return e.add("Reshape", [reduced, e.ints(f"{s.name}_shape", [1])], out)


@translates(*_REDUCTIONS)
def _reduction(e: Emitter, s: Site) -> None:
    op, x = str(s.node.op), s.inputs[0]
    if op in _NAN_COUNTS_AS and s.dtype.kind == "f":  # integers hold no NaN
        fill = e.const(f"{s.name}_nan_as", _NAN_COUNTS_AS[op], s.dtype)
        x = e.add("Where", [e.add("IsNaN", [x]), fill, x])
    _reduce(e, s, _REDUCTIONS[op], x, s.outputs[0])


@translates("norm")
def _norm(e: Emitter, s: Site) -> None:
    """ord=1 or 2 (the only norms MXNet has), in the data's dtype, then cast to
    `out_dtype` as MXNet does."""
    op_type = "ReduceL1" if s.p.ord == 1 else "ReduceL2"
    cast_to = None if s.p.out_dtype is None else np.dtype(s.p.out_dtype)
    if cast_to is None or cast_to == s.dtype:
        _reduce(e, s, op_type, s.inputs[0], s.outputs[0])
        return
    e.add("Cast", [_reduce(e, s, op_type, s.inputs[0])], s.outputs[0], to=cast_to)
