"""Correlation (FlowNet's correlation layer), as MXNet 1.9.1's
src/operator/correlation.cc computes it on the CPU.

Both inputs are padded and moved to channels-last; those copies are MXNet's
hidden outputs tmp1 and tmp2, which backward reads. Output channel q compares
each kernel_size x kernel_size patch of data1 (patches stride1 apart) with the
patch of data2 displaced by the q-th offset of a (2r+1) x (2r+1) neighbourhood,
r = max_displacement // stride2, offsets stride2 apart, row-major: the mean over
patch and channels of the products (is_multiply) or of the absolute differences.
The kernels loop over displacements and patch offsets; each step is one
vectorized product over batch, positions and channels.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, merge
from .registry import GradReads, OpDef, Param, Params, register

Array = np.ndarray


class _Geometry(NamedTuple):
    height: int      # output rows and columns
    width: int
    radius: int      # neighbourhood radius, in stride2 steps

    @property
    def channels(self) -> int:
        return (2 * self.radius + 1) ** 2


def _geometry(p: Params, shape: Dims) -> _Geometry:
    """MXNet's CorrelationProp::InferShape, with its silent failures refused."""
    if p.kernel_size % 2 == 0:
        raise OperatorError(f"Correlation: kernel_size={p.kernel_size} must be odd")
    if p.stride1 < 1 or p.stride2 < 1:
        raise OperatorError(f"Correlation: stride1={p.stride1} and stride2={p.stride2} must "
                            "be positive")
    if min(p.max_displacement, p.pad_size) < 0:
        raise OperatorError(f"Correlation: max_displacement={p.max_displacement} and "
                            f"pad_size={p.pad_size} must not be negative")
    border = p.max_displacement + (p.kernel_size - 1) // 2
    height, width = (-(-(d + 2 * p.pad_size - 2 * border) // p.stride1) for d in shape[2:])
    if min(height, width) < 1:
        raise ShapeError(f"Correlation: data {shape} padded by {p.pad_size} is too small for "
                         f"kernel_size={p.kernel_size} and max_displacement="
                         f"{p.max_displacement}")
    return _Geometry(height, width, p.max_displacement // p.stride2)


def _shape(p, in_shapes, out_shapes):
    try:
        dshape = merge(*in_shapes)
    except ShapeError as exc:
        raise ShapeError(f"Correlation: data1 and data2 must have one shape: {exc}") from None
    if dshape is None:
        return in_shapes, out_shapes
    if len(dshape) != 4:
        raise ShapeError(f"Correlation: data must be 4-D (N, C, H, W), got {dshape}")
    if not all(dshape):
        return [dshape, dshape], out_shapes
    geo = _geometry(p, dshape)
    n, c, h, w = dshape
    padded = (n, h + 2 * p.pad_size, w + 2 * p.pad_size, c)
    shapes = [(n, geo.channels, geo.height, geo.width), padded, padded]
    return [dshape, dshape], [merge(o, s) for o, s in zip(out_shapes, shapes, strict=True)]


def _steps(p: Params, geo: _Geometry) -> Iterator[tuple[int, tuple[slice, slice],
                                                        tuple[slice, slice]]]:
    """(output channel, the data1 rows and columns, the data2 rows and columns) for
    every displacement and every offset inside the patch, as strided slices of the
    padded channels-last copies."""
    def span(start: int, count: int) -> slice:
        return slice(start, start + p.stride1 * (count - 1) + 1, p.stride1)

    side = 2 * geo.radius + 1
    for q in range(geo.channels):
        dy, dx = ((q // side - geo.radius) * p.stride2, (q % side - geo.radius) * p.stride2)
        for i in range(p.kernel_size):
            for j in range(p.kernel_size):
                y, x = p.max_displacement + i, p.max_displacement + j
                yield (q, (span(y, geo.height), span(x, geo.width)),
                       (span(y + dy, geo.height), span(x + dx, geo.width)))


def _forward(p, ctx, inputs):
    data1, data2 = inputs
    _shape(p, [data1.shape, data2.shape], [None] * 3)
    geo = _geometry(p, data1.shape)
    pad = ((0, 0), (p.pad_size, p.pad_size), (p.pad_size, p.pad_size), (0, 0))
    tmp1, tmp2 = (np.pad(d.transpose(0, 2, 3, 1), pad) for d in (data1, data2))
    a_all, b_all = tmp1.astype(np.float64), tmp2.astype(np.float64)
    out = np.zeros((len(data1), geo.channels, geo.height, geo.width))
    for q, (r1, c1), (r2, c2) in _steps(p, geo):
        a, b = a_all[:, r1, c1], b_all[:, r2, c2]
        out[:, q] += (np.einsum("nhwc,nhwc->nhw", a, b) if p.is_multiply
                      else np.abs(a - b).sum(axis=-1))
    out /= p.kernel_size ** 2 * data1.shape[1]
    return [out.astype(data1.dtype), tmp1, tmp2]


def _backward(p, ctx, inputs, outputs, out_grads):
    shape, dtype = inputs[0].shape, inputs[0].dtype
    geo = _geometry(p, shape)
    a_all, b_all = (t.astype(np.float64) for t in outputs[1:])
    g1, g2 = np.zeros_like(a_all), np.zeros_like(b_all)
    g = out_grads[0][..., None] / (p.kernel_size ** 2 * shape[1])
    for q, (r1, c1), (r2, c2) in _steps(p, geo):
        a, b = a_all[:, r1, c1], b_all[:, r2, c2]
        if p.is_multiply:
            g1[:, r1, c1] += g[:, q] * b
            g2[:, r2, c2] += g[:, q] * a
        else:  # a tie sends +1 to data1 and -1 to data2, as MXNet's
            sign = np.where(a >= b, 1.0, -1.0)
            g1[:, r1, c1] += g[:, q] * sign
            g2[:, r2, c2] -= g[:, q] * sign
    h, w, pad = shape[2], shape[3], p.pad_size
    return [gp[:, pad:pad + h, pad:pad + w].transpose(0, 3, 1, 2).astype(dtype)
            for gp in (g1, g2)]


register(OpDef(
    name="Correlation", inputs=("data1", "data2"), outputs=("output", "tmp1", "tmp2"),
    visible_outputs=lambda p: 1,
    doc="Correlation of two (N, C, H, W) feature maps (FlowNet's): for each patch of "
        "data1, its mean product (or mean absolute difference) with the patches of data2 "
        "in a neighbourhood, one output channel per displacement.",
    params=(Param("kernel_size", "int", 1, "kernel size for Correlation must be an odd "
                  "number"),
            Param("max_displacement", "int", 1, "Max displacement of Correlation"),
            Param("stride1", "int", 1, "stride1 quantize data1 globally"),
            Param("stride2", "int", 1, "stride2 quantize data2 within the neighborhood "
                  "centered around data1"),
            Param("pad_size", "int", 0, "pad for Correlation"),
            Param("is_multiply", "bool", True, "operation type is either multiplication or "
                  "subduction")),
    forward=_forward, backward=_backward,
    backward_reads=GradReads(outputs=("tmp1", "tmp2")),
    infer_shape=_shape, bfloat16="refuse",
))
