"""Matrix products in ONNX: ``batch_dot``, ``_linalg_gemm2`` and ``dot`` as MatMul, and
the attention scaling ``_contrib_div_sqrt_dim``.

``dot`` of N-d operands contracts one axis and keeps all the others (MXNet flattens
the operands around the contracted axis), which MatMul's broadcasting does not do:
such products are written as 2-d ones between Reshapes (MXNet's exporter writes a
MatMul, which gives other numbers or fails).
"""
from __future__ import annotations

from math import prod

import numpy as np

from .emitter import Emitter, Site, Unsupported
from .registry import translates


def _last_two_swapped(e: Emitter, x: str, ndim: int) -> str:
    perm = list(range(ndim))
    perm[-2:] = perm[-1], perm[-2]
    return e.add("Transpose", [x], perm=perm)


def _batch_product(e: Emitter, s: Site, out: str | None = None) -> str:
    """MatMul of the operands, each transposed (its last two axes) as the node says."""
    lhs, rhs = s.inputs
    if s.p.transpose_a:
        lhs = _last_two_swapped(e, lhs, s.ndim)
    if s.p.transpose_b:
        rhs = _last_two_swapped(e, rhs, s.ndim)
    return e.add("MatMul", [lhs, rhs], out)


@translates("batch_dot")
def _batch_dot(e: Emitter, s: Site) -> None:
    _batch_product(e, s, s.outputs[0])


def _as_matrix(e: Emitter, s: Site, k: int, contract_first: bool) -> str:
    """Input `k` flattened around its contracted axis, as MXNet multiplies it."""
    shape = s.in_shapes[k]
    dims = [shape[0], prod(shape[1:])] if contract_first else [prod(shape[:-1]), shape[-1]]
    return e.add("Reshape", [s.inputs[k], e.ints(f"{s.name}_matrix{k}", dims)])


@translates("dot")
def _dot(e: Emitter, s: Site) -> None:
    a, b = map(len, s.in_shapes)
    ta, tb = s.p.transpose_a, s.p.transpose_b
    lhs, rhs = s.inputs
    # MatMul contracts the same axes as MXNet when b is a matrix or a vector and a's
    # last axis is the contracted one; otherwise both are flattened to matrices.
    flattened = b > 2 or (a > 2 and ta)
    if (a, b) in ((2, 1), (1, 2)) and (ta if a == 2 else tb):
        # A transposed matrix times a vector is the vector times the matrix; this
        # also avoids onnxruntime 1.32, which drops a Transpose fused into such a MatMul.
        e.add("MatMul", [rhs, lhs], s.outputs[0])
        return
    if flattened:
        s.needs_fixed_shapes()
        lhs, rhs = _as_matrix(e, s, 0, ta), _as_matrix(e, s, 1, not tb)
    if ta and (flattened or a == 2):
        lhs = e.add("Transpose", [lhs], perm=[1, 0])
    if tb and (flattened or b == 2):
        rhs = e.add("Transpose", [rhs], perm=[1, 0])
    if not flattened and (a, b) != (1, 1):
        e.add("MatMul", [lhs, rhs], s.outputs[0])
        return
    # the kept axes back from the matrices; two vectors give (1,) where MatMul gives a scalar
    e.add("Reshape", [e.add("MatMul", [lhs, rhs]), e.ints(f"{s.name}_shape", s.out_shapes[0])],
          s.outputs[0])


@translates("_contrib_div_sqrt_dim")
def _div_sqrt_dim(e: Emitter, s: Site) -> None:
    s.needs_fixed_shapes()
    root = e.const(f"{s.name}_sqrt_dim", np.sqrt(s.dtype.type(s.in_shapes[0][-1])), s.dtype)
    e.add("Div", [s.inputs[0], root], s.outputs[0])


@translates("_linalg_gemm2")
def _gemm2(e: Emitter, s: Site) -> None:
    """alpha * op(A) op(B) on the last two axes."""
    if s.p.axis % s.ndim != s.ndim - 2:
        raise Unsupported(f"axis={s.p.axis}: only rows on the second-to-last axis "
                          "(axis=-2) are translated")
    if s.p.alpha == 1:
        _batch_product(e, s, s.outputs[0])
        return
    alpha = e.const(f"{s.name}_alpha", s.p.alpha, s.dtype)
    e.add("Mul", [alpha, _batch_product(e, s)], s.outputs[0])
