"""Convolution and Deconvolution: kernels against plain-loop references,
gradients against finite differences, shape inference and parameter errors."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minimx.base import OperatorError, ShapeError
from minimx.ops import get_op

from gradcheck import check_gradient
from ops_support import infer, run

FAST = settings(max_examples=40, deadline=None)


# -- independent references: explicit loops over output (or input) positions --------

def conv_reference(x, w, b, stride, pad, dilate, groups):
    n, c, *size = x.shape
    f, cg, *kernel = w.shape
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilate, strict=True)]
    out = [(s + 2 * p - sp) // st + 1 for s, p, sp, st in zip(size, pad, span, stride, strict=True)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    y = np.zeros((n, f, *out))
    fg = f // groups
    for b_, o in itertools.product(range(n), range(f)):
        g = o // fg
        for pos in itertools.product(*(range(m) for m in out)):
            region = tuple(slice(q * st, q * st + sp, d)
                           for q, st, sp, d in zip(pos, stride, span, dilate, strict=True))
            patch = xp[(b_, slice(g * cg, (g + 1) * cg), *region)]
            y[(b_, o, *pos)] = np.sum(patch * w[o]) + (b[o] if b is not None else 0)
    return y


def deconv_reference(x, w, b, stride, pad, dilate, groups, out):
    """Each input element scatters weight * value to i*stride + k*dilate - pad."""
    n, c, *size = x.shape
    _, fg, *kernel = w.shape
    cg = c // groups
    y = np.zeros((n, fg * groups, *out))
    for b_, ci in itertools.product(range(n), range(c)):
        g = ci // cg
        for pos in itertools.product(*(range(s) for s in size)):
            for tap in itertools.product(*(range(k) for k in kernel)):
                o = tuple(i * st + k * d - p
                          for i, k, st, d, p in zip(pos, tap, stride, dilate, pad, strict=True))
                if all(0 <= q < m for q, m in zip(o, out, strict=True)):
                    y[(b_, slice(g * fg, (g + 1) * fg), *o)] += (x[(b_, ci, *pos)]
                                                                 * w[(ci, slice(None), *tap)])
    if b is not None:
        y += b.reshape((1, -1) + (1,) * len(out))
    return y


# -- strategies ------------------------------------------------------------------------

@st.composite
def conv_cases(draw, max_ndim=2):
    nd = draw(st.integers(1, max_ndim))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dilate = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    pad = tuple(draw(st.integers(0, 2)) for _ in range(nd))
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dilate, strict=True)]
    size = tuple(max(1, sp - 2 * p) + draw(st.integers(0, 4))
                 for sp, p in zip(span, pad, strict=True))
    cg = draw(st.integers(1, 2))
    groups = draw(st.sampled_from([1, 2, 3]))
    fg = draw(st.integers(1, 2))
    # depthwise when cg == 1 and groups == channels
    return dict(nd=nd, kernel=kernel, stride=stride, dilate=dilate, pad=pad, size=size,
                groups=groups, channels=cg * groups, num_filter=fg * groups,
                batch=draw(st.integers(1, 2)), no_bias=draw(st.booleans()),
                seed=draw(st.integers(0, 2**16)))


def conv_params(case):
    return dict(kernel=case["kernel"], stride=case["stride"], dilate=case["dilate"],
                pad=case["pad"], num_filter=case["num_filter"], num_group=case["groups"],
                no_bias=case["no_bias"])


def conv_inputs(case, rng):
    x = rng.standard_normal((case["batch"], case["channels"], *case["size"]))
    w = rng.standard_normal((case["num_filter"], case["channels"] // case["groups"],
                             *case["kernel"]))
    b = None if case["no_bias"] else rng.standard_normal(case["num_filter"])
    return x, w, b


# -- Convolution -----------------------------------------------------------------------

@FAST
@given(conv_cases())
def test_convolution_matches_loop_reference(case):
    x, w, b = conv_inputs(case, np.random.default_rng(case["seed"]))
    params = conv_params(case)
    y = run("Convolution", params, *[a for a in (x, w, b) if a is not None])
    expected = conv_reference(x, w, b, case["stride"], case["pad"], case["dilate"],
                              case["groups"])
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-10)
    ins, outs = infer("Convolution", params, [x.shape, None] + ([] if b is None else [None]))
    assert ins[1] == w.shape and outs == [y.shape]
    if b is not None:
        assert ins[2] == b.shape


def test_convolution_depthwise_and_3d():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 4, 6, 5)), rng.standard_normal((8, 1, 3, 3))
    params = dict(kernel=(3, 3), num_filter=8, num_group=4, pad=(1, 1), no_bias=True)
    np.testing.assert_allclose(run("Convolution", params, x, w),
                               conv_reference(x, w, None, (1, 1), (1, 1), (1, 1), 4), atol=1e-10)
    x, w, b = rng.standard_normal((1, 2, 4, 5, 3)), rng.standard_normal((3, 2, 2, 3, 2)), np.ones(3)
    params = dict(kernel=(2, 3, 2), num_filter=3, stride=(1, 2, 1), pad=(0, 1, 1))
    np.testing.assert_allclose(run("Convolution", params, x, w, b),
                               conv_reference(x, w, b, (1, 2, 1), (0, 1, 1), (1, 1, 1), 1),
                               atol=1e-10)


def test_convolution_keeps_float32_and_workspace_chunks_agree():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    whole = run("Convolution", dict(kernel=(3, 3), num_filter=4, stride=(2, 2)), x, w, b)
    # workspace=0 forces one sample per im2col chunk
    chunked = run("Convolution", dict(kernel=(3, 3), num_filter=4, stride=(2, 2), workspace=0),
                  x, w, b)
    assert whole.dtype == np.float32
    np.testing.assert_allclose(whole, chunked, rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(conv_cases())
def test_convolution_gradients(case):
    case = dict(case, batch=1, size=tuple(min(s, 5) for s in case["size"]))
    x, w, b = conv_inputs(case, np.random.default_rng(case["seed"]))
    check_gradient("Convolution", conv_params(case), [a for a in (x, w, b) if a is not None])


def test_convolution_param_defaults_match_mxnet():
    op = get_op("Convolution")
    p = op.parse_params({"kernel": "(3, 3)", "num_filter": "8"})
    assert dict(p) == dict(kernel=(3, 3), stride=(), dilate=(), pad=(), num_filter=8,
                           num_group=1, workspace=1024, no_bias=False, cudnn_tune=None,
                           cudnn_off=False, layout=None)
    assert op.input_names(p) == ["data", "weight", "bias"]
    assert op.input_names(op.parse_params({"kernel": "(3,)", "num_filter": "8",
                                           "no_bias": "True"})) == ["data", "weight"]


def test_convolution_shape_inference_both_ways():
    params = dict(kernel=(3, 3), num_filter=8, pad=(1, 1))
    # channels come from data; batch and (stride-1) spatial sizes back from the output
    ins, outs = infer("Convolution", params, [(0, 3, 0, 0), None, None], [(4, 8, 10, 12)])
    assert ins == [(4, 3, 10, 12), (8, 3, 3, 3), (8,)] and outs == [(4, 8, 10, 12)]
    ins, outs = infer("Convolution", dict(params, stride=(2, 2)), [(0, 3, 0, 0), None, None],
                      [(4, 8, 5, 6)])
    assert ins[0] == (4, 3, 0, 0)
    assert infer("Convolution", params, [None, None, None]) == ([None, None, None], [None])


@pytest.mark.parametrize("in_shapes, message", [
    ([(1, 3, 8, 8), (8, 4, 3, 3), None], "weight"),
    ([(1, 3, 8, 8), None, (7,)], "bias"),
    ([(1, 3, 8), None, None], "4-D"),
    ([(1, 3, 2, 8), None, None], "exceeds"),
])
def test_convolution_shape_errors(in_shapes, message):
    with pytest.raises(ShapeError, match=message):
        infer("Convolution", dict(kernel=(3, 3), num_filter=8), in_shapes)


def test_convolution_output_contradiction_and_groups():
    with pytest.raises(ShapeError, match="output"):
        infer("Convolution", dict(kernel=(3, 3), num_filter=8), [(1, 3, 8, 8), None, None],
              [(1, 8, 5, 5)])
    with pytest.raises(ShapeError, match="num_group=2"):
        infer("Convolution", dict(kernel=(3, 3), num_filter=8, num_group=2),
              [(1, 3, 8, 8), None, None])


@pytest.mark.parametrize("params, message", [
    (dict(kernel=(3, 3), num_filter=8, stride=(2,)), "stride"),
    (dict(kernel=(3, 3), num_filter=8, layout="NHWC"), "layout"),
    (dict(kernel=(3, 3), num_filter=6, num_group=4), "num_group"),
    (dict(kernel=(1, 1, 1, 1), num_filter=8), "dimensions"),
])
def test_convolution_parameter_errors(params, message):
    with pytest.raises(OperatorError, match=message):
        infer("Convolution", params, [(1, 8, 8, 8), None, None])


# -- Deconvolution ---------------------------------------------------------------------

@FAST
@given(conv_cases(max_ndim=3), st.data())
def test_deconvolution_matches_scatter_reference(case, data):
    adj = tuple(data.draw(st.integers(0, s - 1)) for s in case["stride"])
    rng = np.random.default_rng(case["seed"])
    x = rng.standard_normal((case["batch"], case["channels"], *case["size"]))
    w = rng.standard_normal((case["channels"], case["num_filter"] // case["groups"],
                             *case["kernel"]))
    b = None if case["no_bias"] else rng.standard_normal(case["num_filter"])
    params = dict(conv_params(case), adj=adj)
    span = [(k - 1) * d + 1 for k, d in zip(case["kernel"], case["dilate"], strict=True)]
    out = [st_ * (s - 1) + sp - 2 * p + a for st_, s, sp, p, a
           in zip(case["stride"], case["size"], span, case["pad"], adj, strict=True)]
    if min(out) < 1:
        with pytest.raises(ShapeError, match="not positive"):
            infer("Deconvolution", params, [x.shape, None, None])
        return
    y = run("Deconvolution", params, *[a for a in (x, w, b) if a is not None])
    expected = deconv_reference(x, w, b, case["stride"], case["pad"], case["dilate"],
                                case["groups"], out)
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-10)
    ins, outs = infer("Deconvolution", params, [x.shape, None] + ([] if b is None else [None]))
    assert ins[1] == w.shape and outs == [y.shape]


def test_deconvolution_is_the_adjoint_of_convolution():
    rng = np.random.default_rng(3)
    params = dict(kernel=(3, 2), stride=(2, 3), dilate=(2, 1), pad=(1, 1), num_filter=4,
                  num_group=2, no_bias=True)
    x, w = rng.standard_normal((2, 6, 9, 10)), rng.standard_normal((4, 3, 3, 2))
    y = run("Convolution", params, x, w)
    dy = rng.standard_normal(y.shape)
    # Deconvolution weight (C_in_of_deconv=4, F/g=3, ...) is the convolution's weight.
    adj = tuple((s + 2 * p - (k - 1) * d - 1) % st for s, p, k, d, st
                in zip(x.shape[2:], (1, 1), (3, 2), (2, 1), (2, 3), strict=True))
    dx = run("Deconvolution", dict(params, num_filter=6, adj=adj), dy, w)
    assert dx.shape == x.shape
    np.testing.assert_allclose(np.sum(y * dy), np.sum(x * dx), rtol=1e-10)


def test_deconvolution_target_shape_sets_pad_and_adj():
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((1, 2, 4, 5)), rng.standard_normal((2, 3, 3, 3))
    params = dict(kernel=(3, 3), stride=(2, 2), num_filter=3, target_shape=(8, 10), pad=(5, 5))
    y = run("Deconvolution", params, x, w)
    assert y.shape == (1, 3, 8, 10)
    # full size 9 and 11: pad = ceil((9-8)/2) = 1, adj = 1 on both axes
    expected = deconv_reference(x, w, None, (2, 2), (1, 1), (1, 1), 1, (8, 10))
    np.testing.assert_allclose(y, expected, atol=1e-10)
    assert infer("Deconvolution", params, [x.shape, None])[1] == [(1, 3, 8, 10)]


def test_deconvolution_param_defaults_match_mxnet():
    op = get_op("Deconvolution")
    p = op.parse_params({"kernel": "(4, 4)", "num_filter": "8"})
    assert dict(p) == dict(kernel=(4, 4), stride=(), dilate=(), pad=(), adj=(), target_shape=(),
                           num_filter=8, num_group=1, workspace=512, no_bias=True,
                           cudnn_tune=None, cudnn_off=False, layout=None)
    assert op.input_names(p) == ["data", "weight"]


@pytest.mark.parametrize("params, in_shapes, error, message", [
    (dict(kernel=(3, 3), num_filter=4, stride=(2, 2), adj=(2, 0)), [(1, 2, 5, 5), None],
     ShapeError, "adj"),
    (dict(kernel=(3, 3), num_filter=4, target_shape=(30, 5)), [(1, 2, 5, 5), None],
     ShapeError, "too big"),
    (dict(kernel=(3, 3), num_filter=4), [(1, 2, 5, 5), (2, 3, 3, 3)], ShapeError, "weight"),
    (dict(kernel=(3, 3, 3, 3), num_filter=4), [(1, 2, 5, 5, 5, 5), None], OperatorError,
     "dimensions"),
    (dict(kernel=(3, 3), num_filter=4, adj=(1,)), [(1, 2, 5, 5), None], OperatorError, "adj"),
])
def test_deconvolution_errors(params, in_shapes, error, message):
    with pytest.raises(error, match=message):
        infer("Deconvolution", params, in_shapes)


def test_3d_deconvolution_is_mxnets():
    # MXNet 1.9.1 (CPU) on the same values: sums of the output and of the gradients' squares.
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(2, 2, 3, 4, 3)), rng.normal(size=(2, 2, 2, 3, 2))
    params = dict(kernel=(2, 3, 2), stride=(2, 1, 2), pad=(1, 1, 0), adj=(1, 0, 1),
                  num_filter=4, num_group=2, no_bias=True)
    y = run("Deconvolution", params, x.astype(np.float32), w.astype(np.float32))
    assert y.shape == (2, 4, 5, 4, 7)
    np.testing.assert_allclose([y.sum(), (y ** 2).sum()], [-22.3306, 2180.173], rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(conv_cases(max_ndim=3))
def test_deconvolution_gradients(case):
    # pad at most (span-1)/2 keeps the output non-empty
    pad = tuple(min(p, (k - 1) * d // 2)
                for p, k, d in zip(case["pad"], case["kernel"], case["dilate"], strict=True))
    case = dict(case, batch=1, size=tuple(min(s, 4) for s in case["size"]), pad=pad)
    rng = np.random.default_rng(case["seed"])
    x = rng.standard_normal((1, case["channels"], *case["size"]))
    w = rng.standard_normal((case["channels"], case["num_filter"] // case["groups"],
                             *case["kernel"]))
    inputs = [x, w] if case["no_bias"] else [x, w, rng.standard_normal(case["num_filter"])]
    check_gradient("Deconvolution", conv_params(case), inputs)
