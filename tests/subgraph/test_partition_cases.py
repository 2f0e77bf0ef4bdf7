"""Hand-written partitioner cases: the known traps, edge cases and bad backends."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.graph import Graph

from .invariants import check_partition, check_same_values, check_selected_placed, subgraph_nodes


def _inputs(sym, seed=0):
    """Values for the arguments and auxiliary states; the first argument is (2, 4)
    and inference gives the others (those it cannot are (2, 4) too)."""
    rng = np.random.default_rng(seed)
    args, aux = sym.list_arguments(), sym.list_auxiliary_states()
    arg_shapes, _, aux_shapes = sym.infer_shape_partial(**{args[0]: (2, 4)})
    shapes = [s if s else (2, 4) for s in arg_shapes + aux_shapes]
    return {n: mx.nd.array(np.abs(rng.normal(size=s)))
            for n, s in zip(args + aux, shapes, strict=True)}


def _partition(sym, op_names):
    result = mx.subgraph.partition(sym, "default", op_names=op_names)
    check_partition(sym, result, set(op_names))
    check_selected_placed(result, set(op_names))
    check_same_values(sym, result, _inputs(sym))
    return result


def _members(node) -> list[str]:
    return sorted(n.name for n in Graph(node.subgraphs[0].outputs).nodes if not n.is_variable)


def test_chain_through_unselected_node_would_close_a_cycle():
    x = mx.sym.Variable("x")
    a = mx.sym.relu(x, name="a")
    u = mx.sym.sigmoid(a, name="u")          # not selected
    b = mx.sym.elemwise_add(a, u, name="b")  # a -> u -> b leaves the set and comes back
    out = mx.sym.relu(b, name="c")
    result = _partition(out, ["relu", "elemwise_add"])
    groups = [_members(n) for n in subgraph_nodes(result)]
    assert ["a", "b", "c"] not in groups
    assert ["b", "c"] in groups  # the highest-index offender leaves, the rest regroup


def test_two_candidates_depending_on_each_other_through_unselected_nodes():
    # S1 = {a1, a2}, S2 = {b1, b2}; a1 -> u1 -> b2 and b1 -> u2 -> a2. Each set alone
    # closes no cycle, both together would (MXNet 1.9.1 aborts here).
    x = mx.sym.Variable("x")
    a1 = mx.sym.relu(x, name="a1")
    b1 = mx.sym.tanh(x, name="b1")
    u1 = mx.sym.sigmoid(a1, name="u1")
    u2 = mx.sym.sigmoid(b1, name="u2")
    a2 = mx.sym.elemwise_add(a1, u2, name="a2")
    b2 = mx.sym.elemwise_mul(b1, u1, name="b2")
    out = mx.sym.Group([a2, b2])
    result = _partition(out, ["relu", "tanh", "elemwise_add", "elemwise_mul"])
    assert len(subgraph_nodes(result)) >= 2


def test_subgraph_output_used_twice_and_as_graph_output():
    x = mx.sym.Variable("x")
    a = mx.sym.exp(mx.sym.relu(x, name="r"), name="e")
    out = mx.sym.Group([mx.sym.sigmoid(a) + mx.sym.tanh(a), a])
    result = _partition(out, ["relu", "exp"])
    (node,) = subgraph_nodes(result)
    assert node.num_outputs() == 1
    assert len(result.list_outputs()) == 2


def test_same_entry_feeds_a_subgraph_twice():
    x = mx.sym.Variable("x")
    s = mx.sym.sigmoid(x, name="s")
    out = mx.sym.relu(mx.sym.elemwise_mul(s, s, name="m"), name="r")
    result = _partition(out, ["elemwise_mul", "relu"])
    (node,) = subgraph_nodes(result)
    assert len(node.inputs) == 1


def test_selector_rejecting_everything_leaves_graph_alone():
    x = mx.sym.Variable("x")
    out = mx.sym.relu(mx.sym.tanh(x))
    result = mx.subgraph.partition(out, "default", op_names=[])
    assert result.tojson() == out.tojson()


def test_graph_of_one_variable():
    x = mx.sym.Variable("x")
    result = mx.subgraph.partition(x, "default", op_names=["relu"])
    assert result.list_arguments() == ["x"]


def test_whole_graph_is_one_subgraph():
    x = mx.sym.Variable("x")
    out = mx.sym.relu(mx.sym.tanh(x, name="t") * 2.0, name="r")
    result = _partition(out, ["relu", "tanh", "_mul_scalar"])
    ops = [n.op for n in Graph(result.outputs).nodes]
    assert ops == [None, "_subgraph_op"]


def test_unknown_backend_lists_registered_ones():
    with pytest.raises(mx.BackendError, match="registered: .*default"):
        mx.subgraph.partition(mx.sym.Variable("x"), "NO_SUCH_BACKEND")


class _Raising(mx.subgraph.DefaultSubgraphProperty):
    def create_subgraph_node(self, subgraph_sym, subgraph_id=0):
        raise RuntimeError("boom")


class _TooManyOutputs(mx.subgraph.DefaultSubgraphProperty):
    def create_subgraph_node(self, subgraph_sym, subgraph_id=0):
        two = mx.sym.Group([subgraph_sym, subgraph_sym])
        return mx.subgraph.Node.create("_subgraph_op", f"bad{subgraph_id}", subgraphs=[two])


@pytest.mark.parametrize("cls, message", [
    (_Raising, "create_subgraph_node for (r0) failed: RuntimeError: boom"),
    (_TooManyOutputs, "create_subgraph_node for (r0): the node bad0 (_subgraph_op) has 2 "
                      "outputs, the subgraph has 1")])
def test_bad_property_names_backend_and_subgraph(cls, message):
    mx.subgraph.register_property(f"bad_{cls.__name__}", cls)
    x = mx.sym.Variable("x")
    out = mx.sym.relu(x, name="r0")
    with pytest.raises(mx.BackendError) as info:
        mx.subgraph.partition(out, f"bad_{cls.__name__}", op_names=["relu"])
    text = str(info.value)
    assert text.startswith(f"backend bad_{cls.__name__} ({cls.__name__}): ") and message in text


class _SigmoidForRelu(mx.subgraph.GraphPassProperty):
    """A whole-graph pass: the head's relu becomes a sigmoid of the same input."""

    def rewrite(self, sym):
        head = sym.get_children()
        return mx.sym.sigmoid(head, name="s0") if self.options.get("keep", True) \
            else mx.sym.Group([mx.sym.sigmoid(head), mx.sym.exp(head)])


