"""Differences a differential fuzz against MXNet 1.9.1 found in `mx.image`, each on a
small case with MXNet 1.9.1's output hard-coded (OpenCV 3.4.2 inside MXNet's wheel)."""
from __future__ import annotations

import io
import random

import numpy as np
import pytest

import minimx as mx
from minimx.base import DTypeError, ShapeError

Image = pytest.importorskip("PIL.Image")


def _u8(values) -> mx.nd.NDArray:
    return mx.nd.array(np.array(values, np.uint8)[..., None], dtype="uint8")


def _resized(values, w, h, interp) -> list:
    return mx.image.imresize(_u8(values), w, h, interp=interp).asnumpy()[..., 0].tolist()


def test_bilinear_rounds_as_opencv_sse2_loop():
    # the vertical pass shifts by 4 and multiplies high in 16 bits, even on edge rows
    img = [[5, 157, 159, 60], [54, 236, 109, 46], [199, 82, 32, 205]]
    assert _resized(img, 3, 5, 1) == [[30, 158, 76], [52, 164, 68], [84, 173, 56],
                                      [141, 103, 128], [179, 57, 176]]
    assert _resized([[4, 94, 252], [244, 102, 133]], 5, 3, 1) == [
        [4, 40, 94, 189, 252], [124, 113, 98, 155, 193], [244, 187, 102, 121, 133]]


def test_bicubic_rounds_eight_values_at_a_time_in_float():
    img = [[105, 91, 3, 5, 189, 214, 218, 166], [219, 119, 19, 247, 222, 110, 58, 10],
           [213, 7, 27, 43, 154, 249, 241, 87], [83, 247, 234, 214, 188, 90, 113, 124]]
    assert _resized(img, 8, 3, 2) == [[121, 97, 5, 43, 195, 197, 192, 142],
                                      [239, 43, 5, 152, 188, 185, 146, 30],
                                      [101, 211, 204, 186, 182, 115, 134, 120]]


def test_area_shrink_and_enlarge():
    img = [[66, 250, 116, 93], [164, 164, 187, 21], [75, 42, 237, 176]]
    assert _resized(img, 3, 2, 3) == [[129, 180, 87], [99, 152, 148]]
    assert _resized([[40, 68], [3, 110], [135, 144]], 3, 5, 3) == [
        [40, 54, 68], [28, 55, 82], [3, 57, 110], [91, 112, 132], [135, 140, 144]]


def test_lanczos():
    img = [[18, 48, 181, 154], [114, 69, 104, 46], [73, 78, 204, 163]]
    assert _resized(img, 3, 5, 4) == [[6, 126, 177], [54, 102, 110], [105, 88, 56],
                                      [91, 121, 118], [61, 153, 189]]


@pytest.mark.parametrize("interp, expected", [
    (1, [[0.5, 6.59375, 7.53125, 3.0], [3.75, 5.078125, 22.984375, 51.5],
         [7.0, 3.5625, 38.4375, 100.0]]),
    (2, [[-0.8590827, 8.824111, 6.305689, -6.5994148], [3.5974731, 0.0967407, 22.549500, 54.774841],
         [8.0540295, -8.6306314, 38.793308, 116.14909]]),
    (3, [[0.5, 7.0, 7.833333, 3.0], [3.75, 5.1666665, 21.083334, 51.5],
         [7.0, 3.3333333, 34.333336, 100.0]]),
])
def test_float_images_resize(interp, expected):
    img = mx.nd.array([[[0.5], [10.25], [3.0]], [[7.0], [1.5], [100.0]]])
    out = mx.image.imresize(img, 4, 3, interp=interp)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy()[..., 0], expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(DTypeError, match="int32"):
        mx.image.imresize(img.astype("int32"), 4, 3)


def _png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def test_png_read_as_grey_uses_libpng_coefficients():
    rgb = np.array([[[182, 229, 19], [194, 248, 30]], [[161, 210, 14], [10, 20, 30]]], np.uint8)
    grey = mx.image.imdecode(_png(rgb), flag=0).asnumpy()[..., 0]
    assert grey.tolist() == [[190, 206], [172, 18]]


