"""mx.sym / mx.nd maximum, minimum, power, the array makers (zeros, ones, full,
arange) and the Python operators ** < <= > >=, which pick MXNet's operators."""
import json

import numpy as np
import pytest

import minimx as mx


def ops_of(sym):
    return [n["op"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]


@pytest.mark.parametrize("make, ops, want", [
    (lambda x, F: F.maximum(x, 0.5), ["_maximum_scalar"], lambda x: np.maximum(x, 0.5)),
    (lambda x, F: F.maximum(0.5, x), ["_maximum_scalar"], lambda x: np.maximum(x, 0.5)),
    (lambda x, F: F.minimum(x, x * 2), ["_mul_scalar", "_minimum"],
     lambda x: np.minimum(x, 2 * x)),
    (lambda x, F: F.power(x, 2), ["_power_scalar"], lambda x: x ** 2),
    (lambda x, F: F.pow(2, x), ["_rpower_scalar"], lambda x: 2.0 ** x),
    (lambda x, F: x ** x, ["_power"], lambda x: x ** x),
    (lambda x, F: 3 ** x, ["_rpower_scalar"], lambda x: 3.0 ** x),
    (lambda x, F: x > 0.4, ["_greater_scalar"], lambda x: x > 0.4),
    (lambda x, F: 0.4 > x, ["_lesser_scalar"], lambda x: x < 0.4),
    (lambda x, F: x >= x * 1, ["_mul_scalar", "_greater_equal"], lambda x: x >= x),
    (lambda x, F: x <= 0.4, ["_lesser_equal_scalar"], lambda x: x <= 0.4),
    (lambda x, F: x < x * 2, ["_mul_scalar", "_lesser"], lambda x: x < 2 * x),
])
def test_symbol_and_ndarray_functions_and_operators(make, ops, want):
    x = np.array([[0.25, 0.5], [0.75, 1.5]], np.float32)
    sym = make(mx.sym.var("x"), mx.sym)
    assert ops_of(sym) == ops
    np.testing.assert_allclose(sym.eval(x=mx.nd.array(x))[0].asnumpy(), want(x) * 1.0,
                               rtol=1e-6)
    got = make(mx.nd.array(x), mx.nd).asnumpy()
    np.testing.assert_allclose(got, want(x) * 1.0, rtol=1e-6)


def test_array_makers():
    group = mx.sym.Group([mx.sym.zeros((2, 3)), mx.sym.ones(4, dtype="int32"),
                          mx.sym.full((2,), 1.5), mx.sym.arange(1, 4, 0.5, repeat=2)])
    assert ops_of(group) == ["_zeros", "_ones", "_full", "_arange"]
    assert group.infer_shape()[1] == [(2, 3), (4,), (2,), (12,)]
    assert group.infer_type()[1] == [np.float32, np.int32, np.float32, np.float32]
    zeros, ones, full, ranged = (a.asnumpy() for a in group.eval())
    assert not zeros.any() and ones.tolist() == [1] * 4 and full.tolist() == [1.5, 1.5]
    assert ranged.tolist() == [1, 1, 1.5, 1.5, 2, 2, 2.5, 2.5, 3, 3, 3.5, 3.5]


def test_nd_functions_broadcast():
    a, b = mx.nd.array([1, 2, 3]), mx.nd.array([[2], [0]])
    assert mx.nd.maximum(a, b).asnumpy().tolist() == [[2, 2, 3], [1, 2, 3]]
    assert mx.nd.power(2, a).asnumpy().tolist() == [2, 4, 8]
    # Two numbers give MXNet's plain Python result.
    assert mx.nd.maximum(1, 2) == 2 and mx.sym.power(1, 2) == 1