def test_a_graph_pass_property_rewrites_the_whole_graph():
    x = mx.sym.Variable("x")
    out = mx.sym.relu(mx.sym.tanh(x, name="t"), name="r0")
    before = out.tojson()
    result = mx.subgraph.partition(out, _SigmoidForRelu())
    assert [n.op for n in result._topo()] == [None, "tanh", "sigmoid"]
    assert out.tojson() == before
    data = mx.nd.array([[-1.0, 0.5]])
    np.testing.assert_allclose(result.eval(x=data)[0].asnumpy(),
                               1 / (1 + np.exp(-np.tanh(data.asnumpy()))), rtol=1e-6)


def test_a_graph_pass_that_changes_the_outputs_is_refused():
    x = mx.sym.Variable("x")
    out = mx.sym.relu(mx.sym.tanh(x, name="t"), name="r0")
    with pytest.raises(mx.BackendError, match="changed the arguments, auxiliary states or "
                                              "outputs"):
        mx.subgraph.partition(out, _SigmoidForRelu(keep=False))


def test_bind_partitions_with_environment(monkeypatch):
    x = mx.sym.Variable("x")
    out = mx.sym.relu(mx.sym.tanh(x, name="t"), name="r")
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "default")
    monkeypatch.setenv("MINIMX_SUBGRAPH_DEFAULT_OPS", "relu,tanh")
    ex = out.bind(mx.cpu(), {"x": mx.nd.array([[-1.0, 0.5]])}, grad_req="null")
    text = ex.debug_str()
    assert "_subgraph_op" in text
    assert "  | tanh t(x0)" in text and "  | relu r(t_output)" in text  # the inner graph
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), np.maximum(np.tanh([[-1.0, 0.5]]), 0),
                               rtol=1e-6)


def test_bind_with_unknown_backend_fails(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "nope")
    with pytest.raises(mx.BackendError, match="nope"):
        mx.sym.relu(mx.sym.Variable("x")).simple_bind(mx.cpu(), x=(2, 2), grad_req="null")


def test_selectors_see_shapes_and_dtypes():
    seen = {}

    class Recording(mx.subgraph.SubgraphSelector):
        def select(self, node):
            seen[node.name] = (node.input_shapes, node.output_shapes, node.output_dtypes)
            return False

    class Prop(mx.subgraph.SubgraphProperty):
        def create_subgraph_selector(self):
            return Recording()

    x = mx.sym.Variable("x", shape=(3, 5))
    mx.subgraph.partition(mx.sym.relu(x, name="r"), Prop())
    assert seen["r"] == (((3, 5),), ((3, 5),), (np.dtype("float32"),))


