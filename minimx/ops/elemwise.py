"""Elementwise operators: unary math (the special functions numpy lacks are in
`special`), binary arithmetic, maximum / minimum / power, comparisons and logical
operators (same shape, broadcasting, and with a scalar), `add_n`, `zeros_like` /
`ones_like`, `BlockGrad`, `clip`, `smooth_l1`, `hard_sigmoid` and `Cast`.

Each family is a table feeding one small factory: a row names the operator, its
numpy rule and the derivative its gradient uses. Names, aliases and parameters
are MXNet 1.9's. Results keep the dtype of the (first) input, as in MXNet where
kernels compute in the input's type; the exceptions are `Cast` and, as in MXNet 1.9,
a scalar operator given ``is_int=False`` on an integer input (float64).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from functools import reduce
from typing import Any, NamedTuple

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import merge, merge_dtype, same_dtype
from .params import Param, Params
from .registry import GradReads, OpContext, OpDef, get_op, register
from .special import digamma, erf, erfinv, gamma, gammaln

Array = np.ndarray
Shape = tuple[int, ...] | None


def _like(value: Any, ref: Array) -> Array:
    """`value` as an array of `ref`'s dtype (numpy promotes; MXNet computes in the input
    type), a float converted to an integer type as C converts it."""
    value = np.asarray(value)
    if ref.dtype.kind in "iu" and value.dtype.kind == "f":
        return c_truncate(value, ref.dtype)
    return value.astype(ref.dtype, copy=False)


def from_double(fn: Callable[[Array], Array]) -> Callable[[Array], Array]:
    """`fn` computed in float64 for float32 data, then rounded to float32: nearly
    always the value of glibc's float function (expf, sinf, tanhf...), which MXNet's
    CPU kernels call, where numpy's vectorised float32 functions differ from it in
    5-40% of values (200,000 values in [-10, 10] against MXNet 1.9.1: exp 39% of
    them, 0.06% this way; tanh 40% and 6%). Other dtypes as `fn` computes them."""
    def wide(x: Array) -> Array:
        if x.dtype != np.float32:
            return fn(x)
        with np.errstate(over="ignore"):   # beyond float32's range: inf, as expf
            return fn(x.astype(np.float64)).astype(np.float32)
    return wide


_exp = from_double(np.exp)   # one wrapper for the table's exp and sigmoid's


def sigmoid(x: Array) -> Array:
    """MXNet's 1 / (1 + exp(-x)): for float32 data in float32 from a correctly
    rounded exp, as MXNet's kernel computes it with glibc's expf (its values but for
    0.03%); for other types through logaddexp, clear of overflow."""
    if x.dtype != np.float32:
        return np.exp(-np.logaddexp(0, -x))
    return np.float32(1) / (np.float32(1) + _exp(-x))


def mx_sign(x: Array) -> Array:
    """MXNet's sign: -1, 0 or 1, and 0 for NaN (numpy's sign gives NaN)."""
    return np.where(x > 0, 1, np.where(x < 0, -1, 0)).astype(x.dtype, copy=False)


# -- unary ------------------------------------------------------------------------

class Unary(NamedTuple):
    """A unary function and its derivative, given the input x and the output y;
    `reads` names what the derivative reads: ``x``, ``y`` or neither (``""``)."""

    fn: Callable[[Array], Array]
    grad: Callable[[Array, Array], Any]
    reads: str


def no_gradient(x: Array, y: Array) -> int:
    """The derivative of a row nothing flows back through (rounding, sign, BlockGrad)."""
    return 0


UNARY: dict[str, Unary] = {
    # MXNet's `a > 0 ? a : 0`: NaN gives 0, as oneDNN's relu does.
    "relu": Unary(lambda x: np.where(x > 0, x, 0), lambda x, y: y > 0, "y"),
    "sigmoid": Unary(sigmoid, lambda x, y: y * (1 - y), "y"),
    "tanh": Unary(from_double(np.tanh), lambda x, y: 1 - y * y, "y"),
    "exp": Unary(_exp, lambda x, y: y, "y"),
    "log": Unary(from_double(np.log), lambda x, y: 1 / x, "x"),
    "sqrt": Unary(np.sqrt, lambda x, y: 0.5 / y, "y"),
    "square": Unary(np.square, lambda x, y: 2 * x, "x"),
    "abs": Unary(np.abs, lambda x, y: mx_sign(x), "x"),
    "negative": Unary(np.negative, lambda x, y: -1, ""),
    "_copy": Unary(np.copy, lambda x, y: 1, ""),
    "sin": Unary(from_double(np.sin), lambda x, y: np.cos(x), "x"),
    "cos": Unary(from_double(np.cos), lambda x, y: -np.sin(x), "x"),
    "tan": Unary(from_double(np.tan), lambda x, y: 1 + y * y, "y"),
    "arcsin": Unary(from_double(np.arcsin), lambda x, y: 1 / np.sqrt(1 - x * x), "x"),
    "arccos": Unary(from_double(np.arccos), lambda x, y: -1 / np.sqrt(1 - x * x), "x"),
    "arctan": Unary(from_double(np.arctan), lambda x, y: 1 / (1 + x * x), "x"),
    "sinh": Unary(np.sinh, lambda x, y: np.cosh(x), "x"),
    "cosh": Unary(from_double(np.cosh), lambda x, y: np.sinh(x), "x"),
    "arcsinh": Unary(np.arcsinh, lambda x, y: 1 / np.sqrt(x * x + 1), "x"),
    "arccosh": Unary(np.arccosh, lambda x, y: 1 / np.sqrt(x * x - 1), "x"),
    "arctanh": Unary(np.arctanh, lambda x, y: 1 / (1 - x * x), "x"),
    "degrees": Unary(np.degrees, lambda x, y: 180 / math.pi, ""),
    "radians": Unary(np.radians, lambda x, y: math.pi / 180, ""),
    "rsqrt": Unary(lambda x: 1 / np.sqrt(x), lambda x, y: -0.5 / (x * np.sqrt(x)), "x"),
    "cbrt": Unary(from_double(np.cbrt), lambda x, y: 1 / (3 * y * y), "y"),
    "rcbrt": Unary(lambda x: 1 / np.cbrt(x), lambda x, y: -1 / (3 * x * np.cbrt(x)), "x"),
    "reciprocal": Unary(np.reciprocal, lambda x, y: -1 / (x * x), "x"),
    "erf": Unary(erf, lambda x, y: 2 / math.sqrt(math.pi) * np.exp(-x * x), "x"),
    "erfinv": Unary(erfinv, lambda x, y: 0.5 * math.sqrt(math.pi) * np.exp(y * y), "y"),
    "log1p": Unary(np.log1p, lambda x, y: 1 / (1 + x), "x"),
    "expm1": Unary(from_double(np.expm1), lambda x, y: y + 1, "y"),
    "log2": Unary(from_double(np.log2), lambda x, y: 1 / (x * math.log(2)), "x"),
    "log10": Unary(from_double(np.log10), lambda x, y: 1 / (x * math.log(10)), "x"),
    "gamma": Unary(gamma, lambda x, y: gamma(x) * digamma(x), "x"),
    "gammaln": Unary(gammaln, lambda x, y: digamma(x), "x"),
    # Steps: their gradient is zero, as MXNet's.
    "sign": Unary(mx_sign, no_gradient, ""),
    "floor": Unary(np.floor, no_gradient, ""),
    "ceil": Unary(np.ceil, no_gradient, ""),
    "trunc": Unary(np.trunc, no_gradient, ""),
    # MXNet's fix rounds toward zero, as trunc does (numpy deprecates np.fix for it).
    "fix": Unary(np.trunc, no_gradient, ""),
    # C's round (halves away from zero), not numpy's (halves to even).
    "round": Unary(lambda x: np.where(np.abs(x - np.trunc(x)) >= 0.5, np.trunc(x) + np.sign(x),
                                      np.trunc(x)), no_gradient, ""),
    # MXNet's rint takes the floor on a tie: rint(2.5) = 2, rint(-2.5) = -3.
    "rint": Unary(lambda x: np.where(x - np.floor(x) <= np.ceil(x) - x, np.floor(x), np.ceil(x)),
                  no_gradient, ""),
    "logical_not": Unary(lambda x: x == 0, no_gradient, ""),
    # The identity that stops gradients.
    "BlockGrad": Unary(np.copy, no_gradient, ""),
}


def unary_reads(u: Unary) -> GradReads:
    """What the gradient of a `Unary` row reads, by the operator's input and output names."""
    return GradReads(inputs=("data",) if u.reads == "x" else (),
                     outputs=("output",) if u.reads == "y" else ())


