"""MXNet-format quantized graphs inside DNNL subgraphs, on oneDNN's INT8 primitives.

The fixtures are MXNet 1.9.1's quantize_model_mkldnn checkpoints of a small
conv-bn-relu / residual / pool / FC net (tests/fixtures/quantized_net), which the
numpy kernels run with MXNet's exact outputs; the DNNL subgraph must give them too.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl.config import default_support
from minimx.backends.dnnl.state import DnnlState
from minimx.graph import Graph
from minimx.subgraph.partitioner import _views, infer_graph

from .helpers import assert_close, dnnl_nodes, inner_ops, outer_ops

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "quantized_net"
CALIBRATED_NET = ["_contrib_quantize_v2", "_sg_mkldnn_conv", "_sg_mkldnn_conv",
                  "_sg_mkldnn_conv", "_sg_mkldnn_conv", "_contrib_quantized_pooling",
                  "_sg_mkldnn_fully_connected", "_sg_mkldnn_fully_connected"]


def load(mode: str):
    prefix = str(FIXTURES / f"qnet_{mode}")
    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    with np.load(f"{prefix}-io.npz") as npz:
        io = {k: npz[k] for k in npz.files}
    return sym, args, auxs, io


def bind(sym, args, auxs, data: np.ndarray):
    # bind, not simple_bind: the checkpoint's int8 arguments keep their dtype.
    feeds = {**args, "data": mx.nd.array(data)}
    return sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                    aux_states=auxs)


def run(sym, args, auxs, data: np.ndarray) -> np.ndarray:
    return bind(sym, args, auxs, data).forward(is_train=False)[0].asnumpy()


def partitioned(sym, data: np.ndarray):
    return mx.subgraph.partition(sym, "DNNL", shapes={"data": data.shape})


@pytest.mark.parametrize("mode", ["naive", "naive_channel"])
def test_calibrated_checkpoint_runs_in_one_subgraph_with_mxnets_output(mode):
    sym, args, auxs, io = load(mode)
    part = partitioned(sym, io["data"])
    (node,) = dnnl_nodes(part)
    assert outer_ops(part) == ["_sg_dnnl"]
    assert inner_ops(node) == CALIBRATED_NET
    np.testing.assert_array_equal(run(part, args, auxs, io["data"]), io["output"])


@pytest.mark.parametrize("mode", ["naive", "naive_channel"])
def test_larger_batches_match_the_numpy_kernels_exactly(mode):
    """Every integer as the numpy kernels compute it: same int32 sums, the same
    float32 products by the same factors, one rounding half to even."""
    sym, args, auxs, io = load(mode)
    data = np.random.default_rng(3).uniform(-1, 1, (16,) + io["data"].shape[1:])
    data = data.astype(np.float32)
    got = run(partitioned(sym, data), args, auxs, data)
    np.testing.assert_array_equal(got, run(sym, args, auxs, data))


def test_uncalibrated_graph_runs_in_dnnl_with_mxnets_output():
    """calib_mode none: ranges found at run time by plan steps. Quantize, requantize,
    dequantize, the FCs and the convolutions without a sum go in; the convolutions
    with a sum (a sum scale found at run time) stay on numpy."""
    sym, args, auxs, io = load("none")
    part = partitioned(sym, io["data"])
    assert [inner_ops(n) for n in dnnl_nodes(part)] == [
        ["_contrib_quantize_v2", "_sg_mkldnn_conv", "_contrib_requantize"],
        ["_contrib_requantize"], ["_sg_mkldnn_conv", "_contrib_requantize"],
        ["_contrib_requantize", "_contrib_quantized_pooling", "_sg_mkldnn_fully_connected",
         "_contrib_requantize", "_sg_mkldnn_fully_connected", "_contrib_requantize",
         "_contrib_dequantize"]]
    assert [op for op in outer_ops(part) if op != "_sg_dnnl"] == ["_sg_mkldnn_conv"] * 2
    np.testing.assert_array_equal(run(part, args, auxs, io["data"]), io["output"])
    # No quantize, requantize or dequantize left out (fused nodes are not listed).
    summary = mx.subgraph.partition_summary(sym, "DNNL", shapes={"data": io["data"].shape})
    assert summary.left_out_reasons() == {}


def test_uncalibrated_graph_matches_the_numpy_kernels_on_other_batches():
    """Other data, other ranges: the same plans (no range is compiled for)."""
    sym, args, auxs, io = load("none")
    shape = (5,) + io["data"].shape[1:]
    ex = bind(partitioned(sym, np.zeros(shape, np.float32)), args, auxs,
              np.zeros(shape, np.float32))
    plans = []
    for seed, scale in ((3, 1.0), (4, 1e-3), (5, 50.0), (6, 1e-6), (7, 0.0)):
        data = np.random.default_rng(seed).uniform(-scale, scale, shape).astype(np.float32)
        ex.arg_dict["data"][:] = data
        np.testing.assert_array_equal(ex.forward(is_train=False)[0].asnumpy(),
                                      run(sym, args, auxs, data))
        plans.append([s.compiled for s in ex._runner.operator_states().values()
                      if isinstance(s, DnnlState)])
    assert all(a is b for a, b in zip(plans[0], plans[-1], strict=True))
    assert [p.ranges for p in plans[0]] == [{}] * 4


def _view(sym, shapes):
    """The selector's view of `sym`'s head node, after inference."""
    g = Graph(sym.outputs)
    shape_of, dtype_of = infer_graph(g, shapes, {})
    return _views(g, shape_of, dtype_of)[-1]


def test_refusals_say_why():
    support = default_support()
    x = mx.sym.var("data")
    shape = {"data": (2, 3, 4, 4)}
    loose = mx.sym._contrib_quantize_v2(x, out_type="int8", name="loose")
    assert support.refusal(_view(loose, shape)) is None  # its range found at run time
    q = mx.sym._contrib_quantize_v2(x, out_type="int8", min_calib_range=-1.0,
                                    max_calib_range=1.0)
    assert support.refusal(_view(q, shape)) is None
    sym, _, _, _ = load("none")
    summed = sym.get_internals()["quantized_sg_mkldnn_conv_add_act_1_output"]
    assert support.refusal(_view(summed, {"data": (1, 3, 8, 8)})) == \
        "a sum at a scale found at run time (calib_mode none; oneDNN's sum post-op " \
        "takes its scale when the primitive is made)"
    pool = mx.sym._contrib_quantized_pooling(loose[0], loose[1], loose[2], kernel=(2, 2),
                                             pool_type="max", stride=(2, 2), name="pool")
    add = mx.sym._contrib_quantized_elemwise_add(pool[0], pool[0], pool[1], pool[2], pool[1],
                                                 pool[2])
    assert support.refusal(_view(add, shape)) == \
        "its input 2 range is found at run time (pool)"


def test_range_outputs_read_outside_are_written():
    """A quantize's (1,) min/max outputs are constants of the plan, written out."""
    x = mx.sym.var("data")
    q = mx.sym._contrib_quantize_v2(x, out_type="auto", min_calib_range=-0.5,
                                    max_calib_range=2.0)
    deq = mx.sym._contrib_dequantize(q[0], q[1], q[2])
    sym = mx.sym.Group([deq, q[0], q[1], q[2]])
    data = np.random.default_rng(0).uniform(-1, 3, (2, 3, 4, 5)).astype(np.float32)
    part = partitioned(sym, data)
    assert [inner_ops(n) for n in dnnl_nodes(part)] == [["_contrib_quantize_v2",
                                                        "_contrib_dequantize"]]
    got = [o.asnumpy() for o in bind(part, {}, {}, data).forward()]
    want = [o.asnumpy() for o in bind(sym, {}, {}, data).forward()]
    assert [g.dtype for g in got] == [np.float32, np.int8, np.float32, np.float32]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[2], [-2.0])  # int8: symmetric
    np.testing.assert_array_equal(got[3], [2.0])


