"""MXNet's `CTCLoss` (src/operator/nn/ctc_loss.cc, warp-ctc's CPU kernel; aliases
`ctc_loss`, `_contrib_CTCLoss`, `_contrib_ctc_loss`).

data (T, N, C) holds activations; the softmax over C is taken inside. label (N, L)
holds each sequence's labels, ended by the first padding value (0 when blank_label
is 'first', -1 when 'last') unless `label_lengths` gives the lengths; `data_lengths`
gives each sequence's number of time steps. Outputs: the loss per sequence (N,) and,
hidden, its gradient with respect to data (warp-ctc computes it in forward; backward
scales it by the head gradient). The forward-backward recursions run in log space
over the extended label (blanks between and around the labels), one time step at a
time for the whole batch. As MXNet, a sequence whose labels cannot fit its time steps
(length + repeated neighbours > time steps), or that has no time steps, has loss 0
and gradient 0, and time steps past a sequence's length have gradient 0.
Unlike MXNet, float64 data is accepted (MXNet refuses it when it runs), and labels
outside [0, C) and lengths outside the arrays are an `OperatorError`.
"""
from __future__ import annotations

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from .infer import Dims, from_input, merge, merge_all, merge_dtype
from .registry import GradReads, OpContext, OpDef, Param, Params, register

Array = np.ndarray
_FLOATS = (np.dtype("float32"), np.dtype("float64"))
_NEG_INF = -np.inf


def _input_names(p: Params) -> list[str]:
    return (["data", "label"] + ["data_lengths"] * p.use_data_lengths
            + ["label_lengths"] * p.use_label_lengths)


def _ctc_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    data, label, *lengths = in_shapes
    if len(data) != 3 or len(label) != 2 or any(len(s) != 1 for s in lengths):
        raise ShapeError(f"{p.label}: data {data} must be (time, batch, alphabet), label "
                         f"{label} (batch, labels) and lengths {lengths} (batch,)")
    try:
        batch = merge_all([(data[1],), (label[0],), *lengths])
    except ShapeError:
        raise ShapeError(f"{p.label}: data {data}, label {label} and lengths {lengths} have "
                         "different batch sizes") from None
    if data[0] and label[1] and data[0] < label[1]:
        raise ShapeError(f"{p.label}: {label[1]} labels (label {label}) cannot fit {data[0]} "
                         f"time steps (data {data})")
    return [batch, merge(data, (data[0], batch[0], data[2]))]


