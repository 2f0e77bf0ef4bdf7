"""Pooling: kernels against a loop over windows (MXNet's clipping rules), gradients
against finite differences, shape inference and parameter errors."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minimx.base import OperatorError, ShapeError
from minimx.ops import get_op

import ops_support
from gradcheck import check_gradient


def run(params, x):
    return ops_support.run("Pooling", params, x)


def infer(params, shape, out=None):
    return ops_support.infer("Pooling", params, [shape], [out])


def out_size(size, k, s, p, convention):
    if convention == "valid":
        return math.floor((size + 2 * p - k) / s) + 1
    if convention == "full":
        return math.ceil((size + 2 * p - k) / s) + 1
    return math.ceil((size + 2 * p) / s)


def pool_reference(x, kernel, stride, pad, pool_type, convention="valid",
                   count_include_pad=True, p_value=2):
    """One window at a time: clipped to the input, divided as MXNet's pool.h divides."""
    n, c, *size = x.shape
    out = [out_size(*a, convention) for a in zip(size, kernel, stride, pad, strict=True)]
    y = np.zeros((n, c, *out))
    for b, ch in itertools.product(range(n), range(c)):
        for pos in itertools.product(*(range(o) for o in out)):
            starts = [q * s - p for q, s, p in zip(pos, stride, pad, strict=True)]
            ends = [min(st_ + k, sz + p)
                    for st_, k, sz, p in zip(starts, kernel, size, pad, strict=True)]
            lo = [max(st_, 0) for st_ in starts]
            hi = [min(e, sz) for e, sz in zip(ends, size, strict=True)]
            region = x[(b, ch, *(slice(a, max(a, z)) for a, z in zip(lo, hi, strict=True)))]
            if region.size == 0:
                y[(b, ch, *pos)] = np.finfo(x.dtype).min if pool_type == "max" else 0
            elif pool_type == "max":
                y[(b, ch, *pos)] = region.max()
            elif pool_type == "sum":
                y[(b, ch, *pos)] = region.sum()
            elif pool_type == "lp":
                y[(b, ch, *pos)] = np.sign(np.sum(region ** p_value)) * abs(
                    np.sum(region ** p_value)) ** (1 / p_value)
            else:
                count = (math.prod(e - s for s, e in zip(starts, ends, strict=True))
                         if count_include_pad else region.size)
                y[(b, ch, *pos)] = region.sum() / count
    return y


@st.composite
def pool_cases(draw):
    nd = draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    pad = tuple(draw(st.integers(0, k - 1)) for k in kernel)
    size = tuple(max(1, k - 2 * p) + draw(st.integers(0, 4))
                 for k, p in zip(kernel, pad, strict=True))
    case = dict(kernel=kernel, pad=pad, size=size,
                stride=tuple(draw(st.integers(1, 3)) for _ in range(nd)),
                pool_type=draw(st.sampled_from(["max", "avg", "sum", "lp"])),
                convention=draw(st.sampled_from(["valid", "full"])),
                count_include_pad=draw(st.booleans()), p_value=draw(st.integers(1, 3)),
                shape=(draw(st.integers(1, 2)), draw(st.integers(1, 3)), *size),
                seed=draw(st.integers(0, 2**16)))
    return case


def pool_params(case):
    return dict(kernel=case["kernel"], stride=case["stride"], pad=case["pad"],
                pool_type=case["pool_type"], pooling_convention=case["convention"],
                count_include_pad=case["count_include_pad"], p_value=case["p_value"])


@settings(max_examples=60, deadline=None)
@given(pool_cases())
def test_pooling_matches_window_loop(case):
    x = np.random.default_rng(case["seed"]).standard_normal(case["shape"])
    y = run(pool_params(case), x)
    expected = pool_reference(x, case["kernel"], case["stride"], case["pad"], case["pool_type"],
                              case["convention"], case["count_include_pad"], case["p_value"])
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-12)
    assert infer(pool_params(case), x.shape) == ([x.shape], [y.shape])