def test_weight_cache_requantizes_a_changed_weight():
    sym, args, auxs, io = load("naive")
    part = partitioned(sym, io["data"])
    ex = bind(part, args, auxs, io["data"])
    first = ex.forward(is_train=False)[0].asnumpy()
    np.testing.assert_array_equal(first, io["output"])
    changed = dict(args)
    changed["conv1_weight"] = args["conv1_weight"] * 0.5
    ex.arg_dict["conv1_weight"][:] = changed["conv1_weight"]
    again = ex.forward(is_train=False)[0].asnumpy()
    assert not np.array_equal(again, first)
    np.testing.assert_array_equal(again, run(sym, changed, auxs, io["data"]))



def test_two_models_of_the_same_shapes_keep_their_own_ranges():
    """Two checkpoints that differ only in calibrated ranges, run in turn in one
    process: each gives its own numbers. (MXNet 1.9.1's output of a quantized
    model can depend on which model its process ran before: docs/api.md.)"""
    sym, args, auxs, io = load("naive")
    graph = json.loads(sym.tojson())
    for node in graph["nodes"]:
        for key in ("min_calib_range", "max_calib_range"):
            if key in node.get("attrs", {}):
                node["attrs"][key] = repr(float(node["attrs"][key]) * 2)
    wider = mx.sym.load_json(json.dumps(graph))
    executors = [bind(partitioned(s, io["data"]), args, auxs, io["data"]) for s in (sym, wider)]
    wanted = [io["output"], run(wider, args, auxs, io["data"])]
    assert not np.array_equal(*wanted)
    for _ in range(2):
        for ex, want in zip(executors, wanted, strict=True):
            np.testing.assert_array_equal(ex.forward(is_train=False)[0].asnumpy(), want)