def _reordering_graph():
    """{p, q} has two output nodes: p feeds r, q feeds h. Collapsing it would
    visit v2 before v3 depth-first, so list_arguments would change."""
    v1, v2, v3 = (mx.sym.Variable(n) for n in ("v1", "v2", "v3"))
    p = mx.sym.relu(v1, name="p")
    q = mx.sym.elemwise_add(p, v2, name="q")
    r = mx.sym.elemwise_mul(p, v3, name="r")
    return mx.sym.elemwise_sub(r, q, name="h")


def test_set_whose_collapse_would_reorder_arguments_is_split():
    out = _reordering_graph()
    assert out.list_arguments() == ["v1", "v3", "v2"]
    result = _partition(out, ["relu", "elemwise_add"])
    assert [_members(n) for n in subgraph_nodes(result)] == [["p"], ["q"]]


def test_reordering_set_is_split_and_others_kept_whole():
    tail = mx.sym.tanh(mx.sym.relu(_reordering_graph(), name="t1"), name="t2")
    result = _partition(tail, ["relu", "elemwise_add", "tanh"])
    assert [_members(n) for n in subgraph_nodes(result)] == [["p"], ["q"], ["t1", "t2"]]


def _batchnorms_on_data(heads_in_order: bool):
    """Ten BatchNorms on `data`, an eleventh after the tenth, then three more on
    `data`. Unless `heads_in_order`, the eleventh is the last head: the walk asks
    for the tenth, then visits the later BatchNorms' parameters, then asks for
    the eleventh, so {bn9, bn10} cannot collapse whole."""
    data = mx.sym.Variable("data")
    first = [mx.sym.BatchNorm(data, name=f"bn{i}") for i in range(10)]
    eleventh = mx.sym.BatchNorm(first[-1], name="bn10")
    more = [mx.sym.BatchNorm(data, name=f"bn{i}") for i in range(11, 14)]
    return mx.sym.Group([*first, eleventh, *more] if heads_in_order else [*first, *more, eleventh])


def test_batchnorms_whose_pair_would_reorder_are_split_not_dropped():
    result = _partition(_batchnorms_on_data(heads_in_order=False), ["BatchNorm"])
    groups = [_members(n) for n in subgraph_nodes(result)]
    assert sorted(groups) == sorted([[f"bn{i}"] for i in range(14)])


def test_batchnorm_pair_with_two_outputs_stays_whole_when_the_order_survives():
    result = _partition(_batchnorms_on_data(heads_in_order=True), ["BatchNorm"])
    (pair,) = [n for n in subgraph_nodes(result) if len(_members(n)) > 1]
    assert _members(pair) == ["bn10", "bn9"]
    assert pair.num_outputs() == 2


def _fcn_like():
    """A backbone with two taps (c3, c4), a head on c4 and an auxiliary head on c3.
    Each head leaves the selection (sigmoid stands for Dropout, tanh for the
    upsampling), so the set {backbone, h0, a0} has two output nodes, and the
    head's second block's weight lies between them in list_arguments."""
    def block(h, name):  # a convolution and its activation
        w = mx.sym.Variable(f"{name}_w")
        return mx.sym.relu(mx.sym.elemwise_mul(h, w, name=f"{name}_mul"), name=name)

    c3 = block(block(mx.sym.Variable("x"), "s1"), "s3")
    c4 = block(c3, "s4")
    head = mx.sym.tanh(block(mx.sym.sigmoid(block(c4, "h0")), "h1"), name="head")
    aux = mx.sym.tanh(block(mx.sym.sigmoid(block(c3, "a0")), "a1"), name="aux")
    return mx.sym.Group([head, aux])


def test_multi_output_backbone_stays_one_subgraph_and_heads_are_not_dropped():
    out = _fcn_like()
    assert out.list_arguments() == ["x", "s1_w", "s3_w", "s4_w", "h0_w", "h1_w", "a0_w", "a1_w"]
    result = _partition(out, ["elemwise_mul", "relu"])
    groups = [_members(n) for n in subgraph_nodes(result)]
    backbone = sorted(f"{b}{suffix}" for b in ("s1", "s3", "s4", "h0") for suffix in ("", "_mul"))
    assert sorted(groups) == sorted([backbone, ["a0", "a0_mul"], ["a1", "a1_mul"],
                                     ["h1", "h1_mul"]])