@settings(max_examples=25, deadline=None)
@given(pool_cases())
def test_pooling_gradients(case):
    rng = np.random.default_rng(case["seed"])
    # distinct, positive values keep max away from ties and Lp away from y == 0
    x = rng.permutation(np.prod(case["shape"])).reshape(case["shape"]) * 0.37 + 1.0
    check_gradient("Pooling", pool_params(case), [x], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_global_pooling_ignores_kernel_stride_and_pad(pool_type):
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 4)).astype(np.float32)
    y = run(dict(kernel=(2, 2), stride=(2, 2), pad=(1, 1), global_pool=True,
                 pool_type=pool_type), x)
    reduce = {"max": np.max, "avg": np.mean, "sum": np.sum}[pool_type]
    np.testing.assert_allclose(y, reduce(x, axis=(2, 3), keepdims=True), rtol=1e-5)
    assert y.dtype == np.float32
    # no kernel needed, any rank
    x1 = np.arange(12.0).reshape(1, 2, 6)
    assert run(dict(global_pool=True, pool_type=pool_type), x1).shape == (1, 2, 1)


def test_same_convention_1d():
    x = np.arange(7.0).reshape(1, 1, 7)
    y = run(dict(kernel=(3,), stride=(2,), pooling_convention="same", pool_type="avg"), x)
    assert infer(dict(kernel=(3,), stride=(2,), pooling_convention="same"), (1, 1, 7))[1] == [
        (1, 1, 4)]
    # windows [0:3] [2:5] [4:7] [6:7]; the last counts only up to the input end
    np.testing.assert_allclose(y[0, 0], [1.0, 3.0, 5.0, 6.0])


@pytest.mark.parametrize("include, expected", [(True, [2 / 3, 1.0, 1 / 2]),
                                               (False, [1.0, 1.0, 1.0])])
def test_full_convention_average_counts_padding_only_up_to_the_padded_end(include, expected):
    # size 4, kernel 3, stride 2, pad 1: windows [-1, 2), [1, 4), [3, 6) - the last one
    # runs past the padded end 5, so it counts 2 elements with padding, 1 without.
    params = dict(kernel=(3,), stride=(2,), pad=(1,), pool_type="avg",
                  pooling_convention="full", count_include_pad=include)
    np.testing.assert_allclose(run(params, np.ones((1, 1, 4)))[0, 0], expected)


def test_resnet_stem_max_pool_shape():
    x = np.random.default_rng(0).standard_normal((1, 4, 112, 112)).astype(np.float32)
    params = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
    y = run(params, x)
    assert y.shape == (1, 4, 56, 56)
    np.testing.assert_array_equal(y, pool_reference(x, (3, 3), (2, 2), (1, 1), "max"))


def test_pooling_param_defaults_match_mxnet():
    p = get_op("Pooling").parse_params({})
    assert dict(p) == dict(kernel=(), pool_type="max", global_pool=False, cudnn_off=False,
                           pooling_convention="valid", stride=(), pad=(), p_value=None,
                           count_include_pad=None, layout=None)


def test_pooling_shape_inference_back_fills_batch_and_channels():
    params = dict(kernel=(2, 2), stride=(2, 2))
    assert infer(params, (0, 0, 8, 6), (4, 3, 4, 3)) == ([(4, 3, 8, 6)], [(4, 3, 4, 3)])
    assert infer(params, None) == ([None], [None])


@pytest.mark.parametrize("params, shape, error, message", [
    (dict(kernel=(3, 3)), (1, 2, 2, 8), ShapeError, "exceeds"),
    (dict(kernel=(3,)), (1, 2, 8, 8), ShapeError, "kernel"),
    (dict(kernel=(2, 2)), (2, 8), ShapeError, "3-D"),
    (dict(kernel=(2, 2), pool_type="lp"), (1, 2, 8, 8), OperatorError, "p_value"),
    (dict(kernel=(2, 2), pooling_convention="same"), (1, 2, 8, 8), OperatorError, "1-D"),
    (dict(kernel=(2, 2), layout="NHWC"), (1, 2, 8, 8), OperatorError, "layout"),
    (dict(kernel=(2, 2), stride=(1,)), (1, 2, 8, 8), OperatorError, "stride"),
])
def test_pooling_errors(params, shape, error, message):
    with pytest.raises(error, match=message):
        infer(params, shape)


def test_pooling_output_contradiction():
    with pytest.raises(ShapeError, match="output"):
        infer(dict(kernel=(2, 2)), (1, 2, 8, 8), (1, 2, 8, 8))


def test_global_pool_output_is_known_where_the_input_size_is_not():
    # MXNet 1.9.1's infer_shape_partial(data=(2, 3, 4, 0)) of a global pool: (2, 3, 1, 1).
    p = {"kernel": "(2, 2)", "global_pool": "True", "pool_type": "avg"}
    assert infer(p, (2, 3, 4, 0))[1] == [(2, 3, 1, 1)]
