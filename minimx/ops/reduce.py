"""Reductions: sum, mean, prod, max, min, nansum, nanprod and _square_sum over axes, as MXNet
1.9's src/operator/tensor/broadcast_reduce_op.h (axis, keepdims, exclude), norm
(the L1 or L2 norm), moments (mean and variance, nn/moments-inl.h) and the
cumulative sum (numpy/np_cumsum-inl.h) and _contrib_allclose (one 0-d verdict)."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..base import OperatorError, ShapeError
from .elemwise import mx_sign
from .infer import Dims, checked_axis, from_input, merge, merge_dtype, same_shape
from .registry import GradReads, OpDef, Param, Params, register


def _reduced_axes(p, ndim: int) -> Dims:
    """The axes reduced over, as MXNet's ReduceAxesShapeImpl: no axis (None or ())
    is every axis, and `exclude` (where the operator has it) reduces over the
    axes not listed."""
    if p.axis is None or p.axis == ():
        return tuple(range(ndim))
    axes = _listed_axes(p.axis, ndim)
    if p.get("exclude"):
        return tuple(a for a in range(ndim) if a not in axes)
    return axes


def _listed_axes(axis: int | Dims, ndim: int) -> Dims:
    """`axis` (one or a tuple) counted from 0 and sorted; `ShapeError` if one is out of
    range or repeated."""
    listed = (axis,) if isinstance(axis, int) else axis
    axes = sorted(checked_axis(a, ndim, f"reduction (axis={axis})") for a in listed)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"reduction: axes {axis} have duplicates for a {ndim}-d input")
    return tuple(axes)


def kept_shape(axes: Dims, shape: Dims) -> Dims:
    """The result with keepdims: reduced axes become 1."""
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _reduced_shape(axes: Dims, keepdims: bool, shape: Dims) -> Dims:
    if keepdims:
        return kept_shape(axes, shape)
    # MXNet never returns a 0-d array: a full reduction has shape (1,).
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def _reduce_rule(p, in_shapes):
    dshape = in_shapes[0]
    return [_reduced_shape(_reduced_axes(p, len(dshape)), p.keepdims, dshape)]


_AXIS = Param("axis", "axis", None, "The axis or axes along which to reduce; None or () "
              "reduces over all elements into shape (1,).")
_KEEPDIMS = Param("keepdims", "bool", False,
                  "If true, the reduced axes are left in the result with size one.")


def _sum_grad(x, y, g, count):
    return np.broadcast_to(g, x.shape).astype(x.dtype)


def _mean_grad(x, y, g, count):
    return np.broadcast_to(g / count, x.shape).astype(x.dtype)


def _prod_grad(x, y, g, count):
    """MXNet's: the product over the element (inf or NaN where it is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (g * (y / x)).astype(x.dtype)


def _nansum_grad(x, y, g, count):
    return np.where(np.isnan(x), 0, g).astype(x.dtype)


def _nanprod_grad(x, y, g, count):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isnan(x), 0, g * (y / x)).astype(x.dtype)


def _extremum_grad(x, y, g, count):
    """Like MXNet, every position equal to the extremum gets the whole gradient."""
    return (g * (x == y)).astype(x.dtype)


def _reduction(name: str, np_fn: Callable, grad: Callable, reads: GradReads,
               aliases: tuple[str, ...], doc: str) -> OpDef:
    def forward(p, ctx, inputs):
        x = inputs[0]
        y = np_fn(x, axis=_reduced_axes(p, x.ndim), keepdims=True)
        return np.asarray(y, dtype=x.dtype).reshape(_reduce_rule(p, [x.shape])[0])

    def backward(p, ctx, inputs, outputs, out_grads):
        x = inputs[0]
        axes = _reduced_axes(p, x.ndim)
        kept = kept_shape(axes, x.shape)
        count = math.prod(x.shape[a] for a in axes)
        y = outputs[0].reshape(kept) if reads.outputs else None
        return [grad(x, y, out_grads[0].reshape(kept), count)]

    return register(OpDef(
        name=name, aliases=aliases, doc=doc,
        params=(_AXIS, _KEEPDIMS,
                Param("exclude", "bool", False,
                      "Whether to reduce over the axes that are NOT in axis instead.")),
        forward=forward, backward=backward, backward_reads=reads,
        infer_shape=from_input(_reduce_rule),
        named_inputs=False,
    ))


# A sum's or mean's gradient needs only the input's shape; an extremum's finds its positions.
_EXTREMUM_READS = GradReads(inputs=("data",), outputs=("output",))
_reduction("sum", np.sum, _sum_grad, GradReads(), ("sum_axis",),
           "Sum of array elements over given axes.")
