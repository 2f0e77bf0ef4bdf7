"""Shape manipulation: Reshape, reshape_like, Flatten, transpose, expand_dims, Concat,
SliceChannel (split) and slice_axis.

Parameters, defaults and shape rules are as in MXNet 1.9
(src/operator/tensor/matrix_op-inl.h, nn/concat.cc, slice_channel-inl.h).
Shapes in inference rules are partial: None is unknown and a 0 dimension is
unknown, as in `infer.py`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import (
    Dims,
    Shape,
    checked_axis,
    first_input_dtype,
    forward_only,
    from_input,
    known,
    merge,
    merge_all,
)
from .registry import REQUIRED, GradReads, OpDef, Param, register


def _with_dim(shape: Dims, axis: int, size: int) -> Dims:
    return shape[:axis] + (size,) + shape[axis + 1:]


# Every gradient here moves or reshapes the output gradient by the inputs' shapes.
SHAPES_ONLY = GradReads()


def _grad_as_input(p, ctx, inputs, outputs, out_grads):
    """Reshape, Flatten, expand_dims move no data: the gradient is reshaped back."""
    return [out_grads[0].reshape(inputs[0].shape)]


# -- Reshape ---------------------------------------------------------------------

def _split_dim(d0: int, d1: int, d2: int, fail: Callable) -> tuple[int, int]:
    """The two dims that code -4 splits input dim `d0` into (either may be -1)."""
    if d1 == -1 and d2 == -1:
        fail("the two dims after -4 cannot both be -1")
    if not all(d == -1 or d > 0 for d in (d1, d2)):
        fail(f"the dims after -4 must be positive or -1, got {d1}, {d2}")
    if not d0:  # unknown input dim: the -1 side stays unknown
        return max(d1, 0), max(d2, 0)
    d1 = d0 // d2 if d1 == -1 else d1
    d2 = d0 // d1 if d2 == -1 else d2
    if d1 * d2 != d0:
        fail(f"-4 split dims {d1}, {d2} do not divide input dim {d0}")
    return d1, d2


def reshape_shape(codes: Sequence[int], dshape: Dims, reverse: bool = False) -> Dims:
    """MXNet's InferReshapeShape: the output shape `codes` give for input `dshape`.

    Codes: 0 copies an input dim, -1 is inferred from the size, -2 copies all
    remaining dims, -3 merges two dims, -4 splits one into the next two codes.
    `reverse` matches codes and dims from the right. Unknown input dims (0)
    give unknown output dims.

    >>> reshape_shape((-4, 1, 2, -2), (2, 3, 4))
    (1, 2, 3, 4)
    """
    def fail(why: str):
        raise ShapeError(f"Reshape: shape={tuple(codes)}, reverse={reverse} cannot apply "
                         f"to input {tuple(dshape)}: {why}")

    src = tuple(dshape[::-1] if reverse else dshape)
    seq = tuple(codes[::-1] if reverse else codes)
    out: list[int] = []
    pos = 0  # the next input dim to read
    infer_at = None
    i = 0

    def read(count: int, code: int) -> Dims:
        nonlocal pos
        if pos + count > len(src):
            fail(f"code {code} needs {count} more input dim(s)")
        pos += count
        return src[pos - count:pos]

    while i < len(seq):
        code = seq[i]
        if code > 0:
            out.append(code)
            pos += 1  # MXNet steps over one input dim for a literal dim, unchecked
        elif code == 0:
            out.extend(read(1, code))
        elif code == -1:
            if infer_at is not None:
                fail("only one dim can be -1")
            infer_at = len(out)
            out.append(1)
            pos += 1
        elif code == -2:
            out.extend(src[pos:])
            pos = len(src)
        elif code == -3:
            out.append(math.prod(read(2, code)))
        elif code == -4:
            if i + 2 >= len(seq):
                fail("-4 must be followed by two dims")
            out.extend(_split_dim(read(1, code)[0], seq[i + 1], seq[i + 2], fail))
            i += 2
        else:
            fail(f"{code} is neither a dim nor one of the codes 0, -1, -2, -3, -4")
        i += 1
    if infer_at is not None:
        out[infer_at] = _inferred_dim(src, math.prod(out), fail)
    return tuple(out[::-1] if reverse else out)


def _inferred_dim(src: Dims, rest: int, fail: Callable) -> int:
    """The -1 dim: the input's size over the product of the other output dims."""
    if not known(src):
        return 0
    if math.prod(src) % rest:
        fail(f"-1 cannot be inferred: {math.prod(src)} elements do not divide into "
             f"parts of {rest}")
    return math.prod(src) // rest


