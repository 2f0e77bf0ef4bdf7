"""Elementwise operators: kernels against plain numpy references, gradients
against finite differences, shape / dtype inference and parameter errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minimx.base import DTypeError, OperatorError, ShapeError
from minimx.ops import get_op
from minimx.ops.registry import OpContext

from gradcheck import check_gradient
from ops_support import floats, nonzero, run, vectorized

SMALL_SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, max_side=3)
FAST = settings(max_examples=30, deadline=None, database=None)


def _c_round(v: float) -> float:
    return math.copysign(math.floor(abs(v) + 0.5), v)


def _mxnet_rint(v: float) -> float:
    return math.floor(v) if v - math.floor(v) <= math.ceil(v) - v else math.ceil(v)


# name -> (reference, low, high): the inputs drawn lie in [low, high]
UNARY_REFS = {
    "relu": (lambda x: x * (x > 0), -5.0, 5.0),
    "sigmoid": (lambda x: 1 / (1 + vectorized(math.exp)(-x)), -5.0, 5.0),
    "tanh": (vectorized(math.tanh), -5.0, 5.0),
    "exp": (vectorized(math.exp), -5.0, 5.0),
    "log": (vectorized(math.log), 0.125, 5.0),
    "sqrt": (lambda x: x ** 0.5, 0.125, 5.0),
    "square": (lambda x: x * x, -5.0, 5.0),
    "abs": (lambda x: np.where(x < 0, -x, x), -5.0, 5.0),
    "negative": (lambda x: 0 - x, -5.0, 5.0),
    "_copy": (lambda x: x, -5.0, 5.0),
    "identity": (lambda x: x, -5.0, 5.0),
    "BlockGrad": (lambda x: x, -5.0, 5.0),
    "sin": (vectorized(math.sin), -5.0, 5.0),
    "cos": (vectorized(math.cos), -5.0, 5.0),
    "tan": (vectorized(math.tan), -1.5, 1.5),
    "arcsin": (vectorized(math.asin), -0.9375, 0.9375),
    "arccos": (vectorized(math.acos), -0.9375, 0.9375),
    "arctan": (vectorized(math.atan), -5.0, 5.0),
    "sinh": (vectorized(math.sinh), -5.0, 5.0),
    "cosh": (vectorized(math.cosh), -5.0, 5.0),
    "arcsinh": (vectorized(math.asinh), -5.0, 5.0),
    "arccosh": (vectorized(math.acosh), 1.125, 5.0),
    "arctanh": (vectorized(math.atanh), -0.9375, 0.9375),
    "degrees": (lambda x: x * (180 / math.pi), -5.0, 5.0),
    "radians": (lambda x: x * (math.pi / 180), -5.0, 5.0),
    "rsqrt": (lambda x: 1 / x ** 0.5, 0.125, 5.0),
    "cbrt": (lambda x: np.sign(x) * np.abs(x) ** (1 / 3), -5.0, 5.0),
    "rcbrt": (lambda x: 1 / x ** (1 / 3), 0.125, 5.0),
    "reciprocal": (lambda x: 1 / x, 0.125, 5.0),
    "erf": (vectorized(math.erf), -5.0, 5.0),
    "log1p": (vectorized(math.log1p), -0.875, 5.0),
    "expm1": (vectorized(math.expm1), -5.0, 5.0),
    "log2": (vectorized(math.log2), 0.125, 5.0),
    "log10": (vectorized(math.log10), 0.125, 5.0),
    "gamma": (vectorized(math.gamma), 0.125, 5.0),
    "gammaln": (vectorized(math.lgamma), 0.125, 5.0),
    "sign": (lambda x: (x > 0) * 1.0 - (x < 0), -5.0, 5.0),
    "floor": (vectorized(math.floor), -5.0, 5.0),
    "ceil": (vectorized(math.ceil), -5.0, 5.0),
    "trunc": (vectorized(math.trunc), -5.0, 5.0),
    "fix": (vectorized(math.trunc), -5.0, 5.0),
    "round": (vectorized(_c_round), -5.0, 5.0),
    "rint": (vectorized(_mxnet_rint), -5.0, 5.0),
    "logical_not": (lambda x: (x == 0) * 1.0, -5.0, 5.0),
}
# Steps and stopped gradients: the gradient is zero everywhere.
ZERO_GRADIENT = {"sign", "floor", "ceil", "trunc", "fix", "round", "rint", "logical_not",
                 "BlockGrad"}


@pytest.mark.parametrize("name", sorted(UNARY_REFS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@FAST
@given(data=st.data())
def test_unary_forward(name, dtype, data):
    ref, low, high = UNARY_REFS[name]
    x = data.draw(floats(low, high, dtype=dtype))
    out = run(name, {}, x)
    assert out.dtype == dtype and out.shape == x.shape
    np.testing.assert_allclose(out, ref(x.astype(np.float64)),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("name", sorted(set(UNARY_REFS) - ZERO_GRADIENT))
@FAST
@given(x=nonzero(SMALL_SHAPES))
def test_unary_gradient(name, x):
    _, low, high = UNARY_REFS[name]
    # x in [-3, -0.1] or [0.1, 3], moved into the inner 90% of [low, high]; the middle
    # stays out, so a kink at 0 (relu, abs) is never hit
    x = low + (high - low) * (0.05 + 0.9 * (x + 3) / 6)
    check_gradient(name, {}, [x], rtol=1e-4)


@pytest.mark.parametrize("name", sorted(ZERO_GRADIENT))
def test_unary_zero_gradient(name):
    x = np.linspace(-2.2, 2.3, 7)
    op = get_op(name)
    p = op.parse_params({})
    assert op.backward(p, OpContext(), *op.backward_view(p, [x], [run(name, {}, x)]),
                       [np.ones(7)]) == [pytest.approx(np.zeros(7))]


def test_gamma_poles_and_reflection_as_mxnet():
    # MXNet 1.9.1's values: NaN / inf at the poles, inf on overflow; digamma (the
    # gradient of gammaln) by reflection below 1/2.
    x = np.array([-2, -1.5, 0, 0.5, 40, 200], np.float32)
    np.testing.assert_allclose(run("gamma", {}, x), [np.nan, 2.3632717, np.inf, 1.7724538,
                                                    np.inf, np.inf], rtol=1e-6)
    assert run("gamma", {}, np.float32([-0.0])).tolist() == [-np.inf]   # C's tgamma(-0)
    np.testing.assert_allclose(run("gammaln", {}, x), [np.inf, 0.86004704, np.inf, 0.57236493,
                                                      106.63176, 857.93372], rtol=1e-6)
    op = get_op("gammaln")
    p = op.parse_params({})
    grad = op.backward(p, OpContext(), [x], [run("gammaln", {}, x)], [np.ones(6, np.float32)])
    np.testing.assert_allclose(grad[0], [np.inf, 0.70315677, np.inf, -1.9635108, 3.6763275,
                                         5.2958155], rtol=1e-6)


def test_erfinv_inverts_erf_to_float64_and_has_mxnet_edges():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 201), [1e-300, -3e-9]])
    np.testing.assert_allclose(vectorized(math.erf)(run("erfinv", {}, y)), y, rtol=1e-14,
                               atol=1e-15)
    # Where erf(x) rounds to 1, erfc tells the tail apart.
    near_one = 1 - np.array([1e-7, 1e-12, 2.0**-52, 2.0**-53])
    np.testing.assert_allclose(vectorized(math.erfc)(run("erfinv", {}, near_one)), 1 - near_one,
                               rtol=1e-12)
    edges = np.array([-1, 1, 1.5, -2, np.nan], np.float32)
    out = run("erfinv", {}, edges)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [-np.inf, np.inf, np.nan, np.nan, np.nan])
    check_gradient("erfinv", {}, [np.linspace(-0.95, 0.95, 7)], rtol=1e-6)


def test_rounding_ties_as_mxnet():
    # MXNet 1.9.1's outputs: round takes halves away from zero, rint to the floor.
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7], np.float32)
    assert run("round", {}, x).tolist() == [-3, -2, -1, 1, 2, 3, 3, -3]
    assert run("rint", {}, x).tolist() == [-3, -2, -1, 0, 1, 2, 3, -3]
    assert run("fix", {}, x).tolist() == [-2, -1, 0, 0, 1, 2, 2, -2]


BINARY_REFS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}


@st.composite
def same_shape_pair(draw):
    a = draw(floats(shape=SMALL_SHAPES))
    return a, draw(nonzero(shape=a.shape))


@pytest.mark.parametrize("key", sorted(BINARY_REFS))
@FAST
@given(pair=same_shape_pair())
def test_elemwise_binary(key, pair):
    a, b = pair
    out = run(f"elemwise_{key}", {}, a, b)
    np.testing.assert_allclose(out, BINARY_REFS[key](a, b), rtol=1e-12)
    check_gradient(f"elemwise_{key}", {}, [a, b])


@st.composite
def broadcast_pair(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=4,
                                                    max_side=3))
    a = draw(floats(shape=shapes.input_shapes[0]))
    return a, draw(nonzero(shape=shapes.input_shapes[1])), shapes.result_shape


@pytest.mark.parametrize("key", sorted(BINARY_REFS))
@FAST
@given(case=broadcast_pair())
def test_broadcast_binary(key, case):
    a, b, result_shape = case
    op = get_op(f"broadcast_{key}")
    p = op.parse_params({})
    out = op.forward(p, OpContext(), [a, b])
    assert out.shape == result_shape
    np.testing.assert_allclose(out, BINARY_REFS[key](a, b), rtol=1e-12)
    assert op.infer_shape(p, [a.shape, b.shape], [None])[1] == [result_shape]
    check_gradient(f"broadcast_{key}", {}, [a, b])


def test_elemwise_rejects_different_shapes():
    with pytest.raises(ShapeError, match=r"\(2, 3\).*\(3,\)"):
        run("elemwise_mul", {}, np.ones((2, 3)), np.ones(3))


def test_same_shape_inference_runs_both_ways():
    op = get_op("elemwise_add")
    p = op.parse_params({})
    assert op.infer_shape(p, [None, None], [(2, 3)]) == ([(2, 3), (2, 3)], [(2, 3)])
    assert op.infer_shape(p, [(2, 0), (0, 3)], [None]) == ([(2, 3), (2, 3)], [(2, 3)])
    with pytest.raises(ShapeError):
        op.infer_shape(p, [(2, 3), (3, 2)], [None])
    f32 = np.dtype(np.float32)
    assert op.infer_type(p, [None, None], [f32]) == ([f32, f32], [f32])
    with pytest.raises(DTypeError):
        op.infer_type(p, [f32, np.dtype(np.float64)], [None])


@pytest.mark.parametrize("a, b, out", [
    ((2, 1, 3), (4, 1), (2, 4, 3)),
    ((0, 3), (4, 1), (4, 3)),     # unknown against n > 1 can only be n
    ((0, 3), (1, 3), (0, 3)),     # unknown against 1 stays unknown
    ((5,), (2, 5), (2, 5)),
])
def test_broadcast_shape_inference(a, b, out):
    op = get_op("broadcast_add")
    assert op.infer_shape(op.parse_params({}), [a, b], [None]) == ([a, b], [out])


def test_broadcast_shape_inference_errors_and_waits():
    op = get_op("broadcast_mul")
    p = op.parse_params({})
    with pytest.raises(ShapeError, match=r"\(2, 3\).*\(4, 3\)"):
        op.infer_shape(p, [(2, 3), (4, 3)], [None])
    assert op.infer_shape(p, [(2, 3), None], [None]) == ([(2, 3), None], [None])


SCALAR_REFS = {
    "_plus_scalar": lambda x, s: x + s,
    "_minus_scalar": lambda x, s: x - s,
    "_rminus_scalar": lambda x, s: s - x,
    "_mul_scalar": lambda x, s: x * s,
    "_div_scalar": lambda x, s: x / s,
    "_rdiv_scalar": lambda x, s: s / x,
}


@pytest.mark.parametrize("name", sorted(SCALAR_REFS))
@FAST
@given(x=nonzero(SMALL_SHAPES), scalar=st.floats(0.5, 4.0) | st.floats(-4.0, -0.5))
def test_scalar_ops(name, x, scalar):
    out = run(name, {"scalar": str(scalar)}, x)
    np.testing.assert_allclose(out, SCALAR_REFS[name](x, scalar), rtol=1e-12)
    check_gradient(name, {"scalar": scalar, "is_int": False}, [x])


SMOOTH_BINARY_REFS = {
    "maximum": lambda a, b: np.where(a > b, a, b),
    "minimum": lambda a, b: np.where(a < b, a, b),
    "power": lambda a, b: vectorized(math.pow)(a, b),
}
COMPARE_REFS = {
    "equal": lambda a, b: a == b,
    "not_equal": lambda a, b: a != b,
    "greater": lambda a, b: a > b,
    "greater_equal": lambda a, b: a >= b,
    "lesser": lambda a, b: a < b,
    "lesser_equal": lambda a, b: a <= b,
    "logical_and": lambda a, b: (a != 0) & (b != 0),
    "logical_or": lambda a, b: (a != 0) | (b != 0),
    "logical_xor": lambda a, b: (a != 0) != (b != 0),
}


@st.composite
def grid_pair(draw, same_shape: bool):
    """(a, b, broadcast shape) on integer grids: a on halves in [0.5, 3.5] (positive,
    and never tied with b), b on integers in [-3, 3]."""
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3,
                                                    max_side=3))
    a_shape, b_shape = (shapes.input_shapes[0],) * 2 if same_shape else shapes.input_shapes
    a = np.round(draw(floats(0.0, 3.0, shape=a_shape))) + 0.5
    b = np.round(draw(floats(-3.0, 3.0, shape=b_shape)))
    return a, b, np.broadcast_shapes(a_shape, b_shape)


@pytest.mark.parametrize("key", sorted(SMOOTH_BINARY_REFS))
@pytest.mark.parametrize("form", ["same", "broadcast"])
@FAST
@given(data=st.data())
def test_maximum_minimum_power(key, form, data):
    a, b, shape = data.draw(grid_pair(form == "same"))
    name = f"_{key}" if form == "same" else f"broadcast_{key}"
    out = run(name, {}, a, b)
    assert out.shape == shape
    np.testing.assert_allclose(out, SMOOTH_BINARY_REFS[key](a, b), rtol=1e-12)
    check_gradient(name, {}, [a, b])


@pytest.mark.parametrize("key", sorted(COMPARE_REFS))
@FAST
@given(data=st.data())
def test_comparisons_and_logical(key, data):
    a, b, shape = data.draw(grid_pair(False))
    a = np.floor(a)  # ties with b, and zeros
    for name, args, ref in ((f"broadcast_{key}", (b, a), COMPARE_REFS[key](b, a)),
                            (f"_{key}", (a, a[::-1]), COMPARE_REFS[key](a, a[::-1])),
                            (f"_{key}_scalar", (b,), COMPARE_REFS[key](b, 1.0))):
        op = get_op(name)
        p = op.parse_params({"scalar": "1"} if name.endswith("_scalar") else {})
        out = op.forward(p, OpContext(), list(args))
        assert out.dtype == b.dtype
        np.testing.assert_array_equal(out, ref * 1.0)
        grads = op.backward(p, OpContext(), *op.backward_view(p, list(args), [out]),
                            [np.ones(out.shape)])
        assert all(g.shape == x.shape and not g.any() for g, x in zip(grads, args, strict=True))


@FAST
@given(data=st.data(), scalar=st.sampled_from([-1.5, 0.5, 2.0, 3.0]))
def test_maximum_minimum_power_scalar(data, scalar):
    a, _, _ = data.draw(grid_pair(True))
    a = a - 0.25  # never equal to the scalar
    refs = {"_maximum_scalar": np.where(a > scalar, a, scalar),
            "_minimum_scalar": np.where(a < scalar, a, scalar),
            "_power_scalar": vectorized(math.pow)(a, scalar),
            "_rpower_scalar": vectorized(math.pow)(abs(scalar), a)}
    for name, ref in refs.items():
        s = abs(scalar) if name == "_rpower_scalar" else scalar
        np.testing.assert_allclose(run(name, {"scalar": s}, a), ref, rtol=1e-12)
        check_gradient(name, {"scalar": s, "is_int": False}, [a])


def test_maximum_gradient_goes_left_on_ties():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 4.0])
    op = get_op("_maximum")
    p = op.parse_params({})
    da, db = op.backward(p, OpContext(), [a, b], [np.maximum(a, b)], [np.ones(3)])
    assert da.tolist() == [1, 1, 0] and db.tolist() == [0, 0, 1]


def test_scalar_params_and_integer_inputs():
    op = get_op("_mul_scalar")
    assert op.parse_params({}) == op.parse_params({"scalar": "1", "is_int": "True"})
    # As in MXNet, the scalar is cast to the input's type first.
    out = run("_plus_scalar", {"scalar": "1.7"}, np.array([1, -2], np.int32))
    assert out.dtype == np.int32 and out.tolist() == [2, -1]
    assert get_op("_RDivScalar") is get_op("_rdiv_scalar")


@pytest.mark.parametrize("op, attrs, inputs", [
    ("_div_scalar", {"scalar": "0.5"}, [np.array([4, 6], np.int8)]),   # 0.5 as int8 is 0
    ("broadcast_div", {}, [np.array([[4, 6]], np.uint8), np.array([[2], [0]], np.uint8)]),
])
def test_integer_division_by_zero_is_refused(op, attrs, inputs):
    # MXNet 1.9.1's process stops with SIGFPE on each of these.
    with pytest.raises(OperatorError, match="integer division by zero"):
        run(op, attrs, *inputs)


@pytest.mark.parametrize("dtype, scalar, expected", [
    # MXNet 1.9.1's values of scalar / [2, 0, -2, 3, 7] (-2 wraps in uint8, to 254): it
    # divides in float32 and converts back as C does, inf and NaN to the 32-bit minimum.
    (np.int32, "5", [2, -2**31, -2, 1, 0]), (np.int32, "-3", [-1, -2**31, 1, -1, 0]),
    (np.int32, "0", [0, -2**31, 0, 0, 0]), (np.int64, "5", [2, -2**63, -2, 1, 0]),
    (np.int8, "5.5", [2, 0, -2, 1, 0]), (np.uint8, "-3", [126, 0, 0, 84, 36]),
])
def test_a_scalar_over_integers_divides_as_mxnet(dtype, scalar, expected):
    x = np.array([2, 0, -2, 3, 7]).astype(dtype)
    out = run("_rdiv_scalar", {"scalar": scalar}, x)
    assert out.dtype == dtype and out.tolist() == expected


def test_a_large_scalar_over_integers_rounds_as_float32():
    # MXNet 1.9.1: (2**40 + 1) / [1, 3] in int64 and (2**31 + 5) / [1, 3] in int32.
    assert run("_rdiv_scalar", {"scalar": str(2**40 + 1)},
               np.array([1, 3], np.int64)).tolist() == [1099511627776, 366503886848]
    assert run("_rdiv_scalar", {"scalar": str(2**31 + 5)},
               np.array([1, 3], np.int32)).tolist() == [-2**31, -715827904]


def test_integer_division_truncates_toward_zero_and_floats_divide_by_zero():
    out = run("_div_scalar", {"scalar": "2"}, np.array([5, -7, 9], np.int8))
    assert out.dtype == np.int8 and out.tolist() == [2, -3, 4]
    halves = run("_div_scalar", {"scalar": "0.5", "is_int": "False"}, np.array([3], np.int8))
    assert halves.dtype == np.float64 and halves.tolist() == [6.0]
    with np.errstate(divide="ignore"):
        assert run("_div_scalar", {"scalar": "0"}, np.array([1.0], np.float32)).tolist() == [
            np.inf]


@FAST
@given(data=st.data(), n=st.integers(1, 4))
def test_add_n(data, n):
    shape = data.draw(SMALL_SHAPES)
    arrays = [data.draw(floats(shape=shape)) for _ in range(n)]
    op = get_op("ElementWiseSum")
    p = op.parse_params({"num_args": str(n)})
    assert op.name == "add_n" and op.input_names(p) == [f"arg{i}" for i in range(n)]
    out = op.forward(p, OpContext(), arrays)
    np.testing.assert_allclose(out, sum(arrays[1:], arrays[0]), rtol=1e-12)
    assert out is not arrays[0]
    check_gradient("add_n", {"num_args": n}, arrays)


@FAST
@given(x=floats(dtype=np.float32))
def test_zeros_and_ones_like(x):
    for name, value in (("zeros_like", 0), ("ones_like", 1)):
        out = run(name, {}, x)
        assert out.dtype == np.float32 and out.shape == x.shape and np.all(out == value)
        check_gradient(name, {}, [x.astype(np.float64)])


@FAST
@given(x=nonzero(SMALL_SHAPES))
def test_clip(x):
    out = run("clip", {"a_min": "-1.05", "a_max": "0.95"}, x)
    np.testing.assert_array_equal(out, np.minimum(np.maximum(x, -1.05), 0.95))
    # Keep finite differences off the two corners.
    x = np.where(np.abs(np.abs(x + 0.05) - 1.0) < 0.01, x + 0.03, x)
    check_gradient("clip", {"a_min": -1.05, "a_max": 0.95}, [x])


def test_clip_requires_bounds():
    with pytest.raises(OperatorError, match="a_max"):
        get_op("clip").parse_params({"a_min": "0"})


@FAST
@given(x=floats(-100.0, 100.0, dtype=np.float32))
def test_cast(x):
    out = run("cast", {"dtype": "int32"}, x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.trunc(x).astype(np.int64))
    op = get_op("Cast")
    p = op.parse_params({"dtype": "float16"})
    f16, f32 = np.dtype(np.float16), np.dtype(np.float32)
    assert op.infer_type(p, [f32], [None]) == ([f32], [f16])
    g = op.backward(p, OpContext(), [x], [x.astype(f16)], [np.ones(x.shape, f16)])
    assert g[0].dtype == f32 and g[0].shape == x.shape


def test_cast_gradient_and_errors():
    check_gradient("Cast", {"dtype": "float64"}, [np.linspace(-1, 1, 6).reshape(2, 3)])
    with pytest.raises(OperatorError, match="dtype"):
        get_op("Cast").parse_params({"dtype": "complex64"})
    with pytest.raises(OperatorError, match="dtype"):
        get_op("Cast").parse_params({})


@pytest.mark.parametrize("name, attrs, param", [
    ("_plus_scalar", {"scalar": "abc"}, "scalar"),
    ("_div_scalar", {"is_int": "maybe"}, "is_int"),
    ("add_n", {"num_args": "two"}, "num_args"),
    ("clip", {"a_min": "0", "a_max": "[1]"}, "a_max"),
    ("LeakyReLU", {"alpha": "1"}, "alpha"),   # relu, without parameters, keeps any
])
def test_bad_parameters_name_the_parameter(name, attrs, param):
    with pytest.raises(OperatorError, match=param):
        get_op(name).parse_params(attrs, "node0")


@pytest.mark.parametrize("alias, name", [
    ("identity", "_copy"), ("_Plus", "elemwise_add"), ("_minus", "elemwise_sub"),
    ("_Mul", "elemwise_mul"), ("_div", "elemwise_div"), ("broadcast_plus", "broadcast_add"),
    ("broadcast_minus", "broadcast_sub"), ("_PlusScalar", "_plus_scalar"),
    ("_Maximum", "_maximum"), ("_Greater_Equal", "_greater_equal"), ("_Not_Equal", "_not_equal"),
    ("_GreaterEqualScalar", "_greater_equal_scalar"), ("_LesserScalar", "_lesser_scalar"),
    ("_RPowerScalar", "_rpower_scalar"), ("_LogicalAndScalar", "_logical_and_scalar"),
    ("stop_gradient", "BlockGrad"),
])
def test_mxnet_aliases(alias, name):
    assert get_op(alias) is get_op(name)


def test_forward_never_writes_inputs_and_keeps_inplace_options():
    x = np.linspace(-2, 2, 12).reshape(3, 4)
    for name in ("relu", "negative", "_copy", "clip", "_mul_scalar"):
        op = get_op(name)
        before = x.copy()
        out = op.forward(op.parse_params({"a_min": "0", "a_max": "1"} if name == "clip" else {}),
                         OpContext(), [x])
        assert out is not x and np.array_equal(x, before)
        assert op.inplace == ((0, 0),)
