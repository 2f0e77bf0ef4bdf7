"""Operators whose forward is plain and whose gradient is the point: `make_loss`
(ones flow back, whatever the head gradient), `_contrib_gradientmultiplier`
(identity, the gradient scaled), the straight-through estimators
`_contrib_round_ste` / `_contrib_sign_ste` (round and sign, the gradient passed
through unchanged), `_identity_with_attr_like_rhs` (lhs, nothing to rhs), `_contrib_quadratic`
(a x^2 + b x + c, whose gradient is MXNet's example of one) and `_copyto` (a copy,
no gradient).

Names, parameters and gradients are MXNet 1.9.1's (elemwise_unary_op_basic.cc,
contrib/gradient_multiplier_op.cc, contrib/stes_op.cc, contrib/quadratic_op.cc).
"""
from __future__ import annotations

import numpy as np

from .elemwise import elementwise_op, mx_sign
from .infer import same_dtype, same_shape
from .params import Param, Params
from .registry import GradReads, OpContext, OpDef, register

Array = np.ndarray
_PASS = GradReads()


def _pass_through(p: Params, g: Array, x: Array, y: Array) -> Array:
    return g


def _make_loss_backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
                        out_grads: list[Array]) -> list:
    return [np.ones(inputs[0].shape, inputs[0].dtype)]


# Unlike MakeLoss (loss.py), make_loss has no parameters and no normalization.
register(OpDef(
    "make_loss", lambda p, ctx, inputs: inputs[0].copy(), backward=_make_loss_backward,
    backward_reads=GradReads(out_grads=False), inplace=((0, 0),), named_inputs=False,
    doc="Identity forward; backward gives ones, as the gradient of a loss."))

register(elementwise_op(
    "_contrib_gradientmultiplier", lambda p, x: x.copy(),
    lambda p, g, x, y: g * p.scalar, _PASS,
    params=(Param("scalar", "float", 1.0, "lambda multiplier"),
            Param("is_int", "bool", True, "Indicate whether scalar input is int type")),
    doc="Identity forward; backward multiplies the gradient by scalar (a gradient "
        "reversal layer with a negative one)."))

# MXNet's round: halves away from zero (numpy's rounds them to even).
register(elementwise_op(
    "_contrib_round_ste", lambda p, x: np.sign(x) * np.floor(np.abs(x) + 0.5), _pass_through,
    _PASS, doc="Round forward; the gradient passes straight through."))
register(elementwise_op(
    "_contrib_sign_ste", lambda p, x: mx_sign(x), _pass_through, _PASS,
    doc="Sign forward; the gradient passes straight through."))

register(elementwise_op(
    "_contrib_quadratic", lambda p, x: p.a * x * x + p.b * x + p.c,
    lambda p, g, x, y: g * (2 * p.a * x + p.b), GradReads(inputs=("data",)),
    params=(Param("a", "float", 0.0, "Coefficient of the quadratic term in the quadratic "
                  "function."),
            Param("b", "float", 0.0, "Coefficient of the linear term in the quadratic "
                  "function."),
            Param("c", "float", 0.0, "Constant term in the quadratic function.")),
    doc="Elementwise a * x^2 + b * x + c."))


def _identity_like_rhs_backward(p: Params, ctx: OpContext, inputs: list[Array],
                                outputs: list[Array], out_grads: list[Array]) -> list:
    rhs = inputs[1]
    return [out_grads[0], np.zeros(rhs.shape, rhs.dtype)]


register(OpDef(
    "_identity_with_attr_like_rhs", lambda p, ctx, inputs: inputs[0].copy(),
    # As MXNet's (ElemwiseShape / ElemwiseType<2, 1>): both inputs have the output's
    # shape and dtype.
    inputs=("lhs", "rhs"), infer_shape=same_shape, infer_type=same_dtype,
    backward=_identity_like_rhs_backward, backward_reads=_PASS, inplace=((0, 0),),
    doc="lhs unchanged (MXNet gives it rhs's storage attributes); no gradient to rhs."))

register(OpDef(
    "_copyto", lambda p, ctx, inputs: inputs[0].copy(), named_inputs=False,
    doc="A copy of the input (what NDArray.copyto runs)."))