_reduction("mean", np.mean, _mean_grad, GradReads(), (), "Mean of array elements over given axes.")
_reduction("max", np.max, _extremum_grad, _EXTREMUM_READS, ("max_axis",),
           "Maximum of array elements over given axes.")
_reduction("min", np.min, _extremum_grad, _EXTREMUM_READS, ("min_axis",),
           "Minimum of array elements over given axes.")
_reduction("prod", np.prod, _prod_grad, _EXTREMUM_READS, (),
           "Product of array elements over given axes.")
_reduction("nansum", np.nansum, _nansum_grad, GradReads(inputs=("data",)), (),
           "Sum of array elements over given axes, NaN counted as zero.")
_reduction("nanprod", np.nanprod, _nanprod_grad, _EXTREMUM_READS, (),
           "Product of array elements over given axes, NaN counted as one.")
# MXNet has this for row_sparse input only (the sparse optimizers' norms); here it is dense.
_reduction("_square_sum", lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims),
           lambda x, y, g, count: 2 * x * g, GradReads(inputs=("data",)), (),
           "Sum of the squares of array elements over given axes.")


def _norm_forward(p, ctx, inputs):
    x = inputs[0]
    axes = _reduced_axes(p, x.ndim)
    # Squares of integers (which wrap) and of float16 (which overflows past 256) are
    # summed in float64, where MXNet's scaled reduction does neither; float32's stay
    # float32, whose sums give MXNet's digits.
    wide = x if x.dtype in (np.float32, np.float64) else x.astype(np.float64)
    y = (np.abs(x).sum(axis=axes, keepdims=True) if p.ord == 1
         else np.sqrt(np.square(wide).sum(axis=axes, keepdims=True)))
    dtype = x.dtype if p.out_dtype is None else p.out_dtype
    return np.asarray(y, dtype=dtype).reshape(_reduce_rule(p, [x.shape])[0])


def _norm_backward(p, ctx, inputs, outputs, out_grads):
    x = inputs[0]
    kept = kept_shape(_reduced_axes(p, x.ndim), x.shape)
    g = out_grads[0].reshape(kept)
    if p.ord == 1:   # MXNet's sign: 0 at NaN
        return [(g * mx_sign(x)).astype(x.dtype)]
    with np.errstate(divide="ignore", invalid="ignore"):   # MXNet's NaN at a zero norm
        return [(g * x / outputs[0].reshape(kept)).astype(x.dtype)]


def _norm_type(p, in_types, out_types):
    out = in_types[0] if p.out_dtype is None else np.dtype(p.out_dtype)
    return list(in_types), [out if in_types[0] is not None or p.out_dtype else None]


def _norm_shape(p, in_shapes):
    if p.ord not in (1, 2):
        raise OperatorError(f"norm: ord={p.ord}; the norms are ord=1 and ord=2, as in MXNet")
    return _reduce_rule(p, in_shapes)


register(OpDef(
    name="norm", doc="The L1 or L2 norm of the array over the given axes (all by default).",
    forward=_norm_forward, backward=_norm_backward,
    backward_reads=GradReads(inputs=("data",), outputs=("output",)),
    params=(Param("ord", "int", 2, "Order of the norm: 1 or 2."), _AXIS,
            Param("out_dtype", "dtype", None, "The data type of the output (default: the "
                  "input's).", choices=("float16", "float32", "float64", "int32", "int64",
                                        "int8")),
            _KEEPDIMS),
    infer_shape=from_input(_norm_shape),
    infer_type=_norm_type,
))


# -- moments -------------------------------------------------------------------------------

def _moments_axes(p: Params, ndim: int) -> Dims:
    if not p.axes:
        raise OperatorError(f"moments: axes={p.axes} is not supported; for global moments "
                            "pass every axis, as MXNet asks")
    return _listed_axes(p.axes, ndim)


def _moments_rule(p, in_shapes):
    dshape = in_shapes[0]
    small = _reduced_shape(_moments_axes(p, len(dshape)), p.keepdims, dshape)
    return [small, small]


def _moments_forward(p, ctx, inputs):
    """Mean, then the mean square deviation from that mean rounded to the data's dtype
    (MXNet's VarBroadcastKernel reads the stored mean)."""
    x = inputs[0]
    axes = _moments_axes(p, x.ndim)
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float64).astype(x.dtype)
    var = np.square(x - mean, dtype=np.float64).mean(axis=axes, keepdims=True)
    shape = _reduced_shape(axes, p.keepdims, x.shape)
    return [mean.reshape(shape), var.astype(x.dtype).reshape(shape)]


def _moments_backward(p, ctx, inputs, outputs, out_grads):
    x = inputs[0]
    axes = _moments_axes(p, x.ndim)
    kept = kept_shape(axes, x.shape)
    count = math.prod(x.shape[a] for a in axes)
    g_mean, g_var = (g.reshape(kept) for g in out_grads)
    grad = g_mean / count + g_var * (x - outputs[0].reshape(kept)) * 2 / count
    return [grad.astype(x.dtype)]


