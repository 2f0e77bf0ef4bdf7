"""Whole-array summaries that optimizers and AMP's loss scaling read: `all_finite`,
`multi_all_finite` and `multi_sum_sq`, with MXNet 1.9's parameters
(src/operator/contrib/all_finite.cc, multi_sum_sq.cc), and `reset_arrays`, which
zeroes arrays in place (contrib/reset_arrays.cc). Their float32 results take
no gradient; bfloat16 inputs are refused, as by MXNet 1.9.1.

MXNet's ``init_output=False`` ANDs into what its output array already holds;
minimx's kernels never read their outputs, so it is refused.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError
from .infer import merge, merge_dtype
from .params import Params
from .registry import OpContext, OpDef, Param, register

Array = np.ndarray
_FLOAT32 = np.dtype("float32")


def _all_finite(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    if not p.init_output:
        raise OperatorError("all_finite: init_output=False (AND into the output's previous "
                            "value) is not supported")
    return np.array([all(np.isfinite(a).all() for a in inputs)], _FLOAT32)


def _one_value(p: Params, in_shapes: list, out_shapes: list):
    return in_shapes, [merge(out_shapes[0], (1,))]


def _float32_out(p: Params, in_types: list, out_types: list):
    return in_types, [merge_dtype(out_types[0], _FLOAT32)]


_INIT = Param("init_output", "bool", True, "Initialize output to 1.")
_DOC = "1 if every element of the input{} is finite, else 0 (shape (1,), float32)."

register(OpDef(
    "all_finite", _all_finite, params=(_INIT,), infer_shape=_one_value, bfloat16="refuse",
    infer_type=_float32_out, doc=_DOC.format("")))
register(OpDef(
    "multi_all_finite", _all_finite, variadic="num_arrays", bfloat16="refuse",
    params=(Param("num_arrays", "int", 1, "Number of arrays."), _INIT),
    infer_shape=_one_value, infer_type=_float32_out, doc=_DOC.format("s")))


def _sum_sq_shape(p: Params, in_shapes: list, out_shapes: list):
    return in_shapes, [merge(out_shapes[0], (p.num_arrays,))]


def sum_sq(a: Array) -> np.float32:
    """The sum of the squares of `a`'s elements as MXNet's CPU kernel (multi_sum_sq.cc)
    computes it: one float32 running sum, in element order, of each square taken in
    `a`'s dtype (a float16 square is rounded to float16, overflowing past 65504). For
    float64 each step adds in float64 and rounds the sum back to float32, which no
    numpy accumulation does: a loop."""
    with np.errstate(over="ignore"):   # inf, as MXNet's
        squares = np.square(a.ravel())
    if squares.size == 0:
        return _FLOAT32.type(0)
    if a.dtype != np.float64:
        return np.cumsum(squares, dtype=_FLOAT32)[-1]
    total = _FLOAT32.type(0)
    for square in squares.tolist():
        total = _FLOAT32.type(float(total) + square)
    return total


register(OpDef(
    "multi_sum_sq",
    lambda p, ctx, inputs: np.array([sum_sq(a) for a in inputs], _FLOAT32),
    variadic="num_arrays", bfloat16="refuse",
    params=(Param("num_arrays", "int", doc="Number of arrays."),),
    infer_shape=_sum_sq_shape, infer_type=_float32_out,
    doc="The sum of the squares of each input's elements, one float32 value per input."))


def _reset_arrays(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
    for a in inputs:   # the inputs are auxiliary states: written in place
        a[...] = 0
    return []


# MXNet's optimizers zero their gradient arrays with it: no outputs, every input mutated.
register(OpDef(
    "reset_arrays", _reset_arrays, variadic="num_arrays", outputs=(),
    aux=lambda p: [f"arg{i}" for i in range(p.num_arrays)],
    params=(Param("num_arrays", "int", doc="number of input arrays."),),
    infer_shape=lambda p, ins, outs: (ins, []), infer_type=lambda p, ins, outs: (ins, []),
    doc="Sets every input array to zero, in place; no outputs."))
