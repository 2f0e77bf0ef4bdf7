"""Normalization operators with MXNet 1.9 parameters: BatchNorm, InstanceNorm,
LayerNorm, GroupNorm, L2Normalization and LRN.

Each returns its hidden outputs (BatchNorm's mean and inverse std, LayerNorm's
mean and std, ...) as MXNet does, and its gradient reads them back.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..base import BFLOAT16, DTypeError, OperatorError, ShapeError, compute_dtype
from .infer import merge, merge_at, merge_dtype, same_shape
from .reduce import kept_shape
from .registry import GradReads, OpContext, OpDef, Param, Params, get_op, register


def _axis(op: str, axis: int, ndim: int) -> int:
    """`axis` made non-negative; ShapeError when the data has no such axis."""
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{op}: axis {axis} is out of range for {ndim}-D data")
    return axis % ndim


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A per-channel vector shaped to broadcast along `axis` of `ndim`-D data."""
    return v.reshape([-1 if i == axis else 1 for i in range(ndim)])


def _inv_std(var: np.ndarray, eps: float, batch: bool) -> np.ndarray:
    """1 / sqrt(var + eps), as MXNet 1.9.1's CPU kernel: 0 for a batch's zero
    variance with eps == 0 (`batch`: the batch's statistics); the moving
    variance as it is (inf for 0, NaN for NaN or a negative one)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / np.sqrt(var + eps)
    return (np.where(var + eps == 0, 0, inv) if batch else inv).astype(var.dtype)


def _param_grad(values: np.ndarray, axes: tuple[int, ...], like: np.ndarray) -> np.ndarray:
    """A gamma/beta gradient: `values` summed over `axes` in float64, in `like`'s dtype.

    numpy adds along a strided axis one row at a time (pairwise summation only
    runs along the contiguous axis), so float32 sums over thousands of rows
    drift by 1e-4 relative; float64 keeps them exact to float32 precision.
    """
    return values.sum(axis=axes, dtype=np.float64).astype(like.dtype)


def _normalized_grad(dxhat: np.ndarray, xhat: np.ndarray, inv_std: np.ndarray,
                     axes: tuple[int, ...]) -> np.ndarray:
    """Gradient through ``xhat = (x - mean(x)) * inv_std`` with statistics over `axes`."""
    return inv_std * (dxhat - dxhat.mean(axis=axes, keepdims=True)
                      - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))


# -- BatchNorm -------------------------------------------------------------------

_BN_INPUTS = ("data", "gamma", "beta", "moving_mean", "moving_var")


def _bn_axis(p: Params, ndim: int) -> int:
    """The channel axis; SyncBatchNorm has no axis parameter: its channels are axis 1."""
    return _axis("BatchNorm", p.get("axis", 1), ndim)


def _bn_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    ins, outs = list(in_shapes), list(out_shapes)
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    channels = data[_bn_axis(p, len(data))]
    for i, name in enumerate(_BN_INPUTS[1:], start=1):
        merge_at(ins, i, (channels,), name)
    merge_at(outs, 0, data, "output")
    merge_at(outs, 1, (channels,), "mean")
    merge_at(outs, 2, (channels,), "var")
    merge_at(ins, 0, outs[0], "data")
    return ins, outs


def _bn_infer_type(p: Params, in_types: list, out_types: list):
    data = merge_dtype(in_types[0], out_types[0])
    if data is None:
        return in_types, out_types
    if data.kind != "f" and data != BFLOAT16:   # MXNet's kernel refuses integers too
        raise DTypeError(f"BatchNorm takes floating-point data, not {data}")
    # As MXNet: float16 and bfloat16 data keep parameters and statistics in float32.
    param = compute_dtype(data)
    for t in (*in_types[1:], *out_types[1:]):
        merge_dtype(t, param)
    return [data] + [param] * 4, [data, param, param]


def _bn_training(p: Params, ctx: OpContext) -> bool:
    return ctx.is_train and not p.use_global_stats


def _bn_forward(p: Params, ctx: OpContext, inputs: list) -> list:
    x, gamma, beta, moving_mean, moving_var = inputs
    axis = _bn_axis(p, x.ndim)
    axes = tuple(i for i in range(x.ndim) if i != axis)
    xa = x.astype(gamma.dtype, copy=False)
    if _bn_training(p, ctx):
        mean, var = xa.mean(axis=axes), xa.var(axis=axes)
        # MXNet updates the moving statistics with the biased batch variance.
        moving_mean *= p.momentum
        moving_mean += (1 - p.momentum) * mean
        moving_var *= p.momentum
        moving_var += (1 - p.momentum) * var
    else:
        mean, var = moving_mean.copy(), moving_var
    inv_std = _inv_std(var, p.eps, _bn_training(p, ctx))
    scale = inv_std if p.fix_gamma else inv_std * gamma
    out = (xa - _along(mean, axis, x.ndim)) * _along(scale, axis, x.ndim)
    out += _along(beta, axis, x.ndim)
    # The third output is the inverse standard deviation, as in MXNet's CPU kernel.
    return [out.astype(x.dtype, copy=False), mean, inv_std]


def _bn_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                 out_grads: list) -> list:
    x, gamma = inputs[0], inputs[1]
    if _bn_training(p, ctx):
        _, mean, inv_std = outputs   # the batch's statistics, as the forward computed
    else:   # the moving ones, also after a training forward (autograd's train_mode=False)
        mean, inv_std = inputs[3], _inv_std(inputs[4], p.eps, batch=False)
    axis = _bn_axis(p, x.ndim)
    axes = tuple(i for i in range(x.ndim) if i != axis)
    g = out_grads[0].astype(gamma.dtype, copy=False)
    inv_std_b = _along(inv_std, axis, x.ndim)
    xhat = (x.astype(gamma.dtype, copy=False) - _along(mean, axis, x.ndim)) * inv_std_b
    w = _along(np.ones_like(gamma) if p.fix_gamma else gamma, axis, x.ndim)
    if _bn_training(p, ctx):
        dx = _normalized_grad(g * w, xhat, inv_std_b, axes)
    else:
        dx = g * w * inv_std_b
    dgamma = np.zeros_like(gamma) if p.fix_gamma else _param_grad(g * xhat, axes, gamma)
    return [dx.astype(x.dtype, copy=False), dgamma, _param_grad(g, axes, gamma), None, None]


# Training reads the batch's statistics (outputs), predict mode the moving ones.
_BN_GRAD_READS = GradReads(("data", "gamma", "moving_mean", "moving_var"), ("mean", "var"))
_BN_COMMON = (
    Param("eps", "float", 1e-3, "Epsilon to prevent division by 0."),
    Param("momentum", "float", 0.9, "Momentum for the moving averages."),
    Param("fix_gamma", "bool", True, "Fix gamma at 1 (its gradient is 0)."),
    Param("use_global_stats", "bool", False, "Use the moving statistics in training "
          "too, making batch norm a scale-shift operator."),
    Param("output_mean_var", "bool", False, "Output the mean and inverse std."),
)
register(OpDef(
    name="BatchNorm",
    forward=_bn_forward,
    backward=_bn_backward,
    backward_reads=_BN_GRAD_READS,
    # The output may take the data's storage: training keeps the data (backward
    # reads it), so this saves memory where it is safe, in inference.
    inplace=((0, 0),),
    params=(
        *_BN_COMMON,
        Param("axis", "int", 1, "The channel axis."),
        Param("cudnn_off", "bool", False, "Ignored (cuDNN only)."),
        Param("min_calib_range", "float", None, "Calibrated minimum of the output, for "
              "quantization."),
        Param("max_calib_range", "float", None, "Calibrated maximum of the output, for "
              "quantization."),
    ),
    inputs=_BN_INPUTS,
    outputs=("output", "mean", "var"),
    visible_outputs=lambda p: 3 if p.output_mean_var else 1,
    aux=("moving_mean", "moving_var"),
    infer_shape=_bn_infer_shape,
    infer_type=_bn_infer_type,
    doc="""Batch normalization over every axis but `axis`.

    Training (without use_global_stats) uses the batch statistics and updates
    moving_mean / moving_var in place: moving = moving*momentum + batch*(1-momentum).
    """,
))


# -- SyncBatchNorm and BatchNormWithReLU -----------------------------------------------
# On one device SyncBatchNorm's statistics are BatchNorm's (ndev and key only name the
# devices to synchronize), so it runs BatchNorm's kernel. One difference stays: MXNet's
# hidden third output is the batch variance there, the inverse std here.

register(OpDef(
    name="_contrib_SyncBatchNorm", bfloat16="refuse",
    forward=_bn_forward, backward=_bn_backward,
    backward_reads=_BN_GRAD_READS,
    params=(
        *_BN_COMMON,
        Param("ndev", "int", 1, "The count of GPU devices"),
        Param("key", "str", doc="Hash key for synchronization, please set the same hash key "
              "for same layer, Block.prefix is typically used as in "
              ":class:`gluon.nn.contrib.SyncBatchNorm`."),
    ),
    inputs=_BN_INPUTS, outputs=("output", "mean", "var"),
    visible_outputs=lambda p: 3 if p.output_mean_var else 1,
    aux=("moving_mean", "moving_var"),
    infer_shape=_bn_infer_shape, infer_type=_bn_infer_type,
    doc="Batch normalization synchronized across devices (one device here: BatchNorm "
        "over every axis but 1).",
))


def _bn_relu_shape(p: Params, in_shapes: list, out_shapes: list):
    ins, outs = _bn_infer_shape(p, in_shapes, out_shapes[:3])
    return ins, [*outs, merge(out_shapes[3], outs[0])]  # the ReLU mask: the data's shape


def _bn_relu_type(p: Params, in_types: list, out_types: list):
    ins, outs = _bn_infer_type(p, in_types, out_types[:3])
    return ins, [*outs, merge_dtype(out_types[3], outs[1])]


def _bn_relu_forward(p: Params, ctx: OpContext, inputs: list) -> list:
    out, mean, inv_std = _bn_forward(p, ctx, inputs)
    mask = out > 0
    return [np.where(mask, out, out.dtype.type(0)), mean, inv_std, mask.astype(mean.dtype)]


def _bn_relu_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                      out_grads: list) -> list:
    through = out_grads[0] * outputs[3].astype(out_grads[0].dtype)  # ReLU passes where > 0
    return _bn_backward(p, ctx, inputs, outputs[:3], [through, *out_grads[1:3]])


register(OpDef(
    name="_contrib_BatchNormWithReLU",
    forward=_bn_relu_forward, backward=_bn_relu_backward,
    backward_reads=dataclasses.replace(_BN_GRAD_READS, outputs=("mean", "var", "workspace")),
    params=get_op("BatchNorm").params,
    inputs=_BN_INPUTS, outputs=("output", "mean", "var", "workspace"),
    visible_outputs=lambda p: 3 if p.output_mean_var else 1,
    aux=("moving_mean", "moving_var"),
    infer_shape=_bn_relu_shape, infer_type=_bn_relu_type,
    doc="BatchNorm followed by ReLU (MXNet's oneDNN fusion); the hidden workspace output "
        "is the ReLU's mask.",
))


# -- InstanceNorm ------------------------------------------------------------------

def _grouped_norm_shape(what: str, groups: Callable[[Params, tuple], int],
                        stats: tuple[str, str]) -> Callable:
    """Shape inference of InstanceNorm and GroupNorm: data (N, C, *spatial), gamma and
    beta (k,), the output data's shape, the statistics `stats` (N, k), for k groups of
    channels (``groups(p, data)``)."""
    def infer(p: Params, in_shapes: list, out_shapes: list):
        ins, outs = list(in_shapes), list(out_shapes)
        data = ins[0]
        if data is None:
            return ins, outs
        if len(data) < 3:
            raise ShapeError(f"{what}: data must have at least 3 dimensions, got {data}")
        k = groups(p, data)
        merge_at(ins, 1, (k,), "gamma")
        merge_at(ins, 2, (k,), "beta")
        merge_at(outs, 0, data, "output")
        for i, name in enumerate(stats, start=1):
            merge_at(outs, i, (data[0], k), name)
        return ins, outs
    return infer


def _instance_norm_forward(p: Params, ctx: OpContext, inputs: list) -> list:
    x, gamma, beta = inputs
    axes = tuple(range(2, x.ndim))
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(var + p.eps) * _along(gamma, 1, x.ndim) + _along(beta, 1, x.ndim)
    return [out.astype(x.dtype, copy=False), mean.reshape(x.shape[:2]), var.reshape(x.shape[:2])]


def _instance_norm_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                            out_grads: list) -> list:
    x, gamma, _ = inputs
    keep = x.shape[:2] + (1,) * (x.ndim - 2)
    mean, var = outputs[1].reshape(keep), outputs[2].reshape(keep)
    axes = tuple(range(2, x.ndim))
    g = out_grads[0]
    inv_std = 1.0 / np.sqrt(var + p.eps)
    xhat = (x - mean) * inv_std
    dx = _normalized_grad(g * _along(gamma, 1, x.ndim), xhat, inv_std, axes)
    outer = (0, *axes)
    return [dx, _param_grad(g * xhat, outer, gamma), _param_grad(g, outer, gamma)]


register(OpDef(
    name="InstanceNorm", bfloat16="refuse",
    forward=_instance_norm_forward,
    backward=_instance_norm_backward,
    backward_reads=GradReads(("data", "gamma"), ("mean", "var")),
    params=(Param("eps", "float", 1e-3, "An epsilon to prevent division by 0."),),
    inputs=("data", "gamma", "beta"),
    outputs=("output", "mean", "var"),
    visible_outputs=lambda p: 1,
    infer_shape=_grouped_norm_shape("InstanceNorm", lambda p, data: data[1], ("mean", "var")),
    doc="""Instance normalization: each (sample, channel) over its spatial axes.

    out = gamma * (x - mean) / sqrt(var + eps) + beta; data (N, C, *spatial), gamma/beta (C,).
    """,
))


# -- LayerNorm ---------------------------------------------------------------------

def _layer_norm_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    ins, outs = list(in_shapes), list(out_shapes)
    data = ins[0]
    if data is None:
        return ins, outs
    axis = _axis("LayerNorm", p.axis, len(data))
    merge_at(ins, 1, (data[axis],), "gamma")
    merge_at(ins, 2, (data[axis],), "beta")
    moments = tuple(1 if i == axis else d for i, d in enumerate(data))
    merge_at(outs, 0, data, "output")
    merge_at(outs, 1, moments, "mean")
    merge_at(outs, 2, moments, "std")
    return ins, outs


def _layer_norm_forward(p: Params, ctx: OpContext, inputs: list) -> list:
    x, gamma, beta = inputs
    axis = _axis("LayerNorm", p.axis, x.ndim)
    mean = x.mean(axis=axis, keepdims=True)
    std = np.sqrt(x.var(axis=axis, keepdims=True) + p.eps)
    out = (x - mean) / std * _along(gamma, axis, x.ndim) + _along(beta, axis, x.ndim)
    return [out.astype(x.dtype, copy=False), mean, std]


def _layer_norm_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                         out_grads: list) -> list:
    x, gamma, _ = inputs
    _, mean, std = outputs
    axis = _axis("LayerNorm", p.axis, x.ndim)
    g = out_grads[0]
    xhat = (x - mean) / std
    dx = _normalized_grad(g * _along(gamma, axis, x.ndim), xhat, 1.0 / std, (axis,))
    others = tuple(i for i in range(x.ndim) if i != axis)
    return [dx, _param_grad(g * xhat, others, gamma), _param_grad(g, others, gamma)]


register(OpDef(
    name="LayerNorm", bfloat16="refuse",
    forward=_layer_norm_forward,
    backward=_layer_norm_backward,
    backward_reads=GradReads(("data", "gamma"), ("mean", "std")),
    params=(
        Param("axis", "int", -1, "The axis to normalize over."),
        Param("eps", "float", 1e-5, "An epsilon to prevent division by 0."),
        Param("output_mean_var", "bool", False, "Output the mean and std along the axis."),
    ),
    inputs=("data", "gamma", "beta"),
    outputs=("output", "mean", "std"),
    visible_outputs=lambda p: 3 if p.output_mean_var else 1,
    infer_shape=_layer_norm_infer_shape,
    doc="""Layer normalization along `axis`: out = gamma * (x - mean) / std + beta,
    std = sqrt(var + eps); gamma/beta have the length of that axis.
    """,
))


# -- GroupNorm ---------------------------------------------------------------------

def _groups(p: Params, data: tuple) -> int:
    if p.num_groups < 1 or (data[1] and data[1] % p.num_groups):
        raise ShapeError(f"GroupNorm: num_groups={p.num_groups} does not divide the "
                         f"{data[1]} channels of data {data}")
    # MXNet 1.x scales and shifts each group, not each channel (MXNet 2 changed this).
    return p.num_groups


def _grouped(p: Params, a: np.ndarray) -> np.ndarray:
    """(N, C, *spatial) data as (N, num_groups, rest): statistics run along the last axis."""
    return a.reshape(a.shape[0], p.num_groups, -1)


def _group_norm_forward(p: Params, ctx: OpContext, inputs: list) -> list:
    x, gamma, beta = inputs
    xg = _grouped(p, x)
    mean = xg.mean(axis=2, keepdims=True)
    std = np.sqrt(xg.var(axis=2, keepdims=True) + p.eps)
    out = (xg - mean) / std * _along(gamma, 1, 3) + _along(beta, 1, 3)
    return [out.reshape(x.shape).astype(x.dtype, copy=False), mean[..., 0], std[..., 0]]


def _group_norm_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                         out_grads: list) -> list:
    x, gamma, _ = inputs
    mean, std = outputs[1][..., None], outputs[2][..., None]
    g = _grouped(p, out_grads[0])
    xhat = (_grouped(p, x) - mean) / std
    dx = _normalized_grad(g * _along(gamma, 1, 3), xhat, 1.0 / std, (2,))
    return [dx.reshape(x.shape), _param_grad(g * xhat, (0, 2), gamma),
            _param_grad(g, (0, 2), gamma)]


register(OpDef(
    name="GroupNorm", bfloat16="refuse",
    forward=_group_norm_forward,
    backward=_group_norm_backward,
    backward_reads=GradReads(("data", "gamma"), ("mean", "std")),
    params=(
        Param("num_groups", "int", 1, "Total number of groups."),
        Param("eps", "float", 1e-5, "An epsilon to prevent division by 0."),
        Param("output_mean_var", "bool", False, "Output the mean and std of each group."),
    ),
    inputs=("data", "gamma", "beta"),
    outputs=("output", "mean", "std"),
    visible_outputs=lambda p: 3 if p.output_mean_var else 1,
    infer_shape=_grouped_norm_shape("GroupNorm", _groups, ("mean", "std")),
    doc="""Group normalization: the channels of each sample split into num_groups
    groups, each normalized over its channels and positions; out = gamma * (x - mean)
    / std + beta, std = sqrt(var + eps), with gamma/beta of shape (num_groups,) as in
    MXNet 1.x.
    """,
))


# -- L2Normalization ---------------------------------------------------------------

def _l2_axes(mode: str, ndim: int) -> tuple[int, ...]:
    if mode != "instance" and ndim < 3:
        raise ShapeError(f"L2Normalization: mode={mode!r} needs at least 3-D data, "
                         f"got {ndim}-D")
    return {"instance": tuple(range(1, ndim)), "channel": (1,),
            "spatial": tuple(range(2, ndim))}[mode]


def _l2_norm_shape(mode: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The `norm` output's shape: (N,), (N, 1, *spatial) or (N, C)."""
    axes = _l2_axes(mode, len(shape))
    if mode == "channel":
        return kept_shape(axes, shape)
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _l2_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    ins, outs = list(in_shapes), list(out_shapes)
    if ins[0] is None:
        return ins, outs
    merge_at(outs, 0, ins[0], "output")
    merge_at(outs, 1, _l2_norm_shape(p.mode, ins[0]), "norm")
    return ins, outs