register(OpDef(
    name="moments", doc="The mean and variance of the data over the given axes.",
    params=(Param("axes", "shape", None, "Axes along which to compute mean and variance "
                  "(required: MXNet refuses None and ())."),
            Param("keepdims", "bool", False,
                  "produce moments with the same dimensionality as the input.")),
    outputs=("output0", "output1"),
    forward=_moments_forward, backward=_moments_backward,
    backward_reads=GradReads(inputs=("data",), outputs=("output0",)),
    infer_shape=from_input(_moments_rule), bfloat16="refuse",
))


# -- cumsum --------------------------------------------------------------------------------

def _cumsum_out_dtype(p: Params, in_dtype: np.dtype) -> np.dtype:
    """The dtype parameter, else the input's, except that booleans sum as int64."""
    if p.dtype is not None:
        return np.dtype(p.dtype)
    return np.dtype(np.int64) if in_dtype == np.bool_ else np.dtype(in_dtype)


def _cumsum_type(p, in_types, out_types):
    if in_types[0] is None:
        # Without the dtype parameter MXNet gives the input the output's dtype.
        return [None if p.dtype is not None else out_types[0]], out_types
    return in_types, [merge_dtype(out_types[0], _cumsum_out_dtype(p, in_types[0]))]


def _cumsum_shape(p, in_shapes, out_shapes):
    if p.axis is not None:
        if in_shapes[0] is not None:
            checked_axis(p.axis, len(in_shapes[0]), "cumsum")
        return same_shape(p, in_shapes, out_shapes)
    dshape = in_shapes[0]
    if dshape is None or not all(dshape):
        return in_shapes, out_shapes
    return in_shapes, [merge(out_shapes[0], (math.prod(dshape),))]


def _cumsum_forward(p, ctx, inputs):
    x = inputs[0]
    if p.axis is None:
        return np.cumsum(x.ravel(), dtype=_cumsum_out_dtype(p, x.dtype))
    return np.cumsum(x, axis=checked_axis(p.axis, x.ndim, "cumsum"),
                     dtype=_cumsum_out_dtype(p, x.dtype))


def _cumsum_backward(p, ctx, inputs, outputs, out_grads):
    """The sum of the output gradient from each position to the end, in the input's
    dtype as MXNet's kernel accumulates it."""
    x, g = inputs[0], out_grads[0]
    axis = 0 if p.axis is None else checked_axis(p.axis, x.ndim, "cumsum")
    grad = np.flip(np.cumsum(np.flip(g, axis), axis=axis, dtype=x.dtype), axis)
    return [grad.reshape(x.shape)]


register(OpDef(
    name="_np_cumsum", aliases=("cumsum",), inputs=("a",),
    doc="The cumulative sum of the elements along an axis (of the flattened array when "
        "axis is None).",
    params=(Param("axis", "int", None, "Axis along which the cumulative sum is computed. The "
                  "default (None) is to compute the cumsum over the flattened array."),
            Param("dtype", "dtype", None, "Type of the returned array and of the accumulator "
                  "(default: the input's; int64 for booleans).",
                  choices=("float16", "float32", "float64", "int32", "int64", "int8"))),
    forward=_cumsum_forward, backward=_cumsum_backward, backward_reads=GradReads(),
    infer_shape=_cumsum_shape, infer_type=_cumsum_type,
))


# -- allclose ----------------------------------------------------------------------------

def _allclose_forward(p: Params, ctx, inputs):
    a, b = inputs
    if a.shape != b.shape:
        raise ShapeError(f"_contrib_allclose: a {a.shape} and b {b.shape} differ in shape")
    return np.array(np.isclose(a, b, p.rtol, p.atol, p.equal_nan).all(), np.uint8)


def _allclose_shape(p, in_shapes, out_shapes):
    (a, b), _ = same_shape(p, in_shapes, [])
    return [a, b], [merge(out_shapes[0], ())]


register(OpDef(
    "_contrib_allclose", _allclose_forward, inputs=("a", "b"),
    params=(Param("rtol", "float", 1e-05, "Relative tolerance."),
            Param("atol", "float", 1e-08, "Absolute tolerance."),
            Param("equal_nan", "bool", True, "Whether to compare NaN's as equal. If True, "
                  "NaN's in A will be considered equal to NaN's in B in the output array.")),
    infer_shape=_allclose_shape,
    infer_type=lambda p, ins, outs: (ins, [merge_dtype(outs[0], np.dtype(np.uint8))]),
    doc="1 (uint8, 0-d) if every |a - b| <= atol + rtol * |b|, else 0."))