def test_sixteen_bit_png_keeps_high_byte():
    deep = np.array([[0, 255, 256], [31337, 65535, 40000]], np.uint16)
    for flag in (0, 1):
        out = mx.image.imdecode(_png(deep), flag=flag).asnumpy()[..., 0]
        assert out.tolist() == [[0, 0, 1], [122, 255, 156]]


@pytest.mark.parametrize("border, row", [(0, [0, 0, 1, 2, 3, 0]), (1, [1, 1, 1, 2, 3, 3]),
                                         (2, [2, 1, 1, 2, 3, 3]), (3, [2, 3, 1, 2, 3, 1]),
                                         (4, [3, 2, 1, 2, 3, 2])])
def test_copy_make_border_types_are_opencv_numbers(border, row):
    out = mx.image.copyMakeBorder(_u8([[1, 2, 3]]), 1, 0, 2, 1, type=border).asnumpy()[..., 0]
    assert out[1].tolist() == row


def test_copy_make_border_fill_values():
    img = mx.nd.array(np.arange(18).reshape(2, 3, 3) * 9, dtype="uint8")
    out = mx.image.copyMakeBorder(img, 1, 0, 0, 1, values=(7.0, 8.0, 9.0)).asnumpy()
    assert out[0].tolist() == [[7, 8, 9]] * 4 and out[1:, 3].tolist() == [[7, 8, 9]] * 2
    four = mx.image.copyMakeBorder(mx.nd.ones((1, 1, 4), dtype="uint8"), 0, 0, 1, 0, value=300.0)
    assert four.asnumpy().tolist() == [[[255, 255, 255, 0], [1, 1, 1, 1]]]


def test_empty_crop_window_is_refused():
    img = mx.nd.zeros((28, 3, 1), dtype="uint8")
    with pytest.raises(ShapeError, match="x0=0, y0=29, w=2, h=12"):
        mx.image.fixed_crop(img, 0, 29, 2, 12)
    with pytest.raises(ShapeError, match="holds no pixel"):
        mx.image.center_crop(mx.nd.zeros((1, 52, 1), dtype="uint8"), (57, 97))


def test_random_size_crop_draws_as_mxnet():
    src = mx.nd.array(np.arange(6 * 8 * 3).reshape(6, 8, 3) % 251, dtype="uint8")
    random.seed(3)
    out, box = mx.image.random_size_crop(src, (3, 2), (0.2, 0.6), (0.75, 1.333), interp=1)
    assert box == (2, 2, 4, 4)
    assert out.asnumpy()[..., 0].tolist() == [[66, 71, 75], [114, 119, 123]]
    random.seed(2)
    aug = mx.image.RandomSizedCropAug((2, 2), 0.3, (0.75, 1.33), 1)
    assert aug(src).asnumpy()[..., 1].tolist() == [[30, 42], [102, 114]]


def test_hue_lighting_and_gray_augmenters():
    img = mx.nd.array(np.arange(12).reshape(2, 2, 3) * 10.0)
    random.seed(5)
    hue = mx.image.HueJitterAug(0.4)(img.copy()).asnumpy()
    np.testing.assert_allclose(hue[0, 0], [-1.6238, 11.7969, 15.0037], atol=1e-3)
    np.testing.assert_allclose(hue[1, 1], [88.4481, 101.8039, 104.7789], atol=1e-3)
    np.random.seed(6)
    aug = mx.image.CreateAugmenter((3, 2, 2), pca_noise=0.1)[-1]
    light = aug(img.copy()).asnumpy()
    np.testing.assert_allclose(light[0, 0], [1.2427, 10.9824, 20.7768], atol=1e-3)
    random.seed(1)
    gray = mx.image.RandomGrayAug(1.0)(img.copy()).asnumpy()
    np.testing.assert_allclose(gray[..., 0], [[8.6, 38.6], [68.6, 98.6]], rtol=1e-6)
    assert (gray[..., 0] == gray[..., 2]).all()
