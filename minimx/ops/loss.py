"""Loss heads of MXNet 1.x Module scripts: LinearRegressionOutput,
LogisticRegressionOutput, MAERegressionOutput, SVMOutput and MakeLoss; and
softmax_cross_entropy, an ordinary operator (its gradient follows the head's).

Like SoftmaxOutput, each is a loss layer: forward passes its data on (through
a sigmoid for the logistic one), and backward gives the gradient of its loss
whatever the output gradient (``backward_reads`` says ``out_grads=False``), so
a graph ending in one needs no head gradient. The label (the regression
outputs' and SVMOutput's second input, auto-created as ``<name>_label``) takes
no gradient: zeros, as in MXNet.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..base import OperatorError, ShapeError
from .activation import softmax
from .elemwise import sigmoid
from .infer import merge
from .params import Param, Params
from .registry import GradReads, OpContext, OpDef, register

Array = np.ndarray
Shape = tuple[int, ...] | None

_LABEL_AND_OUTPUT = GradReads(inputs=("label",), outputs=("output",), out_grads=False)
_GRAD_SCALE = Param("grad_scale", "float", 1.0, "Scale the gradient by a float factor")


# -- the regression outputs --------------------------------------------------------------

def _infer_regression(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    """MXNet's rule: a label of data's shape, or (N,) for data (N, 1); a given label
    must have data's batch size and number of elements."""
    data = merge(in_shapes[0], out_shapes[0])
    label = in_shapes[1]
    if data is None:
        return [data, label], [data]
    if label is None:
        label = (data[0],) if len(data) == 2 and data[1] == 1 else data
    elif all(label) and all(data) and (
            label[0] != data[0] or np.prod(label) != np.prod(data)):
        raise ShapeError(f"label shape {label} does not fit data {data}: expecting the "
                         "same batch size and number of elements")
    return [data, label], [data]


def _regression(name: str, forward: Callable[[Array], Array],
                grad: Callable[[Array, Array], Array], doc: str) -> OpDef:
    def backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
                 out_grads: list[Array]) -> list:
        label, out = inputs[1], outputs[0]
        # MXNet divides by the outputs per sample: the label's size over its batch.
        per_sample = label.size // label.shape[0]
        dx = grad(out, label.reshape(out.shape)) * (p.grad_scale / per_sample)
        return [dx.astype(out.dtype, copy=False), None]

    return OpDef(
        name, lambda p, ctx, inputs: forward(inputs[0]), backward=backward,
        backward_reads=_LABEL_AND_OUTPUT, infer_shape=_infer_regression,
        inputs=("data", "label"), inplace=((0, 0),), params=(_GRAD_SCALE,), doc=doc)


register(_regression(
    "LinearRegressionOutput", lambda x: x.copy(), lambda out, label: out - label,
    "Identity forward; backward gives (output - label) * grad_scale / outputs per sample "
    "(squared loss)."))
register(_regression(
    "LogisticRegressionOutput", lambda x: sigmoid(x).astype(x.dtype, copy=False),
    lambda out, label: out - label,
    "Sigmoid forward; backward gives (output - label) * grad_scale / outputs per sample "
    "(logistic loss)."))
register(_regression(
    # MXNet's minus_sign: a tie (output == label) counts as -1, not 0.
    "MAERegressionOutput", lambda x: x.copy(),
    lambda out, label: np.where(out - label > 0, 1.0, -1.0),
    "Identity forward; backward gives sign(output - label) * grad_scale / outputs per "
    "sample (absolute loss; -1 where output == label, as MXNet)."))


# -- SVMOutput -------------------------------------------------------------------------------

def _svm_backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
                  out_grads: list[Array]) -> list:
    out = outputs[0]
    scores = out.reshape(out.shape[0], -1)
    k = inputs[1].reshape(-1).astype(np.int64)
    is_label = np.arange(scores.shape[1]) == k[:, None]
    # The label's score should pass +margin, the others stay below -margin.
    signed = np.where(is_label, scores, -scores)
    short = p.margin > signed
    if p.use_linear:
        grad = short.astype(out.dtype)
    else:
        grad = np.where(short, 2 * (p.margin - signed), 0)
    grad = np.where(is_label, -grad, grad) * p.regularization_coefficient
    return [grad.reshape(out.shape).astype(out.dtype, copy=False), None]


