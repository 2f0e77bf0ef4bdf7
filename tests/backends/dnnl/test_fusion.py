"""Fused chains inside DNNL subgraphs: every pattern against the unfused numpy
path (tolerances in helpers.py), and the attributes that say what was fused."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.graph import Graph

from .helpers import (
    assert_close,
    bind,
    check,
    dnnl_nodes,
    inner_ops,
    outputs,
    partitioned,
    random_arrays,
)
from .test_ops import ELTWISE

data = mx.sym.var("data")
SHAPE = {"data": (2, 4, 7, 7)}


def fused(part) -> list:
    """The fused nodes inside the DNNL subgraphs of `part`."""
    return [n for sg in dnnl_nodes(part) for n in Graph(sg.subgraphs[0].outputs).nodes
            if n.op and n.op.startswith("_sg_dnnl_")]


def flags(node) -> dict[str, str]:
    return {k: v for k, v in node.attrs.items() if k.startswith("with_")}


def conv(x, name, **kw):
    return mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4, name=name, **kw)


@settings(max_examples=25, deadline=None)
@given(bn=st.booleans(), act=st.sampled_from([None, *ELTWISE[:8]]), add=st.booleans(),
       post=st.sampled_from([None, ELTWISE[0], ELTWISE[7]]), no_bias=st.booleans(),
       fix_gamma=st.booleans(), global_stats=st.booleans())
def test_conv_chain(bn, act, add, post, no_bias, fix_gamma, global_stats):
    x = conv(data, "c", no_bias=no_bias)
    if bn:
        x = mx.sym.BatchNorm(x, fix_gamma=fix_gamma, use_global_stats=global_stats, name="bn")
    if act:
        x = act(x)
    if add:
        x = x + mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, name="side")
        if post:
            x = post(x)
    part = check(x, SHAPE)
    want = {"with_bn": bn, "with_act": act is not None, "with_sum": add,
            "with_postsum_act": add and post is not None}
    nodes = [n for n in fused(part) if inner_ops(n)[0] == "Convolution"
             and len(inner_ops(n)) > 1 or "BatchNorm" in inner_ops(n)]
    if not (bn or act or add):
        assert nodes == []
        return
    assert [flags(n) for n in nodes] == [{k: str(v) for k, v in want.items()}]


@pytest.mark.parametrize("act", ELTWISE[:8])
def test_fully_connected_and_act(act):
    part = check(act(mx.sym.FullyConnected(data, num_hidden=5)), {"data": (3, 6)})
    (node,) = fused(part)
    assert node.op == "_sg_dnnl_fully_connected" and flags(node) == {"with_eltwise": "True"}


@pytest.mark.parametrize("act", ELTWISE[:8])
def test_deconvolution_and_act(act):
    sym = act(mx.sym.Deconvolution(data, kernel=(3, 3), stride=(2, 2), num_filter=3))
    (node,) = fused(check(sym, {"data": (2, 4, 4, 4)}))
    assert node.op == "_sg_dnnl_deconv" and flags(node) == {"with_act": "True"}


def test_summed_tensor_used_elsewhere_is_not_overwritten():
    side = mx.sym.relu(mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, name="side"))
    total = mx.sym.relu(conv(data, "main") + side)
    # `side` is read again after the fused sum.
    part = check(mx.sym.concat(total, side, dim=1), SHAPE)
    assert [flags(n).get("with_sum") for n in fused(part)].count("True") == 1


def test_sum_with_the_convolutions_own_input():
    x = mx.sym.relu(data)
    check(mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4) + x, SHAPE)


def test_shared_intermediate_is_not_fused():
    c = conv(data, "c")
    sym = mx.sym.Group([mx.sym.relu(c), c])
    part = check(sym, SHAPE)
    assert fused(part) == []


def test_fusions_show_in_json_and_debug_str_and_round_trip():
    x = mx.sym.Activation(mx.sym.BatchNorm(conv(data, "c"), name="bn"), act_type="relu")
    part = partitioned(x + data, SHAPE)
    text = part.tojson()
    assert '"with_bn": "True"' in text and '"_sg_dnnl_conv"' in text
    again = mx.sym.load_json(text)
    assert json.loads(again.tojson()) == json.loads(text)
    args, aux = random_arrays(x + data, SHAPE)
    assert_close(outputs(again, args, aux), outputs(x + data, args, aux))
    debug = bind(again, args, aux).debug_str()
    assert "fusions=conv_bn_act_sum:1" in debug
