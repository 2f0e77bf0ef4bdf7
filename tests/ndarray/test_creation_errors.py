"""Creation functions check shapes, contexts and parameters before allocating."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx

FILLED = {
    "empty": mx.nd.empty,
    "zeros": mx.nd.zeros,
    "ones": mx.nd.ones,
    "full": lambda shape, **kw: mx.nd.full(shape, 7, **kw),
    "random.uniform": lambda shape, **kw: mx.nd.random.uniform(shape=shape, **kw),
    "random.normal": lambda shape, **kw: mx.nd.random.normal(shape=shape, **kw),
    "random.randint": lambda shape, **kw: mx.nd.random.randint(0, 3, shape=shape, **kw),
}


@pytest.mark.parametrize("make", FILLED.values(), ids=FILLED.keys())
@pytest.mark.parametrize("shape, match", [
    ((-1, 3), r"\(-1, 3\) has a negative dimension"),
    ((1.5, 3), r"dimension 1.5 that is not an integer"),
    ((2**40, 2**40), r"needs .* bytes, more than this machine's memory"),
    ("banana", r"not a shape"),
])
def test_bad_shapes_raise_shape_error_naming_the_function(make, shape, match):
    with pytest.raises(mx.ShapeError, match=match) as info:
        make(shape)
    # named by the function, or (the size, which needs the dtype) by the random operator
    assert str(info.value).startswith(("mx.nd.", "_imperative (_random_"))


@pytest.mark.parametrize("make", [
    *FILLED.values(),
    lambda shape, **kw: mx.nd.array(np.ones(shape), **kw),
    lambda shape, **kw: mx.nd.arange(3, **kw),
], ids=[*FILLED.keys(), "array", "arange"])
def test_a_context_that_is_not_one_is_refused(make):
    with pytest.raises(mx.MinimxError, match="ctx must be a Context .* got 'banana'"):
        make((2, 3), ctx="banana")
    assert make((2, 3), ctx=mx.cpu()).context == mx.cpu()


def test_valid_shapes_and_data_keep_working():
    assert mx.nd.zeros(3).shape == (3,)
    assert mx.nd.ones(np.int64(2), dtype="int32").asnumpy().tolist() == [1, 1]
    assert mx.nd.empty((np.int32(2), 0)).shape == (2, 0)
    assert mx.nd.full([2, 2], 3, ctx=[mx.cpu()]).asnumpy().tolist() == [[3, 3], [3, 3]]
    np.testing.assert_array_equal(mx.nd.array((1.5, 3)).asnumpy(), [1.5, 3.0])  # data, not a shape
    np.testing.assert_array_equal(mx.nd.array([[1, 2], [3, 4]]).asnumpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(mx.nd.arange(2, 8, 2, repeat=2).asnumpy(), [2, 2, 4, 4, 6, 6])


def test_data_that_is_not_numbers_raises_dtype_error():
    with pytest.raises(mx.DTypeError, match="mx.nd.array: cannot make an array of float32"):
        mx.nd.array("hello")
    with pytest.raises(mx.DTypeError, match="mx.nd.full: cannot fill .* with 'x'"):
        mx.nd.full((2,), "x")


@pytest.mark.parametrize("call, match", [
    (lambda: mx.nd.random.normal(0, -1, shape=(2, 2)), r"_random_normal: scale=-1 must not be"),
    (lambda: mx.nd.random.normal(float("nan"), 1), r"_random_normal: loc=nan must be a"),
    (lambda: mx.nd.random.uniform(1, 0), r"_random_uniform: low=1 must not exceed high=0"),
    (lambda: mx.nd.random.uniform("a", 2), r"mx.nd.random.uniform: the parameters must be all "
                                            r"numbers or all NDArrays, got str"),
    (lambda: mx.nd.arange(0, 5, 0), r"arange: step must not be zero"),
    (lambda: mx.nd.arange(5, repeat=0), r"arange: repeat=0 must be a positive integer"),
])
def test_bad_distribution_and_range_parameters_raise_operator_error_at_the_call(call, match):
    with pytest.raises(mx.OperatorError, match=match):
        call()


def test_a_range_too_big_for_memory_is_refused():
    with pytest.raises(mx.ShapeError, match="mx.nd.arange: .* more than this machine's memory"):
        mx.nd.arange(1e18)


def test_random_values_follow_their_parameters():
    mx.random.seed(3)
    u = mx.nd.random.uniform(2, 3, shape=(1000,), dtype="float64").asnumpy()
    assert u.dtype == np.float64 and 2 <= u.min() and u.max() < 3
    n = mx.nd.random.normal(10, 0, shape=(2, 2)).asnumpy()
    np.testing.assert_array_equal(n, np.full((2, 2), 10, np.float32))


def test_linspace_eye_and_randint_give_mxnets_values():
    np.testing.assert_array_equal(mx.nd.linspace(0, 1, 5).asnumpy(), [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_array_equal(mx.nd.linspace(0, 1, 4, endpoint=False).asnumpy(),
                                  [0, 0.25, 0.5, 0.75])
    assert mx.nd.linspace(0, 1, 3).dtype == np.float32
    np.testing.assert_array_equal(mx.nd.eye(2).asnumpy(), np.eye(2))
    np.testing.assert_array_equal(mx.nd.eye(2, 3, 1, dtype="int32").asnumpy(), np.eye(2, 3, 1))
    mx.random.seed(7)
    first = mx.nd.random.randint(-2, 3, shape=(50,)).asnumpy()
    mx.random.seed(7)
    again = mx.nd.random.randint(-2, 3, shape=(50,), dtype="int64").asnumpy()
    np.testing.assert_array_equal(first, again)
    assert first.dtype == np.int32 and set(first) <= {-2, -1, 0, 1, 2}


@pytest.mark.parametrize("make, match", [
    (lambda: mx.nd.linspace(0, 1, -1), r"mx.nd.linspace: num=-1 must be a non-negative integer"),
    (lambda: mx.nd.linspace(0, 1, 2.5), r"num=2.5 must be"),
    (lambda: mx.nd.linspace(0, float("inf"), 3), r"stop=inf must be a finite number"),
    (lambda: mx.nd.eye(-2), r"mx.nd.eye: N=-2 must be a non-negative integer"),
    (lambda: mx.nd.eye(2, k=0.5), r"k=0.5 must be an integer"),
    (lambda: mx.nd.random.randint(3, 3), r"low=3 must be below high=3"),
    (lambda: mx.nd.random.randint(0, 2.5), r"_random_randint\): bad parameter high: "
                                            r"'2.5' is not a valid int"),
    (lambda: mx.nd.random.randint(0, 3, dtype="float32"), r"dtype: 'float32' is not one of "
                                                         r"int32, int64"),
])
def test_bad_parameters_of_linspace_eye_and_randint_are_named(make, match):
    with pytest.raises(mx.MinimxError, match=match):
        make()


def test_fills_write_out_in_place_as_mxnets():
    out = mx.nd.zeros((2, 2))
    assert mx.nd.ones((2, 2), out=out) is out and out.asnumpy().tolist() == [[1, 1], [1, 1]]
    mx.nd.full((2, 2), 7, out=out)
    assert out.asnumpy().tolist() == [[7, 7], [7, 7]]
    mx.nd.zeros((2, 2), out=out)
    assert not out.asnumpy().any()
    with pytest.raises(mx.ShapeError, match="does not match out's"):
        mx.nd.ones((3,), out=out)
    with pytest.raises(mx.MinimxError, match="dense arrays only"):
        mx.nd.zeros((2,), stype="row_sparse")


def test_numbers_outside_an_integer_type_wrap_as_in_mxnet():
    # MXNet 1.9.1 (under the numpy < 1.24 it needs): [2, 0, 254, 44] and [2, 56].
    assert mx.nd.array([2, 0, -2, 300], dtype="uint8").asnumpy().tolist() == [2, 0, 254, 44]
    assert mx.nd.array([2, -200], dtype="int8").asnumpy().tolist() == [2, 56]
    with pytest.raises(mx.DTypeError, match="cannot make an array of int32 from list"):
        mx.nd.array([2**70], dtype="int32")
