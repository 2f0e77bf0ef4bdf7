"""Activation operators: Activation (and softsign), LeakyReLU, softmax / log_softmax /
softmin, SoftmaxActivation, SoftmaxOutput and Dropout, with MXNet 1.9's parameters.

The activation families are tables of (function, derivative) rows, as in
`elemwise`; the softmax family shares one masked, temperature-aware softmax.
SoftmaxOutput is a loss layer: its backward is the cross-entropy gradient
``softmax - onehot(label)``, whatever the output gradient.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from .elemwise import UNARY, Unary, sigmoid, unary_op, unary_reads, unbroadcast
from .infer import merge, merge_dtype
from .params import Param, Params
from .registry import REQUIRED, GradReads, OpContext, OpDef, register
from .special import erf

Array = np.ndarray
Shape = tuple[int, ...] | None

_SQRT2 = math.sqrt(2.0)


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ShapeError(f"axis {axis} is out of range for {ndim}-d data")
    return axis % ndim


# -- Activation ------------------------------------------------------------------------

ACTIVATIONS: dict[str, Unary] = {
    "relu": UNARY["relu"],
    "sigmoid": UNARY["sigmoid"],
    "tanh": UNARY["tanh"],
    "softrelu": Unary(lambda x: np.logaddexp(0, x), lambda x, y: sigmoid(x), "x"),
    "softsign": Unary(lambda x: x / (1 + np.abs(x)), lambda x, y: 1 / np.square(1 + np.abs(x)),
                      "x"),
}


def _act_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    x = inputs[0]
    return ACTIVATIONS[p.act_type].fn(x).astype(x.dtype, copy=False)


def _act_backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
                  out_grads: list[Array]) -> list:
    x = inputs[0]
    d = ACTIVATIONS[p.act_type].grad(x, outputs[0])
    return [(out_grads[0] * d).astype(x.dtype, copy=False)]


register(OpDef(
    "Activation", _act_forward, backward=_act_backward, inplace=((0, 0),),
    backward_reads=lambda p: unary_reads(ACTIVATIONS[p.act_type]),
    params=(Param("act_type", "str", REQUIRED, "Activation function to be applied.",
                  choices=tuple(sorted(ACTIVATIONS))),),
    doc="Applies an activation function element-wise to the input.", named_inputs=False))
# MXNet's softsign operator: Activation's softsign row on its own.
register(unary_op("softsign", ACTIVATIONS["softsign"]))


# -- LeakyReLU ----------------------------------------------------------------------------

SELU_LAMBDA = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


def _elu(x: Array, alpha: Any) -> Array:
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


# act_type -> (forward(x, slope), derivative(x, y, slope)); prelu and rrelu take
# their slopes from the gamma input and the mask output and use the "leaky" row.
LEAKY: dict[str, tuple[Callable[[Array, Any], Array], Callable[[Array, Array, Any], Any]]] = {
    "leaky": (lambda x, a: np.where(x > 0, x, a * x),
              lambda x, y, a: np.where(x > 0, 1, a)),
    "elu": (_elu, lambda x, y, a: np.where(x > 0, 1, y + a)),
    "selu": (lambda x, a: SELU_LAMBDA * _elu(x, SELU_ALPHA),
             lambda x, y, a: np.where(x > 0, SELU_LAMBDA, y + SELU_LAMBDA * SELU_ALPHA)),
    "gelu": (lambda x, a: 0.5 * x * (1 + erf(x / _SQRT2)),
             lambda x, y, a: 0.5 * (1 + erf(x / _SQRT2))
             + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)),
}
LEAKY_TYPES = ("elu", "gelu", "leaky", "prelu", "rrelu", "selu")


def prelu_gamma_shape(gamma: tuple[int, ...], data: tuple[int, ...]) -> tuple[int, ...]:
    """Where gamma's axes sit in data's (MXNet's expand_shape): right-aligned within
    axes 0 and 1, each equal to data's or 1; the other axes are 1."""
    out = [1] * len(data)
    s = len(gamma) - 1
    for i in range(len(data) - 1, -1, -1):
        if s >= 0 and i <= 1 and gamma[s] in (data[i], 1):
            out[i] = gamma[s]
            s -= 1
    if s != -1:
        raise ShapeError(f"cannot broadcast gamma of shape {gamma} to data of shape {data}")
    return tuple(out)


def _leaky_slope(p: Params, ctx: OpContext, inputs: list[Array]) -> Any:
    x = inputs[0]
    if p.act_type == "prelu":
        return inputs[1].reshape(prelu_gamma_shape(inputs[1].shape, x.shape))
    if p.act_type == "rrelu":
        if ctx.is_train:
            return ctx.rng.uniform(p.lower_bound, p.upper_bound, x.shape).astype(x.dtype)
        return np.full_like(x, (p.lower_bound + p.upper_bound) / 2)
    return p.slope


def _leaky_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
    x = inputs[0]
    slope = _leaky_slope(p, ctx, inputs)
    fn = LEAKY.get(p.act_type, LEAKY["leaky"])[0]
    out = [fn(x, slope).astype(x.dtype, copy=False)]
    return out + [slope] if p.act_type == "rrelu" else out


def _leaky_backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
                    out_grads: list[Array]) -> list:
    x, g = inputs[0], out_grads[0]
    # rrelu's slopes are the ones its forward drew, kept in the mask output.
    slope = outputs[1] if p.act_type == "rrelu" else _leaky_slope(p, ctx, inputs)
    grad = LEAKY.get(p.act_type, LEAKY["leaky"])[1]
    dx = (g * grad(x, outputs[0], slope)).astype(x.dtype, copy=False)
    if p.act_type != "prelu":
        return [dx]
    dgamma = unbroadcast(np.where(x > 0, 0, x) * g, slope.shape).reshape(inputs[1].shape)
    return [dx, dgamma.astype(inputs[1].dtype, copy=False)]


