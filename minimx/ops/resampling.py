"""Separable resampling of (N, C, H, W) maps: _contrib_BilinearResize2D and
_contrib_AdaptiveAvgPooling2D, as MXNet 1.9's src/operator/contrib/bilinear_resize
and adaptive_avg_pooling compute them.

Both are linear maps that act on rows and columns independently: the output is
``Wh @ x @ Ww.T`` for a (out_h, H) and a (out_w, W) weight matrix, and the
gradient is the transposed product.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, merge
from .registry import GradReads, OpDef, Param, Params, register

Array = np.ndarray
_F32 = np.float32


def separable(x: Array, rows: Array, cols: Array) -> Array:
    """``rows @ x @ cols.T`` for every (n, c) map."""
    return (rows.astype(x.dtype) @ x @ cols.T.astype(x.dtype)).astype(x.dtype, copy=False)


def separable_grad(grad: Array, rows: Array, cols: Array) -> Array:
    """The adjoint map: ``rows.T @ grad @ cols``."""
    return (rows.T.astype(grad.dtype) @ grad @ cols.astype(grad.dtype)).astype(
        grad.dtype, copy=False)


def _check_4d(what: str, shape: Dims) -> None:
    if len(shape) != 4:
        raise ShapeError(f"{what}: data must be 4-D (N, C, H, W), got {shape}")


# -- BilinearResize2D --------------------------------------------------------------------------

RESIZE_MODES = ("size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down",
                "to_odd_up")


def _scaled(p: Params, name: str, size: int) -> int:
    scale = getattr(p, name)
    if scale is None:
        raise OperatorError(f"BilinearResize2D: mode={p.mode} needs {name}")
    return int(_F32(scale) * _F32(size))


def _odd_scaled(p: Params, name: str, size: int) -> int:
    """Mode odd_scale: an odd size keeps its last pixel, (size - 1) * scale + 1."""
    if not size:
        return 0
    return _scaled(p, name, size) if size % 2 == 0 else _scaled(p, name, size - 1) + 1


def _parity(size: int, even: bool, up: bool) -> int:
    if size % 2 == (0 if even else 1):
        return size
    return size + 1 if up else size - 1


def _resize_dims(p: Params, dshape: Dims, like: Dims | None) -> tuple[int, int]:
    """MXNet's BilinearSampleOpInferShape. In mode 'size' the width follows scale_width
    only when scale_height is given, as MXNet's code reads."""
    h, w = dshape[2:]
    if p.mode == "size":
        if p.scale_height is None:
            return p.height, p.width
        return _scaled(p, "scale_height", h), _scaled(p, "scale_width", w)
    if p.mode == "odd_scale":
        return _odd_scaled(p, "scale_height", h), _odd_scaled(p, "scale_width", w)
    if p.mode == "like":
        assert like is not None
        if len(like) != 4:
            raise ShapeError(f"BilinearResize2D: like must be 4-D, got {like}")
        return like[2], like[3]
    even, up = p.mode.startswith("to_even"), p.mode.endswith("up")
    return h and _parity(h, even, up), w and _parity(w, even, up)


def _resize_inputs(p: Params) -> tuple[str, ...]:
    return ("data", "like") if p.mode == "like" else ("data",)


def _resize_shape(p, in_shapes, out_shapes):
    dshape = in_shapes[0]
    like = in_shapes[1] if p.mode == "like" else None
    if dshape is None or (p.mode == "like" and like is None):
        return in_shapes, out_shapes
    _check_4d("BilinearResize2D", dshape)
    oshape = dshape[:2] + tuple(_resize_dims(p, dshape, like))
    return in_shapes, [merge(out_shapes[0], oshape)]


def _interpolation(size: int, out: int, align_corners: bool) -> Array:
    """(out, size) weights of MXNet's SpatialUpSamplingBilinearUpdateOutput along one axis
    (source positions in float32, as MXNet computes them)."""
    if out > 1:
        scale = _F32(size - 1) / _F32(out - 1) if align_corners else _F32(size) / _F32(out)
    else:
        scale = _F32(0)
    dst = np.arange(out)
    if align_corners:
        src = scale * dst.astype(_F32)
    else:  # computed in double, stored as float; negative positions clamp to 0
        src = np.maximum(float(scale) * (dst + 0.5) - 0.5, 0).astype(_F32)
    low = src.astype(np.int64)
    step = (low < size - 1).astype(np.int64)
    frac = src - low.astype(_F32)
    weights = np.zeros((out, size), _F32)
    np.add.at(weights, (dst, low), _F32(1) - frac)
    np.add.at(weights, (dst, low + step), frac)
    return weights


