"""Variable-length sequence operators: SequenceMask, SequenceLast and SequenceReverse,
as MXNet 1.9's src/operator/sequence_*-inl.h.

Data is laid out (T, B, ...) with the sequence on axis 0 (or (B, T, ...) with
axis=1, where MXNet allows it). With use_sequence_length an extra input gives
each batch entry's length (any dtype; values are truncated to integers);
without it every sequence is T long.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, merge_at
from .registry import GradReads, OpDef, Param, Params, register

Array = np.ndarray


def _inputs(p: Params) -> tuple[str, ...]:
    return ("data", "sequence_length") if p.use_sequence_length else ("data",)


def _check(what: str, p: Params, dshape: Dims, axes: tuple[int, ...]) -> None:
    if p.axis not in axes:
        raise OperatorError(f"{what}: axis={p.axis} is not supported (only "
                            f"{' or '.join(map(str, axes))})")
    if len(dshape) < 2:
        raise ShapeError(f"{what}: data must have rank 2 or greater, got {dshape}")


def _batch_axis(p: Params) -> int:
    return 1 - p.axis


def _sequence_shape(what: str, axes: tuple[int, ...], rule):
    """Inference: the lengths input is (batch,); the output follows `rule`."""
    def infer(p, in_shapes, out_shapes):
        dshape = in_shapes[0]
        if dshape is None:
            return in_shapes, out_shapes
        _check(what, p, dshape, axes)
        ins = list(in_shapes)
        if p.use_sequence_length:
            merge_at(ins, 1, (dshape[_batch_axis(p)],), f"{what}: sequence_length")
        outs = list(out_shapes)
        merge_at(outs, 0, rule(p, dshape), f"{what}: output")
        return ins, outs
    return infer


def _sequence_type(p, in_types, out_types):
    """The lengths may have any dtype; unknown, they take the data's (as MXNet)."""
    dtype = in_types[0] if in_types[0] is not None else out_types[0]
    ins = [dtype] + [t if t is not None else dtype for t in in_types[1:]]
    return ins, [dtype]


def _lengths(what: str, p: Params, inputs: list, steps: int, batch: int) -> Array:
    """Each batch entry's length as integers (MXNet truncates them)."""
    if not p.use_sequence_length:
        return np.full(batch, steps, np.int64)
    lengths = np.asarray(inputs[1]).astype(np.int64)
    if lengths.shape != (batch,):
        raise ShapeError(f"{what}: sequence_length has shape {lengths.shape}, expected "
                         f"({batch},)")
    return lengths


def _time_batch(p: Params, x: Array) -> Array:
    """`x` viewed (T, B, ...) whatever its sequence axis."""
    return x if p.axis == 0 else np.swapaxes(x, 0, 1)


def _no_length_grad(p: Params, inputs: list) -> list:
    return [np.zeros(inputs[1].shape, inputs[1].dtype)] if p.use_sequence_length else []


# -- SequenceMask --------------------------------------------------------------------------

def _mask(p: Params, inputs: list, shape: Dims) -> Array:
    """True at the (T, B, 1, ...) positions past each sequence's length."""
    steps, batch = shape[p.axis], shape[_batch_axis(p)]
    lengths = _lengths("SequenceMask", p, inputs, steps, batch)
    past = np.arange(steps)[:, None] >= lengths[None, :]
    return past.reshape(past.shape + (1,) * (len(shape) - 2))


def _mask_forward(p, ctx, inputs):
    data = inputs[0]
    _check("SequenceMask", p, data.shape, (0, 1))
    out = _time_batch(p, data.copy())
    out[np.broadcast_to(_mask(p, inputs, data.shape), out.shape)] = p.value
    return _time_batch(p, out)


def _mask_backward(p, ctx, inputs, outputs, out_grads):
    grad = _time_batch(p, out_grads[0].copy())
    grad[np.broadcast_to(_mask(p, inputs, inputs[0].shape), grad.shape)] = 0
    return [_time_batch(p, grad), *_no_length_grad(p, inputs)]


_LENGTH_PARAM = Param("use_sequence_length", "bool", False, "If set to true, this layer takes "
                      "in an extra input parameter `sequence_length` to specify variable "
                      "length sequence")
