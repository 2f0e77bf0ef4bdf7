"""MXNet's `im2col` and `col2im` (src/operator/nn/im2col.cc): a convolution's sliding
blocks as columns, and their sum back onto an image; each is the other's gradient.

Columns are ``(N, C * prod(kernel), prod(out))``, the block axis ordered channel
first, then the kernel taps, as MXNet's (and `conv.py`'s) im2col lays them out.
1-D and 3-D kernels work here; MXNet 1.9.1 infers their shapes but fails when it runs
them. No bfloat16, as in MXNet.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..base import ShapeError
from .infer import Dims, from_input
from .registry import GradReads, OpContext, OpDef, Param, Params, register
from .window import Window, col2im, crop_spatial, kernel_first, make_window, pad_spatial, windows

_KERNEL = Param("kernel", "shape", doc="Sliding kernel size: (w,), (h, w) or (d, h, w).")
_GEOMETRY = (
    Param("stride", "shape", (), "The stride between adjacent sliding blocks in spatial "
          "dimension: (w,), (h, w) or (d, h, w). Defaults to 1 for each dimension."),
    Param("dilate", "shape", (), "The spacing between adjacent kernel points: (w,), (h, w) "
          "or (d, h, w). Defaults to 1 for each dimension."),
    Param("pad", "shape", (), "The zero-value padding size on both sides of spatial "
          "dimension: (w,), (h, w) or (d, h, w). Defaults to no padding."),
)


def _window(p: Params, op: str) -> Window:
    if not 1 <= len(p.kernel) <= 3:
        raise ShapeError(f"{op}: kernel={p.kernel} must have 1 to 3 dimensions")
    return make_window(op, p.kernel, p.stride, p.dilate, p.pad)


def _blocks(op: str, win: Window, image: Dims) -> tuple[int, ...]:
    """The number of blocks along each spatial axis of an ``(N, C, *spatial)`` image."""
    if len(image) != win.ndim + 2:
        raise ShapeError(f"{op}: the image must be {win.ndim + 2}-D (batch, channel, "
                         f"*spatial) for kernel={win.kernel}, got shape {image}")
    out = tuple(win.out_size(s, i) if s else 0 for i, s in enumerate(image[2:]))
    if any(s and o < 1 for s, o in zip(image[2:], out, strict=True)):
        raise ShapeError(f"{op}: dilated kernel {tuple(map(win.span, range(win.ndim)))} "
                         f"does not fit image {image[2:]} padded by {win.pad}")
    return out


def _columns_shape(win: Window, image: Dims, blocks: tuple[int, ...]) -> Dims:
    return (image[0], image[1] * prod(win.kernel), prod(blocks) if all(blocks) else 0)


def im2col(x: np.ndarray, win: Window) -> np.ndarray:
    """``(N, C, *spatial)`` -> ``(N, C * prod(kernel), prod(out))``."""
    out = _blocks("im2col", win, x.shape)
    view = kernel_first(windows(pad_spatial(x, win.pad, win.pad), win, out), win.ndim)
    return view.reshape(_columns_shape(win, x.shape, out))


def col2im_image(cols: np.ndarray, win: Window, image: Dims) -> np.ndarray:
    """The adjoint of `im2col`: columns summed onto an image of shape `image`."""
    out = _blocks("col2im", win, image)
    padded = (*image[:2], *(s + 2 * p for s, p in zip(image[2:], win.pad, strict=True)))
    blocks = cols.reshape(*image[:2], *win.kernel, *out)
    return crop_spatial(col2im(blocks, padded, win), win.pad, image[2:])


def _im2col_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    win = _window(p, "im2col")
    return [_columns_shape(win, in_shapes[0], _blocks("im2col", win, in_shapes[0]))]


def _image_of(p: Params, cols: Dims) -> Dims:
    """col2im's output shape, after checking its columns against it."""
    win = _window(p, "col2im")
    if len(p.output_size) != win.ndim:
        raise ShapeError(f"col2im: output_size={p.output_size} must have as many dimensions "
                         f"as kernel={p.kernel}")
    block = prod(win.kernel)
    if len(cols) != 3 or (cols[1] and cols[1] % block):
        raise ShapeError(f"col2im: input {cols} must be (batch, channels * {block}, blocks) "
                         f"for kernel={p.kernel}")
    image = (cols[0], cols[1] // block, *p.output_size)
    want = prod(_blocks("col2im", win, image))
    if cols[2] and cols[2] != want:
        raise ShapeError(f"col2im: input {cols} has {cols[2]} blocks; output_size="
                         f"{p.output_size} with kernel={p.kernel}, stride={win.stride}, "
                         f"dilate={win.dilate}, pad={win.pad} makes {want}")
    return image


register(OpDef(
    "im2col", lambda p, ctx, ins: im2col(ins[0], _window(p, "im2col")),
    params=(_KERNEL, *_GEOMETRY), infer_shape=from_input(_im2col_rule), bfloat16="refuse",
    backward=lambda p, ctx, ins, outs, grads: [
        col2im_image(grads[0], _window(p, "im2col"), ins[0].shape)],
    backward_reads=GradReads(),
    doc="Extract sliding blocks from input array: (N, C, *spatial) -> "
        "(N, C * prod(kernel), blocks), blocks being the output size of a convolution "
        "with the same kernel, stride, dilate and pad."))


def _col2im_forward(p: Params, ctx: OpContext, inputs: list[np.ndarray]) -> np.ndarray:
    return col2im_image(inputs[0], _window(p, "col2im"), _image_of(p, inputs[0].shape))


register(OpDef(
    "col2im", _col2im_forward,
    params=(Param("output_size", "shape", doc="The spatial dimension of image array: (w,), "
                  "(h, w) or (d, h, w)."), _KERNEL, *_GEOMETRY),
    infer_shape=from_input(lambda p, in_shapes: [_image_of(p, in_shapes[0])]),
    bfloat16="refuse",
    backward=lambda p, ctx, ins, outs, grads: [im2col(grads[0], _window(p, "col2im"))],
    backward_reads=GradReads(),
    doc="Combining the output column matrix of im2col back to image array: "
        "(N, C * prod(kernel), blocks) -> (N, C, *output_size), overlapping block elements "
        "summed (the gradient of im2col)."))
