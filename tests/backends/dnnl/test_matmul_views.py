"""Transformer-style operators inside DNNL subgraphs: FullyConnected over the last
axis (flatten=False, a oneDNN matmul), batch_dot with either operand transposed,
LayerNorm, transpose, and views (Reshape, Flatten, expand_dims) that other operators
read - each checked against the numpy path."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx

from .helpers import (
    assert_close,
    check,
    dnnl_nodes,
    inner_ops,
    outer_ops,
    outputs,
    partitioned,
    random_arrays,
)

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


@pytest.mark.parametrize("op", [
    lambda y: mx.sym._contrib_BilinearResize2D(y, height=11, width=6),
    lambda y: mx.sym._contrib_BilinearResize2D(y, height=3, width=9, align_corners=False),
    lambda y: mx.sym._contrib_BilinearResize2D(y, scale_height=2.0, scale_width=0.5,
                                              mode="odd_scale"),
    lambda y: mx.sym._contrib_AdaptiveAvgPooling2D(y, output_size=(3, 2)),
    lambda y: mx.sym._contrib_AdaptiveAvgPooling2D(y, output_size=1),
])
def test_separable_resampling(op):
    y = mx.sym.Convolution(x, kernel=(1, 1), num_filter=4, name="c")
    part = check(mx.sym.relu(op(y)), {"x": (2, 3, 7, 5)})
    assert outer_ops(part) == ["_sg_dnnl"]


@pytest.mark.parametrize("heads", [1, 3])
def test_interleaved_self_attention(heads):
    qkv = mx.sym.FullyConnected(x, num_hidden=heads * 3 * 4, flatten=False, name="qkv")
    scores = mx.sym._contrib_interleaved_matmul_selfatt_qk(qkv, heads=heads)
    att = mx.sym.softmax(scores, axis=-1)
    out = mx.sym._contrib_interleaved_matmul_selfatt_valatt(qkv, att, heads=heads)
    part = check(mx.sym.FullyConnected(out, num_hidden=5, flatten=False, name="proj"),
                 {"x": (6, 2, 8)})
    assert outer_ops(part) == ["_sg_dnnl"]


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_softmax_with_lengths_including_empty_and_full_rows(dtype):
    scores = mx.sym.FullyConnected(x, num_hidden=8, flatten=False, name="s")
    length = mx.sym.var("length", dtype=dtype)
    y = mx.sym.softmax(scores, length, axis=-1, use_length=True)
    sym = mx.sym.FullyConnected(y, num_hidden=3, flatten=False, name="out")
    shapes = {"x": (2, 5, 8), "length": (2, 5)}
    part = partitioned(sym, shapes)
    assert outer_ops(part) == ["_sg_dnnl"]
    args, aux = random_arrays(sym, shapes)
    args["length"] = np.array([[0, 1, 8, 3, 5], [8, 2, 0, 7, 4]], dtype)
    assert_close(outputs(part, args, aux), outputs(sym, args, aux))


def test_a_length_computed_in_the_subgraph_stays_outside_it():
    scores = mx.sym.FullyConnected(x, num_hidden=8, flatten=False, name="s")
    length = mx.sym.cast(mx.sym.relu(mx.sym.sum(x, axis=-1)), dtype="int32")
    part = check(mx.sym.softmax(scores, length, axis=-1, use_length=True), SEQ)
    assert "softmax" in inner_ops(dnnl_nodes(part)[-1])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack(axis):
    parts = [mx.sym.relu(mx.sym.FullyConnected(x, num_hidden=4, flatten=False, name=f"p{i}"))
             for i in range(3)]
    part = check(mx.sym.softmax(mx.sym.stack(*parts, axis=axis), axis=-1), SEQ)
    assert outer_ops(part) == ["_sg_dnnl"]


def test_a_reshape_moving_the_batch_axis_before_a_flattening_fc_is_a_real_view():
    # (2, 5, 8) -> (5, 16): FullyConnected must see 5 rows, not the producer's 2.
    r = mx.sym.Reshape(mx.sym.relu(x), shape=(5, -1))
    part = check(mx.sym.FullyConnected(r, num_hidden=3), SEQ)
    assert outer_ops(part) == ["_sg_dnnl"]


@pytest.mark.parametrize("dims", [(1, 2), (0, -1), (2, 2)])
def test_swapaxis(dims):
    y = mx.sym.SwapAxis(mx.sym.relu(x), dim1=dims[0], dim2=dims[1])
    assert outer_ops(check(mx.sym.softmax(y, axis=-1), SEQ)) == ["_sg_dnnl"]


def test_interleaved_projection_weights_are_folded_into_the_weight_cache():
    # GluonNLP's query/key/value weights, reshaped per head and joined in the graph:
    # the weight cache computes the joint weight once, not a step every forward.
    heads = [mx.sym.Reshape(mx.sym.var(f"{n}_weight"), shape=(2, -1, 0), reverse=True)
             for n in ("q", "k", "v")]
    joint = mx.sym.Reshape(mx.sym.Concat(*heads, dim=-2), shape=(-1, 0), reverse=True)
    bias = mx.sym.Reshape(mx.sym.stack(*[mx.sym.var(f"{n}_bias") for n in "qkv"], axis=0),
                          shape=(-1,))
    y = mx.sym.FullyConnected(mx.sym.relu(x), joint, bias, num_hidden=24, flatten=False)
    shapes = {"x": (2, 5, 8), **{f"{n}_weight": (8, 8) for n in "qkv"},
              **{f"{n}_bias": (8,) for n in "qkv"}}
    part = check(y, shapes)
    assert outer_ops(part) == ["_sg_dnnl"]
    args, aux = random_arrays(y, shapes)
    ex = part.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()}, grad_req="null")
    ex.forward()[0].wait_to_read()
    kinds = [op.kind for state in ex._runner._states.values()
             for op, _ in state.compiled.plan.steps]
    assert "concat" not in kinds and "inner_product" in kinds


@pytest.mark.parametrize("no_bias", [True, False])
def test_a_joined_weight_of_a_layer_fused_with_its_activation_is_folded(no_bias):
    # The fused fully connected + relu node hides the layer's weight input from a
    # look at FullyConnected nodes only: the bind failed ("only inputs can be weights")
    w = mx.sym.Concat(mx.sym.var("w1"), mx.sym.var("w2"), dim=0)
    y = mx.sym.relu(mx.sym.FullyConnected(x, w, num_hidden=6, no_bias=no_bias, name="fc"))
    shapes = {"x": (2, 5), "w1": (3, 5), "w2": (3, 5), **({} if no_bias else {"fc_bias": (6,)})}
    part = check(y, shapes)
    assert outer_ops(part) == ["_sg_dnnl"]
    args, _ = random_arrays(y, shapes)
    ex = part.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()}, grad_req="null")
    ex.forward()
    ex.arg_dict["w2"][:] = 1.0   # the cache computes the joint weight again
    want = np.maximum(args["x"] @ np.concatenate([args["w1"], np.ones((3, 5))]).T
                      + (0 if no_bias else args["fc_bias"]), 0)
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=1e-5, atol=1e-5)
