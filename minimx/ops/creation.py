"""Operators that make arrays: `_zeros`, `_ones`, `_full`, `_zeros_without_dtype`,
`_set_value`, `_arange`, `_linspace` and `_eye` (no inputs), `_contrib_arange_like`,
`shape_array` / `size_array` and `_contrib_index_array`.

Parameters are MXNet 1.9's (src/operator/tensor/init_op.h, elemwise_unary_op_basic.cc);
`ctx` is accepted and ignored, as in a symbolic graph. Nothing flows back
through these operators: the input of arange_like, shape_array and size_array
gets a zero gradient, as in MXNet.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import FLAG_TO_DTYPE, OperatorError, ShapeError
from .infer import Dims, Shape, checked_axis, known, merge, merge_dtype
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register, zero_gradients

Array = np.ndarray

MAKE_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8", "uint8", "bool")
_CTX = Param("ctx", "str", "", "Context of output (only used by imperative calls).")


def _constant_type(p: Params, in_types: list, out_types: list):
    return in_types, [merge_dtype(out_types[0], p.dtype)]


# -- _zeros, _ones, _full ----------------------------------------------------------

def _declared(p: Params) -> Dims:
    """`shape` with its unknown dimensions as 0: MXNet 1.x reads 0 and -1 so."""
    return tuple(0 if d == -1 else d for d in p.shape)


def _fill_shape(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    # The output may tell the unknown dimensions.
    return in_shapes, [merge(out_shapes[0], _declared(p))]


def _inferred_shape(p: Params, out_shapes: list) -> Params:
    """`shape` with its unknown dims as inference found them (a graph whose
    states are sized by the data, e.g. GluonNLP's begin states)."""
    if known(_declared(p)) or out_shapes[0] is None:
        return p
    return Params({**{k: p[k] for k in p}, "shape": tuple(out_shapes[0])})


def _known_shape(name: str, p: Params) -> Dims:
    if not known(_declared(p)):
        raise ShapeError(f"{p.label or name}: shape={p.shape} has unknown (0 or -1) "
                         "dimensions")
    return tuple(p.shape)


def _fill_op(name: str, value: float | None, doc: str) -> OpDef:
    params: tuple[Param, ...] = (Param("shape", "shape", (), "The shape of the output"), _CTX,
              Param("dtype", "dtype", np.dtype("float32"), "Target data type.",
                    choices=MAKE_DTYPES))
    if value is None:
        params += (Param("value", "float", doc="Value with which to fill newly created tensor"),)

    def forward(p: Params, ctx: OpContext, inputs: list) -> Array:
        return np.full(_known_shape(name, p), p.value if value is None else value, p.dtype)

    return OpDef(name, forward, params=params, inputs=(), infer_shape=_fill_shape,
                 infer_type=_constant_type, backward=zero_gradients, backward_reads=GradReads(),
                 resolve=_inferred_shape, doc=doc)


register(_fill_op("_zeros", 0.0, "An array of zeros of the given shape and dtype."))
register(_fill_op("_ones", 1.0, "An array of ones of the given shape and dtype."))
register(_fill_op("_full", None, "An array of the given shape and dtype filled with value."))


# MXNet's legacy NDArray function `_set_value` (src/ndarray/ndarray.cc) fills the array
# given as `out=` with `src` (a float32, cast to the array's dtype): an operator with no
# inputs whose output only `out` sizes, so a graph cannot infer its shape.
def _set_value_forward(p: Params, ctx: OpContext, inputs: list) -> Array:
    # A graph's kernel gets the inferred shape (`resolve`); mx.nd's copies the scalar
    # into out= whatever its shape.
    return np.full(p.get("shape", ()), p.src, np.float32)


register(OpDef(
    "_set_value", _set_value_forward, inputs=(),
    params=(Param("src", "float", doc="Source input to the function."),),
    infer_shape=lambda p, ins, outs: (ins, outs),
    infer_type=lambda p, ins, outs: (ins, outs),
    resolve=lambda p, out_shapes: Params({**p, "shape": tuple(out_shapes[0])}),
    doc="Sets every element of `out` to src: ``mx.nd._internal._set_value(src=3.0, "
        "out=arr)``."))


def _flagged_dtype(p: Params) -> np.dtype:
    """`_zeros_without_dtype`'s dtype, an MXNet type flag; -1 (unset) is float32 here,
    where MXNet leaves it to graph inference."""
    if p.dtype == -1:
        return np.dtype(np.float32)
    if p.dtype not in FLAG_TO_DTYPE:
        raise OperatorError(f"_zeros_without_dtype: dtype={p.dtype} is not an MXNet type flag")
    return FLAG_TO_DTYPE[p.dtype]


register(OpDef(
    "_zeros_without_dtype",
    lambda p, ctx, inputs: np.zeros(_known_shape("_zeros_without_dtype", p),
                                     _flagged_dtype(p)),
    params=(Param("shape", "shape", (), "The shape of the output"), _CTX,
            Param("dtype", "int", -1, "Target data type, as an MXNet type flag "
                  "(-1: float32).")),
    inputs=(), infer_shape=_fill_shape,
    infer_type=lambda p, ins, outs: (ins, [merge_dtype(outs[0], _flagged_dtype(p))]),
    backward=zero_gradients, backward_reads=GradReads(), resolve=_inferred_shape,
    doc="An array of zeros of the given shape; dtype is an MXNet type flag."))


# -- _arange and _contrib_arange_like -------------------------------------------------

def ranged(n: int, start: float, step: float, repeat: int, dtype: np.dtype) -> Array:
    """start, start + step, ... (each `repeat` times), n values, computed in `dtype`
    as MXNet's range kernel does."""
    i = (np.arange(n) // repeat).astype(dtype)
    return (np.asarray(start).astype(dtype) + i * np.asarray(step).astype(dtype)).astype(dtype)


def _check_repeat_and_step(name: str, p: Params) -> None:
    if p.repeat < 1:
        raise OperatorError(f"{name}: repeat={p.repeat} must be at least 1")
    if p.step == 0:
        raise OperatorError(f"{name}: step must not be 0")


def _arange_length(p: Params) -> int:
    """MXNet's RangeParamParser and RangeShape: one bound given is the stop."""
    _check_repeat_and_step("_arange", p)
    if p.infer_range:
        raise OperatorError("_arange: infer_range=True (deprecated in MXNet) is not supported")
    start, stop = (0.0, p.start) if p.stop is None else (p.start, p.stop)
    n = math.ceil((stop - start) / p.step)
    if n <= 0:
        raise ShapeError(f"_arange: start={p.start}, stop={p.stop}, step={p.step} "
                         "give an empty range")
    return n * p.repeat


def _arange_forward(p: Params, ctx: OpContext, inputs: list) -> Array:
    start = 0.0 if p.stop is None else p.start
    return ranged(_arange_length(p), start, p.step, p.repeat, p.dtype)


register(OpDef(
    "_arange", _arange_forward, inputs=(),
    params=(Param("start", "float", doc="Start of interval (the stop when stop is None)."),
            Param("stop", "float", None, "End of interval (excluded)."),
            Param("step", "float", 1.0, "Spacing between values."),
            Param("repeat", "int", 1, "The repeating time of all elements."),
            Param("infer_range", "bool", False, "Infer the stop from the output size "
                  "(not supported)."),
            _CTX,
            Param("dtype", "dtype", np.dtype("float32"), "Target data type.",
                  choices=MAKE_DTYPES[:-1])),
    infer_shape=lambda p, ins, outs: (ins, [merge(outs[0], (_arange_length(p),))]),
    infer_type=_constant_type, backward=zero_gradients, backward_reads=GradReads(),
    doc="Evenly spaced values within [start, stop), each repeated `repeat` times."))


def _linspace_forward(p: Params, ctx: OpContext, inputs: list) -> Array:
    # MXNet's kernel: start + i * step in double, the last value stop itself, then a
    # C cast to the dtype (truncation for integers).
    if p.num < 1:
        raise ShapeError(f"_linspace: num={p.num} must be at least 1")
    gaps = p.num - 1 if p.endpoint else p.num
    values = p.start + np.arange(p.num) * ((p.stop - p.start) / max(gaps, 1))
    if p.endpoint and p.num > 1:
        values[-1] = p.stop
    return values.astype(p.dtype)


register(OpDef(
    "_linspace", _linspace_forward, inputs=(),
    params=(Param("start", "float", doc="The starting value of the sequence."),
            Param("stop", "float", doc="The ending value of the sequence"),
            Param("num", "int", doc="Number of samples to generate. Must be non-negative."),
            Param("endpoint", "bool", True, "If True, stop is the last sample. Otherwise, it "
                  "is not included."),
            _CTX,
            Param("dtype", "dtype", np.dtype("float32"), "Target data type.",
                  choices=MAKE_DTYPES[:-1])),
    infer_shape=lambda p, ins, outs: (ins, [merge(outs[0], (p.num,))]),
    infer_type=_constant_type, backward=zero_gradients, backward_reads=GradReads(),
    doc="num evenly spaced values from start to stop (included when endpoint)."))


def _eye_shape(p: Params) -> tuple[int, int]:
    if p.N < 1 or p.M < 0:
        raise ShapeError(f"_eye: N={p.N}, M={p.M} must give a non-empty matrix")
    return (p.N, p.M or p.N)


def _eye_forward(p: Params, ctx: OpContext, inputs: list) -> Array:
    rows, cols = _eye_shape(p)
    return np.eye(rows, cols, p.k, p.dtype)


register(OpDef(
    "_eye", _eye_forward, inputs=(),
    params=(Param("N", "int", doc="Number of rows in the output."),
            Param("M", "int", 0, "Number of columns in the output. If 0, defaults to N"),
            Param("k", "int", 0, "Index of the diagonal. 0 (the default) refers to the main "
                  "diagonal. A positive value refers to an upper diagonal. A negative value to "
                  "a lower diagonal."),
            _CTX,
            Param("dtype", "dtype", np.dtype("float32"), "Target data type.",
                  choices=MAKE_DTYPES[:-1])),
    infer_shape=lambda p, ins, outs: (ins, [merge(outs[0], _eye_shape(p))]),
    infer_type=_constant_type, backward=zero_gradients, backward_reads=GradReads(),
    doc="A 2-D array with ones on the k-th diagonal and zeros elsewhere."))


def _arange_like_shape(p: Params, dshape: Dims) -> Dims:
    if p.axis is None:
        return dshape
    return (dshape[checked_axis(p.axis, len(dshape), f"_contrib_arange_like (axis={p.axis})")],)


def _infer_arange_like(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    if in_shapes[0] is None:
        return in_shapes, out_shapes
    out = merge(out_shapes[0], _arange_like_shape(p, in_shapes[0]))
    return [out if p.axis is None else in_shapes[0]], [out]


def _arange_like_forward(p: Params, ctx: OpContext, inputs: list) -> Array:
    _check_repeat_and_step("_contrib_arange_like", p)
    x = inputs[0]
    shape = _arange_like_shape(p, x.shape)
    return ranged(math.prod(shape), p.start, p.step, p.repeat, x.dtype).reshape(shape)


register(OpDef(
    "_contrib_arange_like", _arange_like_forward,
    params=(Param("start", "float", 0.0, "Start of interval."),
            Param("step", "float", 1.0, "Spacing between values."),
            Param("repeat", "int", 1, "The repeating time of all elements."),
            _CTX,
            Param("axis", "int", None, "Arange along this axis of the input (its length); "
                  "None: an array of the input's shape.")),
    infer_shape=_infer_arange_like, backward=zero_gradients, backward_reads=GradReads(),
    doc="An arange of the input's shape (or the length of one of its axes), in its dtype.",
    named_inputs=False))


# -- shape_array and size_array --------------------------------------------------------

def _shape_op(name: str, values, length, doc: str) -> OpDef:
    def infer_shape(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
        if in_shapes[0] is None:
            return in_shapes, out_shapes
        return in_shapes, [merge(out_shapes[0], (length(in_shapes[0]),))]

    def infer_type(p: Params, in_types: list, out_types: list):
        return in_types, [merge_dtype(out_types[0], np.dtype(np.int64))]

    return OpDef(name, lambda p, ctx, inputs: np.array(values(inputs[0].shape), np.int64),
                 infer_shape=infer_shape, infer_type=infer_type, backward=zero_gradients,
                 backward_reads=GradReads(), doc=doc, named_inputs=False)


register(_shape_op("shape_array", lambda s: s, len, "The shape of the input as an int64 array."))
register(_shape_op("size_array", lambda s: [math.prod(s)], lambda s: 1,
                   "The size of the input as an int64 array of one element."))


def _index_array_axes(p: Params, ndim: int) -> Dims:
    if p.axes is None:
        return tuple(range(ndim))
    return tuple(checked_axis(a, ndim, f"_contrib_index_array (axes={p.axes})") for a in p.axes)


def _infer_index_array(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    if in_shapes[0] is None:
        return in_shapes, out_shapes
    out = (*in_shapes[0], len(_index_array_axes(p, len(in_shapes[0]))))
    return in_shapes, [merge(out_shapes[0], out)]


def _index_array_forward(p: Params, ctx: OpContext, inputs: list) -> Array:
    shape = inputs[0].shape
    grid = np.indices(shape, np.int64)
    return np.stack([grid[a] for a in _index_array_axes(p, len(shape))], axis=-1)


register(OpDef(
    "_contrib_index_array", _index_array_forward,
    params=(Param("axes", "shape", None, "The axes to include in the index array. Axes "
                  "with negative values count from the end; None: all axes."),),
    infer_shape=_infer_index_array,
    infer_type=lambda p, ins, outs: (ins, [merge_dtype(outs[0], np.dtype(np.int64))]),
    backward=zero_gradients, backward_reads=GradReads(),
    doc="The index of every element of the input along the given axes (int64, an extra "
        "last axis)."))
