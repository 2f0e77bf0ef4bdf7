"""MXNet 1.9's quantization operators against MXNet 1.9.1's own outputs.

Fixtures (tools/mxnet_fixtures.py, groups quantization_ops and quantized_net):
each operator on fixed inputs, and a small conv net quantized by MXNet's
`quantize_model_mkldnn` with naive calibration and with none. The kernels
reproduce MXNet's oneDNN arithmetic (one float32 multiply, round half to even,
saturate; exact int32 accumulation), so outputs are compared exactly.
"""
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import DTypeError, OperatorError
from minimx.ops import get_op
from minimx.ops.registry import OpContext

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = json.loads((FIXTURES / "quantization_ops" / "cases.json").read_text())


def arrays(path: Path, prefix: str) -> list[np.ndarray]:
    with np.load(path) as npz:
        return [npz[f"{prefix}{i}"] for i in range(sum(k.startswith(prefix) for k in npz.files))]


@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_matches_mxnet(case):
    op = get_op(CASES[case]["op"])
    params = op.parse_params(CASES[case]["attrs"], case)
    path = FIXTURES / "quantization_ops" / f"{case}.npz"
    got = op.forward(params, OpContext(), arrays(path, "in_"))
    got = got if isinstance(got, list) else [got]
    want = arrays(path, "out_")
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_quantize_v2_inference_follows_out_type_and_calibration():
    data = mx.sym.var("data")
    q = mx.sym._contrib_quantize_v2(data, out_type="auto", min_calib_range=0.0,
                                    max_calib_range=2.0, name="q")
    assert q.list_outputs() == ["q_output0", "q_output1", "q_output2"]
    assert q.infer_shape(data=(2, 3, 4))[1] == [(2, 3, 4), (1,), (1,)]
    assert q.infer_type(data="float32")[1] == [np.uint8, np.float32, np.float32]
    signed = mx.sym._contrib_quantize_v2(data, out_type="auto", name="s")
    assert signed.infer_type(data="float32")[1][0] == np.int8


def test_range_inputs_are_scalars_and_types_are_checked():
    data = mx.sym.var("data")
    deq = mx.sym._contrib_dequantize(data, name="deq")
    assert deq.list_arguments() == ["data", "deq_min_range", "deq_max_range"]
    arg_shapes, out_shapes, _ = deq.infer_shape(data=(4, 5))
    assert arg_shapes == [(4, 5), (1,), (1,)] and out_shapes == [(4, 5)]
    assert deq.infer_type(data="uint8")[1] == [np.float32]
    with pytest.raises(DTypeError, match="deq.*int8 or uint8, got float32"):
        deq.infer_type(data="float32")
    pool = mx.sym._contrib_quantized_pooling(data, kernel=(2, 2), stride=(2, 2), name="qp")
    assert pool.list_outputs() == ["qp_output", "qp_min_output", "qp_max_output"]
    assert pool.infer_shape(data=(1, 2, 6, 6))[1] == [(1, 2, 3, 3), (1,), (1,)]
    assert pool.infer_type(data="int8")[1] == [np.int8, np.float32, np.float32]


def test_bad_parameters_name_the_node():
    with pytest.raises(OperatorError, match=r"q0 \(_contrib_quantize_v2\): bad parameter "
                                            r"out_type: 'int4' is not one of"):
        mx.sym._contrib_quantize_v2(mx.sym.var("data"), out_type="int4", name="q0")
    with pytest.raises(OperatorError, match=r"rq \(_contrib_requantize\): unknown parameter"):
        mx.sym._contrib_requantize(mx.sym.var("data"), min_range=1, name="rq")


def test_calibration_range_needs_both_ends():
    op = get_op("_contrib_quantize_v2")
    params = op.parse_params({"min_calib_range": "-1"}, "q")
    with pytest.raises(OperatorError, match="give both or neither"):
        op.forward(params, OpContext(), [np.zeros((2,), np.float32)])


def load_quantized(mode: str):
    prefix = str(FIXTURES / "quantized_net" / f"qnet_{mode}")
    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    with np.load(f"{prefix}-io.npz") as npz:
        io = {k: npz[k] for k in npz.files}
    return sym, args, auxs, io


def forward(sym, args, auxs, data):
    # bind, not simple_bind: the checkpoint's int8 arguments keep their dtype.
    feeds = {**args, "data": mx.nd.array(data)}
    ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                  aux_states=auxs)
    return ex.forward(is_train=False)[0].asnumpy()


