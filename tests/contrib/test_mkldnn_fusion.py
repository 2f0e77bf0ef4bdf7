"""MKLDNN_QUANTIZE's float fusion (`fuse_float`): which activations join the
convolution, as MXNet 1.9's SgMKLDNNConvSelector takes them in quantize mode."""
import json

import numpy as np
import pytest

import minimx as mx
from minimx.contrib.quantization.mkldnn_fusion import fuse_float


def _ops(sym):
    return [(n["op"], n["name"], n.get("attrs", {})) for n in json.loads(sym.tojson())["nodes"]
            if n["op"] != "null"]


def _conv(name, x):
    return mx.sym.Convolution(x, num_filter=4, kernel=(3, 3), pad=(1, 1), name=name)


def test_relu6_clip_from_zero_is_the_convolutions_act():
    y = mx.sym.clip(_conv("conv0", mx.sym.var("data")), a_min=0, a_max=6, name="relu6")
    assert _ops(fuse_float(y)) == [("_sg_mkldnn_conv", "sg_mkldnn_conv_act_0",
                                    {"with_act": "true"})]


def test_clip_not_from_zero_stays_apart():
    y = mx.sym.clip(_conv("conv0", mx.sym.var("data")), a_min=-1, a_max=6, name="clip0")
    assert _ops(fuse_float(y)) == [("_sg_mkldnn_conv", "sg_mkldnn_conv_0", {}),
                                   ("clip", "clip0", {"a_max": "6", "a_min": "-1"})]


def test_clip_after_a_sum_stays_apart():
    """MXNet fuses no INT8 conv + sum + relu6: the sum is calibrated before the clip."""
    x = mx.sym.var("data")
    y = mx.sym.clip(mx.sym.elemwise_add(_conv("conv0", x), x, name="add0"), a_min=0, a_max=6,
                    name="relu6")
    assert [op[:2] for op in _ops(fuse_float(y))] == [("_sg_mkldnn_conv", "sg_mkldnn_conv_add_0"),
                                                      ("clip", "relu6")]


def test_identities_an_operator_feeds_are_read_through():
    """MXNet 1.9.1's graphs, from its identity property: a training-mode Dropout after
    an operator goes (the chain then fuses across it); one on an input, or of mode
    'always', stays."""
    x = mx.sym.var("data")
    y = mx.sym.Dropout(mx.sym.BatchNorm(_conv("conv0", x), name="bn0"), p=0.3, name="drop0")
    y = mx.sym.Activation(y, act_type="relu", name="relu0")
    assert [op[:2] for op in _ops(fuse_float(y))] == [
        ("_sg_mkldnn_conv", "sg_mkldnn_conv_bn_act_0")]
    kept = mx.sym.Dropout(_conv("conv1", mx.sym.Dropout(x, p=0.5, name="drop1")), p=0.5,
                          mode="always", name="drop2")
    assert [op[:2] for op in _ops(fuse_float(kept))] == [
        ("Dropout", "drop1"), ("_sg_mkldnn_conv", "sg_mkldnn_conv_0"), ("Dropout", "drop2")]
    # So does an identity (_copy), as MXNet's property removes it: an FC then fuses its relu.
    fc = mx.sym.FullyConnected(x, num_hidden=8, name="fc1")
    y = mx.sym.Activation(mx.sym.identity(fc, name="idn"), act_type="relu", name="relu")
    assert [op[:2] for op in _ops(fuse_float(y))] == [
        ("_sg_mkldnn_fully_connected", "sg_mkldnn_fully_connected_eltwise_0")]


def _fc_then(act: str) -> mx.sym.Symbol:
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, flatten=False, name="fc0")
    if act in ("gelu", "elu", "leaky"):
        return mx.sym.LeakyReLU(fc, act_type=act, name="act0")
    if act == "clip":
        return mx.sym.clip(fc, a_min=0, a_max=1, name="act0")
    return mx.sym.Activation(fc, act_type=act, name="act0") if act in ("relu", "tanh") \
        else getattr(mx.sym, act)(fc, name="act0")


@pytest.mark.parametrize("act", ["relu", "gelu", "elu", "leaky", "abs", "clip"])
def test_the_fully_connected_layer_takes_the_activations_mxnet_fuses(act):
    """MXNet 1.9.1's INT8 FC fuses these (BERT's gelu among them), as its checkpoints show."""
    assert _ops(fuse_float(_fc_then(act))) == [
        ("_sg_mkldnn_fully_connected", "sg_mkldnn_fully_connected_eltwise_0",
         {"with_eltwise": "True"})]


