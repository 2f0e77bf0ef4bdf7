"""Deformable convolutions beyond the MXNet fixtures (tests/ops/test_model_ops_mxnet.py,
group deformable_ops): zero offsets (and unit masks) are Convolution exactly, a loop
reference of MXNet's two boundary rules, the modulated gradient (MXNet 1.9.1 has no CPU
backward to compare with), shape inference and the errors it raises."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.base import OperatorError, ShapeError

from gradcheck import check_gradient

DEFORM = "_contrib_DeformableConvolution"
MODULATED = "_contrib_ModulatedDeformableConvolution"
GROUPED = {"kernel": (3, 2), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1),
           "num_filter": 4, "num_group": 2, "num_deformable_group": 2}


def _nd(*arrays: np.ndarray) -> list[mx.nd.NDArray]:
    return [mx.nd.array(a) for a in arrays]


@pytest.mark.parametrize("modulated", [False, True])
def test_zero_offsets_are_convolution_exactly(modulated: bool) -> None:
    rng = np.random.RandomState(0)
    x, w, b = rng.randn(2, 4, 5, 6), rng.randn(4, 2, 3, 2), rng.randn(4)
    offset = np.zeros((2, 2 * 2 * 6, 3, 6))
    mask = [np.ones((2, 2 * 6, 3, 6))] if modulated else []
    op = mx.nd.contrib.ModulatedDeformableConvolution if modulated \
        else mx.nd.contrib.DeformableConvolution
    got = op(*_nd(x, offset, *mask, w, b), **GROUPED).asnumpy()
    want = mx.nd.Convolution(*_nd(x, w, b), **{k: v for k, v in GROUPED.items()
                                               if k != "num_deformable_group"}).asnumpy()
    np.testing.assert_array_equal(got, want)


def _reference_sample(plane: np.ndarray, y: float, x: float, modulated: bool) -> float:
    """One sample as MXNet's CPU kernels take it (deformable_im2col.h and
    modulated_deformable_im2col.h), written pixel by pixel."""
    h, w = plane.shape
    if modulated:
        if not (-1 < y < h and -1 < x < w):
            return 0.0
        y0, x0 = int(np.floor(y)), int(np.floor(x))

        def at(r: int, c: int) -> float:
            return plane[r, c] if 0 <= r < h and 0 <= c < w else 0.0
        ly, lx = y - y0, x - x0
        return ((1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1)
                + ly * (1 - lx) * at(y0 + 1, x0) + ly * lx * at(y0 + 1, x0 + 1))
    if not (0 <= y < h and 0 <= x < w):
        return 0.0
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly = 0.0 if y0 >= h - 1 else y - y0
    lx = 0.0 if x0 >= w - 1 else x - x0
    return ((1 - ly) * (1 - lx) * plane[y0, x0] + (1 - ly) * lx * plane[y0, x1]
            + ly * (1 - lx) * plane[y1, x0] + ly * lx * plane[y1, x1])


@pytest.mark.parametrize("modulated", [False, True])
def test_matches_a_loop_reference_of_mxnet_boundary_rules(modulated: bool) -> None:
    rng = np.random.RandomState(3)
    x, w = rng.randn(1, 4, 4, 5), rng.randn(2, 4, 2, 2)
    # Offsets on a half-pixel grid from -3 to 3: samples on pixels, on the last row,
    # between pixels, in (-1, 0) and outside.
    offset = rng.randint(-6, 7, (1, 2 * 4 * 2, 3, 4)) / 2.0
    mask = rng.uniform(0, 1, (1, 2 * 4, 3, 4))
    params = {"kernel": (2, 2), "num_filter": 2, "num_deformable_group": 2, "no_bias": True}
    ins = [x, offset, mask, w] if modulated else [x, offset, w]
    op = mx.nd.contrib.ModulatedDeformableConvolution if modulated \
        else mx.nd.contrib.DeformableConvolution
    got = op(*_nd(*ins), **params).asnumpy()
    want = np.zeros((1, 2, 3, 4))
    for f in range(2):
        for c in range(4):
            g = c // 2
            for k, (i, j) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
                for oy in range(3):
                    for ox in range(4):
                        y = oy + i + offset[0, (g * 4 + k) * 2, oy, ox]
                        xx = ox + j + offset[0, (g * 4 + k) * 2 + 1, oy, ox]
                        v = _reference_sample(x[0, c], y, xx, modulated)
                        scale = mask[0, g * 4 + k, oy, ox] if modulated else 1.0
                        want[0, f, oy, ox] += w[f, c, i, j] * v * scale
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_modulated_gradient_matches_finite_differences() -> None:
    rng = np.random.RandomState(1)
    inputs = [rng.randn(2, 4, 5, 6), rng.uniform(-2.5, 2.5, (2, 24, 3, 6)),
              rng.uniform(0, 1, (2, 12, 3, 6)), rng.randn(4, 2, 3, 2), rng.randn(4)]
    grads = check_gradient(MODULATED, GROUPED, inputs, rtol=1e-4, atol=1e-5)
    assert all(g is not None and np.abs(g).max() > 0 for g in grads)


def test_shapes_are_inferred_from_the_data() -> None:
    sym = mx.sym.contrib.ModulatedDeformableConvolution(
        mx.sym.var("data"), mx.sym.var("offset"), mx.sym.var("mask"), **GROUPED, name="dcn")
    args, outs, _ = sym.infer_shape(data=(2, 4, 5, 6))
    assert dict(zip(sym.list_arguments(), args, strict=True)) == {
        "data": (2, 4, 5, 6), "offset": (2, 24, 3, 6), "mask": (2, 12, 3, 6),
        "dcn_weight": (4, 2, 3, 2), "dcn_bias": (4,)}
    assert outs == [(2, 4, 3, 6)]


@pytest.mark.parametrize("op, params, shapes, error, match", [
    (DEFORM, {"kernel": (3,), "num_filter": 2}, {"data": (1, 2, 5)}, OperatorError,
     r"kernel=\(3,\) must be 2-D"),
    (DEFORM, {"kernel": (3, 3), "num_filter": 2, "num_deformable_group": 3},
     {"data": (1, 4, 5, 5)}, ShapeError, "num_deformable_group=3"),
    (DEFORM, {"kernel": (3, 3), "num_filter": 2}, {"data": (1, 2, 5, 5),
                                                    "offset": (1, 18, 4, 4)},
     ShapeError, "offset"),
    (MODULATED, {"kernel": (3, 3), "num_filter": 3, "num_deformable_group": 2},
     {"data": (1, 4, 5, 5)}, ShapeError, "num_filter=3"),
    (MODULATED, {"kernel": (1, 1), "num_filter": 2, "im2col_step": 4},
     {"data": (6, 2, 5, 5)}, ShapeError, "im2col_step=4"),
])
def test_bad_parameters_and_shapes_raise(op, params, shapes, error, match) -> None:
    fn = getattr(mx.sym.contrib, op.removeprefix("_contrib_"))
    inputs = [mx.sym.var(n) for n in ("data", "offset", "mask")[:3 if op == MODULATED else 2]]
    with pytest.raises(error, match=match):
        fn(*inputs, **params, name="dcn").infer_shape(**shapes)
