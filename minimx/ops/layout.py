"""Rearranging, repeating and padding axes: `SwapAxis`, `reverse`, `squeeze`,
`stack`, `repeat`, `tile`, `depth_to_space`, `space_to_depth`, `Pad` and `diag`, with
MXNet 1.9's names, aliases and parameters (src/operator/swapaxis-inl.h,
tensor/matrix_op-inl.h, pad-inl.h).

Every gradient moves, reshapes or sums the output gradient by the inputs'
shapes; none reads the inputs' values.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, Shape, checked_axis, from_input, merge, merge_all
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register

Array = np.ndarray
SHAPES_ONLY = GradReads()


# -- SwapAxis and reverse ------------------------------------------------------------

def swapped_axes(p: Params, ndim: int) -> tuple[int, int]:
    """SwapAxis's two axes, checked against `ndim`."""
    what = f"SwapAxis (dim1={p.dim1}, dim2={p.dim2})"
    return checked_axis(p.dim1, ndim, what), checked_axis(p.dim2, ndim, what)


def _swap_dims(p: Params, shape: Dims) -> Dims:
    a, b = swapped_axes(p, len(shape))
    out = list(shape)
    out[a], out[b] = out[b], out[a]
    return tuple(out)


def _infer_swap(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    known = [s if s is None else _swap_dims(p, s) for s in out_shapes]  # a swap is its inverse
    dshape = merge(in_shapes[0], known[0])
    return [dshape], [None if dshape is None else _swap_dims(p, dshape)]


def _swap(p: Params, x: Array) -> Array:
    return np.swapaxes(x, *swapped_axes(p, x.ndim))


register(OpDef(
    "SwapAxis", lambda p, ctx, inputs: _swap(p, inputs[0]).copy(),
    params=(Param("dim1", "int", 0, "the first axis to be swapped."),
            Param("dim2", "int", 0, "the second axis to be swapped.")),
    infer_shape=_infer_swap, aliases=("swapaxes",),
    backward=lambda p, ctx, inputs, outputs, out_grads: [_swap(p, out_grads[0]).copy()],
    backward_reads=SHAPES_ONLY, doc="Interchanges two axes of an array."))


def _flip(p: Params, x: Array) -> Array:
    axes = tuple(checked_axis(a, x.ndim, f"reverse (axis={p.axis})") for a in p.axis)
    return np.flip(x, axes).copy()


register(OpDef(
    "reverse", lambda p, ctx, inputs: _flip(p, inputs[0]),
    params=(Param("axis", "shape", doc="The axis which to reverse elements."),),
    aliases=("flip",),
    backward=lambda p, ctx, inputs, outputs, out_grads: [_flip(p, out_grads[0])],
    backward_reads=SHAPES_ONLY, doc="Reverses the order of elements along the given axes."))


# -- squeeze ------------------------------------------------------------------------

def _squeeze_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    dshape = in_shapes[0]
    if p.axis is None:
        dropped = {i for i, d in enumerate(dshape) if d == 1}
    else:
        dropped = {checked_axis(a, len(dshape), f"squeeze (axis={p.axis})") for a in p.axis}
        if any(dshape[a] not in (0, 1) for a in dropped):
            raise ShapeError(f"squeeze: axes {p.axis} of input {dshape} are not all of size 1")
    # MXNet has no 0-d arrays: squeezing every axis leaves shape (1,).
    return [tuple(d for i, d in enumerate(dshape) if i not in dropped) or (1,)]


register(OpDef(
    "squeeze", lambda p, ctx, inputs: inputs[0].reshape(_squeeze_rule(p, [inputs[0].shape])[0]),
    params=(Param("axis", "shape", None, "The axes of size one to remove (default: all)."),),
    infer_shape=from_input(_squeeze_rule), inplace=((0, 0),),
    backward=lambda p, ctx, inputs, outputs, out_grads: [
        out_grads[0].reshape(inputs[0].shape)],
    backward_reads=SHAPES_ONLY, doc="Removes axes of length one."))


# -- stack ---------------------------------------------------------------------------

def _stack_axis(p: Params, in_ndim: int) -> int:
    return checked_axis(p.axis, in_ndim + 1, f"stack (axis={p.axis})")


def _infer_stack(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    out = out_shapes[0]
    implied = None
    if out is not None:
        axis = _stack_axis(p, len(out) - 1)
        implied = out[:axis] + out[axis + 1:]
        out = merge(out, out[:axis] + (p.num_args,) + out[axis + 1:])
    try:
        part = merge_all([*in_shapes, implied])
    except ShapeError:
        raise ShapeError(f"stack: inputs {list(in_shapes)} -> output {out_shapes[0]} do not "
                         "all have one shape") from None
    if part is None:
        return in_shapes, [out]
    axis = _stack_axis(p, len(part))
    return [part] * len(in_shapes), [merge(out, part[:axis] + (p.num_args,) + part[axis:])]


def _stack_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    _infer_stack(p, [x.shape for x in inputs], [None])  # ShapeError when shapes differ
    return np.stack(inputs, axis=_stack_axis(p, inputs[0].ndim))


def _stack_backward(p, ctx, inputs, outputs, out_grads):
    axis = _stack_axis(p, inputs[0].ndim)
    return [np.take(out_grads[0], i, axis=axis) for i in range(len(inputs))]


register(OpDef(
    "stack", _stack_forward, variadic="num_args",
    params=(Param("num_args", "int", doc="Number of inputs to be stacked."),
            Param("axis", "int", 0, "The axis in the result array along which the input "
                  "arrays are stacked.")),
    infer_shape=_infer_stack, backward=_stack_backward, backward_reads=SHAPES_ONLY,
    doc="Joins arrays of one shape along a new axis."))


# -- repeat and tile -----------------------------------------------------------------

def _repeats(p: Params) -> int:
    if p.repeats < 1:
        raise OperatorError(f"repeat: repeats={p.repeats} must be at least 1")
    return p.repeats


def _repeat_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    dshape = in_shapes[0]
    if p.axis is None:  # the flattened input, each element repeated
        size = math.prod(dshape)
        return [(size * _repeats(p),)]
    axis = checked_axis(p.axis, len(dshape), f"repeat (axis={p.axis})")
    return [dshape[:axis] + (dshape[axis] * _repeats(p),) + dshape[axis + 1:]]


def _repeat_backward(p, ctx, inputs, outputs, out_grads):
    x, g = inputs[0], out_grads[0]
    if p.axis is None:
        return [g.reshape(-1, p.repeats).sum(axis=1).reshape(x.shape)]
    axis = checked_axis(p.axis, x.ndim, "repeat")
    split = x.shape[:axis] + (x.shape[axis], p.repeats) + x.shape[axis + 1:]
    return [g.reshape(split).sum(axis=axis + 1)]


register(OpDef(
    "repeat", lambda p, ctx, inputs: np.repeat(inputs[0], _repeats(p), axis=p.axis),
    params=(Param("repeats", "int", doc="The number of repetitions for each element."),
            Param("axis", "int", None, "The axis along which to repeat values (default: "
                  "the flattened input).")),
    infer_shape=from_input(_repeat_rule), backward=_repeat_backward,
    backward_reads=SHAPES_ONLY, doc="Repeats each element of an array."))


def _tile_plan(p: Params, dshape: Dims) -> tuple[Dims, Dims]:
    """(input shape, reps), both padded with leading ones to one length, as numpy's tile."""
    if any(r < 1 for r in p.reps):
        raise OperatorError(f"tile: reps={p.reps} must all be at least 1")
    n = max(len(dshape), len(p.reps))
    return (1,) * (n - len(dshape)) + dshape, (1,) * (n - len(p.reps)) + tuple(p.reps)


def _tile_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    shape, reps = _tile_plan(p, in_shapes[0])
    return [tuple(d * r for d, r in zip(shape, reps, strict=True))]


def _tile_backward(p, ctx, inputs, outputs, out_grads):
    x = inputs[0]
    shape, reps = _tile_plan(p, x.shape)
    # the gradient as (r0, d0, r1, d1, ...), summed over every r
    pairs = tuple(n for pair in zip(reps, shape, strict=True) for n in pair)
    return [out_grads[0].reshape(pairs).sum(axis=tuple(range(0, len(pairs), 2)))
            .reshape(x.shape)]


register(OpDef(
    "tile", lambda p, ctx, inputs: np.tile(inputs[0], _tile_plan(p, inputs[0].shape)[1]),
    params=(Param("reps", "shape", doc="The number of times for repeating the tensor a."),),
    infer_shape=from_input(_tile_rule), backward=_tile_backward, backward_reads=SHAPES_ONLY,
    doc="Repeats the whole array along each axis."))


# -- depth_to_space and space_to_depth (MXNet's DCR order) ---------------------------

def _block(p: Params, dshape: Dims, what: str) -> int:
    if len(dshape) != 4:
        raise ShapeError(f"{what}: data must be 4-D (N, C, H, W), got shape {dshape}")
    if p.block_size < 1:
        raise OperatorError(f"{what}: block_size={p.block_size} must be at least 1")
    return p.block_size


def _depth_to_space(x: Array, b: int) -> Array:
    n, c, h, w = x.shape
    return (x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
            .reshape(n, c // (b * b), h * b, w * b))


def _space_to_depth(x: Array, b: int) -> Array:
    n, c, h, w = x.shape
    return (x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
            .reshape(n, c * b * b, h // b, w // b))


def _depth_to_space_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    n, c, h, w = dshape = in_shapes[0]
    b = _block(p, dshape, "depth_to_space")
    if c % (b * b):
        raise ShapeError(f"depth_to_space: {c} channels do not divide into blocks of "
                         f"{b}x{b}")
    return [(n, c // (b * b), h * b, w * b)]


def _space_to_depth_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    n, c, h, w = dshape = in_shapes[0]
    b = _block(p, dshape, "space_to_depth")
    if h % b or w % b:
        raise ShapeError(f"space_to_depth: height {h} and width {w} must be multiples of "
                         f"block_size={b}")
    return [(n, c * b * b, h // b, w // b)]


def _block_op(name: str, move: Callable[[Array, int], Array],
              inverse: Callable[[Array, int], Array], rule: Callable, doc: str) -> OpDef:
    """An operator moving square blocks between channels and space; its gradient is
    the `inverse` move."""
    return OpDef(
        name, lambda p, ctx, inputs: move(inputs[0], p.block_size),
        params=(Param("block_size", "int", doc="The size of the square blocks moved."),),
        infer_shape=from_input(rule),
        backward=lambda p, ctx, inputs, outputs, out_grads: [
            inverse(out_grads[0], p.block_size)],
        backward_reads=SHAPES_ONLY, doc=doc)


register(_block_op("depth_to_space", _depth_to_space, _space_to_depth, _depth_to_space_rule,
                   "Moves blocks of channels into blocks of space: (N, C, H, W) to "
                   "(N, C / b^2, H * b, W * b)."))
register(_block_op("space_to_depth", _space_to_depth, _depth_to_space, _space_to_depth_rule,
                   "Moves blocks of space into channels: (N, C, H, W) to "
                   "(N, C * b^2, H / b, W / b)."))


# -- Pad -------------------------------------------------------------------------------

def _pad_widths(p: Params, dshape: Dims) -> list[tuple[int, int]]:
    """(before, after) per axis; MXNet pads 4-D and 5-D data, spatial axes only."""
    if len(dshape) not in (4, 5):
        raise ShapeError(f"Pad: data must be 4-D or 5-D, got shape {dshape}")
    width = tuple(p.pad_width)
    if len(width) != 2 * len(dshape) or any(w < 0 for w in width) or any(width[:4]):
        raise ShapeError(f"Pad: pad_width={width} must hold {2 * len(dshape)} non-negative "
                         f"values, the first four 0 (no padding of N and C), for data of "
                         f"shape {dshape}")
    pairs = list(zip(width[0::2], width[1::2], strict=True))
    if p.mode == "reflect" and any(max(pair) >= d for pair, d in zip(pairs, dshape,
                                                                       strict=True)):
        raise ShapeError(f"Pad: mode='reflect' needs each pad narrower than its axis, got "
                         f"pad_width={width} for shape {dshape}")
    return pairs


def _pad_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    x = inputs[0]
    pairs = _pad_widths(p, x.shape)
    if p.mode == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=p.constant_value)
    return np.pad(x, pairs, mode=p.mode)


def _pad_backward(p, ctx, inputs, outputs, out_grads):
    """Each output position's gradient goes to the input position it copies
    (none for the constant border)."""
    x, g = inputs[0], out_grads[0]
    pairs = _pad_widths(p, x.shape)
    if p.mode == "constant":
        return [g[tuple(slice(a, a + d) for (a, _), d in zip(pairs, x.shape, strict=True))]]
    source = np.pad(np.arange(x.size).reshape(x.shape), pairs, mode=p.mode)
    grad = np.zeros(x.size, dtype=g.dtype)
    np.add.at(grad, source.ravel(), g.ravel())
    return [grad.reshape(x.shape)]


register(OpDef(
    "Pad", _pad_forward, aliases=("pad",),
    params=(Param("mode", "str", doc="Padding type: constant (constant_value), edge (the "
                  "border value) or reflect (mirrored, without the border).",
                  choices=("constant", "edge", "reflect")),
            Param("pad_width", "shape", doc="(before, after) widths per axis, 2 * ndim "
                  "values; the first four (N and C) must be 0."),
            Param("constant_value", "float", 0.0, "The value of constant padding.")),
    infer_shape=from_input(lambda p, in_shapes: [tuple(
        d + a + b for d, (a, b) in zip(in_shapes[0], _pad_widths(p, in_shapes[0]),
                                       strict=True))]),
    backward=_pad_backward, backward_reads=SHAPES_ONLY,
    doc="Pads the spatial axes of a 4-D or 5-D array."))


# -- diag --------------------------------------------------------------------------------

def _diag_axes(p: Params, ndim: int) -> tuple[int, int]:
    what = f"diag (axis1={p.axis1}, axis2={p.axis2})"
    a1, a2 = checked_axis(p.axis1, ndim, what), checked_axis(p.axis2, ndim, what)
    if a1 == a2:
        raise ShapeError(f"{what}: the two axes must differ")
    return a1, a2


def _diag_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    dshape = in_shapes[0]
    if len(dshape) == 1:   # a matrix with the vector on its k-th diagonal
        n = dshape[0] + abs(p.k)
        return [(n, n)]
    a1, a2 = _diag_axes(p, len(dshape))
    rows, cols = dshape[a1], dshape[a2]
    length = max(0, min(rows, cols - p.k) if p.k >= 0 else min(rows + p.k, cols))
    if length == 0:
        raise ShapeError(f"diag: k={p.k} lies outside a {rows}x{cols} matrix")
    return [tuple(d for i, d in enumerate(dshape) if i not in (a1, a2)) + (length,)]


def _diag_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    x = inputs[0]
    if x.ndim == 1:
        return np.diag(x, p.k)
    a1, a2 = _diag_axes(p, x.ndim)
    return np.diagonal(x, p.k, a1, a2).copy()


def _diag_backward(p, ctx, inputs, outputs, out_grads):
    x, g = inputs[0], out_grads[0]
    if x.ndim == 1:
        return [np.diagonal(g, p.k).copy()]
    a1, a2 = _diag_axes(p, x.ndim)
    grad = np.zeros(x.shape, g.dtype)
    view = np.moveaxis(grad, (a1, a2), (-2, -1))   # writes go through to grad
    i = np.arange(g.shape[-1])
    view[..., i + max(0, -p.k), i + max(0, p.k)] = g
    return [grad]


register(OpDef(
    "diag", _diag_forward,
    params=(Param("k", "int", 0, "The diagonal: 0 the main one, > 0 above, < 0 below."),
            Param("axis1", "int", 0, "The first axis of the matrices (2-D or more data)."),
            Param("axis2", "int", 1, "The second axis of the matrices (2-D or more data).")),
    infer_shape=from_input(_diag_rule), backward=_diag_backward, backward_reads=SHAPES_ONLY,
    doc="The k-th diagonal of each matrix (as the last axis), or for 1-D data the "
        "square matrix with it on the k-th diagonal."))