def _legacy_target(target: Dims, keep_highest: bool, dshape: Dims) -> Dims:
    """The deprecated target_shape: a single 0 (after a kept first dim) is inferred."""
    out = list(target)
    start = 1 if keep_highest else 0
    if keep_highest:
        out[0] = dshape[0]
    zeros = [i for i in range(start, len(out)) if out[i] == 0]
    if len(zeros) == 1 and known(dshape):
        out[zeros[0]] = 1
        out[zeros[0]] = math.prod(dshape) // math.prod(out)
    return tuple(out)


def _has_target(p) -> bool:
    return bool(p.shape or p.target_shape)


def _reshape_target(p, dshape: Dims) -> Dims:
    if p.shape:
        return reshape_shape(p.shape, dshape, p.reverse)
    return _legacy_target(p.target_shape, p.keep_highest, dshape)


def _check_same_size(dshape: Shape, oshape: Shape) -> None:
    if known(dshape) and known(oshape) and math.prod(dshape) != math.prod(oshape):
        raise ShapeError(f"Reshape: cannot reshape input {dshape} ({math.prod(dshape)} "
                         f"elements) to {oshape} ({math.prod(oshape)} elements)")


def _fill_one_unknown(dshape: Dims, oshape: Shape) -> Dims:
    """MXNet's ReverseReshapeInferShape: one unknown input dim from the output's size."""
    missing = [i for i, d in enumerate(dshape) if d == 0]
    if len(missing) != 1 or not known(oshape):
        return dshape
    rest = math.prod(d for d in dshape if d)
    if math.prod(oshape) % rest:
        raise ShapeError(f"Reshape: no input of shape {dshape} (0 unknown) has the "
                         f"size of output {oshape}")
    return _with_dim(dshape, missing[0], math.prod(oshape) // rest)


def _reshape_shape(p, in_shapes, out_shapes):
    dshape, oshape = in_shapes[0], out_shapes[0]
    if dshape is None:  # MXNet needs at least the input's ndim
        return in_shapes, out_shapes
    if _has_target(p):
        oshape = merge(oshape, _reshape_target(p, dshape))
    dshape = _fill_one_unknown(dshape, oshape)
    if _has_target(p) and known(dshape):
        oshape = merge(oshape, _reshape_target(p, dshape))
    _check_same_size(dshape, oshape)
    return [dshape], [oshape]


def _reshape_forward(p, ctx, inputs):
    x = inputs[0]
    if not _has_target(p):
        raise ShapeError(f"Reshape: neither shape nor target_shape is given, so the "
                         f"output shape for input {x.shape} is unknown")
    oshape = _reshape_target(p, x.shape)
    _check_same_size(x.shape, oshape)
    if not known(oshape):  # a legacy target_shape with several 0 dims
        raise ShapeError(f"Reshape: cannot reshape input {x.shape} to {oshape}")
    return x.reshape(oshape)


register(OpDef(
    name="Reshape", aliases=("reshape",),
    doc="Reshapes the input array; the shape may use the special codes 0, -1, -2, -3, -4.",
    params=(
        Param("shape", "shape", (), "The target shape (with special codes)."),
        Param("reverse", "bool", False,
              "If true then the special values are inferred from right to left."),
        Param("target_shape", "shape", (),
              "(Deprecated! Use shape instead.) Target new shape; one 0 dim is inferred."),
        Param("keep_highest", "bool", False,
              "(Deprecated! Use shape instead.) Keep the first dim of the input."),
    ),
    forward=_reshape_forward, backward=_grad_as_input, backward_reads=SHAPES_ONLY,
    infer_shape=_reshape_shape, inplace=((0, 0),),
    named_inputs=False,
))


def _like_range(begin: int | None, end: int | None, ndim: int, what: str) -> tuple[int, int]:
    """reshape_like's [begin, end) of a shape: None is its start / end, negatives count
    from the end."""
    b = 0 if begin is None else begin + ndim if begin < 0 else begin
    e = ndim if end is None else end + ndim if end < 0 else end
    if not 0 <= b <= e <= ndim:
        raise ShapeError(f"reshape_like: {what}_begin={begin}, {what}_end={end} is no range "
                         f"of a {ndim}-d input")
    return b, e


def _reshape_like_rule(p, in_shapes):
    lhs, rhs = in_shapes
    lb, le = _like_range(p.lhs_begin, p.lhs_end, len(lhs), "lhs")
    rb, re = _like_range(p.rhs_begin, p.rhs_end, len(rhs), "rhs")
    oshape = lhs[:lb] + rhs[rb:re] + lhs[le:]
    _check_same_size(lhs, oshape)
    return [oshape]


register(OpDef(
    name="reshape_like", inputs=("lhs", "rhs"), infer_type=first_input_dtype,
    doc="Reshapes lhs (its axes lhs_begin..lhs_end) to the shape of rhs (its axes "
        "rhs_begin..rhs_end).",
    params=tuple(Param(f"{side}_{end}", "int", None, f"Defaults to {default}. The {end} "
                       f"of the {side} axes to be reshaped; negatives count from the end.")
                 for side in ("lhs", "rhs")
                 for end, default in (("begin", 0), ("end", "the number of axes"))),
    forward=lambda p, ctx, inputs: inputs[0].reshape(_reshape_like_rule(
        p, [a.shape for a in inputs])[0]),
    backward=lambda p, ctx, inputs, outputs, out_grads: [
        out_grads[0].reshape(inputs[0].shape), np.zeros(inputs[1].shape, inputs[1].dtype)],
    backward_reads=SHAPES_ONLY, infer_shape=from_input(_reshape_like_rule), inplace=((0, 0),),
))


# -- Flatten, transpose, expand_dims ----------------------------------------------

def _flatten_rule(p, in_shapes):
    dshape = in_shapes[0]
    if not dshape:
        raise ShapeError("Flatten: a 0-d input cannot be flattened")
    return [(dshape[0], math.prod(dshape[1:]))]


def _flatten_forward(p, ctx, inputs):
    x = inputs[0]
    return x.reshape(_flatten_rule(p, [x.shape])[0])


register(OpDef(
    name="Flatten", aliases=("flatten",),
    doc="Flattens the input to 2-D: (d1, d2, ..., dk) -> (d1, d2*...*dk).",
    forward=_flatten_forward, backward=_grad_as_input, backward_reads=SHAPES_ONLY,
    infer_shape=forward_only(_flatten_rule), inplace=((0, 0),),
    named_inputs=False,
))


def _transpose_axes(p, ndim: int) -> Dims:
    axes = p.axes or tuple(reversed(range(ndim)))
    if sorted(axes) != list(range(ndim)):
        raise ShapeError(f"transpose: axes {p.axes} is not a permutation of the axes "
                         f"of a {ndim}-d input")
    return axes


def _transpose_shape(p, in_shapes, out_shapes):
    dshape, oshape = in_shapes[0], out_shapes[0]
    if dshape is None and oshape is None:
        return in_shapes, out_shapes
    axes = _transpose_axes(p, len(dshape if dshape is not None else oshape))
    if dshape is not None:
        oshape = merge(oshape, tuple(dshape[a] for a in axes))
    back = [0] * len(axes)
    for i, a in enumerate(axes):
        back[a] = oshape[i]
    return [merge(dshape, tuple(back))], [oshape]


def _transpose_forward(p, ctx, inputs):
    x = inputs[0]
    return np.transpose(x, _transpose_axes(p, x.ndim))


def _transpose_backward(p, ctx, inputs, outputs, out_grads):
    axes = _transpose_axes(p, inputs[0].ndim)
    return [np.transpose(out_grads[0], np.argsort(axes))]


register(OpDef(
    name="transpose",
    doc="Permutes the dimensions of an array.",
    params=(Param("axes", "shape", (),
                  "Target axis order. By default the axes will be inverted."),),
    forward=_transpose_forward, backward=_transpose_backward, backward_reads=SHAPES_ONLY,
    infer_shape=_transpose_shape,
    named_inputs=False,
))


def _expand_axis(p, in_ndim: int) -> int:
    axis = p.axis + in_ndim + 1 if p.axis < 0 else p.axis
    if not 0 <= axis <= in_ndim:
        raise ShapeError(f"expand_dims: axis {p.axis} is out of range "
                         f"[{-in_ndim - 1}, {in_ndim}] for a {in_ndim}-d input")
    return axis


def _expand_dims_shape(p, in_shapes, out_shapes):
    dshape, oshape = in_shapes[0], out_shapes[0]
    if dshape is None and oshape is None:
        return in_shapes, out_shapes
    axis = _expand_axis(p, len(dshape) if dshape is not None else len(oshape) - 1)
    if dshape is not None:
        oshape = merge(oshape, dshape[:axis] + (1,) + dshape[axis:])
    oshape = merge(oshape, _with_dim(oshape, axis, 1))
    return [merge(dshape, oshape[:axis] + oshape[axis + 1:])], [oshape]


def _expand_dims_forward(p, ctx, inputs):
    x = inputs[0]
    return np.expand_dims(x, _expand_axis(p, x.ndim))


register(OpDef(
    name="expand_dims",
    doc="Inserts a new axis of size 1 into the array shape.",
    params=(Param("axis", "int", doc="Position where the new axis is inserted, "
                  "in [-ndim-1, ndim] for an ndim-d input."),),
    forward=_expand_dims_forward, backward=_grad_as_input, backward_reads=SHAPES_ONLY,
    infer_shape=_expand_dims_shape, inplace=((0, 0),),
    named_inputs=False,
))


# -- Concat and SliceChannel (split) ------------------------------------------------

def _concat_sizes(ins: list[Dims], out: Dims, axis: int) -> tuple[list[Dims], Dims]:
    """Sizes along the concat axis: the output's is the inputs' sum, and a single
    unknown input size follows from a known output size."""
    sizes = [s[axis] for s in ins]
    missing = [i for i, n in enumerate(sizes) if n == 0]
    if not missing:
        return ins, merge(out, _with_dim(out, axis, sum(sizes)))
    if len(missing) == 1 and out[axis]:
        rest = out[axis] - sum(sizes)
        if rest <= 0:
            raise ShapeError(f"Concat: inputs {ins} already have {sum(sizes)} entries along "
                             f"axis {axis}, the output {out} has {out[axis]}")
        ins = list(ins)
        ins[missing[0]] = _with_dim(ins[missing[0]], axis, rest)
    return ins, out


def _concat_shape(p, in_shapes, out_shapes):
    shapes = [s for s in (*in_shapes, out_shapes[0]) if s is not None]
    if not shapes:
        return in_shapes, out_shapes
    if len({len(s) for s in shapes}) > 1:
        raise ShapeError(f"Concat: inputs and output differ in ndim: "
                         f"{list(in_shapes)} -> {out_shapes[0]}")
    axis = checked_axis(p.dim, len(shapes[0]), f"Concat (dim={p.dim})")
    try:  # every dim but the concat one is shared
        others = merge_all([_with_dim(s, axis, 0) for s in shapes])
    except ShapeError:
        raise ShapeError(f"Concat: shapes {list(in_shapes)} -> {out_shapes[0]} differ "
                         f"outside the concat axis {axis}") from None
    ins = [merge(s, others) for s in in_shapes]
    ins, out = _concat_sizes(ins, merge(out_shapes[0], others), axis)
    return ins, [out]


def _concat_forward(p, ctx, inputs):
    _concat_shape(p, [x.shape for x in inputs], [None])  # ShapeError on a mismatch
    return np.concatenate(inputs, axis=p.dim % inputs[0].ndim)


def _concat_backward(p, ctx, inputs, outputs, out_grads):
    axis = p.dim % inputs[0].ndim
    bounds = np.cumsum([x.shape[axis] for x in inputs])[:-1]
    return np.split(out_grads[0], bounds, axis=axis)


register(OpDef(
    name="Concat", aliases=("concat",),
    doc="Joins input arrays along a given axis.",
    params=(Param("num_args", "int", doc="Number of inputs to be concated."),
            Param("dim", "int", 1, "the dimension to be concated.")),
    variadic="num_args",
    forward=_concat_forward, backward=_concat_backward, backward_reads=SHAPES_ONLY,
    infer_shape=_concat_shape,
))


# Every output is a graph entry with a name: a count beyond this is a bad file
# (a few bytes could ask for 10**12 entries), not a model.
MAX_SPLIT_OUTPUTS = 1 << 16


def _num_outputs(p) -> int:
    if not 1 <= p.num_outputs <= MAX_SPLIT_OUTPUTS:
        raise OperatorError(f"SliceChannel: num_outputs={p.num_outputs} must be between 1 "
                            f"and {MAX_SPLIT_OUTPUTS}")
    return p.num_outputs


def _split_outputs(p) -> list[str]:
    return [f"output{i}" for i in range(_num_outputs(p))]


def _split_part(p, dshape: Dims) -> Dims:
    """The shape of every output, as MXNet's SliceChannelProp::InferShape."""
    axis = checked_axis(p.axis, len(dshape), f"SliceChannel (axis={p.axis})")
    n, size = _num_outputs(p), dshape[axis]
    if size % n:
        raise ShapeError(f"SliceChannel: axis {axis} of input {dshape} cannot be split "
                         f"into num_outputs={n} equal parts")
    if p.squeeze_axis:
        if size and size != n:
            raise ShapeError(f"SliceChannel: squeeze_axis=True needs input.shape[axis] == "
                             f"num_outputs; got input {dshape}, axis {axis}, num_outputs {n}")
        return dshape[:axis] + dshape[axis + 1:]
    return _with_dim(dshape, axis, size // n)


def _split_whole(p, part: Dims) -> Dims:
    """The input shape that one output's shape implies."""
    if p.squeeze_axis:
        axis = checked_axis(p.axis, len(part) + 1, f"SliceChannel (axis={p.axis})")
        return part[:axis] + (p.num_outputs,) + part[axis:]
    axis = checked_axis(p.axis, len(part), f"SliceChannel (axis={p.axis})")
    return _with_dim(part, axis, part[axis] * p.num_outputs)


def _split_shape(p, in_shapes, out_shapes):
    implied = [_split_whole(p, o) for o in out_shapes if o is not None]
    dshape = merge_all([in_shapes[0], *implied])
    if dshape is None:
        return in_shapes, out_shapes
    part = _split_part(p, dshape)
    return [dshape], [merge(o, part) for o in out_shapes]


def _split_forward(p, ctx, inputs):
    x = inputs[0]
    part = _split_part(p, x.shape)
    return [a.reshape(part) for a in np.split(x, p.num_outputs, axis=p.axis % x.ndim)]


def _split_backward(p, ctx, inputs, outputs, out_grads):
    x = inputs[0]
    axis = p.axis % x.ndim
    part = _with_dim(x.shape, axis, x.shape[axis] // p.num_outputs)
    return [np.concatenate([np.reshape(g, part) for g in out_grads], axis=axis)]


register(OpDef(
    name="SliceChannel", aliases=("split",),
    doc="Splits an array along a particular axis into num_outputs equal sub-arrays.",
    params=(Param("num_outputs", "int", doc="Number of splits; it should evenly divide "
                  "the length of the axis."),
            Param("axis", "int", 1, "Axis along which to split."),
            Param("squeeze_axis", "bool", False, "If true, removes the split axis (which "
                  "must then have length num_outputs) from the outputs' shapes.")),
    outputs=_split_outputs,
    forward=_split_forward, backward=_split_backward, backward_reads=SHAPES_ONLY,
    infer_shape=_split_shape,
))


# -- slice_axis ---------------------------------------------------------------------

def slice_axis_range(p, dshape: Dims) -> tuple[int, int, int]:
    """(axis, begin, end) resolved as MXNet's GetSliceAxisParams does."""
    axis = checked_axis(p.axis, len(dshape), f"slice_axis (axis={p.axis})")
    size = dshape[axis]
    begin = p.begin + size if p.begin < 0 else p.begin
    end = size if p.end is None else p.end + size if p.end < 0 else p.end
    if not 0 <= begin < end <= size:
        raise ShapeError(f"slice_axis: begin={p.begin}, end={p.end} is not a non-empty "
                         f"range of axis {axis} (size {size}) of input {dshape}")
    return axis, begin, end


def _slice_axis_rule(p, in_shapes):
    dshape = in_shapes[0]
    if not dshape[checked_axis(p.axis, len(dshape), f"slice_axis (axis={p.axis})")]:
        return [dshape]  # the sliced size is unknown too
    axis, begin, end = slice_axis_range(p, dshape)
    return [_with_dim(dshape, axis, end - begin)]


def _slice_index(p, shape: Dims) -> tuple[slice, ...]:
    axis, begin, end = slice_axis_range(p, shape)
    return (slice(None),) * axis + (slice(begin, end),)


def _slice_axis_forward(p, ctx, inputs):
    return inputs[0][_slice_index(p, inputs[0].shape)]


def _slice_axis_backward(p, ctx, inputs, outputs, out_grads):
    grad = np.zeros(inputs[0].shape, inputs[0].dtype)
    grad[_slice_index(p, grad.shape)] = out_grads[0]
    return [grad]


register(OpDef(
    name="slice_axis",
    doc="Slices along a given axis from begin to end (negative indexes allowed).",
    params=(Param("axis", "int", doc="Axis along which to be sliced."),
            Param("begin", "int", doc="The beginning index along the axis."),
            # Required, as in MXNet, but None (to the end of the axis) is a value.
            Param("end", "int", REQUIRED, "The ending index along the axis; None is the end.",
                  nullable=True)),
    forward=_slice_axis_forward, backward=_slice_axis_backward, backward_reads=SHAPES_ONLY,
    infer_shape=from_input(_slice_axis_rule),
    named_inputs=False,
))
