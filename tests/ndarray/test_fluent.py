"""Fluent methods (`minimx.ops.fluent`) on NDArrays and Symbols, and parameters
given by position to the generated functions: ``x.sum(1)``, ``mx.nd.clip(x, 0, 6)``,
as MXNet's generated functions read their arguments."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError
from minimx.ops.fluent import FLUENT

VALUES = np.array([[1.0, -5.0, 3.0], [4.0, 2.0, -6.0]], np.float32)

# (call on an array or symbol, numpy's answer)
CASES = [
    (lambda x: x.sum(), lambda v: v.sum(keepdims=True).reshape(1)),
    (lambda x: x.sum(1), lambda v: v.sum(1)),
    (lambda x: x.sum(0, True), lambda v: v.sum(0, keepdims=True)),
    (lambda x: x.mean(axis=1), lambda v: v.mean(1)),
    (lambda x: x.max(0), lambda v: v.max(0)),
    (lambda x: x.min(), lambda v: v.min(keepdims=True).reshape(1)),
    (lambda x: x.argmax(1), lambda v: v.argmax(1).astype(np.float32)),
    (lambda x: x.clip(-2, 3), lambda v: np.clip(v, -2, 3)),
    (lambda x: x.abs(), np.abs),
    (lambda x: x.square(), np.square),
    (lambda x: x.exp(), np.exp),
    (lambda x: x.relu(), lambda v: np.maximum(v, 0)),
    (lambda x: x.sign(), np.sign),
    (lambda x: x.expand_dims(0), lambda v: v[None]),
    (lambda x: x.transpose(), lambda v: v.T),
    (lambda x: x.flatten(), lambda v: v.reshape(2, -1)),
    (lambda x: x.swapaxes(0, 1), lambda v: v.swapaxes(0, 1)),
    (lambda x: x.tile((2, 1)), lambda v: np.tile(v, (2, 1))),
    (lambda x: x.slice_axis(1, 0, 2), lambda v: v[:, 0:2]),
    (lambda x: x.softmax(), lambda v: np.exp(v) / np.exp(v).sum(-1, keepdims=True)),
    (lambda x: x.astype("int32"), lambda v: v.astype(np.int32)),
]


@pytest.mark.parametrize("call, expected", CASES)
def test_an_array_method_is_the_operator(call, expected) -> None:
    got = call(mx.nd.array(VALUES)).asnumpy()
    want = expected(VALUES)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("call, expected", CASES)
def test_a_symbol_method_is_the_operator(call, expected) -> None:
    (got,) = call(mx.sym.var("x")).eval(x=mx.nd.array(VALUES))
    np.testing.assert_allclose(got.asnumpy(), expected(VALUES), rtol=1e-6)


def test_tensors_given_by_position_are_further_inputs() -> None:
    x, indices = mx.nd.array(VALUES), mx.nd.array([2, 0])
    np.testing.assert_array_equal(x.take(indices, 1).asnumpy(), VALUES[:, [2, 0]])
    np.testing.assert_array_equal(x.pick(indices).asnumpy(), [3.0, 4.0])
    sym = mx.sym.var("x").take(mx.sym.var("i"), axis=1)
    assert sym.list_arguments() == ["x", "i"]
    np.testing.assert_array_equal(sym.eval(x=x, i=indices)[0].asnumpy(), VALUES[:, [2, 0]])


def test_the_array_keeps_its_own_reshape_and_astype() -> None:
    x = mx.nd.array(VALUES)
    assert x.reshape(3, 2).shape == (3, 2)    # dimensions as separate arguments
    assert x.astype("float32", copy=False) is x
    assert x.as_in_context(mx.cpu()) is x


def test_every_method_names_an_operator_both_have() -> None:
    x, s = mx.nd.array(VALUES), mx.sym.var("x")
    for method, op in FLUENT.items():
        assert callable(getattr(x, method)) and callable(getattr(s, method)), method
        assert hasattr(mx.nd, op), op


@pytest.mark.parametrize("call, message", [
    (lambda x: x.sum(1, axis=0), r"\(sum\): parameter 'axis' given by position and by keyword"),
    (lambda x: x.clip(0, 1, 2), r"\(clip\): 3 parameters given by position, the operator "
                                r"has 2 \(a_min, a_max\)"),
])
def test_bad_arguments_are_named(call, message) -> None:
    for x in (mx.nd.array(VALUES), mx.sym.var("x")):
        with pytest.raises(MinimxError, match=message):
            call(x)
    with pytest.raises(MinimxError, match="gpu"):
        mx.nd.array(VALUES).as_in_context(mx.gpu(0))


def test_generated_functions_take_parameters_by_position() -> None:
    x = mx.nd.array(VALUES)
    np.testing.assert_array_equal(mx.nd.clip(x, -2, 3).asnumpy(), np.clip(VALUES, -2, 3))
    np.testing.assert_array_equal(mx.nd.one_hot(mx.nd.array([2, 0]), 3).asnumpy(),
                                  np.eye(3, dtype=np.float32)[[2, 0]])
    np.testing.assert_array_equal(mx.nd.sum(x, 1, True).asnumpy(), VALUES.sum(1, keepdims=True))
    # inputs not given (None) come before the parameters, as in MXNet's signatures
    fc = mx.sym.FullyConnected(mx.sym.var("x"), None, None, 10, name="fc")
    assert fc.list_arguments() == ["x", "fc_weight", "fc_bias"]
    assert fc.attr("num_hidden") == "10"


def test_a_tensor_after_positional_parameters_is_refused() -> None:
    x = mx.nd.array(VALUES)
    with pytest.raises(MinimxError, match=r"\(take\): a tensor given by position after the "
                                          r"parameters began, as 'mode'"):
        mx.nd.take(x, 1, x)
    with pytest.raises(MinimxError, match="positional argument 1 is a int"):
        mx.nd.Concat(x, 1)   # a variadic operator takes inputs only
