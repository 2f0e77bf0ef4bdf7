"""``_sample_unique_zipfian``: for each of ``shape[0]`` rows, ``shape[1]`` distinct
integers in ``[0, range_max)`` drawn from an approximately log-uniform (Zipfian)
distribution, and the number of draws each row took (MXNet 1.9.1's
src/operator/random/unique_sample_op.h, for sampled softmax).

One draw is ``round(exp(u * log(range_max))) - 1`` for u uniform in [0, 1), rounding
halves up, as MXNet's kernel computes it: value k comes with probability
``(log(min(k + 1.5, range_max)) - log(max(k + 0.5, 1))) / log(range_max)`` (MXNet's
docstring gives another formula, which its kernel does not follow). A row keeps
drawing until it has ``shape[1]`` distinct values, kept in the order they first came.
Values come from `GENERATOR` (`mx.random.seed` seeds it): MXNet's distribution, not
its numbers.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Shape, known, merge, merge_dtype
from .params import Params
from .registry import OpContext, OpDef, Param, register

Array = np.ndarray
_I64 = np.dtype(np.int64)


def _sample_shape(p: Params, out_shapes: list) -> Shape:
    """The 2-D shape asked for, or, without one, the first output's when inference
    knows it (as MXNet's)."""
    if p.shape:
        return tuple(p.shape)
    return out_shapes[0]


def _infer_shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    shape = _sample_shape(p, out_shapes)
    if shape is None:
        return in_shapes, out_shapes
    if len(shape) != 2:
        raise ShapeError(f"{p.label}: shape must be 2-D (batch_size, num_sampled), got "
                         f"{shape}")
    if known(shape) and shape[1] > p.range_max:
        raise OperatorError(f"{p.label}: cannot draw {shape[1]} distinct values from "
                            f"range_max={p.range_max} classes")
    return in_shapes, [merge(out_shapes[0], shape), merge(out_shapes[1], (shape[0],))]


def _resolved(p: Params, out_shapes: list) -> Params:
    if p.shape or out_shapes[0] is None:
        return p
    return Params({**p, "shape": tuple(out_shapes[0])}, label=p.label)


def _draws(rng: np.random.Generator, count: int, log_range: float) -> Array:
    # floor(x + 0.5): C's lround of a positive x (halves away from zero).
    return np.floor(np.exp(rng.random(count) * log_range) + 0.5).astype(np.int64) - 1


def _unique_row(rng: np.random.Generator, num_sampled: int, log_range: float
                ) -> tuple[Array, int]:
    """`num_sampled` distinct draws in the order they first came, and how many draws
    that took. Draws come in growing batches; only the first `tries` count."""
    drawn = np.empty(0, np.int64)
    batch = 2 * num_sampled + 16
    while True:
        drawn = np.concatenate([drawn, _draws(rng, batch, log_range)])
        _, first = np.unique(drawn, return_index=True)
        if len(first) >= num_sampled:
            firsts = np.sort(first)[:num_sampled]
            return drawn[firsts], int(firsts[-1]) + 1 if num_sampled else 0
        batch *= 2


def _forward(p: Params, ctx: OpContext, inputs: list) -> list[Array]:
    shape = _sample_shape(p, [None])
    if shape is None or len(shape) != 2:
        raise ShapeError(f"{p.label}: shape={p.shape} must be 2-D (batch_size, num_sampled)")
    rows, num_sampled = shape
    if num_sampled > p.range_max:
        raise OperatorError(f"{p.label}: cannot draw {num_sampled} distinct values from "
                            f"range_max={p.range_max} classes")
    samples = np.empty(shape, np.int64)
    tries = np.zeros(rows, np.int64)
    log_range = float(np.log(p.range_max))
    for i in range(rows):
        samples[i], tries[i] = _unique_row(ctx.rng, num_sampled, log_range)
    return [samples, tries]


register(OpDef(
    "_sample_unique_zipfian", _forward, inputs=(), outputs=("output0", "output1"),
    params=(Param("range_max", "int", doc="The number of possible classes."),
            Param("shape", "shape", None, "2-D shape of the output, where shape[0] is the batch "
                  "size, and shape[1] is the number of candidates to sample for each batch.")),
    infer_shape=_infer_shape,
    infer_type=lambda p, ins, outs: (ins, [merge_dtype(t, _I64) for t in outs]),
    resolve=_resolved, draws=True, bfloat16="refuse",
    doc="Draw random samples from an approximately log-uniform or Zipfian distribution "
        "without replacement: shape[1] distinct classes below range_max per row, and the "
        "number of trials each row took."))