@pytest.mark.parametrize("act", ["tanh", "sqrt", "square", "exp"])
def test_activations_mxnet_leaves_after_the_fully_connected_layer(act):
    assert [op[:2] for op in _ops(fuse_float(_fc_then(act)))] == [
        ("_sg_mkldnn_fully_connected", "sg_mkldnn_fully_connected_0"),
        (act if act != "tanh" else "Activation", "act0")]


def test_a_sum_whose_operand_reads_later_variables_reorders_the_arguments():
    """MXNet 1.9.1's ``get_backend_symbol('MKLDNN_QUANTIZE')`` of ``bn(x) + conv(x)``
    (found by a differential fuzz): the fused node reads the convolution's inputs,
    then the sum's operand, so the BatchNorm's gamma and beta move after the weight.
    The nodes and arguments below are MXNet's."""
    x = mx.sym.var("data")
    y = mx.sym.elemwise_add(mx.sym.BatchNorm(x, fix_gamma=False, name="bn1"),
                            mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=3,
                                               no_bias=True, name="conv8"), name="add9")
    fused = y.get_backend_symbol("MKLDNN_QUANTIZE")
    nodes = json.loads(fused.tojson())["nodes"]
    assert [(n["op"], n["name"], n["inputs"]) for n in nodes] == [
        ("null", "data", []), ("null", "conv8_weight", []), ("null", "bn1_gamma", []),
        ("null", "bn1_beta", []), ("null", "bn1_moving_mean", []),
        ("null", "bn1_moving_var", []),
        ("BatchNorm", "bn1", [[0, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, 1], [5, 0, 1]]),
        ("_sg_mkldnn_conv", "sg_mkldnn_conv_add_0", [[0, 0, 0], [1, 0, 0], [6, 0, 0]])]
    assert fused.list_arguments() == ["data", "conv8_weight", "bn1_gamma", "bn1_beta"]
    args = {"data": np.linspace(-1, 1, 2 * 3 * 5 * 5).reshape(2, 3, 5, 5),
            "conv8_weight": np.linspace(-0.5, 0.5, 3 * 3 * 9).reshape(3, 3, 3, 3),
            "bn1_gamma": np.array([0.5, 1.5, 2.0]), "bn1_beta": np.array([0.1, -0.2, 0.3])}
    aux = {"bn1_moving_mean": np.zeros(3), "bn1_moving_var": np.ones(3)}
    outs = [s.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()},
                   aux_states={k: mx.nd.array(v) for k, v in aux.items()}).forward()[0].asnumpy()
            for s in (y, fused)]
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_min,a_max", [(-1, 1), (0.5, 6)])
def test_a_clip_not_from_zero_stays_after_the_fully_connected_layer(a_min, a_max):
    """MXNet 1.9.1's FC selector takes a clip only with a_min 0 (its graphs for these
    bounds keep the clip; for (0, 1) and (0, 6) it fuses)."""
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, flatten=False, name="fc0")
    y = mx.sym.clip(fc, a_min=a_min, a_max=a_max, name="act0")
    assert [op[:2] for op in _ops(fuse_float(y))] == [
        ("_sg_mkldnn_fully_connected", "sg_mkldnn_fully_connected_0"), ("clip", "act0")]


@pytest.mark.parametrize("quantized_dtype", ["int8", "auto"])   # uint8: negative data
def test_a_requantize_after_a_quantized_sum_of_one_tensor_folds(quantized_dtype):
    # conv -> elemwise_add(c, c) -> conv: the requantize after the quantized add folds
    # into it; the fold asked the add for a fused node's output type (found by a fuzz).
    d = mx.sym.var("data")
    c = mx.sym.Convolution(d, kernel=(1, 1), num_filter=4, no_bias=True, name="c0")
    y = mx.sym.Convolution(mx.sym.elemwise_add(c, c, name="add"), kernel=(1, 1), num_filter=1,
                           no_bias=True, name="c1")
    rng = np.random.default_rng(0)
    args = {"c0_weight": mx.nd.array(rng.normal(0, .3, (4, 4, 1, 1))),
            "c1_weight": mx.nd.array(rng.normal(0, .3, (1, 4, 1, 1)))}
    x = rng.uniform(-1, 1, (1, 4, 3, 3)).astype(np.float32)
    qsym, qargs, _ = mx.contrib.quantization.quantize_model_mkldnn(
        y, args, {}, calib_mode="naive", calib_data=[x], label_names=(),
        quantized_dtype=quantized_dtype)
    assert "_contrib_quantized_elemwise_add" in [op for op, _, _ in _ops(qsym)]
    got = qsym.bind(mx.cpu(), {**qargs, "data": mx.nd.array(x)}).forward()[0].asnumpy()
    want = y.bind(mx.cpu(), {**args, "data": mx.nd.array(x)}).forward()[0].asnumpy()
    np.testing.assert_allclose(got, want, atol=0.05 * np.abs(want).max())