_UNARY_ALIASES = {"_copy": ("identity",), "BlockGrad": ("stop_gradient",)}


def elementwise_op(name: str, fn: Callable[[Params, Array], Any],
                 grad: Callable[[Params, Array, Array, Array], Any], reads: GradReads, *,
                 params: tuple[Param, ...] = (), aliases: tuple[str, ...] = (),
                 doc: str = "", infer_type: Callable | None = None,
                 out_ref: Callable[[Params, Array], Array] | None = None,
                 zero_gradient: bool = False) -> OpDef:
    """A one-input operator whose output has the input's shape and dtype.

    ``fn(p, x)`` is the forward rule, ``grad(p, g, x, y)`` the input gradient,
    reading what `reads` says of x (``data``) and y (``output``). With `out_ref`, the
    output takes the dtype of ``out_ref(p, x)`` (and `infer_type` says so).
    """
    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
        x = inputs[0]
        return _like(fn(p, x), x if out_ref is None else out_ref(p, x))

    def backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
                 out_grads: list[Array]) -> list:
        return [_like(grad(p, out_grads[0], inputs[0], outputs[0]), inputs[0])]

    return OpDef(name, forward, params=params, backward=backward, backward_reads=reads,
                 inplace=((0, 0),), aliases=aliases, doc=doc,
                 infer_type=infer_type or same_dtype, named_inputs=False,
                 zero_gradient=zero_gradient)