def test_mxnets_float32_fused_nodes_run_as_minimx_fused_chains():
    """MXNet's float32 _sg_mkldnn_conv / _sg_mkldnn_fully_connected (the first
    convolution a quantized model keeps in float32) are lowered like _sg_dnnl_conv."""
    sym, args, auxs = mx.model.load_checkpoint(str(FIXTURES / "qnet_fp32_mkldnn"), 0)
    data = load("naive")[3]["data"]
    part = partitioned(sym, data)
    assert outer_ops(part) == ["_sg_dnnl"]
    assert set(inner_ops(dnnl_nodes(part)[0])) == {"_sg_mkldnn_conv", "Pooling",
                                                   "_sg_mkldnn_fully_connected"}
    assert_close([run(part, args, auxs, data)], [run(sym, args, auxs, data)])


def _quantized_pair():
    """Two calibrated quantizes: uint8 (a range from 0) and int8."""
    a = mx.sym._contrib_quantize_v2(mx.sym.var("a"), out_type="auto", min_calib_range=0.0,
                                    max_calib_range=1.5, name="qa")
    b = mx.sym._contrib_quantize_v2(mx.sym.var("b"), out_type="int8", min_calib_range=-0.7,
                                    max_calib_range=0.9, name="qb")
    return a, b


@pytest.mark.parametrize("same_types", [True, False])
def test_quantized_add_and_concat_match_the_numpy_kernels(same_types):
    a, b = _quantized_pair()
    if same_types:
        a = b
    add = mx.sym._contrib_quantized_elemwise_add(a[0], b[0], a[1], a[2], b[1], b[2],
                                                 min_calib_range=-2.0, max_calib_range=2.5)
    cat = mx.sym._contrib_quantized_concat(a[0], b[0], a[1], a[2], b[1], b[2], num_args=2,
                                           dim=1)
    sym = mx.sym.Group([mx.sym._contrib_dequantize(add[0], add[1], add[2]), add[0],
                        mx.sym._contrib_dequantize(cat[0], cat[1], cat[2]), cat[0], cat[1]])
    rng = np.random.default_rng(1)
    feeds = {n: rng.uniform(-1, 2, (2, 3, 5, 4)).astype(np.float32)
             for n in sym.list_arguments()}
    part = mx.subgraph.partition(sym, "DNNL", shapes={n: v.shape for n, v in feeds.items()})
    assert outer_ops(part) == ["_sg_dnnl"]
    assert {"_contrib_quantized_elemwise_add", "_contrib_quantized_concat"} <= \
        set(inner_ops(dnnl_nodes(part)[0]))
    arrays = {k: mx.nd.array(v) for k, v in feeds.items()}
    got, want = ([o.asnumpy() for o in s.bind(mx.cpu(), arrays, grad_req="null").forward()]
                 for s in (part, sym))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_a_fused_chain_the_table_refuses_stays_on_numpy():
    sym, _, _, _ = load("naive")
    text = sym.tojson().replace('"act_type": "relu"', '"act_type": "softsign"', 1)
    conv = mx.sym.load_json(text).get_internals()["quantized_sg_mkldnn_conv_bn_act_0_output"]
    assert default_support().refusal(_view(conv, {"data": (1, 3, 8, 8)})) == \
        "it fuses relu0 (Activation): act_type=softsign (oneDNN's Activation takes " \
        "relu, sigmoid, softrelu, tanh)"


