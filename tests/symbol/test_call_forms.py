"""MXNet call forms for operators: numpy integers inside
tuple parameters, and a positional None as an input not given."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx


def test_numpy_integers_inside_tuple_parameters():
    x = mx.sym.Variable("x")
    t = mx.sym.transpose(x, axes=(np.int64(1), np.int64(0)), name="t")
    assert t.attr("axes") == "(1, 0)"
    conv = mx.sym.Convolution(x, kernel=(np.int32(3), 3), pad=[np.int64(1), np.int64(1)],
                              stride=(np.uint8(2), 2), num_filter=np.int64(4), name="c")
    assert (conv.attr("kernel"), conv.attr("pad"), conv.attr("stride")) == \
        ("(3, 3)", "(1, 1)", "(2, 2)")
    assert conv.infer_shape(x=(1, 2, 8, 8))[1] == [(1, 4, 4, 4)]
    r = mx.sym.Reshape(x, shape=(np.int64(-1), np.int64(6)), name="r")
    assert r.attr("shape") == "(-1, 6)"
    assert r.infer_shape(x=(2, 3, 4))[1] == [(4, 6)]
    assert x.reshape((np.int64(4), np.int64(-1))).infer_shape(x=(2, 3, 4))[1] == [(4, 6)]


def test_numpy_integers_inside_tuples_for_ndarray_operators():
    a = mx.nd.array(np.arange(6.0).reshape(2, 3))
    out = mx.nd.transpose(a, axes=(np.int64(1), np.int64(0)))
    np.testing.assert_array_equal(out.asnumpy(), np.arange(6.0).reshape(2, 3).T)


def test_positional_none_is_an_input_not_given():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    conv = mx.sym.Convolution(x, w, None, no_bias=True, kernel=(3, 3), num_filter=4, name="c")
    assert conv.list_arguments() == ["x", "w"]
    # a None in the middle: the input is created, as when it is left out
    fc = mx.sym.FullyConnected(x, None, mx.sym.Variable("b"), num_hidden=2, name="fc")
    assert fc.list_arguments() == ["x", "fc_weight", "b"]
    nd_out = mx.nd.FullyConnected(mx.nd.ones((1, 3)), mx.nd.ones((2, 3)), None, no_bias=True,
                                  num_hidden=2)
    assert nd_out.asnumpy().tolist() == [[3.0, 3.0]]


def test_positional_none_where_it_cannot_be_an_input():
    x = mx.sym.Variable("x")
    with pytest.raises(mx.OperatorError, match=r"c \(Convolution\): 3 inputs given, the "
                                               r"operator takes 2 \(data, weight\)"):
        mx.sym.Convolution(x, x, x, no_bias=True, kernel=(3, 3), num_filter=4, name="c")
    with pytest.raises(mx.OperatorError, match="positional argument 1 is a NoneType"):
        mx.sym.Concat(x, None, x, name="cat")


def test_a_variadic_count_that_disagrees_is_refused_before_listing_inputs(monkeypatch):
    listed = []
    real = mx.ops.OpDef.input_names
    monkeypatch.setattr(mx.ops.OpDef, "input_names",
                        lambda op, p: listed.append(op.name) or real(op, p))
    x = mx.sym.Variable("x")
    with pytest.raises(mx.OperatorError, match=r"cat \(Concat\): num_args=100000000 but 2 "
                                               "inputs were given"):
        mx.sym.Concat(x, x, num_args=10**8, name="cat")
    assert listed == []


def test_a_numpy_number_on_the_left_of_a_symbol_builds_a_node():
    # numpy defers to Symbol's own operators, as MXNet's Symbol asks (__array_priority__).
    x = mx.sym.var("x")
    for got, want in ((np.float32(2) * x, [2, 4]), (np.float64(3) - x, [2, 1]),
                      (np.int64(1) + x, [2, 3]), (np.float64(3) / x, [3, 1.5])):
        assert isinstance(got, mx.sym.Symbol)
        assert got.eval(x=mx.nd.array([1, 2]))[0].asnumpy().tolist() == want
