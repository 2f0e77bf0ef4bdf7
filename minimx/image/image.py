"""MXNet 1.9.1's `mx.image` functions: decode images into height x width x channels uint8
NDArrays (RGB by default), resize them as OpenCV does, crop and normalise them.

Decoding is Pillow's, in OpenCV's layout (formats/image_codec.py); resizing is OpenCV's
arithmetic in numpy (formats/image_resize.py). Random choices use Python's `random`
module, as MXNet's do.
"""
from __future__ import annotations

import random
from typing import Any

import numpy as np

from ..base import DataFileError, MinimxError, ShapeError
from ..formats import image_codec
from ..formats.image_resize import AREA, CUBIC, LINEAR, resize
from ..ndarray import NDArray, array

_FLAGS = (image_codec.GRAYSCALE, image_codec.COLOR)


def imdecode(buf: Any, flag: int = 1, to_rgb: bool = True, what: str = "imdecode") -> NDArray:
    """Decode an encoded image (bytes, bytearray, or a uint8 numpy array / NDArray of them)
    into height x width x 3 (`flag=1`; RGB, or OpenCV's BGR with `to_rgb=False`) or
    height x width x 1 (`flag=0`, grey) uint8. Needs Pillow (the `image` extra).

    >>> import minimx as mx, numpy as np
    >>> red = np.array([[[0, 0, 255]]], np.uint8)                # one pixel, BGR
    >>> _, png = mx.recordio.unpack(mx.recordio.pack_img((0, 0, 0, 0), red, img_fmt=".png"))
    >>> mx.image.imdecode(png).asnumpy().tolist()
    [[[255, 0, 0]]]
    """
    if isinstance(buf, NDArray):
        buf = buf.asnumpy()
    if isinstance(buf, np.ndarray):
        buf = buf.astype(np.uint8, copy=False).tobytes()
    if not isinstance(buf, (bytes, bytearray)):
        raise MinimxError(f"{what}: buf must be bytes, bytearray or a uint8 array, "
                          f"not {type(buf).__name__}")
    if flag not in _FLAGS:
        raise MinimxError(f"{what}: flag must be 1 (colour) or 0 (grey), not {flag!r}")
    pixels = image_codec.imdecode(bytes(buf), flag, what)
    if flag == image_codec.GRAYSCALE:
        pixels = pixels[..., None]
    elif to_rgb:
        pixels = pixels[..., ::-1]
    return array(np.ascontiguousarray(pixels), dtype=np.uint8)


def imread(filename: str, flag: int = 1, to_rgb: bool = True) -> NDArray:
    """Read and decode the image file `filename`, as `imdecode`: an (H, W, 3) uint8
    NDArray in RGB (flag 1), or (H, W, 1) grey (flag 0)."""
    try:
        with open(filename, "rb") as fin:
            buf = fin.read()
    except OSError as exc:
        raise DataFileError(f"imread: cannot read {filename!r} ({exc.strerror})") from None
    return imdecode(buf, flag, to_rgb, what=filename)


def _pixels(src: NDArray, what: str) -> np.ndarray:
    pixels = src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)
    if pixels.dtype != np.uint8 or pixels.ndim != 3:
        raise ShapeError(f"{what}: expected a height x width x channels uint8 image, got "
                         f"{pixels.dtype} of shape {pixels.shape}")
    return pixels


def imresize(src: NDArray, w: int, h: int, interp: int = 1) -> NDArray:
    """`src` (height x width x channels uint8) resized to `w` x `h` with OpenCV's
    interpolation `interp` (0 nearest, 1 bilinear, 2 bicubic, 3 area).

    >>> import minimx as mx
    >>> mx.image.imresize(mx.nd.zeros((4, 6, 3), dtype="uint8"), 3, 2).shape
    (2, 3, 3)
    """
    return array(resize(_pixels(src, "imresize"), int(w), int(h), interp), dtype=np.uint8)


def _get_interp_method(interp: int, sizes: tuple[int, int, int, int] | None = None) -> int:
    """MXNet's choice of interpolation: 9 is bicubic to enlarge, area to shrink and
    bilinear otherwise (`sizes`: old height, old width, new height, new width); 10 is a
    random one of 0-4."""
    if interp == 9:
        if not sizes:
            return CUBIC
        old_h, old_w, new_h, new_w = sizes
        if new_h > old_h and new_w > old_w:
            return CUBIC
        return AREA if new_h < old_h and new_w < old_w else LINEAR
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise MinimxError(f"unknown interpolation method {interp!r} (0-4, 9 or 10)")
    return interp


def resize_short(src: NDArray, size: int, interp: int = 2) -> NDArray:
    """`src` scaled so that its shorter side is `size` (the longer one truncated)."""
    h, w, _ = src.shape
    new_h, new_w = (size * h // w, size) if h > w else (size, size * w // h)
    return imresize(src, new_w, new_h, _get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src: NDArray, x0: int, y0: int, w: int, h: int,
               size: tuple[int, int] | None = None, interp: int = 2) -> NDArray:
    """The `w` x `h` window of `src` at column `x0`, row `y0`, resized to `size`
    (width, height) if given."""
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, *size, interp=_get_interp_method(interp, (h, w, size[1], size[0])))
    return out


def scale_down(src_size: tuple[int, int], size: tuple[int, int]) -> tuple[int, int]:
    """`size` (width, height) shrunk, keeping its aspect, to fit in `src_size`.

    >>> import minimx as mx
    >>> mx.image.scale_down((640, 480), (720, 120))
    (640, 106)
    """
    sw, sh = src_size
    w, h = float(size[0]), float(size[1])
    if sh < h:
        w, h = w * sh / h, sh
    if sw < w:
        w, h = sw, h * sw / w
    return int(w), int(h)


def center_crop(src: NDArray, size: tuple[int, int], interp: int = 2
                ) -> tuple[NDArray, tuple[int, int, int, int]]:
    """The centred window of `size` (width, height), shrunk to fit and then resized to
    `size`; and the window (x0, y0, w, h)."""
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_crop(src: NDArray, size: tuple[int, int], interp: int = 2
                ) -> tuple[NDArray, tuple[int, int, int, int]]:
    """As `center_crop`, at a random place."""
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = random.randint(0, w - new_w), random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src: NDArray, mean: NDArray | None, std: NDArray | None = None) -> NDArray:
    """`(src - mean) / std` per channel, in place (as MXNet's): `src` must be a float
    NDArray.

    >>> import minimx as mx
    >>> x = mx.nd.array([[[10.0, 20.0, 30.0]]])
    >>> y = mx.image.color_normalize(x, mx.nd.array([1.0, 2.0, 3.0]), mx.nd.array([3.0, 2.0, 1.0]))
    >>> y.asnumpy().tolist()
    [[[3.0, 9.0, 27.0]]]
    """
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src
