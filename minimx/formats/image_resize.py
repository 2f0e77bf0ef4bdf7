"""`cv2.resize` on uint8 and float images (height x width [x channels]), in numpy, for the image
iterators and `mx.image`: OpenCV 3.4.2's arithmetic, which MXNet 1.9.1's wheels link.

OpenCV's interpolation codes: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos,
5 bit-exact bilinear (INTER_LINEAR_EXACT: on uint8, each output the four nearest
pixels weighted in 1/256ths, as OpenCV's own test of it computes it; float images
take bilinear, as OpenCV does). Bilinear, bicubic, Lanczos and area (when
enlarging) are separable filters: a horizontal pass in integers (weights in
1/2048ths, pixel centres at +0.5, edges replicated) and a vertical pass whose
rounding is that of OpenCV's SSE2 loops for the columns they cover and its scalar
loop for the rest (`_vertical`). Area shrinking averages whole blocks for integer
factors and otherwise accumulates OpenCV's float32 area tables in its order, so
every pixel is OpenCV's.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..base import MinimxError

NEAREST, LINEAR, CUBIC, AREA, LANCZOS4, LINEAR_EXACT = 0, 1, 2, 3, 4, 5
_COEF_BITS = 11   # OpenCV's INTER_RESIZE_COEF_BITS
_ONE = 1 << _COEF_BITS
_SHIFT = 2 * _COEF_BITS


def _linear_coeffs(frac: np.ndarray) -> np.ndarray:
    return np.stack([np.float32(1) - frac, frac], 1)


def _cubic_coeffs(x: np.ndarray) -> np.ndarray:
    """OpenCV's interpolateCubic (Keys, A = -0.75) in float32."""
    a = np.float32(-0.75)
    c0 = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
    c1 = ((a + 2) * x - (a + 3)) * x * x + 1
    c2 = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1
    return np.stack([c0, c1, c2, 1 - c0 - c1 - c2], 1).astype(np.float32)


def _lanczos4_coeffs(x: np.ndarray) -> np.ndarray:
    """OpenCV's interpolateLanczos4: eight sinc-windowed taps, normalised in float32."""
    s45 = 0.70710678118654752440084436210485
    cs = np.array([[1, 0], [-s45, -s45], [0, 1], [s45, -s45],
                   [-1, 0], [s45, s45], [0, -1], [-s45, s45]])
    shifted = (x + np.float32(3))[:, None]   # float32, as OpenCV's `x + 3`
    y0 = -shifted.astype(np.float64) * np.pi * 0.25
    y = -(shifted - np.arange(8, dtype=np.float32)).astype(np.float64) * np.pi * 0.25
    with np.errstate(divide="ignore", invalid="ignore"):
        coeffs = ((cs[:, 0] * np.sin(y0) + cs[:, 1] * np.cos(y0)) / (y * y)).astype(np.float32)
    total = np.zeros(len(x), np.float32)
    for k in range(8):   # float32 sum in OpenCV's order
        total += coeffs[:, k]
    with np.errstate(divide="ignore", invalid="ignore"):   # x = 0 is replaced below
        coeffs *= (np.float32(1) / total)[:, None]
    exact = x < np.finfo(np.float32).eps   # on a pixel: that pixel alone
    coeffs[exact] = np.eye(8, dtype=np.float32)[3]
    return coeffs


# interpolation -> (taps, coefficient function, area-mode coordinates)
_KERNELS: dict[int, tuple[int, Callable[[np.ndarray], np.ndarray], bool]] = {
    LINEAR: (2, _linear_coeffs, False),
    CUBIC: (4, _cubic_coeffs, False),
    LANCZOS4: (8, _lanczos4_coeffs, False),
    AREA: (2, _linear_coeffs, True),   # OpenCV's area when not shrinking on both axes
}


