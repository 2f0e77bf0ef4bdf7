"""MXNet 1.9's OpenCV image operators (src/io/image_io.cc), which `mx.image.imdecode`,
`imread`, `imresize` and `copyMakeBorder` call: `_cvimdecode` (a uint8 buffer of an
encoded image), `_cvimread` (a file), `_cvimresize` and `_cvcopyMakeBorder`. Images are
height x width x channels, RGB unless ``to_rgb=False`` (OpenCV's BGR), x 1 for grey
(``flag=0``). Decoding is Pillow's in OpenCV's layout (formats/image_codec.py), resizing
and bordering OpenCV's arithmetic (formats/image_resize.py, formats/image_border.py).
The decoded shape depends on the bytes: run imperatively only.
"""
from __future__ import annotations

import numpy as np

from ..base import DataFileError, DTypeError, OperatorError, ShapeError
from ..formats import image_border, image_codec
from ..formats.image_resize import resize
from .infer import merge, merge_dtype
from .params import Params
from .registry import OpContext, OpDef, Param, register

Array = np.ndarray

_FLAG = Param("flag", "int", 1, "Convert decoded image to grayscale (0) or color (1).")
_TO_RGB = Param("to_rgb", "bool", True, "Whether to convert decoded image to mxnet's default "
                "RGB format (instead of opencv's default BGR).")


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