def test_ranges_made_outside_the_subgraph_are_compiled_for_their_values():
    """An uncalibrated quantize (its range found at run time, in its own subgraph)
    keeps the calibrated first convolution on numpy; the next one reads its
    calibrated output range as a subgraph input: the plan is compiled at the first
    run for that value, and again only if it changes."""
    sym, args, auxs, io = load("naive")
    graph = json.loads(sym.tojson())
    for node in graph["nodes"]:
        if node["name"] == "data_quantize":
            node["attrs"] = {"out_type": "int8"}
    sym = mx.sym.load_json(json.dumps(graph))
    part = partitioned(sym, io["data"])
    assert outer_ops(part) == ["_sg_dnnl", "_sg_mkldnn_conv", "_sg_dnnl"]
    ex = bind(part, args, auxs, io["data"])
    rng = np.random.default_rng(5)
    plans = []
    for _ in range(2):
        data = rng.uniform(-1, 1, io["data"].shape).astype(np.float32)
        ex.arg_dict["data"][:] = data
        got = ex.forward(is_train=False)[0].asnumpy()
        np.testing.assert_array_equal(got, run(sym, args, auxs, data))
        plans.append([s.compiled for s in ex._runner.operator_states().values()
                      if isinstance(s, DnnlState)])
    assert len(plans[0]) == 2 and all(a is b for a, b in zip(*plans, strict=True))
    # The quantize's range is the plan's own; conv0's output min and max are inputs.
    assert sorted(len(p.ranges) for p in plans[0]) == [0, 2]


def test_quantized_conv_with_relu6_saturates_as_the_numpy_kernel():
    """MXNet's oneDNN path drops MobileNet v2's clip(0, 6) after a quantized
    convolution (the saturation to the calibrated range stands for it); so does
    the lowering, as the numpy kernel."""
    sym, args, auxs, io = load("naive")
    graph = json.loads(sym.tojson())
    conv0 = next(n for n in graph["nodes"] if n["name"].endswith("conv_bn_act_0"))
    relu = next(n for n in conv0["subgraphs"][0]["nodes"] if n["name"] == "relu0")
    relu.update(op="clip", attrs={"a_min": "0", "a_max": "6"})
    sym = mx.sym.load_json(json.dumps(graph))
    part = partitioned(sym, io["data"])
    assert inner_ops(dnnl_nodes(part)[0]) == CALIBRATED_NET
    data = np.random.default_rng(2).uniform(-1, 1, (4,) + io["data"].shape[1:])
    data = data.astype(np.float32)
    np.testing.assert_array_equal(run(part, args, auxs, data), run(sym, args, auxs, data))


@settings(max_examples=20, deadline=None)
@given(shape=st.tuples(st.integers(1, 3), st.integers(1, 20), st.integers(1, 6),
                       st.integers(1, 6)),
       unsigned=st.booleans(), fix_gamma=st.booleans(), seed=st.integers(0, 2**16))
def test_quantized_batch_norm_and_relu_match_the_numpy_kernels(shape, unsigned, fix_gamma,
                                                              seed):
    """oneDNN's int8 batch normalization (uint8 data reordered to int8 first) and the
    int8 relu after it (ResNet v2's and DenseNet's pre-activations) give the numpy
    kernels' integers exactly."""
    x = mx.sym._contrib_quantize_v2(mx.sym.var("data"), out_type="auto",
                                    min_calib_range=0.0 if unsigned else -1.5,
                                    max_calib_range=2.0, name="q")
    bn = mx.sym._contrib_quantized_batch_norm(x[0], mx.sym.var("g"), mx.sym.var("b"),
                                              mx.sym.var("m"), mx.sym.var("v"), x[1], x[2],
                                              fix_gamma=fix_gamma, eps=1e-5,
                                              min_calib_range=-2.5, max_calib_range=3.0,
                                              name="bn")
    act = mx.sym._contrib_quantized_act(bn[0], bn[1], bn[2], act_type="relu", name="act")
    sym = mx.sym.Group([mx.sym._contrib_dequantize(act[0], act[1], act[2]), bn[0], bn[2]])
    rng = np.random.default_rng(seed)
    channels = shape[1]
    args = {"data": rng.uniform(-1.5, 2, shape), "g": rng.uniform(0.5, 1.5, channels),
            "b": rng.uniform(-1, 1, channels)}
    auxs = {"m": rng.uniform(-1, 1, channels), "v": rng.uniform(0.3, 2, channels)}
    args, auxs = ({k: mx.nd.array(v.astype(np.float32)) for k, v in d.items()}
                  for d in (args, auxs))
    part = mx.subgraph.partition(sym, "DNNL", shapes={"data": shape})
    assert outer_ops(part) == ["_sg_dnnl"]
    assert {"_contrib_quantized_batch_norm", "_contrib_quantized_act"} <= \
        set(inner_ops(dnnl_nodes(part)[0]))
    got, want = ([o.asnumpy() for o in s.bind(mx.cpu(), args, grad_req="null",
                                             aux_states=auxs).forward()]
                 for s in (part, sym))
    assert got[1].dtype == np.int8
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("isa, exact", [
    ("avx2", False), ("avx512_core", False), ("sse41", False), ("avx2_vnni", True),
    ("avx2_vnni_2", True), ("avx512_core_vnni", True), ("avx512_core_bf16", True),
    ("avx512_core_fp16", True), ("avx512_core_amx", True), ("avx10_1_512_amx", True)])