_AXIS_01 = Param("axis", "int", 0, "The sequence axis. Only values of 0 and 1 are supported.")

register(OpDef(
    name="SequenceMask", inputs=_inputs,
    doc="Sets each sequence's steps past its length to `value`.",
    params=(_LENGTH_PARAM, Param("value", "float", 0.0, "The value to be used as a mask."),
            _AXIS_01),
    forward=_mask_forward, backward=_mask_backward,
    backward_reads=lambda p: GradReads(("sequence_length",) if p.use_sequence_length else ()),
    infer_shape=_sequence_shape("SequenceMask", (0, 1), lambda p, d: d),
    infer_type=_sequence_type,
))


# -- SequenceLast ----------------------------------------------------------------------------

def _last_steps(p: Params, inputs: list, shape: Dims) -> Array:
    steps, batch = shape[p.axis], shape[_batch_axis(p)]
    last = _lengths("SequenceLast", p, inputs, steps, batch) - 1
    if np.any((last < 0) | (last >= steps)):
        raise OperatorError(f"SequenceLast: sequence lengths {last + 1} must lie in "
                            f"[1, {steps}]")
    return last


def _last_forward(p, ctx, inputs):
    data = inputs[0]
    _check("SequenceLast", p, data.shape, (0, 1))
    last = _last_steps(p, inputs, data.shape)
    return _time_batch(p, data)[last, np.arange(len(last))].copy()


def _last_backward(p, ctx, inputs, outputs, out_grads):
    shape = inputs[0].shape
    last = _last_steps(p, inputs, shape)
    grad = np.zeros(shape, out_grads[0].dtype)
    _time_batch(p, grad)[last, np.arange(len(last))] = out_grads[0]
    return [grad, *_no_length_grad(p, inputs)]


register(OpDef(
    name="SequenceLast", inputs=_inputs,
    doc="The last step of each sequence: (T, B, ...) -> (B, ...).",
    params=(_LENGTH_PARAM, _AXIS_01),
    forward=_last_forward, backward=_last_backward,
    backward_reads=lambda p: GradReads(("sequence_length",) if p.use_sequence_length else ()),
    infer_shape=_sequence_shape("SequenceLast", (0, 1),
                                lambda p, d: d[:p.axis] + d[p.axis + 1:]),
    infer_type=_sequence_type,
))


# -- SequenceReverse -------------------------------------------------------------------------

def _reversed_steps(p: Params, inputs: list, shape: Dims) -> Array:
    """(T, B, 1, ...) source steps: the first `length` steps reversed, the padding kept."""
    steps, batch = shape[0], shape[1]
    lengths = np.minimum(_lengths("SequenceReverse", p, inputs, steps, batch), steps)
    t = np.arange(steps)[:, None]
    source = np.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)
    return source.reshape(source.shape + (1,) * (len(shape) - 2))


def _reverse(p: Params, inputs: list, x: Array) -> Array:
    _check("SequenceReverse", p, x.shape, (0,))
    source = np.broadcast_to(_reversed_steps(p, inputs, x.shape), x.shape)
    return np.take_along_axis(x, source, axis=0)


def _reverse_forward(p, ctx, inputs):
    return _reverse(p, inputs, inputs[0])


def _reverse_backward(p, ctx, inputs, outputs, out_grads):
    # The permutation reverses within each length: it is its own inverse.
    return [_reverse(p, inputs, out_grads[0]), *_no_length_grad(p, inputs)]


register(OpDef(
    name="SequenceReverse", inputs=_inputs,
    doc="Reverses the first `length` steps of each sequence (T, B, ...); padding stays.",
    params=(_LENGTH_PARAM,
            Param("axis", "int", 0, "The sequence axis. Only 0 is currently supported.")),
    forward=_reverse_forward, backward=_reverse_backward,
    backward_reads=lambda p: GradReads(("sequence_length",) if p.use_sequence_length else ()),
    infer_shape=_sequence_shape("SequenceReverse", (0,), lambda p, d: d),
    infer_type=_sequence_type,
))
