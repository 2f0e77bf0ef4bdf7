"""Graph.lint: the well-formedness check run after rewrites."""
from __future__ import annotations

import pytest

import minimx as mx
from minimx.graph import Graph, NodeEntry


def test_well_formed_graph_passes():
    x = mx.sym.Variable("x")
    Graph(mx.sym.FullyConnected(mx.sym.relu(x), num_hidden=2).outputs).lint()


def test_cycle_is_reported_with_the_node():
    x = mx.sym.Variable("x")
    a = mx.sym.relu(x, name="a")
    b = mx.sym.tanh(a, name="b")
    a.outputs[0].node.inputs[0] = b.outputs[0]  # a reads b, b reads a
    with pytest.raises(mx.MinimxError, match="not an earlier node"):
        Graph(b.outputs).lint()


def test_missing_input_and_bad_output_index_are_reported():
    x = mx.sym.Variable("x")
    s = mx.sym.elemwise_add(x, x, name="s")
    s.outputs[0].node.inputs.pop()
    with pytest.raises(mx.MinimxError, match=r"s \(elemwise_add\): 1 inputs"):
        Graph(s.outputs).lint()
    r = mx.sym.relu(x, name="r")
    r.outputs[0].node.inputs[0] = NodeEntry(x.outputs[0].node, 3)
    with pytest.raises(mx.MinimxError, match="reads output 3"):
        Graph(r.outputs).lint()