def test_exact_int8_isas(isa, exact):
    assert onednn.exact_int8(isa) is exact


def test_without_vnni_int8_nodes_run_on_numpy_with_one_warning(monkeypatch):
    """oneDNN's int8 kernels without VNNI halve weights and saturate 16-bit pairs:
    MXNet runs them anyway (no error); minimx keeps MXNet's exact arithmetic on the
    numpy kernels and says so once."""
    monkeypatch.setattr(onednn, "isa", lambda: "avx512_core")
    sym, args, auxs, io = load("naive")
    with pytest.warns(UserWarning) as caught:
        part = partitioned(sym, io["data"])
    messages = [str(w.message) for w in caught if "VNNI" in str(w.message)]
    assert messages == ["DNNL: oneDNN's ISA here (avx512_core) has no VNNI: 8 INT8 nodes "
                        "run on the numpy kernels (MXNet's arithmetic, slower than oneDNN's "
                        "float32)"]
    assert "_sg_dnnl" not in outer_ops(part)
    with pytest.warns(UserWarning, match="no VNNI"):
        summary = mx.subgraph.partition_summary(sym, "DNNL", shapes={"data": io["data"].shape})
    assert "INT8 on avx512_core, without VNNI" in str(summary)
    np.testing.assert_array_equal(run(part, args, auxs, io["data"]), io["output"])


@pytest.mark.parametrize("same_types", [True, False])
def test_int32_sum_and_requantize_match_the_numpy_kernels(same_types):
    """Plain quantize_model's sum: int32 over both operands' ranges, then a calibrated
    _contrib_requantize, both inside the subgraph; and a requantize of int32 made
    outside (a plain quantized convolution on numpy) as a plan input."""
    a, b = _quantized_pair()
    if same_types:
        a = b
    add = mx.sym._contrib_quantized_elemwise_add(a[0], b[0], a[1], a[2], b[1], b[2])
    req = mx.sym._contrib_requantize(add[0], add[1], add[2], out_type="auto",
                                     min_calib_range=-1.2, max_calib_range=1.9)
    outside = mx.sym._contrib_requantize(mx.sym.var("acc"), mx.sym.var("lo"),
                                         mx.sym.var("hi"), out_type="auto",
                                         min_calib_range=0.0, max_calib_range=0.004)
    sym = mx.sym.Group([mx.sym._contrib_dequantize(req[0], req[1], req[2]), add[0], add[2],
                        req[0], outside[0], outside[2]])
    rng = np.random.default_rng(4)
    shape = (2, 3, 5, 4)
    feeds = {n: mx.nd.array(rng.uniform(-1, 2, shape).astype(np.float32))
             for n in ("a", "b")}
    feeds.update(acc=mx.nd.array(rng.integers(-2**20, 2**20, shape), dtype=np.int32),
                 lo=mx.nd.array([-40.0]), hi=mx.nd.array([40.0]))
    part = mx.subgraph.partition(sym, "DNNL", shapes={n: v.shape for n, v in feeds.items()},
                                 dtypes={"acc": np.int32})
    assert outer_ops(part) == ["_sg_dnnl", "_sg_dnnl"]  # the outside requantize apart
    assert sorted(sorted(set(inner_ops(n))) for n in dnnl_nodes(part)) == [
        ["_contrib_dequantize", "_contrib_quantize_v2", "_contrib_quantized_elemwise_add",
         "_contrib_requantize"], ["_contrib_requantize"]]
    got, want = ([o.asnumpy() for o in s.bind(mx.cpu(), feeds, grad_req="null").forward()]
                 for s in (part, sym))
    assert [got[1].dtype, got[3].dtype, got[4].dtype] == [np.int32, np.int8, np.uint8]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_plain_quantize_model_graph_matches_the_numpy_kernels():
    """Plain quantize_model (no fusion): the requantizes, the int32 sums, pooling and
    relu in DNNL subgraphs, the plain quantized convolutions and FC on numpy."""
    from minimx.contrib.quantization import quantize_model  # the contrib layer, test only
    sym, _, _, io = load("naive")
    float_sym = mx.sym.load(str(FIXTURES / "qnet-symbol.json"))
    _, args, auxs = mx.model.load_checkpoint(str(FIXTURES / "qnet_fp32_mkldnn"), 0)
    qsym, qargs, qauxs = quantize_model(float_sym, args, auxs, calib_mode="naive",
                                        calib_data=[io["calib"]], quantized_dtype="uint8",
                                        label_names=None, excluded_op_names=["BatchNorm"])
    part = partitioned(qsym, io["data"])
    inside = {op for n in dnnl_nodes(part) for op in inner_ops(n)}
    assert {"_contrib_requantize", "_contrib_quantized_elemwise_add"} <= inside
    np.testing.assert_array_equal(run(part, qargs, qauxs, io["data"]),
                                  run(qsym, qargs, qauxs, io["data"]))


