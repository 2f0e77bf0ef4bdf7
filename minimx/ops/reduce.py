"""Reductions: sum, mean, prod, max, min, nansum and nanprod over axes, as MXNet
1.9's src/operator/tensor/broadcast_reduce_op.h (axis, keepdims, exclude), and
norm (the L1 or L2 norm)."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, checked_axis, from_input
from .registry import GradReads, OpDef, Param, register


def _reduced_axes(p, ndim: int) -> Dims:
    """The axes reduced over, as MXNet's ReduceAxesShapeImpl: no axis (None or ())
    is every axis, and `exclude` (where the operator has it) reduces over the
    axes not listed."""
    if p.axis is None or p.axis == ():
        return tuple(range(ndim))
    listed = (p.axis,) if isinstance(p.axis, int) else p.axis
    axes = sorted(checked_axis(a, ndim, f"reduction (axis={p.axis})") for a in listed)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"reduction: axes {p.axis} have duplicates for a {ndim}-d input")
    if p.get("exclude"):
        return tuple(a for a in range(ndim) if a not in axes)
    return tuple(axes)


def kept_shape(axes: Dims, shape: Dims) -> Dims:
    """The result with keepdims: reduced axes become 1."""
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _reduce_rule(p, in_shapes):
    dshape = in_shapes[0]
    axes = _reduced_axes(p, len(dshape))
    if p.keepdims:
        return [kept_shape(axes, dshape)]
    # MXNet never returns a 0-d array: a full reduction has shape (1,).
    return [tuple(d for i, d in enumerate(dshape) if i not in axes) or (1,)]


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


def _norm_forward(p, ctx, inputs):
    x = inputs[0]
    axes = _reduced_axes(p, x.ndim)
    y = (np.abs(x).sum(axis=axes, keepdims=True) if p.ord == 1
         else np.sqrt(np.square(x).sum(axis=axes, keepdims=True)))
    dtype = x.dtype if p.out_dtype is None else p.out_dtype
    return np.asarray(y, dtype=dtype).reshape(_reduce_rule(p, [x.shape])[0])


def _norm_backward(p, ctx, inputs, outputs, out_grads):
    x = inputs[0]
    kept = kept_shape(_reduced_axes(p, x.ndim), x.shape)
    g = out_grads[0].reshape(kept)
    if p.ord == 1:
        return [(g * np.sign(x)).astype(x.dtype)]
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
