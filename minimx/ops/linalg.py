"""Products: dot and batch_dot, as MXNet 1.9's src/operator/tensor/dot-inl.h
(transpose_a, transpose_b; dot flattens N-d operands around the contracted axis)."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..base import ShapeError
from .infer import from_input, merge
from .registry import GradReads, OpDef, Param, register


def _matrix_t(m: np.ndarray) -> np.ndarray:
    return m.T


def batch_t(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


def oriented(p, lhs: np.ndarray, rhs: np.ndarray, flip: Callable) -> tuple:
    """The operands actually multiplied, with transpose_a / transpose_b applied."""
    return (flip(lhs) if p.transpose_a else lhs), (flip(rhs) if p.transpose_b else rhs)


def product_grads(p, lhs, rhs, grad, flip) -> tuple:
    """Gradients wrt `lhs` and `rhs` of ``matmul(*oriented(p, lhs, rhs, flip))``."""
    a, b = oriented(p, lhs, rhs, flip)
    ga, gb = grad @ flip(b), flip(a) @ grad
    return oriented(p, ga, gb, flip)


def _dot_rule(p, in_shapes):
    """MXNet's DotShape: dot contracts a's last axis (first if transpose_a) with b's
    first axis (last if transpose_b); two vectors give shape (1,)."""
    a, b = in_shapes
    ta, tb = p.transpose_a, p.transpose_b
    if not a or not b:
        raise ShapeError(f"dot: 0-d inputs are not supported, got {a} X {b}")
    if len(a) == 1 and len(b) == 1 and (ta or tb):
        raise ShapeError(f"dot: cannot transpose vectors, got {a} X {b}")
    ka, kb = a[0] if ta else a[-1], b[-1] if tb else b[0]
    if ka and kb and ka != kb:
        raise ShapeError(f"dot: shape error {a} X {b} (transpose_a={ta}, transpose_b={tb}): "
                         f"contracted dims {ka} and {kb} differ")
    out = (a[1:] if ta else a[:-1]) if len(a) > 1 else ()
    out += (b[:-1] if tb else b[1:]) if len(b) > 1 else ()
    return [out or (1,)]


def _dot_matrices(p, a: np.ndarray, b: np.ndarray) -> tuple:
    """a and b as the matrices MXNet multiplies: N-d operands are flattened around
    the contracted axis, before any transpose."""
    def as_matrix(x, contract_first):
        if contract_first:
            return x.reshape(x.shape[0], math.prod(x.shape[1:]))
        return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
    return as_matrix(a, p.transpose_a), as_matrix(b, not p.transpose_b)


def _dot_forward(p, ctx, inputs):
    oshape = _dot_rule(p, [x.shape for x in inputs])[0]
    lhs, rhs = _dot_matrices(p, *inputs)
    a, b = oriented(p, lhs, rhs, _matrix_t)
    return (a @ b).reshape(oshape)


def _dot_backward(p, ctx, inputs, outputs, out_grads):
    lhs, rhs = _dot_matrices(p, *inputs)
    a, b = oriented(p, lhs, rhs, _matrix_t)
    grad = out_grads[0].reshape(a.shape[0], b.shape[1])
    grads = product_grads(p, lhs, rhs, grad, _matrix_t)
    return [g.reshape(x.shape) for g, x in zip(grads, inputs, strict=True)]


_DOT_PARAMS = (
    Param("transpose_a", "bool", False, "If true then transpose the first input before dot."),
    Param("transpose_b", "bool", False, "If true then transpose the second input before dot."),
    Param("forward_stype", "str", None, "The desired storage type of the forward output "
          "(only dense storage exists here).", choices=("default", "row_sparse", "csr")),
)

register(OpDef(
    name="dot", inputs=("lhs", "rhs"), params=_DOT_PARAMS, bfloat16="refuse",
    doc="Dot product of two arrays: a's last axis with b's first (N-d allowed).",
    forward=_dot_forward, backward=_dot_backward, backward_reads=GradReads(("lhs", "rhs")),
    infer_shape=from_input(_dot_rule),
))


def _batch_dot_rule(p, in_shapes):
    """MXNet's BatchDotShape: (B.., m, k) x (B.., k, n) -> (B.., m, n), N >= 3."""
    a, b = in_shapes
    ta, tb = p.transpose_a, p.transpose_b
    if len(a) < 3 or len(a) != len(b):
        raise ShapeError(f"batch_dot: inputs must have one ndim >= 3, got {a} X {b}")
    try:
        batch = merge(a[:-2], b[:-2])
    except ShapeError:
        raise ShapeError(f"batch_dot: leading batch dims differ: {a} X {b}") from None
    ka, kb = a[-2] if ta else a[-1], b[-1] if tb else b[-2]
    if ka and kb and ka != kb:
        raise ShapeError(f"batch_dot: shape error {a} X {b} (transpose_a={ta}, "
                         f"transpose_b={tb}): contracted dims {ka} and {kb} differ")
    return [batch + (a[-1] if ta else a[-2], b[-2] if tb else b[-1])]


def _batch_dot_forward(p, ctx, inputs):
    _batch_dot_rule(p, [x.shape for x in inputs])  # ShapeError before numpy's ValueError
    return np.matmul(*oriented(p, *inputs, batch_t))


def _batch_dot_backward(p, ctx, inputs, outputs, out_grads):
    return list(product_grads(p, *inputs, out_grads[0], batch_t))


register(OpDef(
    name="batch_dot", inputs=("lhs", "rhs"), params=_DOT_PARAMS, bfloat16="refuse",
    doc="Batchwise matrix product of N-d arrays (N >= 3) over the last two axes.",
    forward=_batch_dot_forward, backward=_batch_dot_backward,
    backward_reads=GradReads(("lhs", "rhs")),
    infer_shape=from_input(_batch_dot_rule),
))