# Rows MXNet computes on integers in their own type; the others it computes in floating
# point and truncates. numpy would pick float16 for int8 and uint8, whose rounding changes
# the truncated result (tanh(-8) gave -1, MXNet's 0): they go through float64, as int32
# and int64 do in numpy.
_INTEGER_NATIVE = frozenset(("relu", "square", "abs", "negative", "_copy", "sign", "floor",
                             "ceil", "trunc", "fix", "round", "rint", "logical_not",
                             "BlockGrad"))


def _integers_as_float(x: Array) -> Array:
    return x.astype(np.float64) if x.dtype.kind in "iub" else x


def unary_op(name: str, u: Unary) -> OpDef:
    """The operator of a unary table row (also for rows kept beside their kin elsewhere)."""
    fn = u.fn if name in _INTEGER_NATIVE else lambda x: u.fn(_integers_as_float(x))
    return elementwise_op(name, lambda p, x: fn(x), lambda p, g, x, y: g * u.grad(x, y),
                        unary_reads(u), aliases=_UNARY_ALIASES.get(name, ()),
                        doc=f"Elementwise {name.strip('_')}.", zero_gradient=u.grad is no_gradient)


def _fill_op(name: str, fill: Callable[[Array], Array]) -> OpDef:
    return elementwise_op(name, lambda p, x: fill(x),
                        lambda p, g, x, y: np.zeros(x.shape, x.dtype), GradReads(),
                        doc=f"An array of the input's shape and dtype filled with "
                            f"{name.removesuffix('s_like')}s.", zero_gradient=True)


for _name, _u in UNARY.items():
    register(unary_op(_name, _u))
register(_fill_op("zeros_like", np.zeros_like))
register(_fill_op("ones_like", np.ones_like))


