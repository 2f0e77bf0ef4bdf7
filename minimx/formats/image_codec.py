"""Image encoding and decoding with OpenCV's conventions, on Pillow.

MXNet decodes and encodes images with OpenCV (`cv2.imdecode` / `cv2.imencode`), so its
`mx.recordio.unpack_img` and `pack_img` take and give colour images as BGR (BGRA with
alpha), height x width x channels, and grey ones as height x width. These functions keep
that layout so that code written for MXNet moves over unchanged, but decode with Pillow:
a far smaller dependency, imported only when an image is first touched (the optional
`image` extra). Lossless formats (PNG) decode to the same pixels as OpenCV; JPEG decoders
may differ by a few levels.
"""
from __future__ import annotations

import io
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ..base import DataFileError, MinimxError

if TYPE_CHECKING:
    from PIL.Image import Image

# OpenCV's imdecode flags, as `unpack_img(iscolor=...)` passes them.
UNCHANGED, GRAYSCALE, COLOR = -1, 0, 1

# libpng's fixed-point luma when OpenCV asks it for grey (red 0.299, green 0.587): each
# truncated to 1/2**15ths, blue the rest, and the sum truncated.
_PNG_LUMA = (9797, 19234, 3737)
_SIXTEEN_BIT = ("I;16", "I;16B", "I;16L", "I")


class ImageLibraryError(MinimxError, ImportError):
    """An image had to be decoded or encoded, and the optional Pillow package is missing."""


def pillow() -> ModuleType:
    """Pillow's Image module; ImageLibraryError saying how to get it where it is missing."""
    try:
        from PIL import Image  # optional dependency: only image functions need it
    except ImportError:
        raise ImageLibraryError("decoding and encoding images needs Pillow: "
                                "pip install 'minimx[image]' (or pip install pillow)") from None
    return Image


def imdecode(buf: bytes, flag: int = COLOR, what: str = "image") -> np.ndarray:
    """Decode an encoded image as OpenCV's `imdecode(buf, flag)` would: `flag` 1 gives
    height x width x 3 BGR, 0 height x width grey, -1 the image as stored (grey, BGR or
    BGRA). `what` names the image in errors.

    >>> img = np.array([[[0, 0, 255], [0, 255, 0]]], dtype=np.uint8)   # red, green (BGR)
    >>> imdecode(imencode(img, ".png"), COLOR).tolist()
    [[[0, 0, 255], [0, 255, 0]]]
    """
    if flag not in (UNCHANGED, GRAYSCALE, COLOR):
        raise MinimxError(f"{what}: decode flag must be -1, 0 or 1, not {flag!r}")
    image_module = pillow()
    try:
        with image_module.open(io.BytesIO(buf)) as image:
            if flag == GRAYSCALE and image.format == "JPEG":
                image.draft("L", image.size)   # libjpeg's own grey output, as OpenCV's
            image.load()
            return _opencv_layout(image, flag)
    except (OSError, SyntaxError, ValueError) as exc:   # what Pillow raises on bad data
        raise DataFileError(f"{what}: not an image Pillow can decode ({exc})") from None


def _opencv_layout(image: Image, flag: int) -> np.ndarray:
    if image.mode in _SIXTEEN_BIT:   # 16-bit grey: OpenCV keeps the high byte
        high = np.asarray(image).astype(np.uint32) >> 8
        image = pillow().fromarray(high.astype(np.uint8))
    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    if flag == GRAYSCALE:
        if image.mode in ("RGB", "RGBA"):
            rgb = np.asarray(image.convert("RGB"), dtype=np.uint32)
            return ((rgb @ np.array(_PNG_LUMA, np.uint32)) >> 15).astype(np.uint8)
        return np.asarray(image.convert("L"))
    if flag == UNCHANGED and image.mode in ("L", "RGBA"):
        pixels = np.asarray(image)
        return pixels if image.mode == "L" else np.ascontiguousarray(pixels[..., [2, 1, 0, 3]])
    return np.ascontiguousarray(np.asarray(image.convert("RGB"))[..., ::-1])


def imencode(img: np.ndarray, img_fmt: str = ".jpg", quality: int = 95) -> bytes:
    """Encode an OpenCV-layout image (BGR, BGRA or grey uint8) as `img_fmt` ('.jpg' /
    '.jpeg' with JPEG `quality` 1-100, or '.png' with `quality` as zlib's level, at most
    9), as `cv2.imencode` does for `pack_img`."""
    pixels = np.asarray(img)
    if pixels.dtype != np.uint8 or not (pixels.ndim == 2 or
                                        (pixels.ndim == 3 and pixels.shape[2] in (1, 3, 4))):
        raise MinimxError(f"imencode: expected a uint8 image of height x width (x 1, 3 or 4 "
                          f"channels), got {pixels.dtype} of shape {pixels.shape}")
    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[..., 0]
    elif pixels.ndim == 3:   # BGR(A) -> RGB(A)
        pixels = pixels[..., [2, 1, 0, 3][:pixels.shape[2]]]
    image = pillow().fromarray(np.ascontiguousarray(pixels))
    out = io.BytesIO()
    fmt = img_fmt.lower()
    if fmt in (".jpg", ".jpeg"):
        image.save(out, format="JPEG", quality=int(quality))
    elif fmt == ".png":
        image.save(out, format="PNG", compress_level=min(max(int(quality), 0), 9))
    else:
        raise MinimxError(f"imencode: img_fmt must be '.jpg', '.jpeg' or '.png', not {img_fmt!r}")
    return out.getvalue()