def _taps(dst: int, src: int, interp: int, horizontal: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per output position, OpenCV's source indices (edges replicated) and float32
    coefficients. Only the horizontal pass of the two-tap kernels pins positions outside the
    image to its edge pixel with weight one; the vertical pass keeps both weights."""
    ksize, coeffs, area_mode = _KERNELS[interp]
    inv_scale = dst / src
    scale = 1.0 / inv_scale
    d = np.arange(dst)
    if area_mode:
        first = np.floor(d * scale).astype(np.int64)
        frac = ((d + 1) - (first + 1) * inv_scale).astype(np.float32)
        frac = np.where(frac <= 0, np.float32(0), frac - np.floor(frac)).astype(np.float32)
    else:
        pos = ((d + 0.5) * scale - 0.5).astype(np.float32)
        first = np.floor(pos).astype(np.int64)
        frac = (pos - first.astype(np.float32)).astype(np.float32)
    if horizontal and ksize == 2:
        outside = (first < 0) | (first >= src - 1)
        frac[outside] = 0
        first = np.clip(first, 0, src - 1)
    index = np.clip(first[:, None] + np.arange(ksize) - (ksize // 2 - 1), 0, src - 1)
    return index, coeffs(frac)


def _fixed(coeffs: np.ndarray) -> np.ndarray:
    """OpenCV's weights for 8-bit images: coefficients in 1/2048ths, rounded."""
    return np.rint(coeffs * np.float32(_ONE)).astype(np.int64)


def _simd_end(width: int, interp: int) -> int:
    """How many values of a row OpenCV's vectorised vertical loop writes (the rest go
    through its scalar loop): all of them for bilinear (as MXNet's build gives them,
    even rows narrower than a vector), 8 at a time for bicubic, none for Lanczos."""
    if interp == CUBIC:
        return width - width % 8
    return 0 if interp == LANCZOS4 else width


def _vertical(rows: np.ndarray, index: np.ndarray, weights: np.ndarray, interp: int
              ) -> np.ndarray:
    """Combine the horizontally filtered rows (int64, source rows x values) into output
    rows, rounding as OpenCV does."""
    exact = _weighted_sum(rows, index, weights, axis=0)
    out = (exact + (1 << (_SHIFT - 1))) >> _SHIFT   # the scalar loop
    end = _simd_end(rows.shape[1], interp)
    if end and interp == CUBIC:   # float32 sums, rounded half to even
        scaled = (weights * np.float32(1.0 / (_ONE * _ONE))).astype(np.float32)
        total = _weighted_sum(rows[:, :end].astype(np.float32), index, scaled, axis=0)
        out[:, :end] = np.clip(np.rint(total), -32768, 32767)
    elif end:   # bilinear: 16-bit multiply-high of the values shifted right by 4
        high = [np.clip(rows[index[:, k], :end] >> 4, -32768, 32767) * weights[:, k, None] >> 16
                for k in range(2)]
        out[:, :end] = (np.clip(high[0] + high[1], -32768, 32767) + 2) >> 2
    return np.clip(out, 0, 255).astype(np.uint8)


def _separable(img: np.ndarray, width: int, height: int, interp: int) -> np.ndarray:
    x_index, x_coeffs = _taps(width, img.shape[1], interp, horizontal=True)
    y_index, y_coeffs = _taps(height, img.shape[0], interp, horizontal=False)
    if img.dtype != np.uint8:   # float images: float32 sums, as OpenCV's
        rows = _weighted_sum(img.astype(np.float32), x_index, x_coeffs, axis=1)
        return _weighted_sum(rows, y_index, y_coeffs, axis=0).astype(img.dtype)
    rows = _weighted_sum(img.astype(np.int64), x_index, _fixed(x_coeffs), axis=1)
    flat = rows.reshape(img.shape[0], -1)
    out = _vertical(flat, y_index, _fixed(y_coeffs), interp)
    return out.reshape(height, width, *img.shape[2:])


def _weighted_sum(src: np.ndarray, index: np.ndarray, weights: np.ndarray, axis: int
                  ) -> np.ndarray:
    """Along `axis`, per output position, the taps `src[index[:, k]]` times
    `weights[:, k]`, added in order."""
    shape = [1] * src.ndim
    shape[axis] = -1
    total = np.take(src, index[:, 0], axis) * weights[:, 0].reshape(shape)
    for k in range(1, index.shape[1]):
        total = total + np.take(src, index[:, k], axis) * weights[:, k].reshape(shape)
    return total


def _area_table(dst: int, src: int) -> list[list[tuple[int, np.float32]]]:
    """OpenCV's computeResizeAreaTab: per output pixel, its (source pixel, float32
    weight) pairs in order."""
    scale = src / dst
    table = []
    for d in range(dst):
        lo, hi = d * scale, d * scale + scale
        cell = min(scale, src - lo)
        first, last = int(np.ceil(lo)), int(np.floor(hi))
        last = min(last, src - 1)
        first = min(first, last)
        entries = []
        if first - lo > 1e-3:
            entries.append((first - 1, np.float32((first - lo) / cell)))
        entries += [(s, np.float32(1.0 / cell)) for s in range(first, last)]
        if hi - last > 1e-3:
            entries.append((last, np.float32(min(min(hi - last, 1.0), cell) / cell)))
        table.append(entries)
    return table


def _area_pass(img: np.ndarray, table: list[list[tuple[int, np.float32]]], axis: int
               ) -> np.ndarray:
    """Weighted float32 sums along `axis`, each added in the table's order."""
    src = np.moveaxis(img, axis, 0).astype(np.float32)
    out = np.zeros((len(table), *src.shape[1:]), np.float32)
    for step in range(max(len(entries) for entries in table)):
        for d, entries in enumerate(table):
            if step < len(entries):
                s, weight = entries[step]
                out[d] += src[s] * weight
    return np.moveaxis(out, 0, axis)


def _area_down(img: np.ndarray, width: int, height: int) -> np.ndarray:
    rows, cols = img.shape[:2]
    if rows % height == 0 and cols % width == 0:   # integer factors: block means
        fy, fx = rows // height, cols // width
        wide = np.int64 if img.dtype == np.uint8 else np.float32
        total = img.astype(wide).reshape(height, fy, width, fx, *img.shape[2:]).sum(axis=(1, 3))
        if (fy, fx) == (2, 2) and img.dtype == np.uint8:   # OpenCV's SIMD: round half up
            return ((total + 2) >> 2).astype(np.uint8)
        mean = total.astype(np.float32) * np.float32(1.0 / (fy * fx))
    else:
        across = _area_pass(img, _area_table(width, cols), axis=1)
        mean = _area_pass(across, _area_table(height, rows), axis=0)
    if img.dtype != np.uint8:
        return mean.astype(img.dtype)
    return np.clip(np.rint(mean), 0, 255).astype(np.uint8)


def _nearest(img: np.ndarray, width: int, height: int) -> np.ndarray:
    rows, cols = img.shape[:2]
    x = np.minimum(np.floor(np.arange(width) * (1.0 / (width / cols))).astype(np.int64), cols - 1)
    y = np.minimum(np.floor(np.arange(height) * (1.0 / (height / rows))).astype(np.int64), rows - 1)
    return img[y][:, x]


def _exact_taps(dst: int, src: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each output position along an axis: its two source indices (edges
    replicated) and their weights in 1/256ths, from the position's double-precision
    source coordinate rounded half to even."""
    pos = (1.0 / (dst / src)) * (np.arange(dst) + 0.5) - 0.5
    first = np.floor(pos)
    w1 = np.rint((pos - first) * 256).astype(np.int64)
    first = first.astype(np.int64)
    return (np.clip(first, 0, src - 1), np.clip(first + 1, 0, src - 1),
            np.stack([256 - w1, w1]))


def _linear_exact(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """INTER_LINEAR_EXACT on a uint8 image: ((p00*x0 + p01*x1)*y0 + (p10*x0 + p11*x1)*y1
    + 2^15) >> 16 in integers, saturated."""
    x0, x1, (wx0, wx1) = _exact_taps(width, img.shape[1])
    y0, y1, (wy0, wy1) = _exact_taps(height, img.shape[0])
    channels = (1,) * (img.ndim - 2)   # weights broadcast over a channel axis
    wide = img.astype(np.int64)
    across = (wide[:, x0] * wx0.reshape(1, -1, *channels)
              + wide[:, x1] * wx1.reshape(1, -1, *channels))
    val = across[y0] * wy0.reshape(-1, 1, *channels) + across[y1] * wy1.reshape(-1, 1, *channels)
    return np.clip((val + (1 << 15)) >> 16, 0, 255).astype(np.uint8)


def resize(img: np.ndarray, width: int, height: int, interp: int = LINEAR) -> np.ndarray:
    """`cv2.resize(img, (width, height), interpolation=interp)` on a uint8 image (or a
    float32 / float64 one, filtered in float32; bit-exact bilinear is bilinear there)."""
    rows, cols = img.shape[:2]
    if width <= 0 or height <= 0 or rows == 0 or cols == 0:
        raise MinimxError(f"resize: cannot resize a {cols}x{rows} image to {width}x{height} "
                          f"(width x height): both must be non-empty")
    if interp not in (NEAREST, LINEAR, CUBIC, AREA, LANCZOS4, LINEAR_EXACT):
        raise MinimxError(f"resize: interpolation {interp!r} not supported (0 nearest, "
                          f"1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 5 bit-exact bilinear)")
    if (rows, cols) == (height, width):
        return img.copy()
    if interp == NEAREST:
        return _nearest(img, width, height)
    if interp == LINEAR_EXACT:
        if img.dtype == np.uint8:
            return _linear_exact(img, width, height)
        interp = LINEAR
    if interp == LINEAR and (rows, cols) == (2 * height, 2 * width):
        interp = AREA   # OpenCV's own switch: halving is the 2 x 2 block mean
    if interp == AREA and rows >= height and cols >= width:
        return _area_down(img, width, height)
    return _separable(img, width, height, interp)
