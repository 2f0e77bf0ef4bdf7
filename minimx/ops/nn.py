"""FullyConnected, Embedding and UpSampling, with MXNet 1.9 parameters."""
from __future__ import annotations

from math import prod

import numpy as np

from ..base import DEFAULT_DTYPE, OperatorError, ShapeError
from .bias import add_bias, inputs_with_bias, with_bias_grad
from .infer import known, merge_at, merge_dtype
from .params import format_value
from .registry import GradReads, OpContext, OpDef, Param, Params, get_op, register

# -- FullyConnected --------------------------------------------------------------

def _fc_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    ins, outs = list(in_shapes), list(out_shapes)
    data = ins[0]
    if data is None:
        return ins, outs
    if p.flatten:
        if len(data) < 1:
            raise ShapeError(f"FullyConnected: data must have a batch axis, got shape {data}")
        features = prod(data[1:]) if all(data[1:]) else 0
        out = (data[0], p.num_hidden)
    else:
        features = data[-1] if data else 0
        out = (*data[:-1], p.num_hidden)
    merge_at(ins, 1, (p.num_hidden, features), "weight")
    if not p.no_bias:
        merge_at(ins, 2, (p.num_hidden,), "bias")
    merge_at(outs, 0, out, "output")
    # The batch axis (every leading axis without flatten) follows from the output.
    o = outs[0]
    back = (o[0], *data[1:]) if p.flatten else (*o[:-1], data[-1])
    merge_at(ins, 0, back, "data")
    return ins, outs


def _fc_matrix(p: Params, a: np.ndarray) -> np.ndarray:
    """The 2-D view FullyConnected multiplies: (batch, features) or (rows, last axis)."""
    return a.reshape(a.shape[0], -1) if p.flatten else a.reshape(-1, a.shape[-1])


def _fc_forward(p: Params, ctx: OpContext, inputs: list) -> np.ndarray:
    x, w = inputs[0], inputs[1]
    y = add_bias(p, _fc_matrix(p, x) @ w.T, inputs)
    return y.reshape((x.shape[0], p.num_hidden) if p.flatten else (*x.shape[:-1], p.num_hidden))


def _fc_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                 out_grads: list) -> list:
    x, w = inputs[0], inputs[1]
    dy = out_grads[0].reshape(-1, p.num_hidden)
    grads = [(dy @ w).reshape(x.shape), dy.T @ _fc_matrix(p, x)]
    return with_bias_grad(p, grads, dy)


register(OpDef(
    name="FullyConnected",
    forward=_fc_forward,
    backward=_fc_backward,
    backward_reads=GradReads(("data", "weight")),
    params=(
        Param("num_hidden", "int", doc="Number of hidden nodes of the output."),
        Param("no_bias", "bool", False, "Whether to disable the bias parameter."),
        Param("flatten", "bool", True, "Whether to collapse all but the first axis of the "
              "input data tensor."),
    ),
    inputs=inputs_with_bias,
    infer_shape=_fc_infer_shape,
    doc="""Apply a linear transformation: Y = X W^T + b.

    With flatten, data (batch, *rest) is read as (batch, prod(rest)) and the output is
    (batch, num_hidden); without it the last axis is transformed and the others kept.
    """,
))


# -- Embedding -------------------------------------------------------------------

def _embedding_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    ins, outs = list(in_shapes), list(out_shapes)
    merge_at(ins, 1, (p.input_dim, p.output_dim), "weight")
    if ins[0] is not None:
        merge_at(outs, 0, (*ins[0], p.output_dim), "output")
    if outs[0] is not None:
        merge_at(ins, 0, outs[0][:-1], "data")
    return ins, outs


def _embedding_infer_type(p: Params, in_types: list, out_types: list):
    # The indices keep their own dtype; the output has the weight's (the dtype parameter
    # when the weight's is unknown), as MXNet's EmbeddingOpType.
    weight = merge_dtype(in_types[1], out_types[0])
    weight = p.dtype if weight is None else weight
    return [in_types[0], weight], [weight]


def _indices(x: np.ndarray, rows: int) -> np.ndarray:
    """MXNet's take(mode='clip'): indices truncated to integers, then clipped to the rows."""
    return np.clip(x.astype(np.int64), 0, rows - 1)


def _embedding_forward(p: Params, ctx: OpContext, inputs: list) -> np.ndarray:
    x, w = inputs
    return w[_indices(x, w.shape[0])]


