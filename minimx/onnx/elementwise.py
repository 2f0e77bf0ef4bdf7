"""Element-wise operators in ONNX: math, arithmetic with tensors and scalars,
activations, comparisons (1 or 0 in the inputs' dtype, as MXNet gives them)."""
from __future__ import annotations

import numpy as np

from .emitter import Emitter, Site
from .registry import TRANSLATIONS, Translation, same_op, translates

_UNARY = {
    "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
    "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg", "floor": "Floor", "ceil": "Ceil",
    "erf": "Erf", "reciprocal": "Reciprocal", "sign": "Sign", "sin": "Sin", "cos": "Cos",
    "tan": "Tan", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan", "sinh": "Sinh",
    "cosh": "Cosh", "arcsinh": "Asinh", "arccosh": "Acosh", "arctanh": "Atanh",
    # no-ops at inference
    "_copy": "Identity", "BlockGrad": "Identity", "Dropout": "Identity",
    "Flatten": "Flatten",  # both keep axis 0 and join the rest
}
_BINARY = {
    "elemwise_add": "Add", "broadcast_add": "Add", "elemwise_sub": "Sub", "broadcast_sub": "Sub",
    "elemwise_mul": "Mul", "broadcast_mul": "Mul", "elemwise_div": "Div", "broadcast_div": "Div",
    "_maximum": "Max", "broadcast_maximum": "Max", "_minimum": "Min", "broadcast_minimum": "Min",
    "_power": "Pow", "broadcast_power": "Pow", "add_n": "Sum",
}
# _op_scalar: (ONNX operator, whether the scalar is the left operand)
_SCALAR = {
    "_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
    "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
    "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
    "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
    "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False),
}
_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
                "softsign": "Softsign"}

for _op, _onnx_op in {**_UNARY, **_BINARY}.items():
    TRANSLATIONS[_op] = same_op(_onnx_op)


def _scalar_op(op_type: str, scalar_first: bool) -> Translation:
    def translate(e: Emitter, s: Site) -> None:
        scalar = e.const(f"{s.name}_scalar", s.p.scalar, s.dtype)
        operands = [scalar, s.inputs[0]] if scalar_first else [s.inputs[0], scalar]
        e.add(op_type, operands, s.outputs[0])
    return translate


for _op, (_onnx_op, _first) in _SCALAR.items():
    TRANSLATIONS[_op] = _scalar_op(_onnx_op, _first)


@translates("square")
def _square(e: Emitter, s: Site) -> None:
    e.add("Mul", [s.inputs[0], s.inputs[0]], s.outputs[0])


@translates("rsqrt")
def _rsqrt(e: Emitter, s: Site) -> None:
    e.add("Reciprocal", [e.add("Sqrt", s.inputs)], s.outputs[0])


@translates("log2", "log10")
def _log_base(e: Emitter, s: Site) -> None:
    base = e.const(f"{s.name}_ln_base", np.log(2.0 if s.node.op == "log2" else 10.0), s.dtype)
    e.add("Div", [e.add("Log", s.inputs), base], s.outputs[0])


@translates("logical_not")
def _logical_not(e: Emitter, s: Site) -> None:
    zero = e.const(f"{s.name}_zero", 0, s.dtype)
    e.add("Cast", [e.add("Equal", [s.inputs[0], zero])], s.outputs[0], to=s.dtype)


@translates("Activation")
def _activation(e: Emitter, s: Site) -> None:
    e.add(_ACTIVATIONS[s.p.act_type], s.inputs, s.outputs[0])


@translates("LeakyReLU")
def _leaky_relu(e: Emitter, s: Site) -> None:
    x, out, kind = s.inputs[0], s.outputs[0], s.p.act_type
    if kind == "leaky":
        e.add("LeakyRelu", [x], out, alpha=s.p.slope)
    elif kind == "rrelu":  # at inference the slope is the middle of its range
        e.add("LeakyRelu", [x], out, alpha=(s.p.lower_bound + s.p.upper_bound) / 2)
    elif kind == "elu":
        e.add("Elu", [x], out, alpha=s.p.slope)
    elif kind == "selu":  # ONNX's default alpha and gamma are SELU's constants
        e.add("Selu", [x], out)
    elif kind == "gelu":  # MXNet's gelu is the exact one: x/2 (1 + erf(x / sqrt 2))
        scaled = e.add("Div", [x, e.const(f"{s.name}_sqrt2", np.sqrt(2.0), s.dtype)])
        one_plus = e.add("Add", [e.add("Erf", [scaled]), e.const(f"{s.name}_one", 1, s.dtype)])
        half = e.add("Mul", [x, e.const(f"{s.name}_half", 0.5, s.dtype)])
        e.add("Mul", [half, one_plus], out)
    else:  # prelu: one slope per channel (axis 1), which ONNX broadcasts from the right
        channels = s.in_shapes[1][0]
        slope = e.add("Reshape", [s.inputs[1],
                                  e.ints(f"{s.name}_slope_shape", [channels] + [1] * (s.ndim - 2))])
        e.add("PRelu", [x, slope], out)


