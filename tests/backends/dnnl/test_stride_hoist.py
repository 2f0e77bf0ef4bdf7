"""Stride hoisting (`strides.hoist_strides`): a tensor read only by strided 1x1
convolutions is computed at the pixels they read, with the numpy path's outputs;
where the rule does not hold (another reader, a graph output, mixed strides)
nothing changes."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.backends.dnnl.strides import hoist_strides, unhoisted
from minimx.graph import Graph

from .helpers import assert_close, bind, check, dnnl_nodes, outputs, partitioned, random_arrays


def _conv(x, kernel: int, name: str, num_filter: int = 8, stride: int = 1, pad: int = 0):
    return mx.sym.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride),
                              pad=(pad, pad), num_filter=num_filter, name=name)


def _relu(x, name: str | None = None):
    return mx.sym.Activation(x, act_type="relu", name=name)


def _bottleneck(x, name: str, stride: int = 1, downsample: bool = False):
    """A ResNet v1 bottleneck (Gluon's BottleneckV1: the stride on the first 1x1)."""
    y = _relu(mx.sym.BatchNorm(_conv(x, 1, f"{name}c1", stride=stride), name=f"{name}b1"))
    y = _relu(mx.sym.BatchNorm(_conv(y, 3, f"{name}c2", pad=1), name=f"{name}b2"))
    y = mx.sym.BatchNorm(_conv(y, 1, f"{name}c3"), name=f"{name}b3")
    shortcut = _conv(x, 1, f"{name}down", stride=stride) if downsample else x
    return _relu(mx.sym.elemwise_add(y, shortcut, name=f"{name}add"), name=f"{name}out")


def _two_stages():
    x = _relu(_conv(mx.sym.var("data"), 3, "stem", pad=1), name="stem_relu")
    x = _bottleneck(x, "s1a")
    return _bottleneck(x, "s2a", stride=2, downsample=True)


def _inner(part):
    (node,) = dnnl_nodes(part)
    return node, Graph(node.subgraphs[0].outputs)


def _conv_strides(part) -> dict[str, tuple[int, ...]]:
    """Every convolution's stride inside the DNNL node (fused or not), by name."""
    _, graph = _inner(part)
    found = {}
    for node in graph.nodes:
        members = Graph(node.subgraphs[0].outputs).nodes if node.subgraphs else [node]
        found.update({m.name: tuple(m.params.stride) or (1, 1) for m in members
                      if m.op == "Convolution"})
    return found


@pytest.mark.parametrize("size", [8, 9])  # odd sizes: the strided reads keep ceil(size / 2)
def test_resnet_v1_stage_boundary_moves_the_stride_back(size):
    part = check(_two_stages(), {"data": (2, 3, size, size)})
    node, graph = _inner(part)
    assert "stride_hoist:1" in node.attrs["fusions"]
    strides = _conv_strides(part)
    # The last 3x3 of the stage before takes the stride; the 1x1s that had it read densely.
    assert strides["s1ac2"] == (2, 2)
    assert strides["s2ac1"] == strides["s2adown"] == (1, 1)
    assert strides["s1ac1"] == strides["s1ac3"] == strides["stem"] == (1, 1)
    # The residual operand, read by the block's first convolution too, is subsampled.
    pools = [n for n in graph.nodes if n.op == "Pooling"]
    assert [(p.attrs["kernel"], p.attrs["stride"]) for p in pools] == [("(1, 1)", "(2, 2)")]


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_the_subsampled_residual_keeps_nan_and_minus_inf():
    # The residual read through the added pooling keeps its values exactly:
    # NaN and -inf too (a max pooling, as the hoist once used, gives neither).
    x = mx.sym.var("data")
    sym = _conv(_relu(_conv(x, 3, "c1", num_filter=4, pad=1)) + x, 1, "c2", stride=2)
    shapes = {"data": (1, 4, 8, 8)}
    args, aux = random_arrays(sym, shapes)
    args["data"][0, 1, 2, 2], args["data"][0, 2, 4, 4] = np.nan, -np.inf
    part = partitioned(sym, shapes)
    node, graph = _inner(part)
    assert "stride_hoist:1" in node.attrs["fusions"]
    assert [n.attrs["pool_type"] for n in graph.nodes if n.op == "Pooling"] == ["avg"]
    got = bind(part, args, aux).forward()[0].asnumpy()
    want = outputs(sym, args, aux)[0]
    assert np.isnan(want).any()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True)