@pytest.mark.parametrize("mode", ["naive", "none", "naive_channel"])
def test_mxnet_quantized_checkpoint_runs_with_mxnets_output(mode):
    """Exact, not within a quantization step: every integer is computed as oneDNN
    computes it (exact int32 sums, one float32 rounding per scale), and the float
    steps (BatchNorm folding, scales, the FC's float output) in MXNet's order."""
    sym, args, auxs, io = load_quantized(mode)
    ops = {json_node["op"] for json_node in json.loads(sym.tojson())["nodes"]}
    assert {"_contrib_quantize_v2", "_sg_mkldnn_conv", "_contrib_quantized_pooling",
            "_sg_mkldnn_fully_connected"} <= ops
    got = forward(sym, args, auxs, io["data"])
    np.testing.assert_array_equal(got, io["output"])
    # And the quantized net is near the float net: within 10%, as MXNet's own oneDNN
    # path stops the uint8 sum over the int8 branch at 127 (see QuantizedConv._dst_type).
    assert np.abs(got - io["fp32_output"]).max() < 0.1 * np.abs(io["fp32_output"]).max()


def test_quantized_checkpoint_json_round_trip():
    sym, args, auxs, io = load_quantized("naive")
    again = mx.sym.load_json(sym.tojson())
    assert json.loads(again.tojson()) == json.loads(sym.tojson())
    assert again.infer_type(data="float32")[1] == [np.float32]
    np.testing.assert_array_equal(forward(again, args, auxs, io["data"]), io["output"])


def test_quantized_fused_conv_shapes_and_types():
    sym, *_ = load_quantized("none")
    internals = sym.get_internals()
    conv = internals["quantized_sg_mkldnn_conv_add_act_1_output"]
    names = conv.list_arguments()
    arg_types, out_types, _ = conv.infer_type(data="float32")
    types = dict(zip(names, arg_types, strict=True))
    assert types["conv1_weight"] == np.float32
    assert out_types == [np.int32]
    _, out_shapes, _ = internals.infer_shape(data=(2, 3, 8, 8))
    shapes = dict(zip(internals.list_outputs(), out_shapes, strict=True))
    assert shapes["quantized_sg_mkldnn_conv_add_act_1_output"] == (2, 8, 8, 8)
    assert shapes["quantized_sg_mkldnn_conv_add_act_1_output_min"] == (1,)
    fc = internals["quantized_sg_mkldnn_fully_connected_eltwise_0_output"]
    assert fc.infer_type(data="float32")[1] == [np.int32]
    assert shapes["quantized_sg_mkldnn_fully_connected_eltwise_0_output"] == (2, 16)


def test_mxnet_fp32_mkldnn_partitioned_file_runs_on_numpy():
    prefix = str(FIXTURES / "quantized_net" / "qnet_fp32_mkldnn")
    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    assert [n for n in json.loads(sym.tojson())["nodes"] if n["op"] == "_sg_mkldnn_conv"]
    _, _, _, io = load_quantized("naive")
    np.testing.assert_allclose(forward(sym, args, auxs, io["data"]), io["fp32_output"],
                               rtol=1e-4, atol=1e-4)


def test_int32_operators_infer_mxnets_shapes_and_types():
    data = mx.sym.var("data")
    conv = mx.sym._contrib_quantized_conv(data, kernel=(3, 3), pad=(1, 1), num_filter=4,
                                          name="qc")
    assert conv.list_arguments() == ["data", "qc_weight", "qc_bias", "qc_min_data",
                                     "qc_max_data", "qc_min_weight", "qc_max_weight",
                                     "qc_min_bias", "qc_max_bias"]
    arg_shapes, out_shapes, _ = conv.infer_shape(data=(2, 3, 5, 5))
    assert arg_shapes[:3] == [(2, 3, 5, 5), (4, 3, 3, 3), (4,)] and out_shapes[0] == (2, 4, 5, 5)
    arg_types, out_types, _ = conv.infer_type(data="uint8")
    assert arg_types[:3] == [np.uint8, np.int8, np.int8] and out_types[0] == np.int32
    fc = mx.sym._contrib_quantized_fully_connected(data, num_hidden=5, no_bias=True, name="qf")
    assert fc.infer_shape(data=(2, 3, 4))[0][:2] == [(2, 3, 4), (5, 12)]
    add = mx.sym._contrib_quantized_elemwise_add(data, mx.sym.var("b"), name="qa")
    assert add.infer_type(data="uint8", b="int8")[1][0] == np.int32
    calibrated = mx.sym._contrib_quantized_elemwise_add(
        data, mx.sym.var("b"), min_calib_range=-1.0, max_calib_range=1.0, name="qa")
    assert calibrated.infer_type(data="uint8", b="int8")[1][0] == np.int8
    cat = mx.sym._contrib_quantized_concat(data, mx.sym.var("b"), num_args=2, dim=1, name="qk")
    assert cat.list_arguments() == ["data", "b", "qk_arg0_min", "qk_arg0_max", "qk_arg1_min",
                                    "qk_arg1_max"]
    assert cat.infer_shape(data=(2, 3, 4), b=(2, 1, 4))[1][0] == (2, 4, 4)
    assert cat.infer_type(data="uint8", b="int8")[1][0] == np.int8


