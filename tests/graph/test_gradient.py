"""The gradient pass: the structure of backward graphs, grad_req handling, loss heads."""
from __future__ import annotations

import pytest

import minimx as mx
from minimx.graph import Graph, Node, NodeEntry
from minimx.graph.gradient import BackwardGraph, BackwardNode, GradFill, GradSum, build_backward
from minimx.graph.plan_memory import graph_steps, plan_memory
from minimx.ops.registry import OpDef, register

from .plan_check import check_plan


def describe(bwd: BackwardGraph) -> list[str]:
    """The backward graph in forward names: ``d(x)`` is a gradient of entry x."""
    g = bwd.forward

    def name(e: int | None) -> str:
        if e is None:
            return "_"
        if e >= g.num_entries:
            return f"d({name(bwd.forward_entry(e))})"
        nid = max(i for i, p in enumerate(g.entry_ptr[:-1]) if p <= e)
        return g.nodes[nid].entry_name(e - g.entry_ptr[nid])

    lines = []
    for b in bwd.nodes:
        if isinstance(b, BackwardNode):
            node = g.nodes[b.node]
            lines.append(f"_backward_{node.op} {node.name}: "
                         f"{' '.join(map(name, b.out_grads))} -> {' '.join(map(name, b.in_grads))}")
        elif isinstance(b, GradSum):
            lines.append(f"sum {' '.join(map(name, b.inputs))}")
        else:
            assert isinstance(b, GradFill)
            lines.append(f"zeros -> {name(b.out)}")
    return lines


def backward_of(sym: mx.sym.Symbol, reqs: dict[str, str]) -> BackwardGraph:
    g = Graph(sym.outputs)
    return build_backward(g, [reqs.get(g.nodes[n].name, "null") for n in g.input_ids])


def test_entry_used_twice_gets_its_contributions_summed():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    a = mx.sym.elemwise_mul(x, w, name="mul")
    c = mx.sym.elemwise_add(mx.sym.relu(a, name="relu"), x, name="add")
    bwd = backward_of(c, {"x": "write", "w": "write"})
    assert describe(bwd) == [
        "_backward_elemwise_add add: d(add_output) -> d(relu_output) d(x)",
        "_backward_relu relu: d(relu_output) -> d(mul_output)",
        "_backward_elemwise_mul mul: d(mul_output) -> d(x) d(w)",
        "sum d(x) d(x)",
    ]
    x_id, w_id = (bwd.forward.input_ids[i] for i in (0, 1))
    assert bwd.arg_grads[x_id] == bwd.nodes[-1].out
    assert bwd.head_grad_needed() == [True]


def test_null_arguments_cut_the_backward_graph():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    y = mx.sym.tanh(mx.sym.elemwise_mul(mx.sym.exp(x, name="exp"), w, name="mul"), name="tanh")
    bwd = backward_of(y, {"w": "write"})
    assert describe(bwd) == ["_backward_tanh tanh: d(tanh_output) -> d(mul_output)",
                             "_backward_elemwise_mul mul: d(mul_output) -> _ d(w)"]
    assert backward_of(y, {}).nodes == []


def test_write_gets_zeros_where_no_gradient_flows_and_add_leaves_the_array():
    # u reaches the head only through an auxiliary-state slot, which takes no gradient.
    x, u = mx.sym.Variable("x"), mx.sym.Variable("u")
    y = mx.sym.BatchNorm(x, moving_mean=mx.sym.exp(u, name="e"), name="bn")
    bwd = backward_of(y, {"x": "write", "u": "write"})
    assert describe(bwd) == ["_backward_BatchNorm bn: d(bn_output) _ _ -> d(x) _ _ _ _",
                             "zeros -> d(u)"]
    assert backward_of(y, {"x": "write", "u": "add"}).nodes == bwd.nodes[:1]


def test_add_marks_the_final_gradient_entry():
    x, u = mx.sym.Variable("x"), mx.sym.Variable("u")
    bwd = backward_of(mx.sym.Group([mx.sym.sigmoid(x, name="s"), u]),
                      {"x": "add", "u": "write"})
    # A head that is the argument itself: the read-only head gradient is copied.
    assert describe(bwd) == ["_backward_sigmoid s: d(s_output) -> d(x)", "sum d(u)"]
    assert bwd.add_to == {bwd.arg_grads[bwd.forward.input_ids[0]]}


def test_loss_heads_need_no_head_gradient():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    loss = mx.sym.SoftmaxOutput(fc, name="sm")
    bwd = backward_of(mx.sym.Group([loss, mx.sym.relu(fc, name="r")]), {"fc_weight": "write"})
    assert bwd.head_grad_needed() == [False, True]
    assert describe(bwd)[:2] == ["_backward_relu r: d(r_output) -> d(fc_output)",
                                 "_backward_SoftmaxOutput sm: _ -> d(fc_output) _"]


