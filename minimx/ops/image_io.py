"""MXNet 1.9's OpenCV image operators (src/io/image_io.cc), which `mx.image.imdecode`,
`imread`, `imresize` and `copyMakeBorder` call: `_cvimdecode` (a uint8 buffer of an
encoded image), `_cvimread` (a file), `_cvimresize` and `_cvcopyMakeBorder`. Images are
height x width x channels, RGB unless ``to_rgb=False`` (OpenCV's BGR), x 1 for grey
(``flag=0``). Decoding is Pillow's in OpenCV's layout (formats/image_codec.py), resizing
and bordering OpenCV's arithmetic (formats/image_resize.py, formats/image_border.py).
The decoded shape depends on the bytes: run imperatively only.

Also the legacy decoder behind the deprecated `mx.nd.imdecode`, `_imdecode`
(src/ndarray/ndarray.cc): channels first, OpenCV's channel order, less a mean image.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import BFLOAT16, DataFileError, DTypeError, MinimxError, OperatorError, ShapeError
from ..formats import image_border, image_codec
from ..formats.image_resize import resize
from .infer import merge, merge_dtype
from .params import Params
from .registry import OpContext, OpDef, Param, register

Array = np.ndarray

_FLAG = Param("flag", "int", 1, "Convert decoded image to grayscale (0) or color (1).")
_TO_RGB = Param("to_rgb", "bool", True, "Whether to convert decoded image to mxnet's default "
                "RGB format (instead of opencv's default BGR).")


def encoded_bytes(buf: Any, what: str) -> bytes:
    """An encoded image given as bytes, a bytearray or a uint8 numpy array, as bytes (`what`
    names the argument in errors)."""
    if isinstance(buf, np.ndarray):
        buf = buf.astype(np.uint8, copy=False).tobytes()
    if not isinstance(buf, (bytes, bytearray)):
        raise MinimxError(f"{what} must be bytes, bytearray or a uint8 array, "
                          f"not {type(buf).__name__}")
    return bytes(buf)


def _decoded(p: Params, buf: bytes, what: str) -> Array:
    if p.flag not in (image_codec.GRAYSCALE, image_codec.COLOR):
        raise OperatorError(f"{p.label}: flag={p.flag} must be 0 (grey) or 1 (colour)")
    pixels = image_codec.imdecode(buf, p.flag, what)
    if p.flag == image_codec.GRAYSCALE:
        return pixels[..., None]
    return np.ascontiguousarray(pixels[..., ::-1]) if p.to_rgb else pixels


def _cvimdecode(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    buf = inputs[0]
    if buf.dtype != np.uint8:
        raise DTypeError(f"{p.label}: buf must be a uint8 buffer, got {buf.dtype}")
    return _decoded(p, buf.tobytes(), p.label)


def _cvimread(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    try:
        with open(p.filename, "rb") as fin:
            buf = fin.read()
    except OSError as exc:
        raise DataFileError(f"{p.label}: cannot read {p.filename!r} ({exc.strerror})") from None
    return _decoded(p, buf, p.filename)


register(OpDef(
    "_cvimdecode", _cvimdecode, params=(_FLAG, _TO_RGB), inputs=("buf",),
    infer_type=lambda p, ins, outs: (ins, [np.dtype(np.uint8)]), shape_from_values=True,
    bfloat16="refuse",
    doc="Decode image with OpenCV (here Pillow, OpenCV's pixels): RGB by default."))
register(OpDef(
    "_cvimread", _cvimread, inputs=(),
    params=(Param("filename", "str", doc="Name of the image file to be loaded."), _FLAG,
            _TO_RGB),
    infer_type=lambda p, ins, outs: (ins, [np.dtype(np.uint8)]), shape_from_values=True,
    bfloat16="refuse",
    doc="Read and decode image with OpenCV (here Pillow, OpenCV's pixels): RGB by default."))


def _resize_shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    src = in_shapes[0]
    if src is None:
        return in_shapes, out_shapes
    if len(src) != 3:
        raise ShapeError(f"{p.label}: src must be height x width x channels, got {src}")
    return in_shapes, [merge(out_shapes[0], (p.h, p.w, src[2]))]


def _cvimresize(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    return resize(inputs[0], p.w, p.h, p.interp)


register(OpDef(
    "_cvimresize", _cvimresize, inputs=("src",),
    params=(Param("w", "int", doc="Width of resized image."),
            Param("h", "int", doc="Height of resized image."),
            Param("interp", "int", 1, "Interpolation method (default=cv2.INTER_LINEAR).")),
    infer_shape=_resize_shape, bfloat16="refuse",
    doc="Resize image with OpenCV's arithmetic: height x width x channels to h x w."))


def _border_shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    src = in_shapes[0]
    channels = None if src is None or len(src) != 3 else src[2]
    image_border.check_border(p.top, p.bot, p.left, p.right, p.type, channels, p.label)
    if src is None:
        return in_shapes, out_shapes
    if len(src) != 3:
        raise ShapeError(f"{p.label}: src must be height x width x channels, got {src}")
    height, width = src[0] + p.top + p.bot, src[1] + p.left + p.right
    return in_shapes, [merge(out_shapes[0], (height, width, src[2]))]


def _border_type(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    dtype = merge_dtype(in_types[0], out_types[0])
    if dtype is not None and dtype.name not in image_border.DTYPES:
        raise DTypeError(f"{p.label}: src must be {', '.join(image_border.DTYPES)}, got "
                         f"{dtype}")
    return [dtype], [dtype]


def _cvcopymakeborder(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    # `values` by key: as an attribute of Params (a Mapping) it is the method.
    return image_border.copy_make_border(inputs[0], p.top, p.bot, p.left, p.right, p.type,
                                         p.value, p["values"], p.label)


register(OpDef(
    "_cvcopyMakeBorder", _cvcopymakeborder, inputs=("src",),
    params=(Param("top", "int", doc="Top margin."), Param("bot", "int", doc="Bottom margin."),
            Param("left", "int", doc="Left margin."),
            Param("right", "int", doc="Right margin."),
            Param("type", "int", 0, "Filling type (default=cv2.BORDER_CONSTANT)."),
            Param("value", "float", 0.0,
                  "(Deprecated! Use ``values`` instead.) Fill with single value."),
            Param("values", "floats", (), "Fill with value(RGB[A] or gray), up to 4 channels.")),
    infer_shape=_border_shape, infer_type=_border_type, bfloat16="refuse",
    doc="Pad image border with OpenCV's pixels: height x width x channels, `type` OpenCV's "
        "border type (0 constant, 1 replicate, 2 reflect, 3 wrap, 4 reflect_101)."))


# The dtypes MXNet's legacy decoder writes (its MSHADOW_TYPE_SWITCH).
LEGACY_DTYPES = ("float32", "float64", "float16", "bfloat16", "uint8", "int8", "int32",
                 "int64")


def legacy_imdecode(buf: bytes, clip_rect: Sequence[int], channels: int, mean: Array | None,
                    dtype: np.dtype, what: str) -> Array:
    """MXNet's legacy `Imdecode`: the image as OpenCV stores it (BGR, BGRA; grey when
    `channels` is 1), clipped to `clip_rect` (x0, y0, x1, y1; all of it when y1 == y0),
    its first `channels` channels, channels x height x width in `dtype`, less `mean` (of
    that dtype and shape) in `dtype`'s arithmetic, as mshadow's: integers wrap, bfloat16
    is truncated."""
    if dtype.name not in LEGACY_DTYPES:
        raise DTypeError(f"{what}: cannot decode into {dtype} (MXNet's decoder writes "
                         f"{', '.join(LEGACY_DTYPES)})")
    if channels < 0 or min(clip_rect) < 0:
        raise OperatorError(f"{what}: channels={channels} and clip_rect={tuple(clip_rect)} "
                            "must not be negative")
    flag = image_codec.GRAYSCALE if channels == 1 else image_codec.UNCHANGED
    pixels = image_codec.imdecode(buf, flag, what)
    pixels = pixels.reshape(*pixels.shape[:2], -1)
    rows, cols, stored = pixels.shape
    if channels > stored:
        raise OperatorError(f"{what}: channels={channels}, but the image has {stored}")
    x0, y0, x1, y1 = clip_rect if clip_rect[1] != clip_rect[3] else (0, 0, cols, rows)
    if not (x0 <= x1 <= cols and y0 <= y1 <= rows):
        raise OperatorError(f"{what}: clip_rect={tuple(clip_rect)} is not inside the "
                            f"{cols} x {rows} image (x0 <= x1 <= width, y0 <= y1 <= height)")
    image = pixels[y0:y1, x0:x1, :channels].transpose(2, 0, 1).astype(dtype)
    if mean is None:
        return image
    if mean.dtype != dtype:
        raise DTypeError(f"{what}: mean is {mean.dtype}, the output {dtype}")
    if mean.shape != image.shape:
        raise ShapeError(f"{what}: mean has shape {mean.shape}, the decoded image "
                         f"(channels, height, width) {image.shape}")
    if dtype == BFLOAT16:   # bf16_t keeps a float's high 16 bits
        exact = image.astype(np.float32) - mean.astype(np.float32)
        return (exact.view(np.uint32) & 0xFFFF0000).view(np.float32).astype(BFLOAT16)
    return image - mean


def _imdecode(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    try:
        buf = p.str_img.encode("latin-1")
    except UnicodeEncodeError:
        raise OperatorError(f"{p.label}: str_img must hold the image's bytes as characters "
                            "0-255 (bytes.decode('latin-1'))") from None
    if p.size > len(buf):
        raise OperatorError(f"{p.label}: size={p.size}, but str_img has {len(buf)} bytes")
    mean = inputs[0]
    return legacy_imdecode(buf[:p.size], (p.x0, p.y0, p.x1, p.y1), p.c, mean, mean.dtype,
                           p.label)


register(OpDef(
    "_imdecode", _imdecode, inputs=("mean",),
    params=(Param("index", "int", doc="buffer position for output"),
            Param("x0", "int", doc="x0"), Param("y0", "int", doc="y0"),
            Param("x1", "int", doc="x1"), Param("y1", "int", doc="y1"),
            Param("c", "int", doc="channel"), Param("size", "int", doc="length of str_img"),
            Param("str_img", "str", doc="the encoded image, its bytes as latin-1 characters")),
    infer_type=lambda p, ins, outs: (ins, [ins[0]]), shape_from_values=True,
    bfloat16="native",
    doc="Decode an image, clip to (x0, y0, x1, y1), subtract mean, and write to buffer "
        "(MXNet's legacy decoder: channels first, OpenCV's channel order). `mx.nd.imdecode` "
        "runs its kernel without a mean and into 4-D buffers too."))
