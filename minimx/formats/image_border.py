"""`cv2.copyMakeBorder` on images (height x width x channels), in numpy, for MXNet's
``_cvcopyMakeBorder`` operator and `mx.image.copyMakeBorder`: OpenCV 3.4.2's pixels,
which MXNet 1.9.1's wheels link.

OpenCV's border types by number (MXNet passes `type` through; its docstring's list is
in another order), as numpy's pad modes: 0 constant, 1 repeats the edge pixel (aa|abc),
2 reflects (ba|abc), 3 wraps around (bc|abc), 4 reflects about the edge pixel (cb|abc);
adding `ISOLATED` (16) changes nothing for a whole image.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import DTypeError, MinimxError, ShapeError

CONSTANT, ISOLATED = 0, 16
_PAD_MODES: dict[int, Any] = {0: "constant", 1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}
# The dtypes MXNet hands OpenCV (its table of OpenCV types by MXNet dtype).
DTYPES = ("float32", "float64", "uint8", "int32")


def check_border(top: int, bot: int, left: int, right: int, border_type: int,
                 channels: int | None, what: str) -> None:
    """Refuse what OpenCV refuses: negative margins, an unknown border type, a
    constant border for more than 4 channels (its Scalar holds 4)."""
    if border_type & ~ISOLATED not in _PAD_MODES or min(top, bot, left, right) < 0:
        raise MinimxError(f"{what}: type must be 0-4 (or 16-20) and the margins "
                          f"non-negative, got type={border_type!r}, top={top}, bot={bot}, "
                          f"left={left}, right={right}")
    if border_type & ~ISOLATED == CONSTANT and channels is not None and channels > 4:
        raise ShapeError(f"{what}: a constant border fills at most 4 channels, the image "
                         f"has {channels}")


def copy_make_border(pixels: np.ndarray, top: int, bot: int, left: int, right: int,
                     border_type: int = CONSTANT, value: float = 0.0,
                     values: tuple[float, ...] = (), what: str = "copyMakeBorder"
                     ) -> np.ndarray:
    """`pixels` padded by `top`, `bot`, `left` and `right` pixels as OpenCV's
    `copyMakeBorder`: a constant border fills with `values` (per channel) or `value`.

    >>> img = np.array([[[1], [2], [3]]], np.uint8)
    >>> copy_make_border(img, 0, 0, 2, 1, border_type=2)[0, :, 0].tolist()
    [2, 1, 1, 2, 3, 3]
    """
    if pixels.ndim != 3:
        raise ShapeError(f"{what}: expected a height x width x channels image, got shape "
                         f"{pixels.shape}")
    if pixels.dtype.name not in DTYPES:
        raise DTypeError(f"{what}: expected a {', '.join(DTYPES)} image, got {pixels.dtype}")
    check_border(top, bot, left, right, border_type, pixels.shape[2], what)
    widths = ((top, bot), (left, right), (0, 0))
    mode = _PAD_MODES[border_type & ~ISOLATED]
    if mode != "constant":
        return np.pad(pixels, widths, mode=mode)
    return np.pad(pixels, widths) + _border_fill(pixels, widths, value, values)


def _border_fill(pixels: np.ndarray, widths: tuple, value: float,
                 values: tuple[float, ...]) -> np.ndarray:
    """The constant border alone: OpenCV's Scalar of the first 4 `values` (the rest
    0), or of `value` for the first three channels (a fourth gets 0), cast as OpenCV
    saturates (integers rounded to nearest even, then clipped)."""
    scalar = np.zeros(4)
    given = tuple(values)[:4]
    scalar[:len(given) or 3] = given if given else value
    channels = scalar[:pixels.shape[2]]
    if pixels.dtype.kind in "iu":
        limits = np.iinfo(pixels.dtype)
        channels = np.clip(np.rint(channels), limits.min, limits.max)
    border = np.pad(np.zeros(pixels.shape[:2], bool), widths[:2], constant_values=True)
    return (border[..., None] * channels).astype(pixels.dtype)
