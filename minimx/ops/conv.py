"""Convolution and Deconvolution (MXNet 1.9 parameters), channel-first layouts.

Convolution is im2col on a strided view of the padded input (`window.windows`,
no copy until the one `ascontiguousarray`) followed by one matmul per group,
batched over groups by `np.matmul`. Columns are laid out
``(groups, C/groups * prod(kernel), N * prod(out))`` so that each group is a
single large GEMM and the weight gradient is one more. The data gradient is
the transposed product scattered back with `window.col2im`; Deconvolution is
exactly that data gradient run forwards, and its gradients are a convolution
and a weight gradient with the roles of data and output swapped.

The batch is processed in chunks whose column buffer fits in `workspace` MB,
which is what MXNet's parameter means when cuDNN is not used.
"""
from __future__ import annotations

from dataclasses import replace
from math import prod

import numpy as np

from ..base import OperatorError, ShapeError
from .bias import add_bias, inputs_with_bias, with_bias_grad
from .infer import merge_at
from .registry import GradReads, OpContext, OpDef, Param, Params, register
from .window import Window, col2im, crop_spatial, kernel_first, make_window, pad_spatial, windows

_LAYOUTS = ("NCW", "NCHW", "NCDHW", "NHWC", "NDHWC")
_CHANNEL_FIRST = ("NCW", "NCHW", "NCDHW")


def _shared_params(workspace: int, no_bias: bool) -> tuple[Param, ...]:
    return (
        Param("num_filter", "int", doc="Number of output channels."),
        Param("num_group", "int", 1, "Number of groups the channels are split into."),
        Param("workspace", "int", workspace, "Maximum temporary workspace (MB); bounds the "
              "number of samples per im2col batch."),
        Param("no_bias", "bool", no_bias, "Whether to disable the bias parameter."),
        Param("cudnn_tune", "str", None, "Ignored (cuDNN only).",
              choices=("off", "limited_workspace", "fastest")),
        Param("cudnn_off", "bool", False, "Ignored (cuDNN only)."),
        Param("layout", "str", None, "NCW, NCHW or NCDHW (the default for the kernel's "
              "dimension); channel-last layouts are GPU-only in MXNet.", choices=_LAYOUTS),
    )


KERNEL_PARAMS = (
    Param("kernel", "shape", doc="Kernel size: (w,), (h, w) or (d, h, w)."),
    Param("stride", "shape", (), "Stride per spatial axis; defaults to 1."),
    Param("dilate", "shape", (), "Dilation per spatial axis; defaults to 1."),
    Param("pad", "shape", (), "Zero padding per spatial axis; defaults to 0."),
)


def conv_window(p: Params, op: str, max_ndim: int) -> Window:
    """The operator's Window, after the checks MXNet's parameter parser makes."""
    nd = len(p.kernel)
    if not 1 <= nd <= max_ndim:
        raise OperatorError(f"{op}: kernel={p.kernel} must have 1 to {max_ndim} dimensions")
    if p.layout is not None and p.layout != _CHANNEL_FIRST[nd - 1]:
        raise OperatorError(f"{op}: layout={p.layout} is not supported for a {nd}-D kernel "
                            f"(only {_CHANNEL_FIRST[nd - 1]})")
    if p.num_filter < 1 or p.num_group < 1 or p.num_filter % p.num_group:
        raise OperatorError(f"{op}: num_filter={p.num_filter} must be a positive multiple "
                            f"of num_group={p.num_group}")
    return make_window(op, p.kernel, p.stride, p.dilate, p.pad)


def _check_data(op: str, data: tuple[int, ...], win: Window, groups: int) -> None:
    if len(data) != win.ndim + 2:
        raise ShapeError(f"{op}: data must be {win.ndim + 2}-D (batch, channel, "
                         f"*spatial) for kernel={win.kernel}, got shape {data}")
    if data[1] % groups:
        raise ShapeError(f"{op}: input channels {data[1]} (data shape {data}) are not "
                         f"divisible by num_group={groups}")


# -- the numerical core, shared by both operators ------------------------------

