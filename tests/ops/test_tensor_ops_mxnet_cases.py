"""Tensor operators on cases where a differential fuzz against MXNet 1.9.1 found minimx
giving other numbers, dtypes or shapes. Every expected value below is MXNet 1.9.1's own
output (mx.nd on CPU), hard-coded."""
import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError

I8 = np.array([-8, -3, 0, 1, 2, 5, 8], np.int8)


def nd(values, dtype):
    return mx.nd.array(np.asarray(values), dtype=dtype)


# -- unary math on integers: computed in floating point and truncated, never in float16 --

@pytest.mark.parametrize("op, data, want", [
    # MXNet 1.9.1: tanh(-8) = -0.99999977 truncates to 0 (float16 rounded it to -1).
    ("tanh", I8, [0, 0, 0, 0, 0, 0, 0]),
    ("tanh", np.array([0, 1, 5, 9], np.uint8), [0, 0, 0, 0]),
    ("sigmoid", np.array([-8, 0, 10, 12], np.int8), [0, 0, 0, 0]),
    ("arctan", I8, [-1, -1, 0, 0, 1, 1, 1]),
    ("erf", np.array([-8, -3, 0, 1, 2, 8], np.int8), [-1, 0, 0, 0, 0, 1]),
    ("sinh", np.array([0, 1, 2, 5], np.uint8), [0, 1, 3, 74]),
    ("exp", np.array([0, 1, 2, 5], np.uint8), [1, 2, 7, 148]),
    ("expm1", np.array([-8, 1, 2, 4], np.int8), [0, 1, 6, 53]),
    ("sqrt", np.array([1, 4, 15, 16, 17, 99, 100], np.int8), [1, 2, 3, 4, 4, 9, 10]),
])
def test_unary_math_on_small_integers(op, data, want):
    out = getattr(mx.nd, op)(nd(data, data.dtype))
    assert out.dtype == data.dtype
    assert out.asnumpy().tolist() == want


# -- power on integers: float32's powf, truncated (numpy refused negative exponents) ----

def test_integer_power_with_negative_exponents():
    a = nd([2, -2, 3, 1, -1, 5], "int32")
    b = nd([-1, -2, 17, -3, -3, 11], "int32")
    # MXNet 1.9.1: 2 ** -1 -> 0, 3 ** 17 and 5 ** 11 rounded to float32.
    want = [0, 0, 129140160, 1, -1, 48828124]
    assert mx.nd.broadcast_power(a, b).asnumpy().tolist() == want
    assert mx.nd.broadcast_power(a.astype("int64"), b.astype("int64")).asnumpy().tolist() == want
    assert mx.nd._power(a, b).asnumpy().tolist() == want


def test_integer_power_scalars():
    x = nd([2, -1, 1, 3], "int32")
    # MXNet 1.9.1
    assert mx.nd._power_scalar(x, scalar=-2).asnumpy().tolist() == [0, 1, 1, 0]
    assert mx.nd._rpower_scalar(nd([-1, 3, 0], "int32"), scalar=2).asnumpy().tolist() == \
        [0, 8, 1]
    # the scalar is cast to the input's type first: 2.5 -> 2
    assert mx.nd._rpower_scalar(nd([-3, -1, 0, 2, 5], "int32"), scalar=2.5).asnumpy().tolist() \
        == [0, 0, 1, 4, 32]


# -- scalar operators with is_int=False on integer inputs: float64 --------------------

@pytest.mark.parametrize("op, scalar, is_int, dtype, want", [
    ("_plus_scalar", 2.5, True, "int32", [-1, 1, 2, 4, 7]),
    ("_plus_scalar", 2.5, False, "float64", [-0.5, 1.5, 2.5, 4.5, 7.5]),
    ("_greater_scalar", 0.5, True, "int32", [0, 0, 0, 1, 1]),
    ("_greater_scalar", 0.5, False, "float64", [0.0, 0.0, 0.0, 1.0, 1.0]),
    ("_rdiv_scalar", 2.5, False, "float64", [-2.5 / 3, -2.5, np.inf, 1.25, 0.5]),
    ("_mul_scalar", 0.5, True, "int32", [0, 0, 0, 0, 0]),
])
def test_scalar_ops_is_int(op, scalar, is_int, dtype, want):
    x = nd([-3, -1, 0, 2, 5], "int32")
    out = getattr(mx.nd, op)(x, scalar=scalar, is_int=is_int)  # MXNet 1.9.1's results
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-15)
    sym = getattr(mx.sym, op)(mx.sym.Variable("x"), scalar=scalar, is_int=is_int)
    assert sym.infer_type(x=np.int32)[1] == [np.dtype(dtype)]


def test_scalar_is_int_false_keeps_float_inputs():
    out = mx.nd._plus_scalar(nd([1.0, 2.0], "float32"), scalar=0.5, is_int=False)
    assert out.dtype == np.float32 and out.asnumpy().tolist() == [1.5, 2.5]