def test_hidden_outputs_get_zero_gradients_and_aux_states_none():
    x = mx.sym.Variable("x")
    bn = mx.sym.BatchNorm(x, fix_gamma=False, name="bn")
    bwd = backward_of(bn, {"x": "write", "bn_gamma": "write", "bn_beta": "null"})
    assert describe(bwd) == ["_backward_BatchNorm bn: d(bn_output) _ _ -> d(x) d(bn_gamma) _ _ _"]


def test_steps_keep_forward_entries_alive_for_backward():
    x = mx.sym.Variable("x")
    y = mx.sym.sigmoid(mx.sym.tanh(mx.sym.relu(x, name="r"), name="t"), name="s")
    g = Graph(y.outputs)
    fwd_only = plan_memory([64] * g.num_entries, graph_steps(g), {0, 3})
    assert len(fwd_only.inplace) == 1  # t takes over r's block
    bwd = build_backward(g, ["write"])
    steps = graph_steps(g) + bwd.steps()
    external = {0, 3} | bwd.external()
    plan = plan_memory([64] * bwd.num_entries, steps, external)
    check_plan(steps, plan, external)
    # Each backward reads its own output, so no forward in-place; backward's own chain is.
    assert all(src >= g.num_entries for src, _ in plan.inplace) and plan.inplace


def test_backward_steps_read_only_what_their_operators_declare():
    x = mx.sym.Variable("x")
    conv = mx.sym.Convolution(x, kernel=(1, 1), num_filter=2, no_bias=True, name="c")
    y = mx.sym.sigmoid(mx.sym.relu(mx.sym.BatchNorm(conv, name="bn"), name="r"), name="s")
    g = Graph(y.outputs)
    bwd = build_backward(g, ["write" if g.nodes[n].name == "c_weight" else "null"
                             for n in g.input_ids])
    entry = {f"{node.name}.{k}": e for n, node in enumerate(g.nodes)
             for k, e in enumerate(g.output_entry_ids(n))}
    name = {e: n for n, e in entry.items()}
    assert [(s.name, sorted(name[e] for e in s.reads if e < g.num_entries))
            for s in bwd.steps()] == [
        ("_backward_sigmoid s", ["s.0"]),
        ("_backward_relu r", ["r.0"]),
        ("_backward_BatchNorm bn", ["bn.1", "bn.2", "bn_gamma.0", "bn_moving_mean.0",
                                    "bn_moving_var.0", "c.0"]),
        ("_backward_Convolution c", ["c_weight.0", "x.0"]),
        # what backward read stays for a second backward after one forward
        ("_keep_forward_values", ["bn.1", "bn.2", "bn_gamma.0", "bn_moving_mean.0",
                                  "bn_moving_var.0", "c.0", "c_weight.0", "r.0", "s.0",
                                  "x.0"]),
    ]
    # In training, the BatchNorm output dies in forward (relu takes its block);
    # its input, which its backward reads, lives on.
    steps = graph_steps(g) + bwd.steps()
    external = {g.entry_ptr[n] for n in g.input_ids} | {entry["s.0"]} | bwd.external()
    plan = plan_memory([64] * bwd.num_entries, steps, external)
    check_plan(steps, plan, external)
    forward_inplace = [(name[a], name[b]) for a, b in plan.inplace if b < g.num_entries]
    assert forward_inplace == [("bn.0", "r.0")]


def test_an_operator_without_gradient_is_named():
    register(OpDef("_test_no_gradient", lambda p, ctx, inputs: inputs[0].copy()))
    x = mx.sym.Variable("x")
    y = mx.sym.relu(_node("_test_no_gradient", x, "ng"), name="r")
    with pytest.raises(mx.MinimxError, match=r"ng \(_test_no_gradient\): the operator has no "
                                             "gradient"):
        backward_of(y, {"x": "write"})
    assert backward_of(y, {}).nodes == []


def _node(op: str, x: mx.sym.Symbol, name: str) -> mx.sym.Symbol:
    return mx.sym.Symbol([NodeEntry(Node.create(op, name, {}, [x.outputs[0]]))])


def test_str_names_gradient_entries():
    x = mx.sym.Variable("x")
    text = str(backward_of(mx.sym.square(x, name="sq"), {"x": "add"}))
    assert text.splitlines() == ["d%0.0#3 = _backward_square sq(d%1.0#2)",
                                 "head gradients: d%1.0#2",
                                 "argument gradients: x=d%0.0#3 (add)"]
