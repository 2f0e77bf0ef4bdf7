"""BilinearResize2D and AdaptiveAvgPooling2D against per-pixel references written from
MXNet's kernels, their gradients (both are linear: the gradient is the adjoint map) and
the output-size rule of every resize mode."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.base import OperatorError, ShapeError
from minimx.ops import OpContext, get_op

from ops_support import attrs_of, infer, run

FAST = settings(max_examples=50, deadline=None)


def source(i, size, out, align):
    """The source position of output pixel i along one axis (MXNet's area_pixel_* rules)."""
    if out <= 1:
        return 0.0
    if align:
        return (size - 1) / (out - 1) * i
    return max(size / out * (i + 0.5) - 0.5, 0.0)


def reference_resize(x, oh, ow, align):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        y = source(i, h, oh, align)
        y0 = int(y)
        y1, ly = min(y0 + 1, h - 1), y - y0
        for j in range(ow):
            xs = source(j, w, ow, align)
            x0 = int(xs)
            x1, lx = min(x0 + 1, w - 1), xs - x0
            out[:, :, i, j] = ((1 - ly) * ((1 - lx) * x[:, :, y0, x0] + lx * x[:, :, y0, x1])
                               + ly * ((1 - lx) * x[:, :, y1, x0] + lx * x[:, :, y1, x1]))
    return out


@FAST
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 9), st.integers(1, 9),
       st.booleans(), st.integers(0, 2**16))
def test_bilinear_resize_matches_reference(h, w, oh, ow, align, seed):
    x = np.random.default_rng(seed).standard_normal((2, 3, h, w))
    out = run("_contrib_BilinearResize2D", dict(height=oh, width=ow, align_corners=align), x)
    # MXNet computes source positions in float32: agreement to float32 precision.
    np.testing.assert_allclose(out, reference_resize(x, oh, ow, align), rtol=1e-5, atol=1e-5)


def check_adjoint(name, params, *inputs):
    """A linear operator's data gradient is its adjoint: <f(x), g> == <x, grad(g)>."""
    op = get_op(name)
    p = op.parse_params(attrs_of(**params))
    out = op.forward(p, OpContext(), list(inputs))
    head = np.random.default_rng(0).standard_normal(out.shape)
    grads = op.backward(p, OpContext(), *op.backward_view(p, list(inputs), [out]), [head])
    np.testing.assert_allclose(np.sum(out * head), np.sum(inputs[0] * grads[0]))
    return grads


def test_bilinear_resize_gradient_is_the_adjoint():
    x = np.random.default_rng(3).standard_normal((2, 2, 5, 4))
    for align in (True, False):
        check_adjoint("_contrib_BilinearResize2D", dict(height=7, width=3, align_corners=align), x)
    grads = check_adjoint("_contrib_BilinearResize2D", dict(mode="like"), x, np.ones((1, 1, 2, 9)))
    assert grads[1].shape == (1, 1, 2, 9) and not grads[1].any()


@pytest.mark.parametrize("params, dshape, expected", [
    (dict(height=3, width=8), (1, 2, 5, 7), (3, 8)),
    (dict(scale_height=2.0, scale_width=0.5), (1, 2, 5, 7), (10, 3)),
    (dict(scale_width=2.0, width=4), (1, 2, 5, 7), (1, 4)),  # MXNet reads scale_height only
    (dict(mode="odd_scale", scale_height=2.0, scale_width=0.5), (1, 2, 5, 8), (9, 4)),
    (dict(mode="to_even_down"), (1, 2, 5, 8), (4, 8)),
    (dict(mode="to_even_up"), (1, 2, 5, 8), (6, 8)),
    (dict(mode="to_odd_down"), (1, 2, 5, 8), (5, 7)),
    (dict(mode="to_odd_up"), (1, 2, 5, 8), (5, 9)),
])
def test_bilinear_resize_output_sizes(params, dshape, expected):
    assert infer("_contrib_BilinearResize2D", params, [dshape])[1] == [dshape[:2] + expected]
    x = np.zeros(dshape)
    assert run("_contrib_BilinearResize2D", params, x).shape == dshape[:2] + expected


def test_bilinear_resize_like_mode_and_errors():
    data, like = mx.sym.var("data"), mx.sym.var("like")
    resized = mx.sym._contrib_BilinearResize2D(data, like, mode="like", name="up")
    assert resized.list_arguments() == ["data", "like"]
    assert resized.infer_shape(data=(1, 3, 4, 4), like=(1, 8, 6, 5))[1] == [(1, 3, 6, 5)]
    with pytest.raises(OperatorError, match="scale_width"):
        run("_contrib_BilinearResize2D", dict(scale_height=2.0), np.zeros((1, 1, 2, 2)))
    with pytest.raises(ShapeError, match="4-D"):
        infer("_contrib_BilinearResize2D", {}, [(1, 2, 3)])


def reference_adaptive(x, oh, ow):
    h, w = x.shape[2:]
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        h0, h1 = math.floor(i * h / oh), math.ceil((i + 1) * h / oh)
        for j in range(ow):
            w0, w1 = math.floor(j * w / ow), math.ceil((j + 1) * w / ow)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


@FAST
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 5), st.integers(1, 5),
       st.integers(0, 2**16))
def test_adaptive_avg_pooling_matches_reference(h, w, oh, ow, seed):
    x = np.random.default_rng(seed).standard_normal((2, 3, h, w))
    out = run("_contrib_AdaptiveAvgPooling2D", dict(output_size=(oh, ow)), x)
    np.testing.assert_allclose(out, reference_adaptive(x, oh, ow), atol=1e-6)


def test_adaptive_avg_pooling_sizes_and_gradient():
    x = np.random.default_rng(4).standard_normal((2, 3, 7, 5))
    for size, expected in (((), (1, 1)), ((3,), (3, 3)), ((4, 2), (4, 2))):
        params = dict(output_size=size) if size else {}
        assert infer("_contrib_AdaptiveAvgPooling2D", params, [x.shape])[1] == \
            [(2, 3) + expected]
        check_adjoint("_contrib_AdaptiveAvgPooling2D", params, x)
    np.testing.assert_allclose(run("_contrib_AdaptiveAvgPooling2D", {}, x),
                               x.mean(axis=(2, 3), keepdims=True))
