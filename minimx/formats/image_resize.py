"""`cv2.resize` on uint8 images (height x width [x channels]), in numpy, for the image
iterators and `mx.image`, which MXNet runs on OpenCV.

OpenCV's interpolation codes: 0 nearest, 1 bilinear, 2 bicubic, 3 area. Nearest and area
(shrinking) use OpenCV's arithmetic and give its pixels. Bilinear, bicubic and area
(enlarging) are separable filters in OpenCV's fixed point (pixel centres at +0.5, weights
in 1/2048ths, edges replicated; bilinear halving averages 2 x 2 blocks, as OpenCV switches
to area there); OpenCV's vectorised loops round intermediate values differently, so these
can differ from OpenCV's by one level.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..base import MinimxError

NEAREST, LINEAR, CUBIC, AREA = 0, 1, 2, 3
_COEF_BITS = 11   # OpenCV's INTER_RESIZE_COEF_BITS
_ONE = 1 << _COEF_BITS


def _two_taps(first: np.ndarray, frac: np.ndarray, src: int) -> tuple[np.ndarray, np.ndarray]:
    """Source indices `first` and `first + 1` (clamped), weighted 1 - `frac` and `frac`."""
    weight = np.round((1 - frac) * _ONE).astype(np.int64)
    index = np.stack([first, np.minimum(first + 1, src - 1)], 1)
    return index, np.stack([weight, _ONE - weight], 1)


def _linear_taps(dst: int, src: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output position, OpenCV's two source indices and their fixed-point weights."""
    pos = ((np.arange(dst) + 0.5) * (src / dst) - 0.5).astype(np.float32)
    first = np.floor(pos).astype(np.int64)
    frac = pos - first
    frac[(first < 0) | (first >= src - 1)] = 0
    return _two_taps(np.clip(first, 0, src - 1), frac, src)


def _cubic_taps(dst: int, src: int) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's four source indices (replicated at the edges) and Keys' weights (A=-0.75)."""
    pos = ((np.arange(dst) + 0.5) * (1.0 / (dst / src)) - 0.5).astype(np.float32)
    first = np.floor(pos)
    x = (pos - first).astype(np.float32)
    a = np.float32(-0.75)
    c0 = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
    c1 = ((a + 2) * x - (a + 3)) * x * x + 1
    c2 = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1
    coeffs = np.stack([c0, c1, c2, 1 - c0 - c1 - c2], 1)
    index = np.clip(first.astype(np.int64)[:, None] + np.arange(-1, 3), 0, src - 1)
    return index, np.rint(coeffs * _ONE).astype(np.int64)


def _area_up_taps(dst: int, src: int) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's INTER_AREA when not shrinking on both axes: two taps whose weight is the
    part of the output pixel that the next source pixel covers."""
    scale = 1.0 / (dst / src)
    first = np.floor(np.arange(dst) * scale).astype(np.int64)
    frac = ((np.arange(dst) + 1) - (first + 1) * (dst / src)).astype(np.float32)
    frac = np.where(frac <= 0, np.float32(0), frac - np.floor(frac))
    frac[first >= src - 1] = 0
    return _two_taps(np.minimum(first, src - 1), frac, src)


def _separable(img: np.ndarray, width: int, height: int,
               taps: Callable[[int, int], tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Filter rows then columns with fixed-point taps; round and saturate to uint8."""
    x_index, x_weight = taps(width, img.shape[1])
    y_index, y_weight = taps(height, img.shape[0])
    extra = (1,) * (img.ndim - 2)
    src = img.astype(np.int64)
    rows = sum(src[:, x_index[:, k]] * x_weight[:, k].reshape(1, -1, *extra)
               for k in range(x_index.shape[1]))
    both = sum(rows[y_index[:, k]] * y_weight[:, k].reshape(-1, 1, *extra)
               for k in range(y_index.shape[1]))
    rounded = (both + (1 << (2 * _COEF_BITS - 1))) >> (2 * _COEF_BITS)
    return np.clip(rounded, 0, 255).astype(np.uint8)


def _area_matrix(dst: int, src: int) -> np.ndarray:
    """dst x src: how much of each output pixel each source pixel covers."""
    scale = src / dst
    edges = np.arange(dst + 1) * scale
    lo, hi = edges[:-1, None], edges[1:, None]
    pixels = np.arange(src)[None, :]
    return np.clip(np.minimum(hi, pixels + 1) - np.maximum(lo, pixels), 0, None) / scale


def _area_down(img: np.ndarray, width: int, height: int) -> np.ndarray:
    wy, wx = _area_matrix(height, img.shape[0]), _area_matrix(width, img.shape[1])
    columns = np.tensordot(wx, img.astype(np.float64), axes=([1], [1]))   # width x height x ...
    out = np.tensordot(wy, columns, axes=([1], [1]))
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def _nearest(img: np.ndarray, width: int, height: int) -> np.ndarray:
    rows, cols = img.shape[:2]
    x = np.minimum(np.floor(np.arange(width) * (1.0 / (width / cols))).astype(np.int64), cols - 1)
    y = np.minimum(np.floor(np.arange(height) * (1.0 / (height / rows))).astype(np.int64), rows - 1)
    return img[y][:, x]


def resize(img: np.ndarray, width: int, height: int, interp: int = LINEAR) -> np.ndarray:
    """`cv2.resize(img, (width, height), interpolation=interp)` on a uint8 image."""
    rows, cols = img.shape[:2]
    if width <= 0 or height <= 0:
        raise MinimxError(f"resize: output size {width}x{height} (width x height) must be "
                          f"positive")
    if (rows, cols) == (height, width):
        return img.copy()
    if interp == NEAREST:
        return _nearest(img, width, height)
    if interp == LINEAR and (rows, cols) == (2 * height, 2 * width):
        blocks = img.astype(np.int64).reshape(height, 2, width, 2, *img.shape[2:])
        return ((blocks.sum(axis=(1, 3)) + 2) >> 2).astype(np.uint8)
    if interp == LINEAR:
        return _separable(img, width, height, _linear_taps)
    if interp == CUBIC:
        return _separable(img, width, height, _cubic_taps)
    if interp == AREA:
        if rows >= height and cols >= width:
            return _area_down(img, width, height)
        return _separable(img, width, height, _area_up_taps)
    raise MinimxError(f"resize: interpolation {interp!r} not supported (0 nearest, 1 bilinear, "
                      f"2 bicubic, 3 area)")