# -- pick: the index may keep the axis (size 1) whatever keepdims; 1-D data gives (1,) --

def test_pick_index_with_the_axis_kept():
    data = nd(np.arange(6).reshape(2, 3), "float32")
    idx = nd([[0], [2]], "float32")
    # MXNet 1.9.1
    out = mx.nd.pick(data, idx, axis=1)
    assert out.shape == (2,) and out.asnumpy().tolist() == [0.0, 5.0]
    out = mx.nd.pick(data, idx, axis=1, keepdims=True)
    assert out.shape == (2, 1) and out.asnumpy().tolist() == [[0.0], [5.0]]
    out = mx.nd.pick(data, nd([[0, 1, 1]], "float32"), axis=0)
    assert out.shape == (3,) and out.asnumpy().tolist() == [0.0, 4.0, 5.0]
    with pytest.raises(MinimxError):
        mx.nd.pick(data, nd([0, 1, 1, 0, 0, 1], "float32"), axis=0).asnumpy()


def test_pick_one_dimensional_data():
    data = nd([5, 6, 7], "float32")
    for keepdims in (False, True):
        out = mx.nd.pick(data, nd([2], "float32"), axis=0, keepdims=keepdims)
        assert out.shape == (1,) and out.asnumpy().tolist() == [7.0]  # MXNet 1.9.1


def test_pick_kept_axis_gradient():
    x = mx.sym.Variable("x")
    i = mx.sym.Variable("i")
    y = mx.sym.pick(x, i, axis=1)
    assert y.infer_shape(x=(2, 3), i=(2, 1))[1] == [(2,)]
    ex = y.bind(mx.cpu(), args={"x": nd(np.arange(6).reshape(2, 3), "float32"),
                                "i": nd([[0], [2]], "float32")},
                args_grad={"x": mx.nd.zeros((2, 3))}, grad_req={"x": "write", "i": "null"})
    ex.forward(is_train=True)
    ex.backward([nd([1.5, -2.0], "float32")])
    assert ex.grad_dict["x"].asnumpy().tolist() == [[1.5, 0, 0], [0, 0, -2.0]]


# -- take mode='raise' checks the indices before truncating them ----------------------

def test_take_raise_checks_fractional_indices():
    a = nd([1, 2], "float32")
    # MXNet 1.9.1: 1.4 and -0.4 are out of bounds for 2 rows; 0.9 is in.
    with pytest.raises(MinimxError, match="outside"):
        mx.nd.take(a, nd([0.4, 1.4], "float32"), mode="raise").asnumpy()
    with pytest.raises(MinimxError, match="outside"):
        mx.nd.take(a, nd([-0.4, 1.0], "float32"), mode="raise").asnumpy()
    assert mx.nd.take(a, nd([0.4, 0.9], "float32"), mode="raise").asnumpy().tolist() == \
        [1.0, 1.0]


# -- clip with a_min > a_max: a_max is applied first ----------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_clip_inverted_bounds(dtype):
    out = mx.nd.clip(nd([-1, 0.7, 0.9, 2], dtype), a_min=1.0, a_max=0.5)
    assert out.asnumpy().tolist() == [1.0, 0.5, 0.5, 0.5]  # MXNet 1.9.1


def test_clip_inverted_bounds_integers():
    out = mx.nd.clip(nd([-2, -1, 0, 3], "int32"), a_min=1.0, a_max=-0.5)
    assert out.asnumpy().tolist() == [1, 1, 0, 0]  # MXNet 1.9.1: 0 > -0.5 gives int(-0.5)


# -- sign is 0 at NaN, and so are the gradients built on it ----------------------------

NAN_ROW = np.array([np.nan, -1.5, 0.0, 2.0, -np.inf], np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sign_of_nan_is_zero(dtype):
    out = mx.nd.sign(nd(NAN_ROW, dtype))
    assert out.asnumpy().tolist() == [0.0, -1.0, 0.0, 1.0, -1.0]  # MXNet 1.9.1


@pytest.mark.parametrize("build", [lambda v: mx.sym.abs(v), lambda v: mx.sym.norm(v, ord=1),
                                   lambda v: mx.sym.norm(v, ord=1, axis=0)])
def test_sign_based_gradients_at_nan(build):
    ex = build(mx.sym.Variable("v")).bind(mx.cpu(), args={"v": nd(NAN_ROW, "float32")},
                                          args_grad={"v": mx.nd.zeros(5)})
    ex.forward(is_train=True)
    ex.backward([mx.nd.ones(ex.outputs[0].shape)])
    assert ex.grad_dict["v"].asnumpy().tolist() == [0.0, -1.0, 0.0, 1.0, -1.0]  # MXNet 1.9.1