@translates("clip")
def _clip(e: Emitter, s: Site) -> None:
    low = e.const(f"{s.name}_min", s.p.a_min, s.dtype)
    high = e.const(f"{s.name}_max", s.p.a_max, s.dtype)
    e.add("Clip", [s.inputs[0], low, high], s.outputs[0])


_COMPARISONS = {"greater": "Greater", "greater_equal": "GreaterOrEqual", "lesser": "Less",
                "lesser_equal": "LessOrEqual", "equal": "Equal", "not_equal": "Equal"}


def _comparison(op_type: str, negate: bool, scalar: bool) -> Translation:
    """MXNet's comparisons give 1 or 0 in the inputs' dtype; ONNX's give booleans."""
    def translate(e: Emitter, s: Site) -> None:
        rhs = e.const(f"{s.name}_scalar", s.p.scalar, s.dtype) if scalar else s.inputs[1]
        result = e.add(op_type, [s.inputs[0], rhs])
        if negate:
            result = e.add("Not", [result])
        e.add("Cast", [result], s.outputs[0], to=s.dtype)
    return translate


for _name, _onnx_op in _COMPARISONS.items():
    for _op, _scalar in ((f"_{_name}", False), (f"broadcast_{_name}", False),
                         (f"_{_name}_scalar", True)):
        TRANSLATIONS[_op] = _comparison(_onnx_op, _name == "not_equal", _scalar)


@translates("where")
def _where(e: Emitter, s: Site) -> None:
    condition = e.add("Cast", [s.inputs[0]], to=np.dtype(bool))
    extra = len(s.in_shapes[1]) - len(s.in_shapes[0])
    if extra:   # a 1-D condition picks whole rows: its axes trail as length 1
        axes = e.ints(f"{s.name}_row_axes", list(range(1, 1 + extra)))
        condition = e.add("Unsqueeze", [condition, axes])
    e.add("Where", [condition, s.inputs[1], s.inputs[2]], s.outputs[0])


@translates("zeros_like", "ones_like")
def _fill_like(e: Emitter, s: Site) -> None:
    value = e.const(f"{s.name}_value", 0 if s.node.op == "zeros_like" else 1, s.dtype)
    e.add("Expand", [value, e.add("Shape", s.inputs)], s.outputs[0])


@translates("hard_sigmoid")
def _hard_sigmoid(e: Emitter, s: Site) -> None:
    e.add("HardSigmoid", s.inputs, s.outputs[0], alpha=s.p.alpha, beta=s.p.beta)


_LOGICAL = {"broadcast_logical_and": "And", "broadcast_logical_or": "Or",
            "broadcast_logical_xor": "Xor"}


@translates(*_LOGICAL)
def _logical(e: Emitter, s: Site) -> None:
    """On the operands' truth (non-zero), 1 or 0 in their dtype as MXNet gives it."""
    lhs, rhs = (e.add("Cast", [x], to=np.dtype(bool)) for x in s.inputs)
    e.add("Cast", [e.add(_LOGICAL[str(s.node.op)], [lhs, rhs])], s.outputs[0], to=s.dtype)


@translates("broadcast_mod")
def _mod(e: Emitter, s: Site) -> None:
    """MXNet's modulo takes the divisor's sign (Python's %) and gives 0 for a zero
    divisor. ONNX's Mod takes the divisor's sign only for integers, and fails on zero:
    C's fmod, moved by one divisor where the signs differ, of a divisor made non-zero."""
    a, b = s.inputs
    zero, one = e.const(f"{s.name}_zero", 0, s.dtype), e.const(f"{s.name}_one", 1, s.dtype)
    by_zero = e.add("Equal", [b, zero])
    b = e.add("Where", [by_zero, one, b])
    rest = e.add("Mod", [a, b], fmod=1)
    signs_differ = e.add("Xor", [e.add("Less", [rest, zero]), e.add("Less", [b, zero])])
    moved = e.add("And", [signs_differ, e.add("Not", [e.add("Equal", [rest, zero])])])
    rest = e.add("Where", [moved, e.add("Add", [rest, b]), rest])
    e.add("Where", [by_zero, zero, rest], s.outputs[0])