def test_the_switch_turns_it_off(monkeypatch):
    monkeypatch.setenv("MINIMX_DNNL_FUSE_STRIDE_HOIST", "0")
    part = check(_two_stages(), {"data": (2, 3, 8, 8)})
    node, _ = _inner(part)
    assert "stride_hoist" not in node.attrs["fusions"]
    assert _conv_strides(part)["s2ac1"] == (2, 2)


def test_inputs_keep_their_order_and_outputs_their_shapes():
    sym = _two_stages()
    graph, count = hoist_strides(Graph(sym.outputs))
    assert count == 1
    hoisted = mx.sym.Symbol(graph.outputs)
    assert hoisted.list_inputs() == sym.list_inputs()
    shapes = {"data": (1, 3, 9, 9)}
    assert hoisted.infer_shape(**shapes) == sym.infer_shape(**shapes)


def _training_forward(sym, args: dict, aux: dict) -> tuple[list, dict]:
    """A training forward of an executor bound for inference: outputs, moving statistics."""
    ex = bind(sym, args, aux)
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    return outs, {k: v.asnumpy() for k, v in ex.aux_dict.items()}


def test_a_training_forward_runs_the_graph_as_it_was(monkeypatch):
    """A training forward's BatchNorm takes its statistics over every pixel: the
    hoisted graph, whose BatchNorm sees every other pixel, gave other numbers."""
    x = mx.sym.BatchNorm(_conv(mx.sym.var("data"), 3, "a", num_filter=2, pad=1), name="bn")
    sym = _conv(_relu(x), 1, "b", num_filter=2, stride=2)
    shapes = {"data": (1, 2, 4, 4)}
    args, aux = random_arrays(sym, shapes)
    part = partitioned(sym, shapes)
    assert "stride_hoist:1" in dnnl_nodes(part)[0].attrs["fusions"]
    got, got_aux = _training_forward(part, args, aux)
    want, want_aux = _training_forward(sym, args, aux)
    assert_close(got, want)
    assert_close(list(got_aux.values()), [want_aux[k] for k in got_aux])
    # and inference afterwards still runs the hoisted plan, with the new statistics
    ex = bind(part, args, aux)
    ex.forward(is_train=True)
    assert_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, want_aux))


def test_unhoisted_gives_back_the_graph_before():
    sym = _two_stages()
    graph, _ = hoist_strides(Graph(sym.outputs))
    back = unhoisted(graph)
    assert [(n.op, n.attrs) for n in back.nodes] == [(n.op, n.attrs)
                                                      for n in Graph(sym.outputs).nodes]
    assert unhoisted(back) is back


def _hoists(sym) -> int:
    return hoist_strides(Graph(sym.outputs))[1]


def test_not_when_another_reader_needs_every_pixel():
    x = mx.sym.relu(_conv(mx.sym.var("data"), 3, "a", pad=1))
    strided = _conv(x, 1, "b", stride=2)
    dense = _conv(x, 3, "c", stride=2, pad=1)     # a 3x3 reads the pixels between too
    assert _hoists(mx.sym.Group([strided, dense])) == 0
    assert _hoists(mx.sym.Group([strided, _conv(x, 1, "d", stride=3)])) == 0  # another stride
    assert _hoists(mx.sym.Group([strided, x])) == 0                           # a graph output


def test_not_through_operators_that_mix_pixels():
    x = mx.sym.Pooling(_conv(mx.sym.var("data"), 3, "a", pad=1), kernel=(3, 3), pad=(1, 1),
                       pool_type="max")
    assert _hoists(_conv(x, 1, "b", stride=2)) == 0


