"""MXNet's linear-algebra operators (src/operator/tensor/la_op.h): `_linalg_gemm`,
`gemm2`, `potrf`, `potri`, `trsm`, `trmm`, `syrk`, `gelqf`, `syevd`, `inverse`, `det`,
`slogdet`, `sumlogdiag`, `extractdiag`, `makediag`, `extracttrian`, `maketrian` (aliases
`linalg_<name>` but for syevd, as in MXNet; `mx.nd.linalg.<name>`), and `khatri_rao`.

Every operator works on the last two axes (gemm and gemm2: the rows on `axis`)
of float32 or float64 arrays, batched over the leading ones, and computes in
float64. potrf, potri, trsm and trmm read only the triangle they are given
(`lower`; potrf and potri the lower one), as LAPACK does; potrf's gradient is
MXNet's, the symmetric one; syevd reads the lower triangle and gives MXNet's
eigenvector signs. A 2-D input to det, slogdet or sumlogdiag gives shape
(1,), as in MXNet. Unlike MXNet, det and slogdet have no hidden LU outputs.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from functools import reduce
from typing import Any

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from .infer import Dims, from_input, merge, same_dtype
from .linalg import batch_t, oriented, product_grads
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, Unread, register

Array = np.ndarray
_FLOATS = (np.dtype("float32"), np.dtype("float64"))


def _float_types(p: Params, in_types: list, out_types: list):
    """One dtype for all, float32 or float64 (MXNet's LAPACK kernels take no other)."""
    ins, outs = same_dtype(p, in_types, out_types)
    if outs and outs[0] is not None and outs[0] not in _FLOATS:
        raise DTypeError(f"linear algebra operators take float32 or float64, got {outs[0]}")
    return ins, outs


def _square(what: str, shape: Dims) -> int:
    """The size of the square matrices in `shape`'s last two axes."""
    if len(shape) < 2 or (shape[-1] and shape[-2] and shape[-1] != shape[-2]):
        raise ShapeError(f"{what}: input {shape} must hold square matrices in its last two "
                         "axes")
    return shape[-1] or shape[-2]


def _scalars(shape: Dims) -> Dims:
    """The shape of one value per matrix: the batch axes, or (1,) for one matrix."""
    return shape[:-2] or (1,)


def _tri(a: Array, lower: bool) -> Array:
    return np.tril(a) if lower else np.triu(a)


def _solved(what: str, fn: Callable[..., Array], *args: Array) -> Array:
    """`fn(*args)` of numpy's linalg; a singular or indefinite matrix is an OperatorError."""
    try:
        return fn(*args)
    except np.linalg.LinAlgError as exc:
        raise OperatorError(f"{what}: {exc} (the input matrix must be "
                            f"{'positive definite' if 'potrf' in what else 'invertible'})"
                            ) from None


def _linalg(name: str, forward: Callable, backward: Callable, rule: Callable, *,
            inputs: tuple[str, ...] = ("A",), params: tuple[Param, ...] = (),
            outputs: tuple[str, ...] = ("output",), reads: GradReads | None = None,
            alias: bool = True, doc: str) -> OpDef:
    """An operator of the family, computed in float64 and returned in the input's dtype."""
    def run(p: Params, ctx: OpContext, arrays: list[Array]) -> list[Array]:
        shapes = rule(p, [a.shape for a in arrays])   # ShapeError before numpy's errors
        result = forward(p, *(a.astype(np.float64) for a in arrays))
        return [np.asarray(r).reshape(s).astype(arrays[0].dtype) for r, s in zip(
            result if isinstance(result, tuple) else (result,), shapes, strict=True)]

    def grad(p: Params, ctx: OpContext, ins: list, outs: list, out_grads: list) -> list:
        wide = [a if isinstance(a, Unread) else a.astype(np.float64) for a in (*ins, *outs)]
        grads = backward(p, *wide[:len(ins)], *wide[len(ins):],
                         *(g.astype(np.float64) for g in out_grads))
        return [g.reshape(a.shape).astype(a.dtype) for g, a in zip(grads, ins, strict=True)]

    return OpDef(f"_linalg_{name}", run, inputs=inputs, outputs=outputs, params=params,
                 aliases=(f"linalg_{name}",) if alias else (), infer_shape=from_input(rule),
                 infer_type=_float_types, bfloat16="refuse",
                 backward=grad, backward_reads=reads, doc=doc)


# -- gemm and gemm2 ------------------------------------------------------------------------

_GEMM_PARAMS = (
    Param("transpose_a", "bool", False, "Multiply with transposed of first input (A)."),
    Param("transpose_b", "bool", False, "Multiply with transposed of second input (B)."),
    Param("alpha", "float", 1.0, "Scalar factor multiplied with A*B."),
    Param("axis", "int", -2, "Axis corresponding to the matrix rows."),
)


def _rows_last(p: Params, shape: Dims) -> Dims:
    """`shape` with the row axis moved next to the last (column) axis."""
    if not -len(shape) <= p.axis < len(shape) or p.axis % len(shape) == len(shape) - 1:
        raise ShapeError(f"linalg gemm: axis={p.axis} is no row axis of a {len(shape)}-d input")
    axis = p.axis % len(shape)
    return shape[:axis] + shape[axis + 1:-1] + (shape[axis], shape[-1])


def _rows_back(p: Params, shape: Dims) -> Dims:
    axis = p.axis % len(shape)
    return shape[:axis] + (shape[-2],) + shape[axis:-2] + shape[-1:]


def _gemm_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    a, b = (_rows_last(p, s) for s in in_shapes[:2])
    ka, kb = a[-2] if p.transpose_a else a[-1], b[-1] if p.transpose_b else b[-2]
    if len(a) != len(b) or (ka and kb and ka != kb):
        raise ShapeError(f"linalg gemm: A {in_shapes[0]} and B {in_shapes[1]} do not multiply "
                         f"(transpose_a={p.transpose_a}, transpose_b={p.transpose_b}, "
                         f"axis={p.axis})")
    out = _rows_back(p, merge(a[:-2], b[:-2]) + (a[-1] if p.transpose_a else a[-2],
                                                 b[-2] if p.transpose_b else b[-1]))
    if len(in_shapes) == 3:
        merge(out, in_shapes[2])
    return [out]


def _matrices(p: Params, a: Array) -> Array:
    return np.moveaxis(a, p.axis, -2)


def _gemm_forward(p: Params, a: Array, b: Array, c: Array | None = None) -> Array:
    out = p.alpha * np.matmul(*oriented(p, _matrices(p, a), _matrices(p, b), batch_t))
    return np.moveaxis(out if c is None else out + p.beta * _matrices(p, c), -2, p.axis)


def _gemm_backward(p: Params, a: Array, b: Array, *rest: Array) -> list:
    g = _matrices(p, rest[-1])
    ga, gb = product_grads(p, _matrices(p, a), _matrices(p, b), p.alpha * g, batch_t)
    grads = [np.moveaxis(ga, -2, p.axis), np.moveaxis(gb, -2, p.axis)]
    return grads + [p.beta * rest[-1]] if len(rest) == 3 else grads


register(_linalg(
    "gemm", _gemm_forward, _gemm_backward, _gemm_rule, inputs=("A", "B", "C"),
    params=_GEMM_PARAMS[:3] + (Param("beta", "float", 1.0, "Scalar factor multiplied with C."),
                               _GEMM_PARAMS[3]),
    reads=GradReads(("A", "B")),
    doc="alpha * op(A) * op(B) + beta * C on the last two axes (rows on `axis`)."))
register(_linalg(
    "gemm2", _gemm_forward, _gemm_backward, _gemm_rule, inputs=("A", "B"),
    params=_GEMM_PARAMS, reads=GradReads(("A", "B")),
    doc="alpha * op(A) * op(B) on the last two axes (rows on `axis`)."))


# -- triangular: potrf, potri, trmm, trsm ------------------------------------------------

def _same_square(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    _square("linalg", in_shapes[0])
    return [in_shapes[0]]


def _potrf_backward(p: Params, a: Array, low: Array, g: Array) -> list:
    # MXNet's (and Murray's) formula: the gradient of a symmetric A, split evenly
    # between A[i, j] and A[j, i].
    phi = np.tril(batch_t(low) @ g)
    phi -= 0.5 * np.eye(a.shape[-1]) * phi
    inv = np.linalg.inv(low)
    s = batch_t(inv) @ phi @ inv
    return [0.5 * (s + batch_t(s))]


_LOWER = Param("lower", "bool", True, "True for the lower triangular factor L (A's lower "
               "triangle is read), False for the upper one U = L^T (A's upper triangle).")


def _upper_by_transposition(forward: Callable, backward: Callable) -> tuple[Callable, Callable]:
    """`forward` and `backward` of a lower-triangle rule, taking `lower`: the upper
    one is the lower one on transposed matrices, its results transposed back."""
    def t(x: Any) -> Any:
        return x if isinstance(x, Unread) else batch_t(x)

    def run(p: Params, a: Array) -> Array:
        return forward(p, a) if p.lower else batch_t(forward(p, batch_t(a)))

    def grad(p: Params, *arrays: Any) -> list:
        if p.lower:
            return backward(p, *arrays)
        return [t(g) for g in backward(p, *map(t, arrays))]
    return run, grad


register(_linalg(
    "potrf", *_upper_by_transposition(
        lambda p, a: _solved("linalg potrf", np.linalg.cholesky,
                             np.tril(a) + batch_t(np.tril(a, -1))), _potrf_backward),
    _same_square, params=(_LOWER,), reads=GradReads(outputs=("output",)),
    doc="The Cholesky factor of a symmetric positive definite A: L with A = L * L^T "
        "(A's lower triangle read), or with lower=False U with A = U^T * U (its upper)."))


def _potri_forward(p: Params, a: Array) -> Array:
    low = np.tril(a)
    return _solved("linalg potri", np.linalg.inv, low @ batch_t(low))


def _potri_backward(p: Params, a: Array, y: Array, g: Array) -> list:
    return [np.tril(-y @ (g + batch_t(g)) @ y @ np.tril(a))]


register(_linalg(
    "potri", *_upper_by_transposition(_potri_forward, _potri_backward), _same_square,
    params=(_LOWER,), reads=GradReads(("A",), ("output",)),
    doc="The inverse of L * L^T from its lower Cholesky factor L (A's lower triangle), or "
        "with lower=False of U^T * U from its upper factor U."))

_TRIANGULAR_PARAMS = (
    Param("transpose", "bool", False, "Use transposed of the triangular matrix."),
    Param("rightside", "bool", False, "Multiply triangular matrix from the right to "
          "non-triangular one."),
    Param("lower", "bool", True, "True if the triangular matrix is lower triangular, false "
          "if it is upper triangular."),
    Param("alpha", "float", 1.0, "Scalar factor to be applied to the result."),
)


def _triangular_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    a, b = in_shapes
    n = _square("linalg trmm/trsm", a)
    side = 0 if len(b) != len(a) else b[-1] if p.rightside else b[-2]
    if len(b) != len(a) or (n and side and n != side):
        raise ShapeError(f"linalg trmm/trsm: triangular A {a} does not fit B {b} "
                         f"(rightside={p.rightside})")
    return [merge(b, a[:-2] + b[-2:])]


def _op_t(p: Params, a: Array) -> Array:
    """op(A): the triangle `lower` names, transposed if asked."""
    t = _tri(a, p.lower)
    return batch_t(t) if p.transpose else t


def _from_op_t(p: Params, grad: Array) -> Array:
    """The gradient of A from the gradient of op(A)."""
    return _tri(batch_t(grad) if p.transpose else grad, p.lower)


def _trmm_forward(p: Params, a: Array, b: Array) -> Array:
    t = _op_t(p, a)
    return p.alpha * (b @ t if p.rightside else t @ b)


def _trmm_backward(p: Params, a: Array, b: Array, out: Array, g: Array) -> list:
    t, g = _op_t(p, a), p.alpha * g
    if p.rightside:
        return [_from_op_t(p, batch_t(b) @ g), g @ batch_t(t)]
    return [_from_op_t(p, g @ batch_t(b)), batch_t(t) @ g]


def _trsm_forward(p: Params, a: Array, b: Array) -> Array:
    t = _op_t(p, a)
    if p.rightside:   # B * inv(T) = inv(T^T) * B^T, transposed
        return p.alpha * batch_t(_solved("linalg trsm", np.linalg.solve, batch_t(t),
                                          batch_t(b)))
    return p.alpha * _solved("linalg trsm", np.linalg.solve, t, b)


def _trsm_backward(p: Params, a: Array, b: Array, out: Array, g: Array) -> list:
    t = _op_t(p, a)
    if p.rightside:
        gb = batch_t(np.linalg.solve(t, batch_t(g)))   # g * inv(T)^T
        return [_from_op_t(p, -batch_t(out) @ gb), p.alpha * gb]
    gb = np.linalg.solve(batch_t(t), g)                 # inv(T)^T * g
    return [_from_op_t(p, -gb @ batch_t(out)), p.alpha * gb]


register(_linalg(
    "trmm", _trmm_forward, _trmm_backward, _triangular_rule, inputs=("A", "B"),
    params=_TRIANGULAR_PARAMS, reads=GradReads(("A", "B")),
    doc="alpha * op(A) * B (or B * op(A) with rightside) for triangular A."))
register(_linalg(
    "trsm", _trsm_forward, _trsm_backward, _triangular_rule, inputs=("A", "B"),
    params=_TRIANGULAR_PARAMS, reads=GradReads(("A",), ("output",)),
    doc="Solves op(A) * X = alpha * B (or X * op(A) = alpha * B with rightside) for "
        "triangular A."))


# -- syrk, inverse, det, slogdet, sumlogdiag ----------------------------------------------

def _syrk_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    a = in_shapes[0]
    if len(a) < 2:
        raise ShapeError(f"linalg syrk: input {a} must have at least 2 axes")
    n = a[-1] if p.transpose else a[-2]
    return [a[:-2] + (n, n)]


def _syrk_backward(p: Params, a: Array, y: Array, g: Array) -> list:
    sym = p.alpha * (g + batch_t(g))
    return [a @ sym if p.transpose else sym @ a]


register(_linalg(
    "syrk", lambda p, a: p.alpha * (batch_t(a) @ a if p.transpose else a @ batch_t(a)),
    _syrk_backward, _syrk_rule, reads=GradReads(("A",)),
    params=(Param("transpose", "bool", False, "Use transpose of input matrix."),
            Param("alpha", "float", 1.0, "Scalar factor to be applied to the result.")),
    doc="alpha * A * A^T (or alpha * A^T * A with transpose)."))

# -- gelqf and syevd ---------------------------------------------------------------------

def _gelqf_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    a = in_shapes[0]
    if len(a) < 2 or (a[-2] and a[-1] and a[-2] > a[-1]):
        raise ShapeError(f"linalg gelqf: input {a} must hold matrices with no more rows than "
                         "columns")
    return [a, a[:-1] + (a[-2],)]


def _gelqf_forward(p: Params, a: Array) -> tuple[Array, Array]:
    # LAPACK's gelqf of A is its geqrf of A^T (same reflectors, so the same signs):
    # A^T = Q' R gives A = L Q with L = R^T, Q = Q'^T.
    q, r = np.linalg.qr(batch_t(a))
    return batch_t(q), batch_t(r)


def _copy_lower_to_upper(m: Array) -> Array:
    return np.tril(m) + batch_t(np.tril(m, -1))


def _gelqf_backward(p: Params, a: Array, q: Array, low: Array, dq: Array, dlow: Array
                    ) -> list:
    # MXNet's: dA = L^-T (dQ + copyLTU(L^T dL - dQ Q^T) Q).
    m = _copy_lower_to_upper(batch_t(low) @ dlow - dq @ batch_t(q))
    return [_solved("linalg gelqf", np.linalg.solve, batch_t(low), dq + m @ q)]


register(_linalg(
    "gelqf", _gelqf_forward, _gelqf_backward, _gelqf_rule, outputs=("output0", "output1"),
    reads=GradReads(outputs=("output0", "output1")),
    doc="The LQ factorization A = L * Q of matrices with no more rows than columns: outputs "
        "Q (row-orthonormal, A's shape) and L (lower triangular, square)."))


def _syevd_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    n = _square("linalg syevd", in_shapes[0])
    return [in_shapes[0], in_shapes[0][:-2] + (n,)]


def _syevd_forward(p: Params, a: Array) -> tuple[Array, Array]:
    lam, v = np.linalg.eigh(a, "L")
    u = batch_t(v)   # MXNet's U holds the eigenvectors in its rows
    # MXNet's deterministic sign: each row's largest entry in magnitude (the first of
    # ties) is positive.
    top = np.take_along_axis(u, np.argmax(np.abs(u), axis=-1)[..., None], axis=-1)
    return np.where(top < 0, -u, u), lam


# MXNet's floor on eigenvalue gaps (its float32 value; the gradient of repeated
# eigenvalues is undefined anyway).
_EIGEN_GAP = 1e-30


def _syevd_backward(p: Params, a: Array, u: Array, lam: Array, du: Array, dlam: Array
                    ) -> list:
    # MXNet's: dA = U^T Y U, Y symmetric with Y_ij = (X_ij - X_ji) / (2 (lam_i - lam_j))
    # for i > j (X = dU U^T) and dlam on its diagonal.
    x = du @ batch_t(u)
    gap = np.maximum(lam[..., :, None] - lam[..., None, :], _EIGEN_GAP)
    y = np.tril((x - batch_t(x)) / (2 * gap), -1)
    y = y + batch_t(y) + dlam[..., None] * np.eye(lam.shape[-1])
    return [batch_t(u) @ y @ u]


register(_linalg(
    "syevd", _syevd_forward, _syevd_backward, _syevd_rule, outputs=("output0", "output1"),
    reads=GradReads(outputs=("output0", "output1")), alias=False,
    doc="The eigendecomposition U * A = diag(L) * U of symmetric matrices (the lower "
        "triangle is read): outputs U (eigenvectors in its rows) and L (eigenvalues, "
        "ascending)."))


register(_linalg(
    "inverse", lambda p, a: _solved("linalg inverse", np.linalg.inv, a),
    lambda p, a, y, g: [-batch_t(y) @ g @ batch_t(y)], _same_square,
    reads=GradReads(outputs=("output",)), doc="The inverse of each square matrix."))


def _one_per_matrix(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    _square("linalg", in_shapes[0])
    return [_scalars(in_shapes[0])]


def _per_matrix(g: Array, a: Array) -> Array:
    """One value per matrix (shape (1,) for a single one) broadcast over its elements."""
    return g.reshape(a.shape[:-2] + (1, 1))


def _inverse_or_zeros(m: Array) -> Array:
    try:
        return np.linalg.inv(m)
    except np.linalg.LinAlgError:
        return np.zeros_like(m)


def _inverses_or_zeros(a: Array) -> Array:
    """The inverse of each matrix, zeros for one that LAPACK finds singular."""
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        flat = a.reshape((-1,) + a.shape[-2:])
        return np.stack([_inverse_or_zeros(m) for m in flat]).reshape(a.shape)


def _jacobi(scale: Array, a: Array, invertible: Array) -> Array:
    """Jacobi's formula: scale * A^-T for each matrix. A singular one (det 0) gets a zero
    gradient, as MXNet's backward gives it, rather than an error."""
    keep = _per_matrix(invertible, a)
    return np.where(keep, _per_matrix(scale, a) * batch_t(_inverses_or_zeros(a)), 0)


register(_linalg(
    "det", lambda p, a: np.linalg.det(a),
    lambda p, a, y, g: [_jacobi(g * y, a, y != 0)], _one_per_matrix,
    doc="The determinant of each square matrix."))
register(_linalg(
    "slogdet", lambda p, a: np.linalg.slogdet(a),
    lambda p, a, sign, logdet, gsign, glog: [_jacobi(glog, a, logdet != -np.inf)],
    lambda p, in_shapes: _one_per_matrix(p, in_shapes) * 2,
    outputs=("sign", "logdet"), reads=GradReads(("A",), ("logdet",)),
    doc="The sign and the natural logarithm of the absolute value of the determinant of "
        "each square matrix."))


def _diagonal(a: Array, offset: int = 0) -> Array:
    return np.diagonal(a, offset, -2, -1)


def _sumlogdiag_backward(p: Params, a: Array, y: Array, g: Array) -> list:
    grad = np.zeros_like(a)
    n = a.shape[-1]
    grad[..., range(n), range(n)] = _per_matrix(g, a)[..., 0] / _diagonal(a)
    return [grad]


register(_linalg(
    "sumlogdiag", lambda p, a: np.log(_diagonal(a)).sum(axis=-1), _sumlogdiag_backward,
    _one_per_matrix, reads=GradReads(("A",)),
    doc="The sum of the natural logarithms of the diagonal of each square matrix."))


# -- extractdiag and makediag ------------------------------------------------------------

_OFFSET = (Param("offset", "int", 0, "Offset of the diagonal versus the main diagonal. 0 "
                 "corresponds to the main diagonal, a negative/positive value to diagonals "
                 "below/above the main diagonal."),)


def _inner_size(what: str, p: Params, shape: Dims) -> int:
    """The length of the diagonal at `offset` of the square matrices of `shape` (0 while
    their size is unknown)."""
    n = _square(what, shape)
    if n and n <= abs(p.offset):
        raise ShapeError(f"{what}: offset={p.offset} is outside matrices of size {n}")
    return n - abs(p.offset) if n else 0


def _extract_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    return [in_shapes[0][:-2] + (_inner_size("linalg extractdiag", p, in_shapes[0]),)]


def _make_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    a = in_shapes[0]
    if not a:
        raise ShapeError("linalg makediag: input must have at least one axis")
    n = a[-1] + abs(p.offset) if a[-1] else 0
    return [a[:-1] + (n, n)]


def _make_diag(p: Params, a: Array) -> Array:
    n = a.shape[-1] + abs(p.offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    rows = np.arange(a.shape[-1]) + max(-p.offset, 0)
    out[..., rows, rows + p.offset] = a
    return out


register(_linalg(
    "extractdiag", lambda p, a: _diagonal(a, p.offset),
    lambda p, a, y, g: [_make_diag(p, g)], _extract_rule, params=_OFFSET, reads=GradReads(),
    doc="The diagonal (at `offset`) of each square matrix."))
register(_linalg(
    "makediag", _make_diag, lambda p, a, y, g: [_diagonal(g, p.offset)], _make_rule,
    params=_OFFSET, reads=GradReads(),
    doc="Square matrices with the input's last axis as their diagonal (at `offset`)."))


# -- extracttrian and maketrian ----------------------------------------------------------

_TRIAN = _OFFSET + (Param("lower", "bool", True, "Refer to the lower triangular matrix if "
                          "lower=true, refer to the upper otherwise. Only relevant when "
                          "offset=0"),)


def _trian_index(p: Params, n: int) -> tuple[Array, Array]:
    """Rows and columns of the triangle `offset` and `lower` name, in MXNet's order: a
    lower triangle row by row, an upper one column by column (the lower one of A^T)."""
    if p.offset < 0 or (p.offset == 0 and p.lower):
        return np.tril_indices(n, p.offset)
    cols, rows = np.tril_indices(n, -p.offset)
    return rows, cols


def _extract_trian_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    k = _inner_size("linalg extracttrian", p, in_shapes[0])
    return [in_shapes[0][:-2] + (k * (k + 1) // 2,)]


def _make_trian_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    a = in_shapes[0]
    if not a:
        raise ShapeError("linalg maketrian: input must have at least one axis")
    k = (math.isqrt(8 * a[-1] + 1) - 1) // 2
    if k * (k + 1) // 2 != a[-1]:
        raise ShapeError(f"linalg maketrian: input {a}: {a[-1]} is not the size of a "
                         "triangle (k * (k + 1) / 2)")
    n = k + abs(p.offset) if a[-1] else 0
    return [a[:-1] + (n, n)]


def _extract_trian(p: Params, a: Array) -> Array:
    return a[(..., *_trian_index(p, a.shape[-1]))]


def _make_trian(p: Params, a: Array) -> Array:
    n = _make_trian_rule(p, [a.shape])[0][-1]
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    out[(..., *_trian_index(p, n))] = a
    return out


register(_linalg(
    "extracttrian", _extract_trian, lambda p, a, y, g: [_make_trian(p, g)],
    _extract_trian_rule, params=_TRIAN, reads=GradReads(),
    doc="The triangle of each square matrix as a vector: below (offset < 0, or 0 with "
        "lower) or above the diagonal at `offset`."))
register(_linalg(
    "maketrian", _make_trian, lambda p, a, y, g: [_extract_trian(p, g)], _make_trian_rule,
    params=_TRIAN, reads=GradReads(),
    doc="Square matrices whose triangle (as extracttrian takes it) is the input's last "
        "axis, zeros elsewhere."))


# -- khatri_rao --------------------------------------------------------------------------

def _khatri_rao_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    cols = {s[1] for s in in_shapes if len(s) == 2 and s[1]}
    if any(len(s) != 2 for s in in_shapes) or len(cols) > 1:
        raise ShapeError(f"khatri_rao: inputs {in_shapes} must be matrices with one number "
                         "of columns")
    return [(math.prod(s[0] for s in in_shapes), cols.pop() if cols else 0)]


def _khatri_rao_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    _khatri_rao_rule(p, [a.shape for a in inputs])
    return reduce(lambda x, y: (x[:, None, :] * y[None, :, :]).reshape(-1, x.shape[1]),
                  inputs)


register(OpDef(
    "khatri_rao", _khatri_rao_forward, variadic="num_args", bfloat16="refuse",
    params=(Param("num_args", "int", doc="Number of input matrices."),),
    infer_shape=from_input(_khatri_rao_rule),
    doc="The column-wise Kronecker product of matrices with one number of columns: "
        "(m1, n), (m2, n) ... -> (m1 * m2 * ..., n)."))