def _infer_svm(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    data = merge(in_shapes[0], out_shapes[0])
    if data is None:
        return in_shapes, [data]
    return [data, merge(in_shapes[1], data[:-1])], [data]


register(OpDef(
    "SVMOutput", lambda p, ctx, inputs: inputs[0].copy(), backward=_svm_backward,
    backward_reads=_LABEL_AND_OUTPUT, infer_shape=_infer_svm, inputs=("data", "label"),
    inplace=((0, 0),),
    params=(Param("margin", "float", 1.0, "The loss margin."),
            Param("regularization_coefficient", "float", 1.0, "Scales the gradient: the "
                  "tradeoff between coefficient size and error."),
            Param("use_linear", "bool", False, "Use the L1-SVM objective (hinge) instead of "
                  "the L2-SVM one (squared hinge).")),
    doc="Identity forward; backward gives the (squared) hinge loss gradient of the scores "
        "(N, K) for class labels (N,)."))


# -- MakeLoss ---------------------------------------------------------------------------------

def _make_loss_backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list[Array],
                        out_grads: list[Array]) -> list:
    data = inputs[0]
    # batch: MXNet's kernel divides by the rows of data flattened to 2-D (every axis but
    # the last), which is the batch size for 2-D data only.
    count = {"null": 1, "batch": math.prod(data.shape[:-1])}.get(p.normalization)
    if count is None:  # valid: the elements above valid_thresh, at least one
        count = max(int(np.count_nonzero(data > p.valid_thresh)), 1)
    return [np.full(data.shape, p.grad_scale / count, data.dtype)]


register(OpDef(
    "MakeLoss", lambda p, ctx, inputs: inputs[0].copy(), backward=_make_loss_backward,
    backward_reads=lambda p: GradReads(inputs=("data",) if p.normalization == "valid" else (),
                                       out_grads=False),
    inplace=((0, 0),),
    params=(Param("grad_scale", "float", 1.0, "Gradient scale as a supplement to unary and "
                  "binary operators"),
            Param("valid_thresh", "float", 0.0, "Elements above it count as valid when "
                  "normalization is 'valid'."),
            Param("normalization", "str", "null", "Divide the gradient by nothing (null), the "
                  "batch size (batch: as MXNet's kernel, the product of all axes but the "
                  "last) or the number of valid elements (valid).",
                  choices=("batch", "null", "valid"))),
    doc="Makes its input a loss: identity forward; backward gives grad_scale (normalized) "
        "for every element, whatever the output gradient."))


# -- softmax_cross_entropy --------------------------------------------------------------------

def _classes(p: Params, label: Array, count: int) -> Array:
    """The labels as class indices (truncated, as MXNet reads them); one outside the
    `count` classes is refused (MXNet reads past its row)."""
    index = label.astype(np.int64)
    outside = (index < 0) | (index >= count)
    if outside.any():
        raise OperatorError(f"{p.label}: labels {sorted(set(index[outside].tolist()))} are "
                            f"not among the {count} classes")
    return index


def _cross_entropy_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
    data, label = inputs
    log_p = softmax(data, axis=1, log=True)
    picked = log_p[np.arange(len(data)), _classes(p, label, data.shape[1])]
    return [np.array([-picked.sum()], data.dtype)]


def _cross_entropy_backward(p: Params, ctx: OpContext, inputs: list[Array],
                            outputs: list[Array], out_grads: list[Array]) -> list:
    data, label = inputs
    grad = softmax(data, axis=1)
    grad[np.arange(len(data)), _classes(p, label, data.shape[1])] -= 1
    return [(grad * out_grads[0]).astype(data.dtype), None]   # the label takes none


def _infer_cross_entropy(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    data = in_shapes[0]
    if data is not None and len(data) != 2:
        raise ShapeError(f"{p.label}: data must be 2-D (batch, classes), got {data}")
    label = in_shapes[1] if data is None else merge(in_shapes[1], data[:1])
    return [data, label], [merge(out_shapes[0], (1,))]


register(OpDef(
    "softmax_cross_entropy", _cross_entropy_forward, backward=_cross_entropy_backward,
    backward_reads=GradReads(inputs=("data", "label")), infer_shape=_infer_cross_entropy,
    inputs=("data", "label"),
    doc="The cross entropy of softmax(data) (N, C) against class labels (N,), summed over "
        "the batch: shape (1,)."))

