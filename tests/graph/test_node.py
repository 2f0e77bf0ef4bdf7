"""Node.operator: the operator and parameters of an operator node; a variable has none."""
import pytest

import minimx as mx
from minimx.base import MinimxError
from minimx.graph import Node, NodeEntry, read_through
from minimx.ops import get_op


def test_operator_gives_the_opdef_and_parsed_params():
    node = Node.create("Convolution", "conv0", {"kernel": "(3, 3)", "num_filter": "8"})
    opdef, params = node.operator()
    assert opdef is get_op("Convolution")
    assert params.kernel == (3, 3) and params.num_filter == 8
    assert params is node.params


def test_a_variable_has_no_operator():
    with pytest.raises(MinimxError, match=r"^data \(Variable\): a variable has no operator$"):
        Node.create(None, "data").operator()


def test_read_through_bypasses_passing_nodes_unless_an_output_past_their_inputs_is_read():
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    drop = mx.sym.Dropout(mx.sym.identity(fc, name="copy"), p=0.5, name="drop")
    out = mx.sym.relu(drop, name="r")
    is_identity = lambda node: node.op in ("_copy", "Dropout")   # noqa: E731
    kept = read_through(out.outputs, is_identity)
    assert kept[0].node.inputs[0].node.name == "fc"   # both read through
    drop_node = drop.outputs[0].node
    mask_read = [out.outputs[0], NodeEntry(drop_node, 1, 0)]   # Dropout's mask, read
    kept = read_through(mask_read, is_identity)
    assert kept[1].node.op == "Dropout" and kept[1].node.inputs[0].node.name == "fc"
    assert read_through(out.outputs, lambda node: False) == out.outputs
