"""Parameter values, dtypes and edges oneDNN does not take stay outside DNNL
subgraphs, and the partitioned graph still computes the numpy results."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minimx as mx

from .helpers import check, dnnl_nodes, inner_ops, outer_ops, partitioned

data = mx.sym.var("data")
SHAPE = {"data": (2, 4, 6, 6)}


def around(op):
    """`op` between two convolutions, which DNNL does take."""
    x = mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, name="c0")
    return mx.sym.Convolution(op(x), kernel=(1, 1), num_filter=3, name="c1")


@pytest.mark.parametrize("op,name", [
    (lambda x: mx.sym.Activation(x, act_type="softsign"), "Activation"),
    (lambda x: mx.sym.LeakyReLU(x, act_type="selu"), "LeakyReLU"),
    # oneDNN's exp gives inf for NaN (MXNet: NaN).
    (mx.sym.exp, "exp"),
    (lambda x: mx.sym.Pooling(x, kernel=(2, 2), pool_type="sum"), "Pooling"),
    (lambda x: mx.sym.softmax(x, axis=1, temperature=2.0), "softmax"),
    (lambda x: 1.0 / x, "_rdiv_scalar"),
    (mx.sym.SoftmaxActivation, "SoftmaxActivation"),
])
def test_unsupported_operator_stays_outside(op, name):
    part = check(around(op), SHAPE)
    assert name in outer_ops(part)
    assert all(name not in inner_ops(n) for n in dnnl_nodes(part))


def test_flatten_feeding_other_operators_is_a_view_inside_the_subgraph():
    sym = mx.sym.softmax(mx.sym.Flatten(mx.sym.relu(data)))
    part = check(sym, SHAPE)
    assert [inner_ops(n) for n in dnnl_nodes(part)] == [["relu", "Flatten", "softmax"]]


def test_computed_weights_are_not_taken_into_the_subgraph():
    w = mx.sym.relu(mx.sym.var("w"))
    sym = mx.sym.Convolution(data, weight=w, kernel=(3, 3), num_filter=2, no_bias=True)
    part = check(sym, SHAPE)
    assert outer_ops(part) == ["_sg_dnnl", "_sg_dnnl"]
    conv_node = [n for n in dnnl_nodes(part) if "Convolution" in inner_ops(n)][0]
    assert inner_ops(conv_node) == ["Convolution"]


def test_broadcast_of_the_first_operand_stays_outside():
    sym = mx.sym.broadcast_sub(mx.sym.var("a"), mx.sym.var("b"))
    part = check(sym, {"a": (1, 3, 1, 1), "b": (2, 3, 4, 5)})
    assert outer_ops(part) == ["broadcast_sub"]


def test_float64_stays_outside():
    sym = mx.sym.relu(mx.sym.Convolution(data, kernel=(1, 1), num_filter=2))
    with pytest.warns(UserWarning, match="DNNL: float64 is not supported .* 2 nodes left"):
        part = mx.subgraph.partition(sym, "DNNL", shapes=SHAPE, dtypes={"data": np.float64})
    assert "_sg_dnnl" not in outer_ops(part)


def test_unsupported_pooling_window_stays_outside():
    # The last window lies wholly in the padding: oneDNN refuses it.
    sym = mx.sym.Pooling(data, kernel=(3, 3), stride=(4, 4), pad=(2, 2),
                         pooling_convention="full")
    part = partitioned(sym, {"data": (1, 1, 4, 4)})
    assert outer_ops(part) == ["Pooling"]


def test_float16_graph_says_why_it_is_not_partitioned(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    conv = mx.sym.Convolution(data, kernel=(1, 1), num_filter=2)
    sym = mx.sym.Pooling(mx.sym.relu(conv), kernel=(2, 2))
    with pytest.warns(UserWarning) as record:
        ex = sym.simple_bind(mx.cpu(), data=SHAPE["data"], type_dict={"data": np.float16},
                             grad_req="null")
    said = [str(w.message) for w in record if str(w.message).startswith("DNNL")]
    assert said == ["DNNL: float16 is not supported (oneDNN runs bfloat16, float32); "
                    "3 nodes left to numpy"]
    assert [n.op for n in ex._graph.nodes if n.op] == ["Convolution", "relu", "Pooling"]


def test_float32_graph_partitions_without_a_dtype_warning(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    sym = mx.sym.relu(mx.sym.Convolution(data, kernel=(1, 1), num_filter=2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ex = sym.simple_bind(mx.cpu(), data=SHAPE["data"], grad_req="null")
    assert [n.op for n in ex._graph.nodes if n.op] == ["_sg_dnnl"]
