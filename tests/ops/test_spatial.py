"""GridGenerator, BilinearSampler, SpatialTransformer and Correlation beyond the MXNet
fixtures (tests/ops/test_model_ops_mxnet.py): per-pixel references written from MXNet's
loops, how the three spatial operators compose, MXNet's hidden outputs, and the errors
that name the node."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import minimx as mx
from minimx.base import OperatorError, ShapeError
from minimx.ops import OpContext, get_op

from ops_support import run

S = mx.sym


def reference_sample(data: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """MXNet's BilinearSamplerForward, one pixel at a time."""
    n, c, h, w = data.shape
    out = np.zeros((n, c) + grid.shape[2:])
    for b, k, i, j in np.ndindex(out.shape):
        x = (grid[b, 0, i, j] + 1) * (w - 1) / 2
        y = (grid[b, 1, i, j] + 1) * (h - 1) / 2
        x0, y0 = math.floor(x), math.floor(y)
        for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
            for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                if 0 <= yy < h and 0 <= xx < w:
                    out[b, k, i, j] += data[b, k, yy, xx] * wy * wx
    return out


def test_bilinear_sampler_matches_a_per_pixel_reference_inside_and_outside():
    rng = np.random.default_rng(3)
    data = rng.normal(size=(2, 3, 4, 5))
    grid = rng.uniform(-1.6, 1.6, (2, 2, 3, 6))
    out, tmp = run("BilinearSampler", {}, data, grid)
    np.testing.assert_allclose(out, reference_sample(data, grid), rtol=1e-12, atol=1e-12)
    assert tmp.shape == (2, 3, 6, 2)
    # Far outside, every corner is outside: zeros, and no gradient.
    far = np.full((1, 2, 2, 2), 7.5)
    assert not run("BilinearSampler", {}, data[:1], far)[0].any()


def test_a_nan_position_adds_nothing_to_the_data_gradient():
    """A NaN grid position (a target size of 1 makes them) reads no pixel: MXNet 1.9.1's
    numbers, where the NaN weight used to reach pixel 0."""
    op = get_op("BilinearSampler")
    p = op.parse_params({})
    data = np.array([[[[1, 2], [3, 4]]]], np.float32)
    grid = np.array([[[[np.nan, 0.5]], [[0, 0]]]], np.float32)
    out = op.forward(p, OpContext(), [data, grid])
    np.testing.assert_array_equal(out[0], [[[[np.nan, 2.75]]]])
    d_data, d_grid = op.backward(p, OpContext(), [data, grid], out,
                                 [np.ones_like(out[0]), np.zeros_like(out[1])])
    np.testing.assert_array_equal(d_data, [[[[0.125, 0.375], [0.125, 0.375]]]])
    np.testing.assert_array_equal(d_grid, [[[[0, 0.5]], [[np.nan, 1]]]])


def test_the_identity_grid_reproduces_the_image_and_shifts_move_it():
    data = np.arange(20, dtype=np.float32).reshape(1, 1, 4, 5)
    identity = np.array([[1, 0, 0, 0, 1, 0]], np.float32)
    grid, grid_dst = run("GridGenerator", {"transform_type": "affine", "target_shape": (4, 5)},
                         identity)
    assert grid_dst.shape == (3, 20)
    np.testing.assert_allclose(run("BilinearSampler", {}, data, grid)[0], data, atol=1e-6)
    # A warp of one pixel to the right reads the next column; the last one reads zeros.
    flow = np.zeros((1, 2, 4, 5), np.float32)
    flow[:, 0] = 1
    shifted = run("BilinearSampler", {}, data, run("GridGenerator", {"transform_type": "warp"},
                                                   flow)[0])[0]
    np.testing.assert_allclose(shifted[..., :4], data[..., 1:], atol=1e-5)
    assert not shifted[..., 4].any()


def test_spatial_transformer_is_grid_generator_then_bilinear_sampler():
    rng = np.random.default_rng(4)
    data = rng.normal(size=(2, 3, 5, 4)).astype(np.float32)
    loc = rng.uniform(-1, 1, (2, 6)).astype(np.float32)
    target = {"target_shape": (3, 6)}
    out, grid_dst, grid_src = run("SpatialTransformer", {**target, "transform_type": "affine",
                                                         "sampler_type": "bilinear"}, data, loc)
    grid, dst = run("GridGenerator", {**target, "transform_type": "affine"}, loc)
    np.testing.assert_allclose(grid_dst, dst)
    np.testing.assert_allclose(grid_src, grid.reshape(2, 2, 18), rtol=1e-6)
    np.testing.assert_allclose(out, run("BilinearSampler", {}, data, grid)[0], rtol=1e-5,
                               atol=1e-6)


