"""The image steps of `ImageRecordIter`, in the order of MXNet 1.9.1's default augmenter
(src/io/image_aug_default.cc) and its normalisation (src/io/iter_image_recordio_2.cc).

Images here are OpenCV's layout, height x width x channels, BGR, uint8. `resize_short`
scales the shorter side to `resize`; `crop` enlarges an image smaller than the output
(the short side first, as MXNet does) and cuts the output size from its centre or, with
`rand_crop`, from anywhere; `normalize` turns BGR into RGB planes, subtracts the mean,
scales, and mirrors.

Resizing is OpenCV's INTER_LINEAR in its fixed-point form (pixel centres at +0.5,
weights in 1/2048ths, edges clamped; an exact halving averages 2 x 2 blocks, as OpenCV
switches to INTER_AREA there). OpenCV's vectorised loops round their intermediate
values differently, so resized pixels can differ from MXNet's by one level.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError

_COEF_BITS = 11   # OpenCV's INTER_RESIZE_COEF_BITS
_ONE = 1 << _COEF_BITS


def _taps(dst: int, src: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output position, OpenCV's two source indices and the fixed-point weight of
    the first."""
    pos = ((np.arange(dst) + 0.5) * (src / dst) - 0.5).astype(np.float32)
    first = np.floor(pos).astype(np.int64)
    frac = pos - first
    clamped = (first < 0) | (first >= src - 1)
    frac[clamped] = 0
    first = np.clip(first, 0, src - 1)
    weight = np.round((1 - frac) * _ONE).astype(np.int64)
    return first, np.minimum(first + 1, src - 1), weight


def resize_linear(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """`cv2.resize(img, (width, height))` with INTER_LINEAR, on uint8 images."""
    rows, cols = img.shape[:2]
    if (rows, cols) == (height, width):
        return img
    if (rows, cols) == (2 * height, 2 * width):
        blocks = img.astype(np.int64).reshape(height, 2, width, 2, *img.shape[2:])
        return ((blocks.sum(axis=(1, 3)) + 2) >> 2).astype(np.uint8)
    x0, x1, wx = _taps(width, cols)
    y0, y1, wy = _taps(height, rows)
    src = img.astype(np.int64)
    extra = (1,) * (img.ndim - 2)
    wx = wx.reshape(1, -1, *extra)
    horizontal = src[:, x0] * wx + src[:, x1] * (_ONE - wx)
    wy = wy.reshape(-1, 1, *extra)
    both = horizontal[y0] * wy + horizontal[y1] * (_ONE - wy)
    return ((both + (1 << (2 * _COEF_BITS - 1))) >> (2 * _COEF_BITS)).astype(np.uint8)


def resize_short(img: np.ndarray, size: int) -> np.ndarray:
    """Scale so that the shorter side is `size` (MXNet's `resize`: integer sizes,
    truncated)."""
    rows, cols = img.shape[:2]
    if rows > cols:
        return resize_linear(img, size, size * rows // cols)
    return resize_linear(img, size * cols // rows, size)


def crop(img: np.ndarray, height: int, width: int, rng: np.random.Generator | None,
         what: str) -> np.ndarray:
    """A `height` x `width` window: centred, or anywhere when `rng` is given (MXNet's
    `rand_crop`). An image smaller than that is first enlarged, keeping its aspect."""
    rows, cols = img.shape[:2]
    if rows < height:   # MXNet's float32 arithmetic, truncated
        cols = int(np.float32(height) / np.float32(rows) * np.float32(cols))
        img, rows = resize_linear(img, cols, height), height
    if cols < width:
        rows = int(np.float32(width) / np.float32(cols) * np.float32(rows))
        img, cols = resize_linear(img, width, rows), width
    if rows < height or cols < width:
        raise ShapeError(f"{what}: a {img.shape[0]}x{img.shape[1]} image cannot give a "
                         f"{height}x{width} crop")
    if rng is None:
        top, left = (rows - height) // 2, (cols - width) // 2
    else:
        top, left = int(rng.integers(0, rows - height + 1)), int(rng.integers(0, cols - width + 1))
    return img[top:top + height, left:left + width]


def normalize(img: np.ndarray, dtype: np.dtype, mean: np.ndarray, mult: np.ndarray,
              mirror: bool) -> np.ndarray:
    """Channels-first RGB(A) of `dtype`: `(pixel - mean) * mult` for floats (`mean` per
    channel, or a channels x height x width image), the pixels for uint8, and
    `pixel - round(mean)`, saturated, for int8, as MXNet's ProcessImage."""
    planes = img[..., None] if img.ndim == 2 else img
    if planes.shape[2] >= 3:   # OpenCV's BGR(A) -> RGB(A)
        planes = planes[..., [2, 1, 0, 3][:planes.shape[2]]]
    chw = np.moveaxis(planes, 2, 0)
    mean = mean.reshape(-1, 1, 1) if mean.ndim == 1 else mean
    if dtype == np.uint8:
        out = chw.copy()
    elif dtype == np.int8:
        out = np.clip(chw.astype(np.int16) - np.round(mean).astype(np.int16), -128, 127)
    else:
        out = (chw.astype(np.float32) - mean.astype(np.float32)) * mult.reshape(-1, 1, 1)
    out = out.astype(dtype)
    return out[..., ::-1] if mirror else out