def _ctc_types(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    """Outputs in data's dtype, float32 (MXNet's only one) or float64; labels and lengths
    of any numeric dtype."""
    t = merge_all([in_types[0], *out_types], merge_dtype)
    if t is not None and t not in _FLOATS:
        raise DTypeError(f"{p.label}: data must be float32 or float64, got {t}")
    return [t, *in_types[1:]], [t, t]


def _lengths(p: Params, what: str, values: Array, low: int, high: int) -> Array:
    """Integer lengths (truncated, as MXNet reads them), each in [low, high]."""
    lengths = values.astype(np.int64)
    if lengths.size and (lengths.min() < low or lengths.max() > high):
        raise OperatorError(f"{p.label}: {what} {values.tolist()} must lie in [{low}, {high}]")
    return lengths


def _sequences(p: Params, inputs: list[Array]) -> tuple[Array, Array, Array]:
    """(labels (N, L) as integers, label lengths, data lengths) from the inputs."""
    data, label = inputs[0], inputs[1]
    steps, _, alphabet = data.shape
    labels = label.astype(np.int64)
    if p.use_label_lengths:
        label_len = _lengths(p, "label_lengths", inputs[-1], 0, label.shape[1])
    else:
        is_pad = labels == (0 if p.blank_label == "first" else -1)
        label_len = np.where(is_pad.any(axis=1), is_pad.argmax(axis=1), label.shape[1])
    data_len = (_lengths(p, "data_lengths", inputs[2], 0, steps) if p.use_data_lengths
                else np.full(label.shape[0], steps))
    used = np.arange(label.shape[1]) < label_len[:, None]
    bad = used & ((labels < 0) | (labels >= alphabet))
    if bad.any():
        raise OperatorError(f"{p.label}: labels {label[bad].tolist()} are outside the "
                            f"alphabet [0, {alphabet})")
    return np.where(used, labels, 0), label_len, data_len


def _shift(a: Array, k: int) -> Array:
    """`a` moved k states along the last axis (toward higher states for k > 0), -inf
    filling."""
    out = np.full_like(a, _NEG_INF)
    if k > 0:
        out[..., k:] = a[..., :-k]
    else:
        out[..., :k] = a[..., -k:]
    return out


def ctc_loss(data: Array, labels: Array, label_len: Array, data_len: Array, blank: int
             ) -> tuple[Array, Array]:
    """Loss (N,) and its gradient with respect to the activations (T, N, C), in float64.

    `labels` (N, L) are integers, valid up to `label_len`; `data_len` the time steps."""
    steps, batch, alphabet = data.shape
    shifted = data - data.max(axis=2, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=2, keepdims=True))
    # The extended label: blank, l1, blank, l2, ..., blank; states past 2L+1 are unused.
    states = 2 * label_len + 1
    ext = np.full((batch, 2 * labels.shape[1] + 1), blank)
    ext[:, 1::2] = labels
    width = ext.shape[1]
    used = np.arange(width) < states[:, None]
    final = used & (np.arange(width) >= states[:, None] - 2)
    # A label state may be entered from two states back, skipping the blank, unless
    # the label there is the same.
    skip = np.zeros((batch, width), bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    emit = np.take_along_axis(log_probs, np.broadcast_to(ext, (steps, batch, width)), axis=2)
    emit = np.where(used, emit, _NEG_INF)

    alpha = np.full((steps, batch, width), _NEG_INF)
    alpha[0, :, :2] = emit[0, :, :2]
    for t in range(1, steps):
        prev = alpha[t - 1]
        into = np.logaddexp(prev, _shift(prev, 1))
        alpha[t] = np.where(skip, np.logaddexp(into, _shift(prev, 2)), into) + emit[t]
    last = data_len - 1
    at_end = np.where(final, alpha[last, np.arange(batch)], _NEG_INF)
    log_like = np.logaddexp.reduce(at_end, axis=1)

    # beta: the log probability of finishing from each state, the emission at t excluded
    # (so that alpha + beta counts it once).
    beta = np.full((steps, batch, width), _NEG_INF)
    skip_ahead = np.zeros((batch, width), bool)
    skip_ahead[:, :-2] = skip[:, 2:]
    nxt = np.full((batch, width), _NEG_INF)
    for t in range(steps - 1, -1, -1):
        out = np.logaddexp(nxt, _shift(nxt, -1))
        out = np.where(skip_ahead, np.logaddexp(out, _shift(nxt, -2)), out)
        out = np.where((last == t)[:, None], np.where(final, 0.0, _NEG_INF), out)
        beta[t] = np.where((last >= t)[:, None], out, _NEG_INF)
        nxt = beta[t] + emit[t]

    repeats = np.sum((labels[:, 1:] == labels[:, :-1])
                     & (np.arange(1, labels.shape[1]) < label_len[:, None]), axis=1)
    feasible = label_len + repeats <= data_len
    occupancy = np.exp(alpha + beta - np.where(feasible, log_like, 0.0)[:, None])
    by_class = np.einsum("tns,nsc->tnc", occupancy,
                         (ext[:, :, None] == np.arange(alphabet)).astype(float))
    live = (np.arange(steps)[:, None] <= last) & feasible
    grad = np.where(live[:, :, None], np.exp(log_probs) - by_class, 0.0)
    # A sequence of no time steps has loss 0 and no gradient, as in MXNet.
    return np.where(feasible & (data_len > 0), -log_like, 0.0), grad


def _ctc_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
    data = inputs[0]
    _ctc_rule(p, [a.shape for a in inputs])
    labels, label_len, data_len = _sequences(p, inputs)
    blank = 0 if p.blank_label == "first" else data.shape[2] - 1
    loss, grad = ctc_loss(data.astype(np.float64), labels, label_len, data_len, blank)
    return [loss.astype(data.dtype), grad.astype(data.dtype)]


def _ctc_backward(p: Params, ctx: OpContext, inputs: list, outputs: list, out_grads: list
                  ) -> list:
    return [out_grads[0][None, :, None] * outputs[1],
            *(np.zeros(a.shape, a.dtype) for a in inputs[1:])]


register(OpDef(
    "CTCLoss", _ctc_forward, inputs=_input_names, outputs=("output0", "output1"),
    visible_outputs=lambda p: 1, aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss"),
    params=(
        Param("use_data_lengths", "bool", False, "Whether the data lenghts are decided by "
              "`data_lengths`. If false, the lengths are equal to the max sequence length."),
        Param("use_label_lengths", "bool", False, "Whether the label lenghts are decided by "
              "`label_lengths`, or derived from the first padding value (0 when blank_label "
              "is 'first', -1 when 'last')."),
        Param("blank_label", "str", "first", "The blank's channel: 0 ('first') or "
              "alphabet_size - 1 ('last').", choices=("first", "last")),
    ),
    infer_shape=from_input(_ctc_rule), infer_type=_ctc_types, bfloat16="refuse",
    backward=_ctc_backward, backward_reads=GradReads(outputs=("output1",)),
    doc="Connectionist Temporal Classification loss of activations data (T, N, C) "
        "(softmax taken inside) for labels (N, L): one loss per sequence (N,)."))