@st.composite
def _chains(draw):
    """A chain of convolutions (kernel 1 or 3, stride 1 or 2, padded or not), each
    with optional BatchNorm and relu and an optional residual add of the chain's
    input, ending in one to three 1x1 convolutions of one stride s."""
    x = mx.sym.var("data")
    size = draw(st.integers(5, 11))
    for i in range(draw(st.integers(1, 3))):
        k, stride = draw(st.sampled_from([1, 3])), draw(st.sampled_from([1, 1, 2]))
        pad = draw(st.integers(0, k // 2))
        if (size + 2 * pad - k) // stride + 1 < 2:
            break
        y = _conv(x, k, f"c{i}", stride=stride, pad=pad)
        if draw(st.booleans()):
            y = mx.sym.BatchNorm(y, name=f"bn{i}")
        if draw(st.booleans()):
            y = mx.sym.relu(y, name=f"r{i}")
        size = (size + 2 * pad - k) // stride + 1
        if i > 0 and k == 1 and stride == 1 and pad == 0 and draw(st.booleans()):
            y = mx.sym.elemwise_add(y, x, name=f"add{i}")
        x = y
    s = draw(st.sampled_from([2, 3]))
    readers = [_conv(x, 1, f"out{j}", stride=s) for j in range(draw(st.integers(1, 3)))]
    return mx.sym.Group(readers)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_chains())
def test_random_chains_keep_the_numpy_outputs(sym):
    part = check(sym, {"data": (1, 8, 11, 11)})
    (node,) = dnnl_nodes(part)
    # The chain's last producer is a convolution or what passes pixels through: always
    # hoisted (and a strided 1x1 inside the chain may be too).
    assert int(re.search(r"stride_hoist:(\d+)", node.attrs["fusions"]).group(1)) >= 1


def _quantized(calib_mode: str, shape: tuple[int, ...]):
    """The two-stage net quantized as MXNet's examples do (naive calibration on
    random data, or ranges at run time), with its arguments."""
    net = _two_stages()
    rng = np.random.default_rng(0)
    ex = net.simple_bind(mx.cpu(), data=shape)
    args = {k: mx.nd.array(rng.uniform(-1, 1, v.shape).astype(np.float32))
            for k, v in ex.arg_dict.items() if k != "data"}
    auxs = {k: mx.nd.array(rng.uniform(0.5, 1.5, v.shape).astype(np.float32))
            for k, v in ex.aux_dict.items()}
    calib = rng.uniform(0, 1, (4, *shape[1:])).astype(np.float32)
    qsym, qargs, qauxs = mx.contrib.quantization.quantize_model_mkldnn(
        net, args, auxs, calib_mode=calib_mode, label_names=None, quantized_dtype="auto",
        calib_data=None if calib_mode == "none" else mx.io.NDArrayIter(calib, batch_size=2))
    return qsym, {**qargs, "data": mx.nd.array(rng.uniform(0, 1, shape).astype(np.float32))}, qauxs


def _int8_outputs(sym, feeds, auxs) -> list[np.ndarray]:
    return [o.asnumpy() for o in sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()},
                                          grad_req="null", aux_states=auxs).forward()]


@pytest.mark.parametrize("calib_mode,hoisted", [("naive", 1), ("none", 0)])
def test_quantized_fused_convolutions_hoist_where_their_ranges_are_calibrated(
        monkeypatch, calib_mode, hoisted):
    shape = (2, 3, 9, 9)
    qsym, feeds, auxs = _quantized(calib_mode, shape)
    part = mx.subgraph.partition(qsym, "DNNL", shapes={"data": shape})
    # (calib_mode none leaves the convolutions with a sum to numpy: several subgraphs)
    fusions = ",".join(n.attrs.get("fusions", "") for n in dnnl_nodes(part))
    assert ("stride_hoist" in fusions) == (hoisted > 0)
    got = _int8_outputs(part, feeds, auxs)
    # The same integers as without the rewrite, and as the numpy kernels.
    monkeypatch.setenv("MINIMX_DNNL_FUSE_STRIDE_HOIST", "0")
    unhoisted = mx.subgraph.partition(qsym, "DNNL", shapes={"data": shape})
    for g, u, n in zip(got, _int8_outputs(unhoisted, feeds, auxs),
                       _int8_outputs(qsym, feeds, auxs), strict=True):
        np.testing.assert_array_equal(g, u)
        np.testing.assert_array_equal(g, n)
    if hoisted:   # the residual operand goes through MXNet's quantized pooling
        assert f"stride_hoist:{hoisted}" in fusions
        (node,) = dnnl_nodes(part)
        inner = Graph(node.subgraphs[0].outputs)
        assert [n.op for n in inner.nodes if "subsample" in n.name] == [
            "_contrib_quantized_pooling"]