def _dense_storage(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    """cast_storage's type rule, which refuses the storage types minimx lacks."""
    if p.stype in ("csr", "row_sparse"):
        raise OperatorError(f"cast_storage: stype={p.stype!r}: minimx has no sparse storage, "
                            "only dense arrays ('default')")
    if p.stype != "default":
        raise OperatorError(f"cast_storage: Invalid Input: {p.stype!r}, valid values are: "
                            "{'csr', 'default', 'row_sparse'}")
    return same_dtype(p, in_types, out_types)


register(elementwise_op(
    "cast_storage", lambda p, x: x.copy(), lambda p, g, x, y: g, GradReads(),
    params=(Param("stype", "str", doc="Output storage type: 'default', 'csr' or 'row_sparse'."),),
    infer_type=_dense_storage,
    doc="Casts an array to a storage type. minimx's arrays are all dense: 'default' gives a "
        "copy, 'csr' and 'row_sparse' are refused."))

# NaN gives a_min, as relu's NaN gives 0 (relu is clip to [0, inf)) and as
# oneDNN's clip does, so the numpy and DNNL paths agree; MXNet's CPU kernel
# (without MKLDNN) kept NaN, its MKLDNN path gave a_min. Otherwise MXNet's order:
# a_max first, so with a_min > a_max values above a_max give a_max (MXNet 1.9.1's).
register(elementwise_op(
    "clip", lambda p, x: np.where(x > p.a_max, p.a_max, np.where(x >= p.a_min, x, p.a_min)),
    lambda p, g, x, y: g * ((x >= p.a_min) & (x <= p.a_max)), GradReads(inputs=("data",)),
    params=(Param("a_min", "float", doc="Minimum value"),
            Param("a_max", "float", doc="Maximum value")),
    doc="Clips (limits) the values in an array to [a_min, a_max]."))

def _smooth_l1(p: Params, x: Array) -> Array:
    sigma2 = p.scalar * p.scalar
    return np.where(np.abs(x) < 1.0 / sigma2, 0.5 * sigma2 * x * x, np.abs(x) - 0.5 / sigma2)


register(elementwise_op(
    "smooth_l1", _smooth_l1,
    lambda p, g, x, y: g * np.where(np.abs(x) < 1.0 / (p.scalar * p.scalar),
                                    p.scalar * p.scalar * x, np.sign(x)),
    GradReads(inputs=("data",)),
    params=(Param("scalar", "float", 1.0, "sigma: the loss is quadratic where |x| < "
                  "1 / sigma^2, linear beyond."),),
    doc="Elementwise smooth L1 loss (Fast R-CNN's), as MXNet's."))

register(elementwise_op(
    "hard_sigmoid", lambda p, x: np.clip(p.alpha * x + p.beta, 0.0, 1.0),
    lambda p, g, x, y: g * p.alpha * ((y > 0) & (y < 1)), GradReads(outputs=("output",)),
    params=(Param("alpha", "float", 0.2, "Slope of the hard sigmoid."),
            Param("beta", "float", 0.5, "Bias of the hard sigmoid.")),
    doc="Elementwise max(0, min(1, alpha * x + beta))."))


# -- binary ----------------------------------------------------------------------

class Binary(NamedTuple):
    """A binary function and the gradients ``(g, a, b) -> (da, db)`` of its operands,
    which read the operands' values or (add, sub) only their shapes."""

    fn: Callable[[Array, Array], Array]
    grads: Callable[[Array, Array, Array], tuple[Any, Any]]
    reads_operands: bool


def _zero_grads(g: Array, a: Array, b: Array) -> tuple[Any, Any]:
    return np.zeros(g.shape), np.zeros(g.shape)


def power(a: Array, b: Array) -> Array:
    """MXNet's power: integers go through float32's powf (mshadow's math::pow), so a
    negative exponent gives a truncated fraction (2 ** -1 is 0, 0 ** -1 the type's
    minimum) where numpy raises, and large results keep float32's rounding."""
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            return np.power(a.astype(np.float32), b.astype(np.float32))
    return np.power(a, b)


def divide(a: Array, b: Array) -> Array:
    """Division; integers truncate toward zero (C's /, as MXNet's). An integer divisor
    of 0 is refused: MXNet 1.9.1 stops the process there (SIGFPE)."""
    if np.result_type(a, b).kind in "iu" and np.any(np.asarray(b) == 0):
        raise OperatorError("integer division by zero (a scalar divisor takes the data's "
                            "integer type, as in MXNet, whose process stops with SIGFPE "
                            "here; is_int=False divides in float64)")
    return np.divide(a, b)


def c_truncate(x: Array, dtype: np.dtype) -> Array:
    """Floats converted to the integer `dtype` as C does on x86 (cvttss2si, in MXNet's
    kernels): toward zero; NaN, infinities and values past the 32-bit range (64-bit
    for 8-byte types) give that range's minimum, and narrower types its low bits."""
    wide = np.int64 if dtype.itemsize == 8 else np.int32
    low = float(np.iinfo(wide).min)
    t = np.trunc(np.asarray(x, np.float64))
    past = ~(np.abs(t) < -low) & (t != low)   # NaN compares false, so it is past too
    return np.where(past, low, t).astype(wide).astype(dtype)


def reverse_divide(s: Array, x: Array) -> Array:
    """MXNet's rdiv, a scalar over an array: integers divide in float32 (mshadow's
    math functions take floats) and convert back as C does, so that 5 / 0 gives the
    conversion of inf, not the crash of an integer division by 0."""
    if np.result_type(s, x).kind not in "iu":
        return np.divide(s, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return c_truncate(np.float32(s) / x.astype(np.float32), np.result_type(s, x))


def mod(a: Array, b: Array) -> Array:
    """MXNet's modulo: the sign of the divisor (Python's %, not C's fmod) for floats and
    integers alike, and 0 where the divisor is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 0, np.zeros((), np.result_type(a, b)), np.mod(a, b))


def _mod_grads(g: Array, a: Array, b: Array) -> tuple[Any, Any]:
    # MXNet's mod_rgrad, -floor(a / b), unguarded at b == 0 as there.
    with np.errstate(divide="ignore", invalid="ignore"):
        return g.copy(), -g * np.floor(a / b)


BINARY: dict[str, Binary] = {
    "add": Binary(np.add, lambda g, a, b: (g.copy(), g.copy()), False),
    "sub": Binary(np.subtract, lambda g, a, b: (g.copy(), -g), False),
    "mul": Binary(np.multiply, lambda g, a, b: (g * b, g * a), True),
    "div": Binary(divide, lambda g, a, b: (g / b, -g * a / (b * b)), True),
    # On a tie the left operand takes the gradient, as in MXNet.
    "maximum": Binary(np.maximum, lambda g, a, b: (g * (a >= b), g * (a < b)), True),
    "minimum": Binary(np.minimum, lambda g, a, b: (g * (a <= b), g * (a > b)), True),
    "power": Binary(power, lambda g, a, b: (g * b * a ** (b - 1), g * a ** b * np.log(a)),
                    True),
    "mod": Binary(mod, _mod_grads, True),
    # Comparisons and logical operators give 1 or 0 in the input's type; no gradient flows.
    "equal": Binary(np.equal, _zero_grads, False),
    "not_equal": Binary(np.not_equal, _zero_grads, False),
    "greater": Binary(np.greater, _zero_grads, False),
    "greater_equal": Binary(np.greater_equal, _zero_grads, False),
    "lesser": Binary(np.less, _zero_grads, False),
    "lesser_equal": Binary(np.less_equal, _zero_grads, False),
    "logical_and": Binary(np.logical_and, _zero_grads, False),
    "logical_or": Binary(np.logical_or, _zero_grads, False),
    "logical_xor": Binary(np.logical_xor, _zero_grads, False),
}
# MXNet's names for the same-shape form of each row (the first is the operator's name;
# the arithmetic rows are elemwise_<key>, the others _<key>) and the broadcasting aliases.
_ELEMWISE_NAMES = {"add": ("elemwise_add", "_add", "_plus", "_Plus"),
                   "sub": ("elemwise_sub", "_sub", "_minus", "_Minus"),
                   "mul": ("elemwise_mul", "_mul", "_Mul"),
                   "div": ("elemwise_div", "_div", "_Div")}
_BROADCAST_ALIASES = {"add": ("broadcast_plus",), "sub": ("broadcast_minus",)}


def _elemwise_names(key: str) -> tuple[str, ...]:
    """MXNet's name and legacy alias: _greater_equal and _Greater_Equal."""
    return _ELEMWISE_NAMES.get(key, (f"_{key}", f"_{key.title()}"))


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The numpy broadcast of two (partially known) shapes; 0 where it cannot be told."""
    nd = max(len(a), len(b))
    a1, b1 = (1,) * (nd - len(a)) + tuple(a), (1,) * (nd - len(b)) + tuple(b)
    out = []
    for x, y in zip(a1, b1, strict=True):
        if x and y and x != y and 1 not in (x, y):
            raise ShapeError(f"shapes {tuple(a)} and {tuple(b)} cannot be broadcast together")
        # An unknown dimension against 1 stays unknown; against n > 1 it can only give n.
        out.append(max(x, y) if (x and y) or max(x, y) > 1 else 0)
    return tuple(out)


def unbroadcast(g: Array, shape: tuple[int, ...]) -> Array:
    """Sum `g` down to `shape`, undoing a numpy broadcast from `shape` to ``g.shape``."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=axes).reshape(shape) if axes else g


def _infer_broadcast(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    a, b = in_shapes
    if a is None or b is None:
        return in_shapes, out_shapes
    return in_shapes, [merge(out_shapes[0], broadcast_shape(a, b))]


def binary_ops(key: str, row: Binary) -> tuple[OpDef, OpDef]:
    """The same-shape and broadcasting operators of a binary table row."""
    def same_shape_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
        a, b = inputs
        if a.shape != b.shape:
            raise ShapeError(f"{names[0]} needs equal shapes, got {a.shape} and {b.shape}")
        return _like(row.fn(a, b), a)

    def broadcast_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
        return _like(row.fn(*inputs), inputs[0])

    def backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
                 out_grads: list[Array]) -> list:
        a, b = inputs
        da, db = row.grads(out_grads[0], a, b)
        return [_like(unbroadcast(np.asarray(da), a.shape), a),
                _like(unbroadcast(np.asarray(db), b.shape), b)]

    names = _elemwise_names(key)
    doc = f"Elementwise {key} of two arrays"
    reads = GradReads(inputs=("lhs", "rhs") if row.reads_operands else ())
    zero = row.grads is _zero_grads
    return (OpDef(names[0], same_shape_forward, inputs=("lhs", "rhs"),
                  backward=backward, backward_reads=reads, inplace=((0, 0),),
                  aliases=names[1:], doc=doc + " of the same shape.", zero_gradient=zero),
            OpDef(f"broadcast_{key}", broadcast_forward, inputs=("lhs", "rhs"),
                  infer_shape=_infer_broadcast, backward=backward, backward_reads=reads,
                  aliases=_BROADCAST_ALIASES.get(key, ()), doc=doc + " with broadcasting.",
                  zero_gradient=zero))


for _key, _row in BINARY.items():
    for _op in binary_ops(_key, _row):
        register(_op)
# MXNet's gradient aggregation: elemwise_add's kernel under an operator of its own (not
# an alias: AMP's lists and the DNNL table name it apart), without a gradient of its own.
register(dataclasses.replace(get_op("elemwise_add"), name="_grad_add", aliases=(),
                             backward=None, doc="Elementwise sum of two gradients of the same "
                                                "shape (MXNet's gradient aggregation)."))


# -- scalar ----------------------------------------------------------------------

# A scalar over an array, as MXNet computes it (its gradients are division's).
RDIV = BINARY["div"]._replace(fn=reverse_divide)

# name -> (binary row, whether the scalar is the left operand, MXNet's legacy alias)
SCALAR_OPS: dict[str, tuple[Binary, bool, str]] = {
    "_plus_scalar": (BINARY["add"], False, "_PlusScalar"),
    "_minus_scalar": (BINARY["sub"], False, "_MinusScalar"),
    "_rminus_scalar": (BINARY["sub"], True, "_RMinusScalar"),
    "_mul_scalar": (BINARY["mul"], False, "_MulScalar"),
    "_div_scalar": (BINARY["div"], False, "_DivScalar"),
    "_rdiv_scalar": (RDIV, True, "_RDivScalar"),
    "_rpower_scalar": (BINARY["power"], True, "_RPowerScalar"),
    "_rmod_scalar": (BINARY["mod"], True, "_RModScalar"),
    # the rest follow one pattern: _greater_equal_scalar, alias _GreaterEqualScalar
    **{f"_{key}_scalar": (row, False, "_" + key.title().replace("_", "") + "Scalar")
       for key, row in BINARY.items() if key not in ("add", "sub", "mul", "div")},
}
_SCALAR_PARAMS = (Param("scalar", "float", 1.0, doc="Scalar input value"),
                  Param("is_int", "bool", True, doc="Indicate whether scalar input is int type"))


def _float_scalar_on_integers(p: Params, dtype: np.dtype | None) -> bool:
    """MXNet 1.9's rule: an integer input with ``is_int=False`` computes in float64 and
    gives float64 (with ``is_int=True`` the scalar is cast to the input's type)."""
    return not p.is_int and dtype is not None and np.dtype(dtype).kind in "iu"


def scalar_op(name: str, row: Binary, reverse: bool, alias: str) -> OpDef:
    """The operator of a binary row with a scalar operand (first when `reverse`)."""
    def operands(p: Params, x: Array) -> tuple[Array, Array]:
        if _float_scalar_on_integers(p, x.dtype):
            x = x.astype(np.float64)
        s = _like(p.scalar, x)  # MXNet casts the scalar to the input's type
        return (s, x) if reverse else (x, s)

    def grad(p: Params, g: Array, x: Array, y: Array) -> Any:
        # The row gives both operands' gradients; the scalar's, unused, may take the
        # log of a negative base (x ** 2): no warning for it.
        with np.errstate(invalid="ignore", divide="ignore"):
            return row.grads(g, *operands(p, x))[1 if reverse else 0]

    def infer_type(p: Params, in_types: list, out_types: list):
        t = in_types[0]
        if _float_scalar_on_integers(p, t):
            return in_types, [merge_dtype(out_types[0], np.dtype(np.float64))]
        t = merge_dtype(t, out_types[0])
        return [t], [t]

    side = "on the left" if reverse else "on the right"
    return elementwise_op(name, lambda p, x: row.fn(*operands(p, x)), grad,
                        GradReads(inputs=("data",) if row.reads_operands else ()),
                        params=_SCALAR_PARAMS, aliases=(alias,),
                        doc=f"Elementwise {row.fn.__name__} with a scalar {side}.",
                        infer_type=infer_type,
                        out_ref=lambda p, x: operands(p, x)[1 if reverse else 0],
                        zero_gradient=row.grads is _zero_grads)


for _name, (_row, _reverse, _alias) in SCALAR_OPS.items():
    register(scalar_op(_name, _row, _reverse, _alias))


# -- add_n and Cast ----------------------------------------------------------------

register(OpDef(
    "add_n", lambda p, ctx, inputs: reduce(np.add, inputs[1:], inputs[0].copy()),
    params=(Param("num_args", "int", doc="Number of inputs to be summed."),),
    variadic="num_args", inplace=((0, 0),), aliases=("ElementWiseSum",),
    backward=lambda p, ctx, inputs, outputs, out_grads: [out_grads[0].copy() for _ in inputs],
    backward_reads=GradReads(),
    doc="Adds all input arguments element-wise."))

CAST_DTYPES = ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int32", "int64",
               "bool")


def _infer_cast(p: Params, in_types: list, out_types: list):
    return in_types, [merge_dtype(out_types[0], p.dtype)]


register(OpDef(
    "Cast", lambda p, ctx, inputs: inputs[0].astype(p.dtype),
    params=(Param("dtype", "dtype", doc="Output data type.", choices=CAST_DTYPES),),
    infer_type=_infer_cast, aliases=("cast",), bfloat16="native",
    backward=lambda p, ctx, inputs, outputs, out_grads: [out_grads[0].astype(inputs[0].dtype)],
    backward_reads=GradReads(),
    doc="Casts all elements of the input to a new type.", named_inputs=False))