def _l2_forward(p: Params, ctx: OpContext, inputs: list) -> list:
    x = inputs[0]
    axes = _l2_axes(p.mode, x.ndim)
    norm = np.sqrt((x * x).sum(axis=axes, keepdims=True) + p.eps)
    return [x / norm, norm.reshape(_l2_norm_shape(p.mode, x.shape))]


def _l2_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                 out_grads: list) -> list:
    y, norm = outputs
    axes = _l2_axes(p.mode, y.ndim)
    norm = norm.reshape(kept_shape(axes, y.shape))
    g = out_grads[0]
    return [(g - y * (g * y).sum(axis=axes, keepdims=True)) / norm]


register(OpDef(
    name="L2Normalization", bfloat16="refuse",
    forward=_l2_forward,
    backward=_l2_backward,
    backward_reads=GradReads(outputs=("output", "norm")),
    params=(
        Param("eps", "float", 1e-10, "Epsilon to prevent division by 0."),
        Param("mode", "str", "instance", "instance: one norm per sample; channel: across "
              "channels at each position; spatial: one norm per channel.",
              choices=("channel", "instance", "spatial")),
    ),
    outputs=("output", "norm"),
    visible_outputs=lambda p: 1,
    infer_shape=_l2_infer_shape,
    doc="""Normalize the input by its L2 norm: out = x / sqrt(sum(x**2) + eps).""",
))