def _resize_weights(p: Params, data_shape: Dims, out_hw: tuple[int, int]) -> tuple[Array, Array]:
    (h, w), (oh, ow) = data_shape[2:], out_hw
    return (_interpolation(h, oh, p.align_corners), _interpolation(w, ow, p.align_corners))


def _resize_forward(p, ctx, inputs):
    data = inputs[0]
    _check_4d("BilinearResize2D", data.shape)
    like = inputs[1].shape if p.mode == "like" else None
    out_hw = _resize_dims(p, data.shape, like)
    if min(out_hw) <= 0:
        raise ShapeError(f"BilinearResize2D: output size {out_hw} for input {data.shape}")
    return separable(data, *_resize_weights(p, data.shape, out_hw))


def _resize_backward(p, ctx, inputs, outputs, out_grads):
    grad = out_grads[0]
    rows, cols = _resize_weights(p, inputs[0].shape, grad.shape[2:])
    grads = [separable_grad(grad, rows, cols)]
    if p.mode == "like":
        grads.append(np.zeros(inputs[1].shape, inputs[1].dtype))
    return grads


register(OpDef(
    name="_contrib_BilinearResize2D", inputs=_resize_inputs,
    doc="Bilinear resizing of (N, C, H, W) data to a size, a scale, another array's size "
        "(mode 'like') or the nearest even/odd size.",
    params=(
        Param("height", "int", 1, "output height (ignored if scale_height is defined or mode "
              "is not 'size')"),
        Param("width", "int", 1, "output width (ignored if scale_height is defined or mode is "
              "not 'size')"),
        Param("scale_height", "float", None,
              "sampling scale of the height (modes 'size' and 'odd_scale')"),
        Param("scale_width", "float", None,
              "sampling scale of the width (modes 'size' and 'odd_scale')"),
        Param("mode", "str", "size", "resizing mode", choices=RESIZE_MODES),
        Param("align_corners", "bool", True, "Whether the corner pixels of input and output "
              "are aligned (MXNet's default) or the whole range is scaled."),
    ),
    forward=_resize_forward, backward=_resize_backward, backward_reads=GradReads(),
    infer_shape=_resize_shape,
))


# -- AdaptiveAvgPooling2D ----------------------------------------------------------------------

def _pool_size(p: Params) -> tuple[int, int]:
    size = p.output_size
    if len(size) == 1:
        return size[0], size[0]
    if len(size) == 2:
        return size
    return 1, 1  # MXNet's default for () and for longer tuples


def _averaging(size: int, out: int) -> Array:
    """(out, size) weights: output i averages [floor(i*size/out), ceil((i+1)*size/out))."""
    weights = np.zeros((out, size), _F32)
    for i in range(out):
        start = math.floor(_F32(i * size) / _F32(out))
        end = math.ceil(_F32((i + 1) * size) / _F32(out))
        weights[i, start:end] = _F32(1) / _F32(end - start)
    return weights


def _adaptive_weights(p: Params, data_shape: Dims) -> tuple[Array, Array]:
    oh, ow = _pool_size(p)
    return _averaging(data_shape[2], oh), _averaging(data_shape[3], ow)


def _adaptive_shape(p, in_shapes, out_shapes):
    dshape = in_shapes[0]
    if dshape is None:
        return in_shapes, out_shapes
    _check_4d("AdaptiveAvgPooling2D", dshape)
    if min(_pool_size(p)) <= 0:
        raise ShapeError(f"AdaptiveAvgPooling2D: output_size {p.output_size} must be positive")
    return in_shapes, [merge(out_shapes[0], dshape[:2] + _pool_size(p))]


def _adaptive_forward(p, ctx, inputs):
    data = inputs[0]
    _adaptive_shape(p, [data.shape], [None])
    return separable(data, *_adaptive_weights(p, data.shape))


def _adaptive_backward(p, ctx, inputs, outputs, out_grads):
    return [separable_grad(out_grads[0], *_adaptive_weights(p, inputs[0].shape))]


register(OpDef(
    name="_contrib_AdaptiveAvgPooling2D",
    doc="Average pooling of (N, C, H, W) data to a fixed output size, each output cell "
        "averaging the input window it covers.",
    params=(Param("output_size", "shape", (), "int (output size) or a tuple of int for "
                  "output (height, width)."),),
    forward=_adaptive_forward, backward=_adaptive_backward, backward_reads=GradReads(),
    infer_shape=_adaptive_shape,
    named_inputs=False,
))


# The two weight matrices of each separable operator's node, from its parameters, data
# shape and output shape: what `separable` applies (the DNNL backend lowers the same
# maps onto oneDNN matmuls).
SEPARABLE_WEIGHTS = {
    "_contrib_BilinearResize2D": lambda p, data, out: _resize_weights(p, data, out[2:]),
    "_contrib_AdaptiveAvgPooling2D": lambda p, data, out: _adaptive_weights(p, data),
}
