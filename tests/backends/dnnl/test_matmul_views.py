"""Transformer-style operators inside DNNL subgraphs: FullyConnected over the last
axis (flatten=False, a oneDNN matmul), batch_dot with either operand transposed,
LayerNorm, transpose, and views (Reshape, Flatten, expand_dims) that other operators
read - each checked against the numpy path."""
from __future__ import annotations

import pytest

import minimx as mx

from .helpers import check, dnnl_nodes, inner_ops, outer_ops

x = mx.sym.var("x")
SEQ = {"x": (2, 5, 8)}


@pytest.mark.parametrize("act", [None, "relu", "tanh"])
@pytest.mark.parametrize("no_bias", [False, True])
def test_fully_connected_over_the_last_axis(act, no_bias):
    y = mx.sym.FullyConnected(x, num_hidden=6, flatten=False, no_bias=no_bias, name="fc")
    y = y if act is None else mx.sym.Activation(y, act_type=act)
    part = check(mx.sym.FullyConnected(y, num_hidden=3, flatten=False, name="fc2"), SEQ)
    assert outer_ops(part) == ["_sg_dnnl"]


@pytest.mark.parametrize("shape", [(4, 8), (2, 3, 4, 8)])
def test_fully_connected_over_the_last_axis_of_other_ranks(shape):
    y = mx.sym.FullyConnected(mx.sym.relu(x), num_hidden=6, flatten=False)
    assert outer_ops(check(y, {"x": shape})) == ["_sg_dnnl"]


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_batch_dot(ta, tb):
    q = mx.sym.FullyConnected(x, num_hidden=8, flatten=False, name="q")
    k = mx.sym.FullyConnected(x, num_hidden=8, flatten=False, name="k")
    a = mx.sym.transpose(q, axes=(0, 2, 1)) if ta else q
    b = k if tb else mx.sym.transpose(k, axes=(0, 2, 1))
    y = mx.sym.batch_dot(mx.sym.relu(a), mx.sym.relu(b), transpose_a=ta, transpose_b=tb)
    part = check(mx.sym.softmax(y, axis=-1), SEQ)
    assert "batch_dot" in inner_ops(dnnl_nodes(part)[0])


def test_batch_dot_of_two_inputs():
    y = mx.sym.batch_dot(mx.sym.var("a"), mx.sym.var("b"), transpose_a=True)
    check(mx.sym.relu(y), {"a": (2, 4, 3), "b": (2, 4, 5)})


def test_layer_norm_after_a_residual_add():
    h = mx.sym.FullyConnected(x, num_hidden=8, flatten=False) + x
    part = check(mx.sym.LayerNorm(h, name="ln"), SEQ)
    assert outer_ops(part) == ["_sg_dnnl"]
    assert "LayerNorm" in inner_ops(dnnl_nodes(part)[0])


@pytest.mark.parametrize("axes", [(0, 2, 1), (2, 0, 1), ()])
def test_transpose(axes):
    y = mx.sym.transpose(mx.sym.relu(x), axes=axes)
    part = check(mx.sym.FullyConnected(y, num_hidden=3, flatten=False), SEQ)
    assert outer_ops(part) == ["_sg_dnnl"]


def test_reshape_read_by_a_softmax_and_an_output():
    r = mx.sym.Reshape(mx.sym.relu(x), shape=(0, -1, 4))
    part = check(mx.sym.Group([mx.sym.softmax(r, axis=-1), r]), SEQ)
    assert outer_ops(part) == ["_sg_dnnl"]


def test_views_of_an_input_read_a_copy():
    r = mx.sym.expand_dims(x, axis=1)
    part = check(mx.sym.Concat(mx.sym.relu(r), r, dim=1), SEQ)
    assert outer_ops(part) == ["_sg_dnnl"]


@pytest.mark.parametrize("axis,begin,end", [(1, 1, 4), (-1, 0, 1), (2, -3, None), (0, 1, 2)])
def test_slice_axis_reads_its_part_in_place(axis, begin, end):
    parts = [mx.sym.slice_axis(mx.sym.relu(x), axis=axis, begin=begin, end=end),
             mx.sym.slice_axis(x, axis=axis, begin=begin, end=end)]
    part = check(mx.sym.Group([mx.sym.softmax(p, axis=-1) for p in parts]), SEQ)
    assert set(outer_ops(part)) == {"_sg_dnnl"}   # the two branches: two subgraphs
