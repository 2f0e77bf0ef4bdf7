"""Scalar arithmetic (eltwise linear), elementwise pairs (binary) and Dropout (passed
on at inference) inside DNNL subgraphs: taken in, and the numpy results out."""
from __future__ import annotations

import pytest

import minimx as mx
from minimx.graph import Graph

from .helpers import check, dnnl_nodes, inner_ops, outer_ops

data = mx.sym.var("data")
SHAPE = {"data": (2, 4, 6, 6)}


def taken(sym) -> list[str]:
    """The operators inside the one DNNL subgraph of `sym`, fused chains opened."""
    [node] = dnnl_nodes(sym)
    nodes = list(Graph(node.subgraphs[0].outputs).nodes)
    for n in nodes:
        nodes += Graph(n.subgraphs[0].outputs).nodes if n.subgraphs else []
    return [n.op for n in nodes if not n.is_variable]


def conv(x, name: str, filters: int = 4):
    return mx.sym.Convolution(x, kernel=(1, 1), num_filter=filters, name=name)


@pytest.mark.parametrize("op,name", [
    (lambda x: x + 3.0, "_plus_scalar"),
    (lambda x: x - 0.5, "_minus_scalar"),
    (lambda x: 2.0 - x, "_rminus_scalar"),
    (lambda x: x * -1.5, "_mul_scalar"),
    (lambda x: x / 6.0, "_div_scalar"),
    (lambda x: x / 0.0, "_div_scalar"),     # inf and NaN where MXNet gives them
])
def test_scalar_arithmetic_runs_in_onednn(op, name):
    part = check(conv(op(conv(data, "c0")), "c1"), SHAPE)
    assert outer_ops(part) == ["_sg_dnnl"]
    assert name in taken(part)


def se_gate(x):
    """A squeeze-excitation gate of `x`: (N, C, 1, 1), broadcast over the map."""
    pooled = mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg")
    return mx.sym.sigmoid(conv(pooled, "se"))


@pytest.mark.parametrize("op,second", [
    (mx.sym.elemwise_sub, lambda x: conv(data, "b")),
    (mx.sym.elemwise_mul, lambda x: conv(data, "b")),
    (mx.sym.elemwise_div, lambda x: conv(data, "b")),
    (mx.sym.broadcast_mul, se_gate),
    (mx.sym.broadcast_sub, se_gate),
    (mx.sym.broadcast_div, se_gate),
])
def test_elementwise_pairs_run_in_onednn(op, second):
    x = conv(data, "c0")
    part = check(conv(op(x, second(x)), "c1"), SHAPE)
    assert outer_ops(part) == ["_sg_dnnl"]
    assert op.__name__ in taken(part)


@pytest.mark.parametrize("op,inside", [(mx.sym.broadcast_mul, True),
                                       (mx.sym.broadcast_add, True),
                                       (mx.sym.broadcast_sub, False)])
def test_a_first_operand_that_broadcasts(op, inside):
    # add and mul swap their operands (oneDNN broadcasts the second only); sub cannot.
    gate = mx.sym.Pooling(conv(data, "c0"), global_pool=True, kernel=(1, 1), pool_type="avg")
    part = check(conv(op(gate, conv(data, "c1")), "c2"), SHAPE)
    assert (op.__name__ in taken(part) if inside else op.__name__ in outer_ops(part))


def test_dropout_is_passed_on_inside_a_subgraph_and_out_of_it():
    x = mx.sym.Dropout(mx.sym.relu(conv(data, "c0")), p=0.3, name="drop")
    part = check(mx.sym.Group([conv(x, "c1"), x]), SHAPE)
    assert outer_ops(part) == ["_sg_dnnl"]
    assert "Dropout" in inner_ops(dnnl_nodes(part)[0])


def test_dropout_that_drops_at_inference_stays_outside():
    x = mx.sym.Dropout(conv(data, "c0"), p=0.3, mode="always", name="drop")
    sym = conv(x, "c1")
    part = mx.subgraph.partition(sym, "DNNL", shapes=SHAPE)
    assert outer_ops(part) == ["_sg_dnnl", "Dropout", "_sg_dnnl"]