def _embedding_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                        out_grads: list) -> list:
    x, w = inputs
    dw = np.zeros(w.shape, w.dtype)
    np.add.at(dw, _indices(x, w.shape[0]).ravel(), out_grads[0].reshape(-1, w.shape[1]))
    return [None, dw]  # the indices have no gradient


register(OpDef(
    name="Embedding",
    forward=_embedding_forward,
    backward=_embedding_backward,
    backward_reads=GradReads(("data",)),  # the weight's shape only
    params=(
        Param("input_dim", "int", doc="Vocabulary size of the input indices."),
        Param("output_dim", "int", doc="Dimension of the embedding vectors."),
        Param("dtype", "dtype", DEFAULT_DTYPE, "Data type of weight."),
        Param("sparse_grad", "bool", False, "Row-sparse gradient in MXNet; the gradient is "
              "always dense here."),
    ),
    inputs=("data", "weight"),
    infer_shape=_embedding_infer_shape,
    infer_type=_embedding_infer_type,
    doc="""Map integer indices to vector representations (embeddings).

    data (any shape, indices of any dtype; clipped to [0, input_dim-1]),
    weight (input_dim, output_dim); output shape data.shape + (output_dim,).
    """,
))


# -- UpSampling --------------------------------------------------------------------
# Nearest takes num_args inputs and repeats pixels; bilinear takes data and a weight and
# is MXNet's grouped Deconvolution, run here by minimx's Deconvolution.

def _check_scale(p: Params) -> None:
    if p.scale < 1:
        raise OperatorError(f"{p.label}: scale={p.scale} must be positive")


