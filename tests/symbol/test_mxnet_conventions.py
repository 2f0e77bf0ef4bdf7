"""Smaller MXNet conventions: automatic names of the
operator overloads, get_children of a multi-output node, bool(symbol)."""
from __future__ import annotations

import pytest

import minimx as mx


@pytest.mark.parametrize("expr, name", [
    (lambda x, y: x + 1, "_plusscalar0"), (lambda x, y: 1 + x, "_plusscalar0"),
    (lambda x, y: x - 1, "_minusscalar0"), (lambda x, y: 1 - x, "_rminusscalar0"),
    (lambda x, y: x * 2, "_mulscalar0"), (lambda x, y: -x, "_mulscalar0"),
    (lambda x, y: x / 2, "_divscalar0"), (lambda x, y: 2 / x, "_rdivscalar0"),
    (lambda x, y: x + y, "_plus0"), (lambda x, y: x - y, "_minus0"),
    (lambda x, y: x * y, "_mul0"), (lambda x, y: x / y, "_div0"),
])
def test_operator_overloads_are_named_as_in_mxnet(expr, name):
    with mx.name.NameManager():
        result = expr(mx.sym.Variable("x"), mx.sym.Variable("y"))
    assert result.name == name
    assert result.list_outputs() == [f"{name}_output"]


def test_names_count_on():
    with mx.name.NameManager():
        x = mx.sym.Variable("x")
        assert ((x + 1) + 1).name == "_plusscalar1"


def test_get_children_lists_each_input_once():
    x = mx.sym.Variable("x")
    parts = mx.sym.split(x, num_outputs=3, name="sp")
    assert parts.get_children().list_outputs() == ["x"]
    assert parts[1].get_children().list_outputs() == ["x"]
    both = mx.sym.elemwise_add(x, x, name="s")
    assert both.get_children().list_outputs() == ["x", "x"]  # one node, its two inputs


def test_bool_of_a_symbol_raises_as_in_mxnet():
    x = mx.sym.Variable("x")
    with pytest.raises(mx.sym.NotImplementedForSymbol,
                       match=r'^Function __bool__ \(namely operator "bool"\) is not implemented '
                             r"for Symbol and only available in NDArray\.$"):
        bool(x)
    with pytest.raises(mx.MinimxError):
        if mx.sym.relu(x):
            pass


def test_a_name_manager_takes_the_hint_as_it_is():
    # MXNet 1.9.1: Conv0 Conv1 conv0, and p_Conv0 (its operator functions lower the hint).
    with mx.name.NameManager() as names:
        assert [names.get(None, h) for h in ("Conv", "Conv", "conv")] == ["Conv0", "Conv1",
                                                                          "conv0"]
    with mx.name.Prefix("p_") as names:
        assert names.get(None, "Conv") == "p_Conv0"
        assert mx.sym.Convolution(mx.sym.var("x"), kernel=(1, 1), num_filter=1).name == \
            "p_convolution0"