# -- LRN ---------------------------------------------------------------------------

def _channel_window_sum(a: np.ndarray, nsize: int) -> np.ndarray:
    """Sum over the `nsize` channels centred on each channel (zeros past the ends)."""
    half = nsize // 2
    padded = np.pad(a, [(0, 0), (half, half)] + [(0, 0)] * (a.ndim - 2))
    return np.lib.stride_tricks.sliding_window_view(padded, nsize, axis=1).sum(axis=-1)


def _lrn_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    # Checked here, so that a bind refuses it on every path (oneDNN would run an
    # even window, off centre; MXNet's CPU kernel refuses it, its MKLDNN path not).
    if p.nsize < 1 or p.nsize % 2 == 0:
        raise OperatorError(f"LRN: nsize={p.nsize} must be odd")
    return same_shape(p, in_shapes, out_shapes)


def _lrn_forward(p: Params, ctx: OpContext, inputs: list) -> list:
    x = inputs[0]
    norm = p.knorm + (p.alpha / p.nsize) * _channel_window_sum(x * x, p.nsize)
    return [x * norm ** -p.beta, norm.astype(x.dtype, copy=False)]


def _lrn_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                  out_grads: list) -> list:
    x, norm, g = inputs[0], outputs[1], out_grads[0]
    # Each input's square enters the norm of every channel in its window.
    cross = _channel_window_sum(g * x * norm ** (-p.beta - 1), p.nsize)
    return [g * norm ** -p.beta - (2 * p.beta * p.alpha / p.nsize) * cross * x]


register(OpDef(
    name="LRN",
    forward=_lrn_forward,
    infer_shape=_lrn_infer_shape,
    backward=_lrn_backward,
    backward_reads=GradReads(("data",), ("tmp_norm",)),
    params=(
        Param("alpha", "float", 1e-4, "The variance scaling parameter alpha."),
        Param("beta", "float", 0.75, "The power parameter beta."),
        Param("knorm", "float", 2.0, "The parameter k."),
        Param("nsize", "int", doc="Normalization window width in channels (odd)."),
    ),
    outputs=("output", "tmp_norm"),
    visible_outputs=lambda p: 1,
    doc="""Local response normalization across channels:
    out = x / (knorm + alpha/nsize * sum of x**2 over nsize channels) ** beta.
    """,
))
