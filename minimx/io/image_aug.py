"""The image steps of `ImageRecordIter`, in the order of MXNet 1.9.1's default augmenter
(src/io/image_aug_default.cc) and its normalisation (src/io/iter_image_recordio_2.cc).

Images here are OpenCV's layout, height x width x channels, BGR, uint8. `resize_short`
scales the shorter side to `resize`; `crop` enlarges an image smaller than the output
(the short side first, as MXNet does) and cuts the output size from its centre or, with
`rand_crop`, from anywhere; `normalize` turns BGR into RGB planes, subtracts the mean,
scales, and mirrors.

Resizing is OpenCV's INTER_LINEAR (formats/image_resize.py), pixel for pixel.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from ..formats.image_resize import LINEAR, resize


def short_side_size(rows: int, cols: int, size: int) -> tuple[int, int]:
    """(width, height) with the shorter side `size` (MXNet's `resize`: integer sizes,
    truncated)."""
    return (size, size * rows // cols) if rows > cols else (size * cols // rows, size)


def resize_short(img: np.ndarray, size: int) -> np.ndarray:
    """Scale bilinearly so that the shorter side is `size`."""
    rows, cols = img.shape[:2]
    return resize(img, *short_side_size(rows, cols, size), LINEAR)


def crop(img: np.ndarray, height: int, width: int, rng: np.random.Generator | None,
         what: str) -> np.ndarray:
    """A `height` x `width` window: centred, or anywhere when `rng` is given (MXNet's
    `rand_crop`). An image smaller than that is first enlarged, keeping its aspect."""
    rows, cols = img.shape[:2]
    if rows < height:   # MXNet's float32 arithmetic, truncated
        cols = int(np.float32(height) / np.float32(rows) * np.float32(cols))
        img, rows = resize(img, cols, height, LINEAR), height
    if cols < width:
        rows = int(np.float32(width) / np.float32(cols) * np.float32(rows))
        img, cols = resize(img, width, rows, LINEAR), width
    if rows < height or cols < width:
        raise ShapeError(f"{what}: a {img.shape[0]}x{img.shape[1]} image cannot give a "
                         f"{height}x{width} crop")
    if rng is None:
        top, left = (rows - height) // 2, (cols - width) // 2
    else:
        top, left = int(rng.integers(0, rows - height + 1)), int(rng.integers(0, cols - width + 1))
    return img[top:top + height, left:left + width]


def normalize(img: np.ndarray, dtype: np.dtype, mean: np.ndarray, mult: np.ndarray,
              divisor: np.ndarray, mirror: bool) -> np.ndarray:
    """Channels-first RGB(A) of `dtype`: `(pixel - mean) * mult / divisor` for floats
    (`mean` per channel, or a channels x height x width image), the pixels for uint8, and
    `pixel - round(mean)` (half away from zero, as std::round), saturated, for int8, as
    MXNet's ProcessImage."""
    planes = img[..., None] if img.ndim == 2 else img
    if planes.shape[2] >= 3:   # OpenCV's BGR(A) -> RGB(A)
        planes = planes[..., [2, 1, 0, 3][:planes.shape[2]]]
    chw = np.moveaxis(planes, 2, 0)
    mean = mean.reshape(-1, 1, 1) if mean.ndim == 1 else mean
    if dtype == np.uint8:
        out = chw.copy()
    elif dtype == np.int8:
        wide = mean.astype(np.float64)   # exact: 0.49999997 + 0.5 stays below 1
        rounded = np.sign(wide) * np.floor(np.abs(wide) + 0.5)
        out = np.clip(chw.astype(np.int16) - rounded.astype(np.int16), -128, 127)
    else:
        out = ((chw.astype(np.float32) - mean.astype(np.float32)) * mult.reshape(-1, 1, 1)
               / divisor.reshape(-1, 1, 1))
    out = out.astype(dtype)
    return out[..., ::-1] if mirror else out
