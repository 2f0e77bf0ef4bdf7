"""`subgraph.lift`: node sets become subgraph nodes, inputs in the subgraph's
walk order, variables named and annotated, the result linted; and the
subgraph ids a partition hands out run on over its properties."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.backends.dnnl.patterns import FUSED_OPS
from minimx.base import BackendError
from minimx.graph import Graph, Node
from minimx.subgraph.lift import inline, lift
from tests.onednn_required import require_onednn


def _subgraph_node(inner, k):
    return Node.create("_subgraph_op", f"sg{k}", subgraphs=[inner])


def _graph():
    """FullyConnected(relu(x) * y) + relu(x): the set {relu, mul, fc} reads x, y, w, b."""
    x, y = mx.sym.var("x"), mx.sym.var("y")
    r = mx.sym.relu(x, name="r")
    m = mx.sym.elemwise_mul(r, y, name="m")
    fc = mx.sym.FullyConnected(m, num_hidden=2, name="fc")
    return Graph(mx.sym.Group([fc, r]).outputs)


def _ids(g: Graph, *names: str) -> list[int]:
    return [next(i for i, n in enumerate(g.nodes) if n.name == name) for name in names]


def test_a_set_becomes_one_node_reading_what_crosses_into_it():
    g = _graph()
    r, m, fc = _ids(g, "r", "m", "fc")
    # Outputs in the order given: fc first, then r.
    out = lift(g, [([r, m, fc], [(fc, 0), (r, 0)])], _subgraph_node, "test")
    assert str(out).splitlines()[-1] == "outputs: %4.0, %4.1"
    node = out.nodes[-1]
    assert node.label == "sg0 (_subgraph_op)"
    # The walk from fc meets y after x, then fc's weight and bias.
    inner = node.subgraphs[0]
    assert inner.list_inputs() == ["x0", "y1", "fc_weight2", "fc_bias3"]
    assert [e.node.name for e in node.inputs] == ["x", "y", "fc_weight", "fc_bias"]
    assert [n.op for n in Graph(inner.outputs).nodes if n.op] == [
        "relu", "elemwise_mul", "FullyConnected"]
    assert all(n.op is None or n.op == "_subgraph_op" for n in out.nodes)


def test_the_input_graph_is_untouched():
    g = _graph()
    before = str(g)
    lift(g, [(_ids(g, "r", "m"), [(_ids(g, "m")[0], 0), (_ids(g, "r")[0], 0)])],
         _subgraph_node, "test")
    assert str(Graph(g.outputs)) == before


def test_variables_carry_the_shapes_and_dtypes_given():
    g = _graph()
    (r,) = _ids(g, "r")
    shapes = [None] * g.num_entries
    dtypes = [None] * g.num_entries
    shapes[g.entry_ptr[_ids(g, "x")[0]]] = (3, 4)
    dtypes[g.entry_ptr[_ids(g, "x")[0]]] = np.dtype(np.float16)
    out = lift(g, [([r], [(r, 0)])], _subgraph_node, "test", shapes, dtypes)
    (node,) = [n for n in out.nodes if n.op == "_subgraph_op"]
    (var,) = [n for n in Graph(node.subgraphs[0].outputs).nodes if n.is_variable]
    assert (var.name, var.attrs) == ("x0", {"__shape__": "(3, 4)", "__dtype__": "2"})


def test_several_sets_in_one_call_are_numbered_in_order():
    g = _graph()
    r, m, fc = _ids(g, "r", "m", "fc")
    out = lift(g, [([r], [(r, 0)]), ([m, fc], [(fc, 0)])], _subgraph_node, "test")
    assert [n.label for n in out.nodes if n.op] == ["sg0 (_subgraph_op)", "sg1 (_subgraph_op)"]
    assert [e.node.name for e in out.nodes[-1].inputs] == ["sg0", "y", "fc_weight", "fc_bias"]


@pytest.mark.parametrize("make, message", [
    (lambda inner, k: 1 / 0, "test for (r, m) failed: ZeroDivisionError: division by zero"),
    (lambda inner, k: "node", "test for (r, m): returned a str, not a Node"),
    (lambda inner, k: Node.create("relu", "one"),
     "test for (r, m): the node one (relu) takes 1 inputs, the subgraph has 2"),
])
def test_a_bad_node_is_refused_naming_the_set(make, message):
    g = _graph()
    r, m = _ids(g, "r", "m")
    with pytest.raises(BackendError) as info:
        lift(g, [([r, m], [(m, 0)])], make, "test")
    assert str(info.value) == message


def test_subgraph_ids_run_on_over_a_backends_properties():
    mx.subgraph.register_property("two_props_for_ids", mx.subgraph.DefaultSubgraphProperty,
                                  op_names=["relu"])
    mx.subgraph.register_property("two_props_for_ids", mx.subgraph.DefaultSubgraphProperty,
                                  op_names=["exp"])
    x = mx.sym.var("x")
    sym = mx.sym.exp(mx.sym.relu(mx.sym.exp(mx.sym.relu(x))))
    part = mx.subgraph.partition(sym, "two_props_for_ids")
    assert [n.name for n in Graph(part.outputs).nodes if n.op] == [
        "sg_default_0", "sg_default_2", "sg_default_1", "sg_default_3"]


def test_inline_undoes_lift():
    g = _graph()
    lifted = lift(g, [(_ids(g, "r", "m", "fc"), [(_ids(g, "fc")[0], 0), (_ids(g, "r")[0], 0)])],
                  _subgraph_node, "test")
    inlined = inline(mx.sym.Symbol(lifted.outputs), {"_subgraph_op"})
    assert inlined.tojson() == mx.sym.Symbol(g.outputs).tojson()


@pytest.mark.parametrize("model", ["resnet18_v1", "mobilenetv2_1.0"])
def test_inline_of_a_dnnl_partition_is_the_model_again(model):
    # nested: _sg_dnnl nodes hold fused chains (_sg_dnnl_conv, ...), each its layers
    require_onednn()
    net = mx.models.get_model(model)
    part = mx.subgraph.partition(net, "DNNL", shapes={"data": (1, 3, 224, 224)})
    assert {n.op for n in part._topo()} & {"_sg_dnnl"}
    assert inline(part, {"_sg_dnnl", *FUSED_OPS}).tojson() == net.tojson()