def _residual_net() -> mx.sym.Symbol:
    """conv-relu, then two residual sums: an int8 1x1 branch summed into a uint8
    output, and that output summed into the next convolution's."""
    x = mx.sym.Activation(mx.sym.Convolution(mx.sym.var("data"), kernel=(3, 3), pad=(1, 1),
                                             num_filter=16, name="c1"), act_type="relu")
    a = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=32, name="ca")
    b = mx.sym.Convolution(x, kernel=(1, 1), num_filter=32, name="cb")
    y = mx.sym.Activation(a + b, act_type="relu")
    c = mx.sym.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=32, name="cc")
    z = mx.sym.Activation(c + y, act_type="relu")
    return mx.sym.FullyConnected(mx.sym.flatten(z), num_hidden=10, name="fc")


def test_uint8_output_over_an_int8_residual_is_the_sums_bytes():
    """MXNet writes a sum in its addend's type and reads it as the output's: a uint8
    output over an int8 residual stops at 127. The plan reads the same bytes as
    uint8 (no copy), and the next sum accumulates into them in place."""
    rng = np.random.default_rng(0)
    net, shape = _residual_net(), (2, 3, 8, 8)
    arg_shapes = net.infer_shape(data=shape)[0]
    args = {n: mx.nd.array(rng.normal(0, 0.3, s).astype(np.float32))
            for n, s in zip(net.list_arguments(), arg_shapes, strict=True) if n != "data"}
    calib = [rng.uniform(-0.5, 0.5, shape).astype(np.float32)]
    qsym, qargs, qaux = mx.contrib.quantization.quantize_model_mkldnn(
        net, args, {}, calib_mode="naive", calib_data=calib, label_names=(),
        quantized_dtype="auto")
    data = rng.uniform(-2, 2, shape).astype(np.float32)  # beyond the calibrated ranges
    summed = qsym.get_internals()["quantized_sg_mkldnn_conv_add_act_1_output"]
    inner = run(summed, qargs, qaux, data)
    assert inner.dtype == np.uint8 and inner.max() == 127   # saturated as int8
    ex = bind(partitioned(qsym, data), qargs, qaux, data)
    np.testing.assert_array_equal(ex.forward(is_train=False)[0].asnumpy(),
                                  run(qsym, qargs, qaux, data))
    (state,) = [s for s in ex._runner.operator_states().values() if isinstance(s, DnnlState)]
    steps = [(owner, name.split("[")[0]) for owner, name in state.compiled.plan.step_names()]
    assert ("quantized_sg_mkldnn_conv_add_act_1", "reorder") not in steps