def _infer_leaky(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    data = in_shapes[0]
    for s in out_shapes:
        data = merge(data, s)
    ins = [data, *in_shapes[1:]]
    if data is not None and p.act_type == "prelu":
        if ins[1] is None:
            ins[1] = (data[1] if len(data) > 1 else data[0],)
        elif all(ins[1]) and all(data):
            prelu_gamma_shape(ins[1], data)
    return ins, [data] * len(out_shapes)


def _leaky_reads(p: Params) -> GradReads:
    """The data always; prelu its gamma, rrelu its slopes (mask), elu and selu their output."""
    return GradReads(
        inputs=("data", "gamma") if p.act_type == "prelu" else ("data",),
        outputs={"rrelu": ("mask",), "elu": ("output",), "selu": ("output",)}.get(p.act_type, ()))


register(OpDef(
    "LeakyReLU", _leaky_forward, backward=_leaky_backward, infer_shape=_infer_leaky,
    backward_reads=_leaky_reads, draws=True,   # rrelu's slopes
    inputs=lambda p: ("data", "gamma") if p.act_type == "prelu" else ("data",),
    outputs=lambda p: ("output", "mask") if p.act_type == "rrelu" else ("output",),
    params=(Param("act_type", "str", "leaky", "Activation function to be applied.",
                  choices=LEAKY_TYPES),
            Param("slope", "float", 0.25, "Init slope for the activation. (For leaky and elu "
                                          "only)"),
            Param("lower_bound", "float", 0.125, "Lower bound of random slope. (For rrelu only)"),
            Param("upper_bound", "float", 0.334, "Upper bound of random slope. (For rrelu only)")),
    doc="Leaky rectified linear units and their relatives (elu, selu, gelu, prelu, rrelu)."))


# -- softmax family ------------------------------------------------------------------------

def length_shape(data: tuple[int, ...], axis: int) -> tuple[int, ...]:
    """The shape of softmax's lengths: the data's without `axis`, (1,) for 1-d data (as MXNet)."""
    return data[:axis] + data[axis + 1:] or (1,)


def length_mask(x: Array, axis: int, length: Array | None) -> Array | None:
    """True where an element lies within its row's length along `axis`."""
    if length is None:
        return None
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    positions = np.arange(x.shape[axis]).reshape(shape)
    rows = np.reshape(length, x.shape[:axis] + x.shape[axis + 1:])
    return positions < np.expand_dims(rows, axis)


def softmax(x: Array, axis: int, temperature: float = 1.0, log: bool = False,
            mask: Array | None = None) -> Array:
    """(Log-)softmax of `x` along `axis`; elements outside `mask` give 0."""
    z = x / temperature if temperature != 1.0 else x
    if mask is not None:
        z = np.where(mask, z, -np.inf)
    zmax = np.max(z, axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        # As MXNet's CPU kernel: a row whose largest is +inf (or NaN) is NaN
        # throughout; one of -inf only (all masked) is shifted by 0.
        shifted = z - np.where(zmax == -np.inf, 0, zmax)
        e = np.exp(shifted)
        total = np.sum(e, axis=axis, keepdims=True)
        out = shifted - np.log(total) if log else e / total
    return out if mask is None else np.where(mask, out, 0)


def softmax_grad(y: Array, g: Array, axis: int, temperature: float = 1.0, log: bool = False,
                 mask: Array | None = None) -> Array:
    """The input gradient of `softmax` given its output `y` and output gradient `g`."""
    if mask is not None:
        g = np.where(mask, g, 0)
    if log:
        dx = g - np.exp(y) * np.sum(g, axis=axis, keepdims=True)
    else:
        dx = y * (g - np.sum(g * y, axis=axis, keepdims=True))
    dx = dx / temperature if temperature != 1.0 else dx
    return dx if mask is None else np.where(mask, dx, 0)


def _softmax_op(name: str, log: bool, negate: bool = False) -> OpDef:
    """softmax or log_softmax of the data, or (softmin, `negate`) of its negation."""
    sign = -1.0 if negate else 1.0
    # MXNet 1.9.1's log_softmax and softmin declare use_length but take no length input,
    # so with use_length=True they always fail; only softmax masks by length.
    takes_length = not (log or negate)

    def check_use_length(p: Params) -> None:
        if p.use_length and not takes_length:
            raise OperatorError(f"{name}: use_length=True needs a length input, which only "
                                "softmax takes (MXNet 1.9.1's fails likewise)")

    def parts(p: Params, inputs: list[Array]) -> tuple[int, float, Array | None]:
        check_use_length(p)
        axis = _axis(p.axis, inputs[0].ndim)
        mask = length_mask(inputs[0], axis, inputs[1] if p.use_length else None)
        return axis, 1.0 if p.temperature is None else p.temperature, mask

    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
        axis, t, mask = parts(p, inputs)
        out = softmax(-inputs[0] if negate else inputs[0], axis, t, log, mask)
        return out.astype(inputs[0].dtype if p.dtype is None else p.dtype, copy=False)

    def backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
                 out_grads: list[Array]) -> list:
        axis, t, mask = parts(p, inputs)
        dx = sign * softmax_grad(outputs[0], out_grads[0], axis, t, log, mask)
        dx = dx.astype(inputs[0].dtype, copy=False)
        return [dx, None] if p.use_length else [dx]  # lengths get no gradient

    def infer_shape(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
        check_use_length(p)
        data = merge(in_shapes[0], out_shapes[0])
        ins = [data, *in_shapes[1:]]
        if p.use_length and data is not None:
            rows = length_shape(data, _axis(p.axis, len(data)))
            if not (ins[1] == () and rows == (1,)):   # MXNet takes a 0-d length as one
                ins[1] = merge(ins[1], rows)
        return ins, [data]

    def infer_type(p: Params, in_types: list, out_types: list):
        check_use_length(p)
        length = in_types[1] if p.use_length else None
        if length is not None and np.dtype(length).kind not in "iu":
            raise DTypeError(f"the length input must be of an integer type, not "
                             f"{np.dtype(length).name} (MXNet 1.9.1 refuses it too)")
        data, out = in_types[0], out_types[0]
        if p.dtype is not None:
            out = merge_dtype(out, p.dtype)
        else:
            data = out = merge_dtype(data, out)
        return [data, *in_types[1:]], [out]

    what = "logarithm of the softmax" if log else "softmin" if negate else "softmax"
    return OpDef(
        name, forward, backward=backward, infer_shape=infer_shape, infer_type=infer_type,
        bfloat16="refuse" if negate else "float32",   # MXNet 1.9.1 has no bf16 softmin
        backward_reads=lambda p: GradReads(inputs=("length",) if p.use_length and takes_length
                                           else (),
                                           outputs=("output",)),
        inputs=lambda p: ("data", "length") if p.use_length and takes_length else ("data",),
        params=(Param("axis", "int", -1, "The axis along which to compute softmax."),
                Param("temperature", "float", None, "Temperature parameter in softmax"),
                Param("dtype", "dtype", None, "DType of the output in case this can't be "
                      "inferred. Defaults to the same as input's dtype if not defined "
                      "(dtype=None).", choices=("float16", "float32", "float64")),
                Param("use_length", "bool", False, "Whether to use the length input as a "
                      "mask over the data input.")),
        doc=f"Computes the {what} of the input along an axis.")


register(_softmax_op("softmax", log=False))
register(_softmax_op("log_softmax", log=True))
register(_softmax_op("softmin", log=False, negate=True))


def _softmax_activation_axis(p: Params) -> int:
    """SoftmaxActivation's softmax axis: 1 in channel mode; in instance mode the
    last, as MXNet 1.9.1's kernel computes it (its docs say all but the first,
    which is the same on 2-d data only)."""
    return 1 if p.mode == "channel" else -1


def _softmax_activation_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    return softmax(inputs[0], _softmax_activation_axis(p))


def _softmax_activation_backward(p: Params, ctx: OpContext, inputs: list[Array],
                                 outputs: list[Array], out_grads: list[Array]) -> list:
    return [softmax_grad(outputs[0], out_grads[0], _softmax_activation_axis(p))]


def _infer_softmax_activation(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    shape = merge(in_shapes[0], out_shapes[0])
    if p.mode == "channel" and shape is not None and len(shape) < 3:
        raise ShapeError(f"mode=channel needs data of at least 3 axes (N, C, ...), as "
                         f"MXNet's, got {shape}")
    return [shape], [shape]


register(OpDef(
    "SoftmaxActivation", _softmax_activation_forward, backward=_softmax_activation_backward,
    infer_shape=_infer_softmax_activation, bfloat16="refuse",
    backward_reads=GradReads(outputs=("output",)),
    params=(Param("mode", "str", "instance", "Specifies how to compute the softmax: along "
                  "the last axis (instance, as MXNet 1.9.1's kernel) or along axis 1 "
                  "(channel).", choices=("channel", "instance")),),
    doc="Applies softmax activation to the input (deprecated in MXNet: use softmax).",
    named_inputs=False))


# -- SoftmaxOutput -------------------------------------------------------------------------

def _classes_view(p: Params, a: Array) -> Array:
    """SoftmaxOutput's view of data: classes on axis 1, of shape (M, K) or (N, K, L)."""
    if p.multi_output:
        return a.reshape(a.shape[0], a.shape[1], -1)
    if p.preserve_shape:
        return a.reshape(-1, a.shape[-1])
    return a.reshape(a.shape[0], -1)


def _softmax_output_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    x = inputs[0]
    return softmax(_classes_view(p, x), 1).reshape(x.shape)


def _softmax_output_backward(p: Params, ctx: OpContext, inputs: list[Array],
                             outputs: list[Array], out_grads: list[Array]) -> list:
    data, label = inputs
    out = outputs[0]
    if label.shape == out.shape:  # probabilities as labels
        grad = (out - label) * p.grad_scale
    else:
        y = _classes_view(p, out)
        whole = label.reshape(-1).astype(np.int64)
        if p.multi_output or p.preserve_shape:
            lab = whole.reshape(y.shape[0], *y.shape[2:])
        else:
            # Flattened rows take the label's first values, one each, whatever its shape
            # (a label (N, d) of data (N, C, d) passes shape inference), as MXNet's do;
            # the counts below take the whole label, as MXNet's too.
            lab = whole[:y.shape[0]]
        k = y.shape[1]
        classes = np.arange(k).reshape((1, k) + (1,) * (y.ndim - 2))
        onehot = np.expand_dims(lab, 1) == classes
        target = (np.where(onehot, 1 - p.smooth_alpha, p.smooth_alpha / max(k - 1, 1))
                  if p.smooth_alpha else onehot)
        grad = y - target
        ignored = lab == int(p.ignore_label)
        if p.use_ignore:
            grad = np.where(np.expand_dims(ignored, 1), 0, grad)
        count = {"null": 1, "batch": lab.shape[0] if p.multi_output else whole.size,
                 "valid": max(int(np.count_nonzero(whole != int(p.ignore_label))), 1)
                 }[p.normalization]
        if p.multi_output and p.normalization != "valid":
            count *= y.shape[2]
        grad = (grad * (p.grad_scale / count)).reshape(out.shape)
    if p.out_grad:
        grad = grad * out_grads[0]
    return [grad.astype(data.dtype, copy=False), None]


def _infer_softmax_output(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    data = merge(in_shapes[0], out_shapes[0])
    label = in_shapes[1]
    if data is None:
        return [data, label], [data]
    if label is not None and len(label) == len(data):
        try:  # a label of data's shape holds probabilities
            both = merge(data, label)
            return [both, both], [both]
        except ShapeError:
            if not p.multi_output:
                raise
    if not p.multi_output:
        return [data, merge(label, data[:-1])], [data]
    n = data[0]
    flat = (n, math.prod(data[2:]))  # 0, unknown, when a dimension is
    if label is None:
        return [data, flat], [data]
    for candidate in (flat, (n, *data[2:]), (n, 1, *data[2:])):
        try:
            return [data, merge(label, candidate)], [data]
        except ShapeError:
            continue
    raise ShapeError(f"label shape {label} does not fit data {data} with multi_output: "
                     f"expecting {flat} or {(n, *data[2:])}")


register(OpDef(
    "SoftmaxOutput", _softmax_output_forward, backward=_softmax_output_backward,
    infer_shape=_infer_softmax_output, inputs=("data", "label"), inplace=((0, 0),),
    # A loss layer: the head gradient is read only with out_grad=True.
    backward_reads=lambda p: GradReads(inputs=("label",), outputs=("output",),
                                       out_grads=bool(p.out_grad)),
    aliases=("Softmax",),
    params=(Param("grad_scale", "float", 1.0, "Scales the gradient by a float factor."),
            Param("ignore_label", "float", -1.0, "The instances whose `labels` == "
                  "`ignore_label` will be ignored during backward, if `use_ignore` is set."),
            Param("multi_output", "bool", False, "Compute the softmax along axis 1."),
            Param("use_ignore", "bool", False, "Let `ignore_label` instances contribute no "
                  "gradient."),
            Param("preserve_shape", "bool", False, "Compute the softmax along the last axis."),
            Param("normalization", "str", "null", "Normalizes the gradient.",
                  choices=("batch", "null", "valid")),
            Param("out_grad", "bool", False, "Multiplies gradient with output gradient "
                  "element-wise."),
            Param("smooth_alpha", "float", 0.0, "Label smoothing: subtracted from the one-hot "
                  "target and spread uniformly over the other classes.")),
    doc="Softmax forward; backward gives the cross-entropy gradient softmax - onehot(label)."))


# -- Dropout -------------------------------------------------------------------------------

def _mask_shape(p: Params, shape: tuple[int, ...]) -> tuple[int, ...]:
    axes = {_axis(a, len(shape)) for a in p.axes}
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _dropout_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
    x = inputs[0]
    if not 0.0 <= p.p <= 1.0:
        raise OperatorError(f"Dropout: parameter p={p.p} is outside [0, 1]")
    shape = _mask_shape(p, x.shape)
    if not (ctx.is_train or p.mode == "always") or p.p == 0.0:
        return [x.copy(), np.ones(shape, x.dtype)]
    keep = 1.0 - p.p
    kept = ctx.rng.random(shape) < keep
    mask = (kept * (1.0 / keep) if keep else kept).astype(x.dtype)
    return [x * mask, mask]


def _infer_dropout(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    data = merge(in_shapes[0], out_shapes[0])
    mask = out_shapes[1] if data is None else merge(out_shapes[1], _mask_shape(p, data))
    return [data], [data, mask]


register(OpDef(
    "Dropout", _dropout_forward, outputs=("output", "mask"), visible_outputs=lambda p: 1,
    bfloat16="refuse", draws=True,
    backward=lambda p, ctx, inputs, outputs, out_grads: [
        (out_grads[0] * outputs[1]).astype(inputs[0].dtype, copy=False)],
    backward_reads=GradReads(outputs=("mask",)),
    infer_shape=_infer_dropout,
    inplace=((0, 0),),
    params=(Param("p", "float", 0.5, "Fraction of the input that gets dropped out during "
                  "training time."),
            Param("mode", "str", "training", "Whether to only turn on dropout during training "
                  "or to also turn on for inference.", choices=("always", "training")),
            Param("axes", "shape", (), "Axes for variational dropout kernel."),
            Param("cudnn_off", "bool", False, "Whether to turn off cuDNN in dropout operator.")),
    doc="Applies dropout: during training (or always, with mode='always') zeroes elements "
        "with probability p and scales the rest by 1/(1-p); otherwise the identity."))
