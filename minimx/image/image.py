"""MXNet 1.9.1's `mx.image` functions: decode images into height x width x channels uint8
NDArrays (RGB by default), resize them as OpenCV does, crop and normalise them.

Decoding is Pillow's, in OpenCV's layout (formats/image_codec.py); resizing is OpenCV's
arithmetic in numpy (formats/image_resize.py). Random choices use Python's `random`
module, as MXNet's do.
"""
from __future__ import annotations

import random
from numbers import Number
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..base import (
    ArgumentError,
    ArgumentTypeError,
    DataFileError,
    DTypeError,
    MinimxError,
    ShapeError,
)
from ..formats import image_codec
from ..formats.image_resize import AREA, CUBIC, LINEAR, resize
from ..ndarray import NDArray, array
from ..ops.elemwise import UNARY
from ..ops.image_io import encoded_bytes

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
    buf = encoded_bytes(buf.asnumpy() if isinstance(buf, NDArray) else buf, f"{what}: buf")
    if flag not in _FLAGS:
        raise MinimxError(f"{what}: flag must be 1 (colour) or 0 (grey), not {flag!r}")
    pixels = image_codec.imdecode(buf, flag, what)
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


def _pixels(src: NDArray, what: str, dtypes: tuple[str, ...] = ("uint8",)) -> np.ndarray:
    pixels = src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)
    if pixels.ndim != 3:
        raise ShapeError(f"{what}: expected a height x width x channels image, got shape "
                         f"{pixels.shape}")
    if pixels.dtype.name not in dtypes:
        raise DTypeError(f"{what}: expected a {' or '.join(dtypes)} image, got {pixels.dtype}")
    return pixels


def imresize(src: NDArray, w: int, h: int, interp: int = 1) -> NDArray:
    """`src` (height x width x channels, uint8 or float) resized to `w` x `h` with
    OpenCV's interpolation `interp` (0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos,
    5 bit-exact bilinear).

    >>> import minimx as mx
    >>> mx.image.imresize(mx.nd.zeros((4, 6, 3), dtype="uint8"), 3, 2).shape
    (2, 3, 3)
    """
    pixels = _pixels(src, "imresize", ("uint8", "float32", "float64"))
    return array(resize(pixels, int(w), int(h), interp), dtype=pixels.dtype)


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
    """The `w` x `h` window of `src` at column `x0`, row `y0` (cut short at the image's
    edge, as a slice is), resized to `size` (width, height) if given."""
    out = src[y0:y0 + h, x0:x0 + w]
    if out.shape[0] == 0 or out.shape[1] == 0:
        raise ShapeError(f"fixed_crop: the window x0={x0}, y0={y0}, w={w}, h={h} holds no "
                         f"pixel of the {src.shape[1]}x{src.shape[0]} (width x height) image")
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


def random_size_crop(src: NDArray, size: tuple[int, int], area: float | tuple[float, float],
                     ratio: tuple[float, float], interp: int = 2
                     ) -> tuple[NDArray, tuple[int, int, int, int]]:
    """A random window covering `area` (a fraction of the image, or a (min, max) range)
    with aspect ratio in `ratio` (width / height, drawn log-uniformly), resized to `size`
    (width, height); after ten misses, `center_crop`. Draws as MXNet's do."""
    h, w, _ = src.shape
    low, high = (area, 1.0) if isinstance(area, (int, float)) else area
    log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
    for _ in range(10):
        target_area = random.uniform(low, high) * h * w
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0, y0 = random.randint(0, w - new_w), random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


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


def copyMakeBorder(src: NDArray, top: int, bot: int, left: int, right: int,  # noqa: N802
                   type: int = 0, value: float = 0.0,  # noqa: A002 - MXNet's name
                   values: tuple[float, ...] = ()) -> NDArray:
    """`src` (height x width x channels) padded by `top`, `bot`, `left` and `right`
    pixels as OpenCV's `copyMakeBorder` (MXNet's ``_cvcopyMakeBorder`` operator):
    `type` 0 fills with `values` (per channel) or `value`, 1 repeats the edge pixel
    (aa|abc), 2 reflects (ba|abc), 3 wraps around (bc|abc), 4 reflects about the
    edge pixel (cb|abc).

    >>> import minimx as mx
    >>> img = mx.nd.array([[[1], [2], [3]]], dtype="uint8")
    >>> mx.image.copyMakeBorder(img, 0, 0, 2, 1, type=2).asnumpy()[0, :, 0].tolist()
    [2, 1, 1, 2, 3, 3]
    """
    return nd._cvcopyMakeBorder(src, top=top, bot=bot, left=left, right=right, type=type,
                                value=value, values=values)