def test_quantized_conv_refuses_int8_data_at_inference_naming_the_node():
    conv = mx.sym._contrib_quantized_conv(mx.sym.var("data"), kernel=(1, 1), num_filter=1,
                                          name="qc")
    with pytest.raises(DTypeError, match=r"qc \(_contrib_quantized_conv\): data is int8: "
                                         "MXNet's oneDNN quantized convolution takes uint8"):
        conv.infer_type(data="int8")


def test_bad_fused_node_attribute_in_a_file_names_the_node():
    text = (FIXTURES / "quantized_net" / "qnet_naive-symbol.json").read_text()
    with pytest.raises(OperatorError, match=r"quantized_sg_mkldnn_conv_bn_act_0 "
                                            r"\(_sg_mkldnn_conv\): bad parameter with_bn"):
        mx.sym.load_json(text.replace('"with_bn": "true"', '"with_bn": "maybe"', 1))


def test_quantized_conv_takes_uint8_data_only():
    op = get_op("_contrib_quantized_conv")
    params = op.parse_params({"kernel": "(1, 1)", "num_filter": "1", "no_bias": "True"}, "qc")
    ones = np.ones((1,), np.float32)
    with pytest.raises(DTypeError, match="takes uint8"):
        op.forward(params, OpContext(), [np.zeros((1, 1, 2, 2), np.int8),
                                         np.ones((1, 1, 1, 1), np.int8), -ones, ones, -ones, ones])


@pytest.mark.parametrize("case", sorted(CASES))
def test_json_round_trip_keeps_the_results(case):
    op = CASES[case]["op"]
    path = FIXTURES / "quantization_ops" / f"{case}.npz"
    inputs = arrays(path, "in_")
    names = [f"x{i}" for i in range(len(inputs))]
    sym = getattr(mx.sym, op)(*map(mx.sym.var, names), **CASES[case]["attrs"], name="q")
    text = sym.tojson()
    loaded = mx.sym.load_json(text)
    assert loaded.tojson() == text
    feeds = {n: mx.nd.array(x, dtype=x.dtype) for n, x in zip(names, inputs, strict=True)}
    for got, want in zip(loaded.eval(**feeds), arrays(path, "out_"), strict=True):
        np.testing.assert_array_equal(got.asnumpy(), want)


def test_every_quantization_operator_is_checked_against_mxnet():
    from minimx.ops.quantization import OPERATORS  # the module's own list, read here only
    assert sorted(set(OPERATORS)) == sorted({c["op"] for c in CASES.values()})


def _quantized_batch_norm(x, gamma, beta, mean, var, data_range, **attrs):
    op = get_op("_contrib_quantized_batch_norm")
    params = op.parse_params({"min_calib_range": "-3", "max_calib_range": "3", **attrs}, "bn")
    lo, hi = (np.array([v], np.float32) for v in data_range)
    return op.forward(params, OpContext(), [x, gamma, beta, mean, var, lo, hi])


def test_quantized_batch_norm_is_the_float_batch_norm_to_a_step():
    """int8 in, int8 out by the calibrated range: the float BatchNorm of the
    dequantized data, quantized, to one step (two roundings); a fixed gamma is 1
    as in the float BatchNorm."""
    rng = np.random.default_rng(0)
    x = rng.integers(-127, 128, (2, 4, 3, 3)).astype(np.int8)
    gamma, beta = rng.uniform(0.5, 1.5, 4).astype(np.float32), rng.uniform(-1, 1, 4)
    mean, var = rng.uniform(-1, 1, 4), rng.uniform(0.5, 2, 4)
    beta, mean, var = (a.astype(np.float32) for a in (beta, mean, var))
    for fix_gamma in (False, True):
        y, lo, hi = _quantized_batch_norm(x, gamma, beta, mean, var, (-2.0, 1.5),
                                          fix_gamma=str(fix_gamma), eps="1e-3")
        assert y.dtype == np.int8 and (lo[0], hi[0]) == (-3, 3)
        g = np.ones(4, np.float32) if fix_gamma else gamma
        want = mx.nd.BatchNorm(mx.nd.array(x.astype(np.float32) * 2 / 127.5), mx.nd.array(g),
                               mx.nd.array(beta), mx.nd.array(mean), mx.nd.array(var),
                               fix_gamma=False, eps=1e-3, use_global_stats=True).asnumpy()
        expected = np.clip(want * 127.5 / 3, -128, 127)
        assert np.abs(y - expected).max() <= 1
        assert np.abs(y - expected).mean() < 0.3


def test_quantized_batch_norm_needs_a_calibrated_range():
    op = get_op("_contrib_quantized_batch_norm")
    params = op.parse_params({}, "bn")
    ones = np.ones(2, np.float32)
    with pytest.raises(OperatorError, match="needs min_calib_range and max_calib_range"):
        op.forward(params, OpContext(), [np.zeros((1, 2), np.int8), ones, ones, ones, ones,
                                         -ones[:1], ones[:1]])