def batch_chunks(n: int, bytes_per_sample: int, workspace_mb: int) -> list[slice]:
    step = max(1, (workspace_mb << 20) // max(bytes_per_sample, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


def _columns(x: np.ndarray, win: Window, out: tuple[int, ...], groups: int) -> np.ndarray:
    """im2col: ``(groups, C/groups * prod(kernel), N * prod(out))``, one copy of the view."""
    view = kernel_first(windows(pad_spatial(x, win.pad, win.pad), win, out), win.ndim)
    # (N, C, *kernel, *out) -> (C, *kernel, N, *out): batch joins the GEMM's long side.
    cols = np.ascontiguousarray(np.moveaxis(view, 0, 1 + win.ndim))
    return cols.reshape(groups, -1, x.shape[0] * prod(out))


def grouped(y: np.ndarray, groups: int) -> np.ndarray:
    """``(N, F, *out)`` -> ``(groups, F/groups, N * prod(out))``, pairing with `_columns`."""
    return np.moveaxis(y, 0, 1).reshape(groups, y.shape[1] // groups, -1)


def ungrouped(yg: np.ndarray, n: int, out: tuple[int, ...]) -> np.ndarray:
    """Inverse of `grouped`."""
    return np.moveaxis(yg.reshape(-1, n, *out), 1, 0)


def conv_forward(x: np.ndarray, w: np.ndarray, win: Window, groups: int,
                 workspace_mb: int) -> np.ndarray:
    """Grouped N-d convolution of ``x (N, C, *in)`` with ``w (F, C/groups, *kernel)``."""
    out = tuple(win.out_size(s, i) for i, s in enumerate(x.shape[2:]))
    wg = w.reshape(groups, w.shape[0] // groups, -1)
    y = np.empty((x.shape[0], w.shape[0], *out), dtype=x.dtype)
    per_sample = x.shape[1] * prod(win.kernel) * prod(out) * x.itemsize
    for chunk in batch_chunks(x.shape[0], per_sample, workspace_mb):
        cols = _columns(x[chunk], win, out, groups)
        y[chunk] = ungrouped(np.matmul(wg, cols), cols.shape[2] // prod(out), out)
    return y


def conv_backward_data(dy: np.ndarray, w: np.ndarray, x_shape: tuple[int, ...], win: Window,
                       groups: int, workspace_mb: int) -> np.ndarray:
    """Gradient of `conv_forward` with respect to its data, for an output gradient `dy`."""
    n, c = x_shape[:2]
    out = dy.shape[2:]
    wt = w.reshape(groups, w.shape[0] // groups, -1).transpose(0, 2, 1)
    padded = tuple(s + 2 * p for s, p in zip(x_shape[2:], win.pad, strict=True))
    dx = np.empty(x_shape, dtype=dy.dtype)
    per_sample = c * prod(win.kernel) * prod(out) * dy.itemsize
    for chunk in batch_chunks(n, per_sample, workspace_mb):
        dcols = np.matmul(wt, grouped(dy[chunk], groups))
        nb = dcols.shape[2] // prod(out)
        # (C, *kernel, nb, *out) -> (nb, C, *kernel, *out), the layout col2im takes.
        dcols = np.moveaxis(dcols.reshape(c, *win.kernel, nb, *out), 1 + win.ndim, 0)
        dx[chunk] = crop_spatial(col2im(dcols, (nb, c, *padded), win), win.pad, x_shape[2:])
    return dx


def conv_backward_weight(x: np.ndarray, dy: np.ndarray, w_shape: tuple[int, ...], win: Window,
                         groups: int, workspace_mb: int) -> np.ndarray:
    """Gradient of `conv_forward` with respect to its weight."""
    out = dy.shape[2:]
    dw = np.zeros((groups, w_shape[0] // groups, prod(w_shape[1:])), dtype=dy.dtype)
    per_sample = x.shape[1] * prod(win.kernel) * prod(out) * x.itemsize
    for chunk in batch_chunks(x.shape[0], per_sample, workspace_mb):
        cols = _columns(x[chunk], win, out, groups)
        dw += np.matmul(grouped(dy[chunk], groups), cols.transpose(0, 2, 1))
    return dw.reshape(w_shape)


# -- Convolution ---------------------------------------------------------------

def _conv_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    win = conv_window(p, "Convolution", 3)
    ins, outs = list(in_shapes), list(out_shapes)
    if ins[0] is None:
        return ins, outs
    _check_data("Convolution", ins[0], win, p.num_group)
    n, c, *spatial = ins[0]
    merge_at(ins, 1, (p.num_filter, c // p.num_group, *win.kernel), "weight")
    if not p.no_bias:
        merge_at(ins, 2, (p.num_filter,), "bias")
    for i, s in enumerate(spatial):
        if s and win.span(i) > s + 2 * win.pad[i]:
            raise ShapeError(f"Convolution: dilated kernel size {win.span(i)} exceeds input "
                             f"size {s} padded to {s + 2 * win.pad[i]} (data shape {ins[0]})")
    out = (n, p.num_filter, *(win.out_size(s, i) if s else 0 for i, s in enumerate(spatial)))
    merge_at(outs, 0, out, "output")
    # As MXNet: the batch, and the spatial sizes where the stride is 1, follow from the output.
    o = outs[0]

    def input_size(i: int) -> int:
        size = o[2 + i] + win.span(i) - 1 - 2 * win.pad[i]
        return size if o[2 + i] and win.stride[i] == 1 and size > 0 else 0

    merge_at(ins, 0, (o[0], c, *map(input_size, range(win.ndim))), "data")
    return ins, outs


def _conv_forward(p: Params, ctx: OpContext, inputs: list) -> np.ndarray:
    x, w = inputs[0], inputs[1]
    win = conv_window(p, "Convolution", 3)
    y = conv_forward(x, w, win, p.num_group, p.workspace)
    return add_bias(p, y, inputs)


def _conv_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                   out_grads: list) -> list:
    x, w = inputs[0], inputs[1]
    dy = out_grads[0]
    win = conv_window(p, "Convolution", 3)
    grads = [conv_backward_data(dy, w, x.shape, win, p.num_group, p.workspace),
             conv_backward_weight(x, dy, w.shape, win, p.num_group, p.workspace)]
    return with_bias_grad(p, grads, dy)


register(OpDef(
    name="Convolution",
    forward=_conv_forward,
    backward=_conv_backward,
    backward_reads=GradReads(("data", "weight")),
    params=KERNEL_PARAMS + _shared_params(workspace=1024, no_bias=False),
    inputs=inputs_with_bias,
    infer_shape=_conv_infer_shape,
    doc="""Compute N-d (1-D, 2-D or 3-D) convolution on channel-first data.

    data (batch, channel, *spatial), weight (num_filter, channel/num_group, *kernel),
    bias (num_filter,); out_size = floor((size + 2*pad - dilate*(kernel-1) - 1)/stride) + 1.
    """,
))


# -- Deconvolution -------------------------------------------------------------

def _deconv_geometry(p: Params, spatial: tuple[int, ...]) -> tuple[Window, tuple[int, ...]]:
    """(Window with the effective pad, adj) - derived from target_shape when it is set.

    As MXNet's InferPad: with a target size T and full size F = stride*(in-1) + span,
    pad = ceil((F - T) / 2) and adj = (F - T) % 2, so that F - 2*pad + adj == T.
    """
    win = conv_window(p, "Deconvolution", 3)
    adj = p.adj or (0,) * win.ndim
    if len(adj) != win.ndim or (p.target_shape and len(p.target_shape) != win.ndim):
        raise OperatorError(f"Deconvolution: adj={p.adj} and target_shape={p.target_shape} "
                            f"must have as many dimensions as kernel={p.kernel}")
    if any(p.target_shape):
        pad, adj = list(win.pad), list(adj)
        for i, (size, target) in enumerate(zip(spatial, p.target_shape, strict=True)):
            if not size:
                continue
            full = win.stride[i] * (size - 1) + win.span(i)
            if full < target:
                raise ShapeError(f"Deconvolution: target_shape={p.target_shape} is too big for "
                                 f"input size {size} (at most {full} on axis {i})")
            pad[i], adj[i] = (full - target + 1) // 2, (full - target) % 2
        win, adj = replace(win, pad=tuple(pad)), tuple(adj)
    for i, a in enumerate(adj):
        if a >= win.stride[i]:
            raise ShapeError(f"Deconvolution: adj {a} on axis {i} must be smaller than "
                             f"stride={win.stride}")
    return win, adj


def _deconv_out_size(win: Window, adj: tuple[int, ...], size: int, axis: int) -> int:
    return win.stride[axis] * (size - 1) + win.span(axis) - 2 * win.pad[axis] + adj[axis]


def _deconv_infer_shape(p: Params, in_shapes: list, out_shapes: list):
    ins, outs = list(in_shapes), list(out_shapes)
    if ins[0] is None:
        return ins, outs
    _check_data("Deconvolution", ins[0], conv_window(p, "Deconvolution", 3), p.num_group)
    n, c, *spatial = ins[0]
    win, adj = _deconv_geometry(p, tuple(spatial))
    merge_at(ins, 1, (c, p.num_filter // p.num_group, *win.kernel), "weight")
    if not p.no_bias:
        merge_at(ins, 2, (p.num_filter,), "bias")
    out = tuple(_deconv_out_size(win, adj, s, i) if s else 0 for i, s in enumerate(spatial))
    for i, (o, target) in enumerate(zip(out, p.target_shape or (0,) * win.ndim, strict=True)):
        if o and target and o != target:
            raise ShapeError(f"Deconvolution: output size {o} on axis {i} does not match "
                             f"target_shape={p.target_shape}")
        if spatial[i] and o < 1:
            raise ShapeError(f"Deconvolution: output size {o} on axis {i} is not positive "
                             f"(data shape {ins[0]}, pad={win.pad})")
    merge_at(outs, 0, (n, p.num_filter, *out), "output")
    merge_at(ins, 0, (outs[0][0], c, *spatial), "data")
    return ins, outs


def _deconv_forward(p: Params, ctx: OpContext, inputs: list) -> np.ndarray:
    x, w = inputs[0], inputs[1]
    win, adj = _deconv_geometry(p, x.shape[2:])
    out = tuple(_deconv_out_size(win, adj, s, i) for i, s in enumerate(x.shape[2:]))
    y = conv_backward_data(x, w, (x.shape[0], p.num_filter, *out), win, p.num_group,
                           p.workspace)
    return add_bias(p, y, inputs)


def _deconv_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                     out_grads: list) -> list:
    x, w = inputs[0], inputs[1]
    dy = out_grads[0]
    win, _ = _deconv_geometry(p, x.shape[2:])
    # Deconvolution is the data gradient of a convolution from its output (F channels)
    # to its input (C channels); its own gradients swap the roles back.
    grads = [conv_forward(dy, w, win, p.num_group, p.workspace),
             conv_backward_weight(dy, x, w.shape, win, p.num_group, p.workspace)]
    return with_bias_grad(p, grads, dy)


register(OpDef(
    name="Deconvolution",
    forward=_deconv_forward,
    backward=_deconv_backward,
    backward_reads=GradReads(("data", "weight")),
    params=KERNEL_PARAMS + (
        Param("adj", "shape", (), "Adjustment added to the output size (less than stride); "
              "ignored when target_shape is set."),
        Param("target_shape", "shape", (), "Output spatial shape; when set, pad and adj are "
              "derived from it."),
    ) + _shared_params(workspace=512, no_bias=True),
    inputs=inputs_with_bias,
    infer_shape=_deconv_infer_shape,
    doc="""Compute 1-D, 2-D or 3-D transposed convolution (the gradient of Convolution).

    data (batch, channel, *spatial), weight (channel, num_filter/num_group, *kernel);
    out_size = stride*(size-1) + dilate*(kernel-1) + 1 - 2*pad + adj.
    """,
))
