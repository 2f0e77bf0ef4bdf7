"""The fusion table (`patterns.PATTERNS`): each step's MINIMX_DNNL_FUSE_* switch
turns its fusion off and nothing else, outputs stay the numpy path's, and the
order of the rows decides where two of them compete for a node."""
from __future__ import annotations

import re

import pytest

import minimx as mx
from minimx.backends.dnnl.patterns import PATTERNS, STEP_NAMES, Pattern, fuse_chains
from minimx.base import BackendError
from minimx.graph import Graph

from .helpers import assert_close, check, dnnl_nodes, outputs, random_arrays
from .test_fusion import fused

SHAPES = {"a": (2, 4, 6, 6), "b": (2, 6), "c": (2, 4, 4, 4)}


def _net():
    """Every step of every row once: conv-bn-relu + side conv, relu after the sum;
    fc-relu; deconv-relu."""
    a, b, c = (mx.sym.var(n) for n in "abc")
    x = mx.sym.Convolution(a, kernel=(3, 3), pad=(1, 1), num_filter=4, name="conv")
    x = mx.sym.relu(mx.sym.BatchNorm(x, name="bn"), name="act")
    x = mx.sym.elemwise_add(x, mx.sym.Convolution(a, kernel=(1, 1), num_filter=4, name="side"),
                            name="sum")
    x = mx.sym.relu(x, name="post")
    fc = mx.sym.relu(mx.sym.FullyConnected(b, num_hidden=3, name="fc"), name="fc_act")
    de = mx.sym.relu(mx.sym.Deconvolution(c, kernel=(3, 3), num_filter=2, name="de"),
                     name="de_act")
    return mx.sym.Group([x, fc, de])


def _patterns(part) -> list[tuple[str, list[str]]]:
    """Each fused node's pattern (its name without the index) and members."""
    return sorted((re.sub(r"_\d+$", "", n.name),
                   [m.name for m in Graph(n.subgraphs[0].outputs).nodes if not m.is_variable])
                  for n in fused(part))


ALL_ON = [("sg_dnnl_conv_bn_act_sum_postsum_act", ["conv", "bn", "act", "sum", "post"]),
          ("sg_dnnl_deconv_act", ["de", "de_act"]),
          ("sg_dnnl_fully_connected_eltwise", ["fc", "fc_act"])]

# What each switch leaves: with conv_bn off the first convolution has nothing
# it may take next (the BatchNorm), so the side convolution takes the sum; with
# conv_act off the chain stops at the BatchNorm, and the sum again goes to the
# side convolution.
ONE_OFF = {
    "conv_bn": [("sg_dnnl_conv_sum_postsum_act", ["side", "sum", "post"])] + ALL_ON[1:],
    "conv_act": [("sg_dnnl_conv_bn", ["conv", "bn"]),
                 ("sg_dnnl_conv_sum_postsum_act", ["side", "sum", "post"])] + ALL_ON[1:],
    "conv_sum": [("sg_dnnl_conv_bn_act", ["conv", "bn", "act"])] + ALL_ON[1:],
    "conv_postsum_act": [("sg_dnnl_conv_bn_act_sum", ["conv", "bn", "act", "sum"])]
    + ALL_ON[1:],
    "fc_act": ALL_ON[:2],
    "deconv_act": ALL_ON[:1] + ALL_ON[2:],
}


def test_every_step_of_the_table_has_a_case():
    assert sorted(ONE_OFF) == sorted(STEP_NAMES)


def test_all_fusions_on():
    part = check(_net(), SHAPES)
    assert _patterns(part) == ALL_ON


@pytest.mark.parametrize("name", sorted(ONE_OFF))
def test_each_switch_turns_its_fusion_off(monkeypatch, name):
    monkeypatch.setenv(f"MINIMX_DNNL_FUSE_{name.upper()}", "0")
    part = check(_net(), SHAPES)       # outputs: the numpy path's
    assert _patterns(part) == sorted(ONE_OFF[name])


def test_all_switches_off_leave_nothing_fused_and_the_same_outputs(monkeypatch):
    for name in STEP_NAMES:
        monkeypatch.setenv(f"MINIMX_DNNL_FUSE_{name.upper()}", "off")
    part = check(_net(), SHAPES)
    assert fused(part) == [] and len(dnnl_nodes(part)) == 3


def test_a_switch_naming_no_fusion_is_refused(monkeypatch):
    monkeypatch.setenv("MINIMX_DNNL_FUSE_CONV_BNN", "0")
    with pytest.raises(BackendError, match="MINIMX_DNNL_FUSE_CONV_BNN names no DNNL fusion "
                                           r"\(known: CONV_BN, CONV_ACT, "):
        mx.subgraph.partition(_net(), "DNNL", shapes=SHAPES)


def _two_convs_one_sum():
    """relu(convA(x)) + convB(x): the sum can go to either chain."""
    x = mx.sym.var("x")
    a = mx.sym.relu(mx.sym.Convolution(x, kernel=(1, 1), num_filter=4, name="A"), name="r")
    return mx.sym.elemwise_add(a, mx.sym.Convolution(x, kernel=(1, 1), num_filter=4, name="B"),
                               name="sum")


def _fused_members(sym, table) -> list[tuple[str, list[str]]]:
    graph, _ = fuse_chains(Graph(sym.outputs), table, enabled=frozenset(STEP_NAMES))
    return sorted((n.name, [m.name for m in Graph(n.subgraphs[0].outputs).nodes
                            if not m.is_variable])
                  for n in graph.nodes if n.op == "_sg_dnnl_conv")


def test_the_first_row_to_reach_a_node_takes_it():
    sym = _two_convs_one_sum()
    conv = PATTERNS[0]
    # One row: heads in topological order, so A's chain reaches the sum first.
    assert _fused_members(sym, PATTERNS) == [("sg_dnnl_conv_act_sum_0", ["A", "r", "sum"])]
    # A row fusing only sums, ahead of the full row: it gives the sum to B (A's
    # reader is the relu), and A's row then stops at the relu.
    sums_first = Pattern("conv", "Convolution", "_sg_dnnl_conv", "fused_conv",
                         tuple(s for s in conv.steps if s.name == "conv_sum"))
    assert _fused_members(sym, (sums_first, conv)) == [
        ("sg_dnnl_conv_act_0", ["A", "r"]), ("sg_dnnl_conv_sum_1", ["B", "sum"])]
    # Either way the fused graph computes the same (on the numpy path).
    args, aux = random_arrays(sym, {"x": (1, 3, 5, 5)})
    for table in (PATTERNS, (sums_first, conv)):
        graph, _ = fuse_chains(Graph(sym.outputs), table, enabled=frozenset(STEP_NAMES))
        assert_close(outputs(mx.sym.Symbol(graph.outputs), args, aux), outputs(sym, args, aux))


def test_fused_chain_keeps_the_walks_input_order():
    # The sum's other operand is met last by a walk from the chain's output.
    sym = _two_convs_one_sum()
    graph, _ = fuse_chains(Graph(sym.outputs), PATTERNS, enabled=frozenset(STEP_NAMES))
    node = next(n for n in graph.nodes if n.op == "_sg_dnnl_conv")
    assert node.subgraphs[0].list_inputs() == ["x0", "A_weight1", "A_bias2", "B_output3"]
    assert [e.node.name for e in node.inputs] == ["x", "A_weight", "A_bias", "B"]
    assert mx.sym.Symbol(graph.outputs).list_arguments() == sym.list_arguments()