def reference_correlation(a: np.ndarray, b: np.ndarray, k: int, d: int, s1: int, s2: int,
                          pad: int, multiply: bool) -> np.ndarray:
    """MXNet's CorrelationForward, one output at a time."""
    n, c, h, w = a.shape
    pa, pb = (np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) for x in (a, b))
    border, radius = d + (k - 1) // 2, d // s2
    th, tw = (math.ceil((size + 2 * pad - 2 * border) / s1) for size in (h, w))
    side = 2 * radius + 1
    out = np.zeros((n, side * side, th, tw))
    for b_, q, i, j in np.ndindex(out.shape):
        y1, x1 = i * s1 + d, j * s1 + d
        y2, x2 = y1 + (q // side - radius) * s2, x1 + (q % side - radius) * s2
        p1, p2 = pa[b_, :, y1:y1 + k, x1:x1 + k], pb[b_, :, y2:y2 + k, x2:x2 + k]
        out[b_, q, i, j] = (p1 * p2 if multiply else np.abs(p1 - p2)).sum() / (k * k * c)
    return out


@pytest.mark.parametrize("k, d, s1, s2, pad, multiply", [
    (1, 1, 1, 1, 0, True), (3, 2, 2, 2, 2, True), (3, 3, 1, 2, 1, False), (1, 2, 3, 1, 2, True)])
def test_correlation_matches_a_per_output_reference(k, d, s1, s2, pad, multiply):
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(2, 2, 2, 7, 8))
    params = {"kernel_size": k, "max_displacement": d, "stride1": s1, "stride2": s2,
              "pad_size": pad, "is_multiply": multiply}
    out, tmp1, tmp2 = run("Correlation", params, a, b)
    np.testing.assert_allclose(out, reference_correlation(a, b, k, d, s1, s2, pad, multiply),
                               rtol=1e-12)
    np.testing.assert_array_equal(tmp2[:, pad:pad + 7, pad:pad + 8], b.transpose(0, 2, 3, 1))
    assert tmp1.shape == (2, 7 + 2 * pad, 8 + 2 * pad, 2)


def test_hidden_outputs_count_in_the_json_as_mxnet():
    data, loc = S.var("data"), S.var("loc")
    nets = [S.GridGenerator(loc, transform_type="affine", target_shape=(2, 2), name="g"),
            S.BilinearSampler(data, S.var("grid"), name="bs"),
            S.SpatialTransformer(data, loc, target_shape=(2, 2), transform_type="affine",
                                 sampler_type="bilinear", name="st"),
            S.Correlation(data, S.var("data2"), name="corr")]
    # MXNet 1.9.1's node_row_ptr ends: 2, 2, 3 and 3 outputs, one of them visible.
    for net, outputs in zip(nets, (2, 2, 3, 3), strict=True):
        doc = json.loads(net.tojson())
        assert doc["node_row_ptr"][-1] - doc["node_row_ptr"][-2] == outputs
        assert net.list_outputs() == [f"{doc['nodes'][-1]['name']}_output"]


@pytest.mark.parametrize("make, error, match", [
    (lambda: S.GridGenerator(S.var("x", shape=(2, 6)), transform_type="affine", name="g"),
     OperatorError, r"g \(GridGenerator\).*target_shape=\(0, 0\)"),
    (lambda: S.GridGenerator(S.var("x", shape=(2, 4)), transform_type="affine",
                             target_shape=(2, 2), name="g"),
     ShapeError, r"g \(GridGenerator\).*\(batch, 6\), got \(2, 4\)"),
    (lambda: S.BilinearSampler(S.var("d", shape=(2, 3, 4, 4)), S.var("g", shape=(2, 3, 4, 4)),
                               name="bs"),
     ShapeError, r"bs \(BilinearSampler\).*\(batch, 2, h, w\), got \(2, 3, 4, 4\)"),
    (lambda: S.BilinearSampler(S.var("d", shape=(2, 3, 4, 4)), S.var("g", shape=(3, 2, 4, 4)),
                               name="bs"),
     ShapeError, r"bs \(BilinearSampler\).*batches"),
    (lambda: S.SpatialTransformer(S.var("d", shape=(2, 3, 4, 4)), S.var("l", shape=(2, 4)),
                                  target_shape=(2, 2), transform_type="affine",
                                  sampler_type="bilinear", name="st"),
     ShapeError, r"st \(SpatialTransformer\).*loc must be \(batch, 6\)"),
    (lambda: S.Correlation(S.var("a", shape=(1, 2, 4, 4)), S.var("b", shape=(1, 2, 4, 4)),
                           kernel_size=2, name="corr"),
     OperatorError, r"corr \(Correlation\).*kernel_size=2 must be odd"),
    (lambda: S.Correlation(S.var("a", shape=(1, 2, 4, 4)), S.var("b", shape=(1, 2, 4, 4)),
                           max_displacement=2, name="corr"),
     ShapeError, r"corr \(Correlation\).*\(1, 2, 4, 4\) padded by 0 is too small"),
    (lambda: S.Correlation(S.var("a", shape=(1, 2, 4, 4)), S.var("b", shape=(1, 2, 4, 5)),
                           name="corr"),
     ShapeError, r"corr \(Correlation\).*one shape"),
])
def test_bad_shapes_and_parameters_name_the_node(make, error, match):
    with pytest.raises(error, match=match):
        make().infer_shape()
