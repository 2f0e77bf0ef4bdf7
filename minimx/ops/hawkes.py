"""``_contrib_hawkesll`` (MXNet 1.9's src/operator/contrib/hawkes_ll-inl.h): the log
likelihood of N independent K-mark Hawkes processes with exponential kernels, and its
gradient with respect to the background intensities `lda` (N, K), the branching ratios
`alpha` (K,) and the decays `beta` (K,).

Each sample i is a left-aligned ragged row of `valid_length[i]` points: `lags` (N, T),
the times since the previous point, and `marks` (N, T, int32), the process of each
point. `state` (N, K) carries in the memory of earlier points; the second output is it
at `max_time[i]`. The kernels walk the points in step for all samples, as MXNet's walk
them per sample; the state, lags, marks, lengths and times take no gradient (zero).
"""
from __future__ import annotations

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from .params import Params
from .registry import OpContext, OpDef, register

Array = np.ndarray
_INPUTS = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")
_INT32 = np.dtype(np.int32)


def _shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    if any(s is None for s in in_shapes):
        return in_shapes, out_shapes
    lda, _, _, _, lags, _, _, _ = in_shapes
    n, k = lda if len(lda) == 2 else (None, None)
    want = [(n, k), (k,), (k,), (n, k), (n, lags[1] if len(lags) == 2 else None),
            (n, lags[1] if len(lags) == 2 else None), (n,), (n,)]
    if n is None or lags[0] != n or [tuple(s) for s in in_shapes] != want:
        raise ShapeError(f"{p.label}: inputs {dict(zip(_INPUTS, in_shapes, strict=True))} must "
                         "be lda (N, K), alpha and beta (K,), state (N, K), lags and marks "
                         "(N, T), valid_length and max_time (N,)")
    return in_shapes, [(n,), (n, k)]


def _type(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    dtype = in_types[0]
    marks = in_types[5]
    if marks is not None and np.dtype(marks) != _INT32:
        raise DTypeError(f"{p.label}: marks must be int32, got {np.dtype(marks).name}")
    return ([_INT32 if i == 5 else dtype for i in range(len(in_types))], [dtype, dtype])


def _points(inputs: list[Array], p: Params):
    """For each position j of the rows: which samples have a point there, its mark and
    the time since that mark's previous point (updating `last`, the (N, K) times)."""
    lda, _, _, _, lags, marks, valid_length, _ = inputs
    n, k = lda.shape
    if marks.size and ((marks < 0) | (marks >= k)).any():
        bad = marks[(marks < 0) | (marks >= k)]
        raise OperatorError(f"{p.label}: marks {bad.tolist()} are not process ids 0..{k - 1}")
    rows = np.arange(n)
    last = np.zeros((n, k), lda.dtype)
    t = np.zeros(n, lda.dtype)
    for j in range(lags.shape[1]):
        on = j < valid_length
        mark = np.where(on, marks[:, j], 0)
        t = np.where(on, t + lags[:, j], t)
        d = t - last[rows, mark]
        last[rows, mark] = np.where(on, t, last[rows, mark])
        yield on, rows, mark, d
    yield None, rows, None, inputs[7][:, None] - last    # the rest of each window


def _forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
    lda, alpha, beta, state = inputs[:4]
    state = state.copy()
    ll = np.zeros(len(lda), lda.dtype)
    for on, rows, mark, d in _points(inputs, p):
        if on is None:   # the compensator up to max_time, and the state there
            ed = np.exp(-beta * d)
            ll -= (lda * d + alpha * state * (1 - ed)).sum(axis=1)
            return [ll, ed * state]
        a, b, s = alpha[mark], beta[mark], state[rows, mark]
        ed = np.exp(-b * d)
        with np.errstate(divide="ignore", invalid="ignore"):
            ll = np.where(on, ll + np.log(lda[rows, mark] + a * b * s * ed)
                          - (lda[rows, mark] * d + a * s * (1 - ed)), ll)
        state[rows, mark] = np.where(on, 1 + s * ed, s)
    raise AssertionError("unreachable: _points ends with the window's end")


def _backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
              out_grads: list[Array]) -> list[Array]:
    """MXNet's recurrences: the state s and its derivative ds with respect to beta run
    along with the per-sample gradients; the state's own head gradient is not used."""
    lda, alpha, beta, state = inputs[:4]
    s, ds = state.copy(), np.zeros_like(state)
    g_lda, g_alpha, g_beta = (np.zeros_like(lda) for _ in range(3))
    for on, rows, mark, d in _points(inputs, p):
        if on is None:
            ed = np.exp(-beta * d)
            g_lda -= d
            g_alpha -= s * (1 - ed)
            g_beta -= alpha * (ds * (1 - ed) + s * d * ed)
            break
        a, b, sm, dsm = alpha[mark], beta[mark], s[rows, mark], ds[rows, mark]
        ed = np.exp(-b * d)
        with np.errstate(divide="ignore", invalid="ignore"):
            intensity = lda[rows, mark] + a * b * sm * ed
            g_lda[rows, mark] += np.where(on, 1 / intensity - d, 0)
            g_alpha[rows, mark] += np.where(on, b * sm * ed / intensity - sm * (1 - ed), 0)
            g_beta[rows, mark] += np.where(
                on, a * ed * (sm * (1 - b * d) + b * dsm) / intensity
                - a * (dsm * (1 - ed) + sm * d * ed), 0)
        ds[rows, mark] = np.where(on, ed * (-d * sm + dsm), dsm)
        s[rows, mark] = np.where(on, 1 + sm * ed, sm)
    head = out_grads[0][:, None]
    return [head * g_lda, (head * g_alpha).sum(axis=0), (head * g_beta).sum(axis=0),
            *(np.zeros_like(a) for a in inputs[3:])]


register(OpDef(
    "_contrib_hawkesll", _forward, inputs=_INPUTS, outputs=("output", "states"),
    infer_shape=_shape, infer_type=_type, backward=_backward, bfloat16="refuse",
    doc="The log likelihood (N,) of N K-mark Hawkes processes with exponential decay, "
        "and their states (N, K) at max_time."))