def imrotate(src: NDArray, rotation_degrees: Any, zoom_in: bool = False,
             zoom_out: bool = False) -> NDArray:
    """`src` (a float32 channels x height x width image, or a batch of them) rotated
    anticlockwise about its centre by `rotation_degrees` (a number; for a batch, also
    one angle per image), sampled bilinearly with zeros outside. `zoom_in` scales so
    that no zeros show, `zoom_out` so that the whole image shows.

    >>> import minimx as mx
    >>> img = mx.nd.array([[[1.0, 2.0], [3.0, 4.0]]])
    >>> mx.image.imrotate(img, 180).asnumpy().round(4).tolist()
    [[[4.0, 3.0], [2.0, 1.0]]]
    """
    if zoom_in and zoom_out:
        raise ArgumentError("imrotate: zoom_in and zoom_out cannot both be True")
    pixels = src.asnumpy() if isinstance(src, NDArray) else np.asarray(src)
    if pixels.dtype != np.float32:
        raise DTypeError(f"imrotate: only float32 images are supported, got {pixels.dtype}")
    if pixels.ndim not in (3, 4):
        raise ShapeError(f"imrotate: expected a CHW image or an NCHW batch, got shape "
                         f"{pixels.shape}")
    if pixels.ndim == 3 and not isinstance(rotation_degrees, Number):
        raise ArgumentTypeError(f"imrotate: a single image needs a scalar angle, got "
                                f"{type(rotation_degrees).__name__}")
    batch = pixels if pixels.ndim == 4 else pixels[None]
    degrees = _angles(rotation_degrees, len(batch))
    h, w = batch.shape[2:]
    if h < 2 or w < 2:
        raise ShapeError(f"imrotate: the image must be at least 2x2, got {h}x{w}")
    grid = _rotation_grid(np.float32(np.pi) * degrees / np.float32(180), h, w, zoom_in, zoom_out)
    out = nd.BilinearSampler(array(batch), array(grid))
    return out if pixels.ndim == 4 else out[0]


def _angles(rotation_degrees: Any, count: int) -> np.ndarray:
    """One float32 angle per image: a number repeated, or one given for each."""
    if isinstance(rotation_degrees, Number):
        return np.full(count, rotation_degrees, np.float32)
    degrees = (rotation_degrees.asnumpy() if isinstance(rotation_degrees, NDArray)
               else np.asarray(rotation_degrees)).astype(np.float32).ravel()
    if len(degrees) != count:
        raise ShapeError(f"imrotate: {count} images but {len(degrees)} rotation angles")
    return degrees


# float32 trigonometry as MXNet's NDArray operators (and mx.nd's) give it.
_cos, _sin, _arctan = (UNARY[name].fn for name in ("cos", "sin", "arctan"))


def _rotation_grid(radians: np.ndarray, h: int, w: int, zoom_in: bool,
                   zoom_out: bool) -> np.ndarray:
    """BilinearSampler's (N, 2, h, w) grid for rotations by `radians`, in float32 as
    MXNet's NDArray arithmetic: the centred pixel grid rotated, then normalised by the
    half sizes (after rotating, which keeps the aspect), then zoomed."""
    hscale, wscale = np.float32((h - 1) / 2), np.float32((w - 1) / 2)
    rows = (np.arange(h, dtype=np.float32)[:, None] - hscale) * np.ones((1, w), np.float32)
    cols = (np.arange(w, dtype=np.float32)[None, :] - wscale) * np.ones((h, 1), np.float32)
    angle = radians[:, None, None]
    cos, sin = _cos(angle), _sin(angle)
    x = (cols * cos - rows * sin) / wscale
    y = (cols * sin + rows * cos) / hscale
    grid = np.stack([x, y], axis=1)
    if zoom_in or zoom_out:
        grid = grid * _zoom(np.abs(radians), np.float32(h), np.float32(w), zoom_out)
    return grid


def _zoom(radians: np.ndarray, h: np.float32, w: np.float32, zoom_out: bool) -> np.ndarray:
    """(N, 1, 1, 1): the scale at which the rotated image's corners just reach the
    frame's edges (zoom_out) or the frame's corners just reach the image's (zoom_in)."""
    rho, corner = np.sqrt(h * h + w * w), _arctan(np.asarray(h / w))
    max_x = np.maximum(np.abs(rho * _cos(corner + radians)),
                       np.abs(rho * _cos(corner - radians)))
    max_y = np.maximum(np.abs(rho * _sin(corner + radians)),
                       np.abs(rho * _sin(corner - radians)))
    scale = (np.maximum(max_x / w, max_y / h) if zoom_out
             else np.minimum(w / max_x, h / max_y))
    return scale.astype(np.float32)[:, None, None, None]


def random_rotate(src: NDArray, angle_limits: tuple[float, float], zoom_in: bool = False,
                  zoom_out: bool = False) -> NDArray:
    """`imrotate` by an angle (one per image of a batch) drawn uniformly from
    `angle_limits` (degrees) with numpy's global generator, as MXNet's."""
    if len(src.shape) == 3:
        return imrotate(src, float(np.random.uniform(*angle_limits)), zoom_in, zoom_out)
    return imrotate(src, np.random.uniform(*angle_limits, size=src.shape[0]), zoom_in,
                    zoom_out)