def _upsampling_scales(p: Params, shapes: list) -> list[tuple[int, int]]:
    """Each input's (height, width) factor: all are brought to input 0's size times scale."""
    _check_scale(p)
    for s in shapes:
        if len(s) != 4:
            raise ShapeError(f"UpSampling: inputs must be 4-D (batch, channel, y, x), got {s}")
    out_h, out_w = shapes[0][2] * p.scale, shapes[0][3] * p.scale
    scales = []
    for s in shapes:
        if out_h % s[2] or out_w % s[3]:
            raise ShapeError(f"UpSampling: input size {s[2:]} does not divide the output "
                             f"size {(out_h, out_w)}")
        if out_h // s[2] != out_w // s[3]:  # MXNet's kernel scales both by the height's
            raise ShapeError(f"UpSampling: input size {s[2:]} needs factors "
                             f"{(out_h // s[2], out_w // s[3])} to reach {(out_h, out_w)}; "
                             f"nearest upsampling scales height and width alike")
        scales.append((out_h // s[2], out_w // s[3]))
    return scales


def _nearest_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    ins, outs = list(in_shapes), list(out_shapes)
    if not all(known(s) for s in ins):
        return ins, outs
    _upsampling_scales(p, ins)
    channels = [s[1] for s in ins]
    if p.multi_input_mode == "sum" and len(set(channels)) > 1:
        raise ShapeError(f"UpSampling: multi_input_mode='sum' needs equal channels, got "
                         f"{channels}")
    c = channels[0] if p.multi_input_mode == "sum" else sum(channels)
    n, _, h, w = ins[0]
    merge_at(outs, 0, (n, c, h * p.scale, w * p.scale), "output")
    return ins, outs


def _nearest(x: np.ndarray, sh: int, sw: int) -> np.ndarray:
    n, c, h, w = x.shape
    return np.broadcast_to(x[:, :, :, None, :, None], (n, c, h, sh, w, sw)).reshape(
        n, c, h * sh, w * sw)


def _nearest_forward(p: Params, inputs: list) -> np.ndarray:
    ups = [_nearest(x, *s) for x, s in zip(inputs, _upsampling_scales(
        p, [x.shape for x in inputs]), strict=True)]
    return sum(ups[1:], ups[0]) if p.multi_input_mode == "sum" else np.concatenate(
        ups, axis=1)


def _nearest_backward(p: Params, inputs: list, dy: np.ndarray) -> list:
    grads, begin = [], 0
    for x, (sh, sw) in zip(inputs, _upsampling_scales(p, [x.shape for x in inputs]),
                           strict=True):
        n, c, h, w = x.shape
        part = dy if p.multi_input_mode == "sum" else dy[:, begin:begin + c]
        grads.append(part.reshape(n, c, h, sh, w, sw).sum(axis=(3, 5)))
        begin += c
    return grads


def _bilinear_kernel(scale: int) -> int:
    return 2 * scale - scale % 2


def _bilinear_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    """MXNet's: the weight is (channels, 1, kernel, kernel), once the data is known."""
    _check_scale(p)
    ins, outs = list(in_shapes), list(out_shapes)
    data = ins[0]
    if data is not None and len(data) != 4:
        raise ShapeError(f"{p.label}: data must be 4-D (batch, channel, y, x), got {data}")
    if not known(data):
        return ins, outs
    n, c, h, w = data
    k = _bilinear_kernel(p.scale)
    merge_at(ins, 1, (c, 1, k, k), "weight")
    merge_at(outs, 0, (n, c, h * p.scale, w * p.scale), "output")
    return ins, outs


def _deconvolution(p: Params, channels: int) -> tuple[OpDef, Params]:
    """The Deconvolution bilinear upsampling is (MXNet's GetDeconvolutionParam): one
    group per channel, stride scale, and a kernel and pad that make the output exactly
    scale times the input."""
    if p.num_filter != channels:  # MXNet fails (or crashes, for 0) on others
        raise OperatorError(f"{p.label}: bilinear upsampling needs num_filter equal to the "
                            f"data's channels, {channels}; got {p.num_filter}")
    k, s, pad = _bilinear_kernel(p.scale), p.scale, p.scale // 2  # pad: ceil((s - 1) / 2)
    attrs = dict(kernel=(k, k), stride=(s, s), pad=(pad, pad), num_filter=channels,
                 num_group=channels, no_bias=True, workspace=p.workspace)
    deconv = get_op("Deconvolution")
    return deconv, deconv.parse_params({key: format_value(v) for key, v in attrs.items()},
                                       p.label)


def _upsampling_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    infer = _nearest_infer_shape if p.sample_type == "nearest" else _bilinear_infer_shape
    return infer(p, in_shapes, out_shapes)


def _upsampling_forward(p: Params, ctx: OpContext, inputs: list) -> np.ndarray:
    if p.sample_type == "nearest":
        return _nearest_forward(p, inputs)
    deconv, dp = _deconvolution(p, inputs[0].shape[1])
    return deconv.forward(dp, ctx, inputs)


def _upsampling_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                         out_grads: list) -> list:
    if p.sample_type == "nearest":
        return _nearest_backward(p, inputs, out_grads[0])
    deconv, dp = _deconvolution(p, inputs[0].shape[1])
    assert deconv.backward is not None
    return deconv.backward(dp, ctx, inputs, outputs, out_grads)


register(OpDef(
    name="UpSampling", bfloat16="refuse",
    forward=_upsampling_forward,
    backward=_upsampling_backward,
    backward_reads=lambda p: GradReads(() if p.sample_type == "nearest" else
                                       ("data", "weight")),
    params=(
        Param("scale", "int", doc="Up sampling scale."),
        Param("num_filter", "int", 0, "Input filter; only used by bilinear sample_type, "
              "which needs it equal to the number of channels."),
        Param("sample_type", "str", doc="Upsampling method.",
              choices=("bilinear", "nearest")),
        Param("multi_input_mode", "str", "concat", "How to handle multiple inputs: concat "
              "along channels, or sum (nearest only).", choices=("concat", "sum")),
        Param("num_args", "int", doc="Number of inputs to be upsampled (nearest; bilinear "
              "takes data and weight whatever it says)."),
        Param("workspace", "int", 512, "Tmp workspace for deconvolution (MB)."),
    ),
    variadic="num_args",
    variadic_when=lambda p: p.sample_type == "nearest",
    inputs=("data", "weight"),
    infer_shape=_upsampling_infer_shape,
    doc="""Upsample 4-D (N, C, H, W) inputs by nearest neighbour or bilinearly.

    Nearest: the output is (N, C, H*scale, W*scale) for input 0; other inputs are
    upsampled to the same size and concatenated along channels (or summed with
    multi_input_mode='sum'). Bilinear: data and weight (C, 1, k, k), k = 2*scale -
    scale%2 (initialised by mx.init.Bilinear), run as a Deconvolution with one group per
    channel, stride scale and pad ceil((scale-1)/2); num_filter must be C.
    """,
))
