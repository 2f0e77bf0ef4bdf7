"""quantize_model_mkldnn on small nets as MXNet 1.9.1 quantizes them: the names of
the quantize nodes and of a fused convolution's inputs where it sums its own
input, the outputs of a quantized FC with flatten=False (on both backends), and
the refusal of uint8 data with a negative range, calibrated or found at run time.
Each case is one a differential fuzz against MXNet 1.9.1 found minimx getting wrong.
"""
import json

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError, subgraph_backend
from minimx.contrib.quantization import quantize_model_mkldnn

from ..onednn_required import require_onednn


def _quantize(sym, args, auxs, calib, mode="naive", dtype="auto"):
    return quantize_model_mkldnn(sym, args, auxs, ctx=mx.cpu(), calib_mode=mode,
                                 quantized_dtype=dtype,
                                 calib_data=mx.io.NDArrayIter(calib, batch_size=2),
                                 num_calib_examples=len(calib), label_names=None)


def _params(sym, shape, seed):
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    args = {n: mx.nd.array(rng.uniform(-1, 1, s).astype("float32"))
            for n, s in zip(sym.list_arguments(), arg_shapes, strict=True) if n != "data"}
    auxs = {n: mx.nd.array(rng.uniform(0.5, 1.5, s).astype("float32"))
            for n, s in zip(sym.list_auxiliary_states(), aux_shapes, strict=True)}
    return args, auxs


def _forward(sym, args, auxs, data):
    feeds = {**args, "data": mx.nd.array(data)}
    ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                  aux_states=auxs)
    return ex.forward(is_train=False)[0].asnumpy()


def _quantize_names(qsym):
    return [n["name"] for n in json.loads(qsym.tojson())["nodes"]
            if n["op"] == "_contrib_quantize_v2"]


@pytest.mark.parametrize("layer, name", [
    # MXNet 1.9.1's names: operators without FListOutputNames give the output's index.
    (lambda x: mx.sym.Flatten(x, name="op"), "op_0_quantize"),
    (lambda x: mx.sym.relu(x, name="op"), "op_0_quantize"),
    (lambda x: mx.sym.clip(x, 0, 6, name="op"), "op_0_quantize"),
    (lambda x: mx.sym.Reshape(x, shape=(0, -1), name="op"), "op_0_quantize"),
    (lambda x: mx.sym.Activation(x, act_type="sigmoid", name="op"), "op_output_quantize"),
    (lambda x: mx.sym.softmax(x, name="op"), "op_output_quantize"),
    (lambda x: mx.sym.split(x, num_outputs=2, axis=1, name="op")[1], "op_output1_quantize"),
])
def test_quantize_nodes_are_named_as_mxnet_names_them(layer, name):
    sym = mx.sym.FullyConnected(layer(mx.sym.var("data")), num_hidden=3, name="fc")
    args, auxs = _params(sym, (2, 4, 3, 3), 0)
    qsym, _, _ = quantize_model_mkldnn(sym, args, auxs, calib_mode="none",
                                       quantized_dtype="int8", label_names=None)
    assert _quantize_names(qsym) == [name]


def _residual(data_first):
    data = mx.sym.var("data")
    conv = mx.sym.Convolution(data, num_filter=3, kernel=(3, 3), pad=(1, 1), no_bias=True,
                              name="conv0")
    bn = mx.sym.BatchNorm(conv, fix_gamma=False, name="bn0")
    operands = (data, bn) if data_first else (bn, data)
    return mx.sym.elemwise_add(*operands, name="add0")


@pytest.mark.parametrize("data_first, names", [
    # MXNet 1.9.1's subgraph inputs: reads counted in its depth-first order, before
    # the sum operand is moved last.
    (True, ["data1", "conv0_weight0", "bn0_gamma0", "bn0_beta0", "bn0_moving_mean0",
            "bn0_moving_var0", "data0"]),
    (False, ["data0", "conv0_weight0", "bn0_gamma0", "bn0_beta0", "bn0_moving_mean0",
             "bn0_moving_var0", "data1"]),
])
def test_a_convolution_summed_with_its_own_input_names_the_reads_as_mxnet(data_first, names):
    sym = _residual(data_first)
    args, auxs = _params(sym, (2, 3, 5, 5), 1)
    calib = np.random.RandomState(2).uniform(-1, 1, (4, 3, 5, 5)).astype("float32")
    qsym, _, _ = _quantize(sym, args, auxs, calib)
    fused = [n for n in json.loads(qsym.tojson())["nodes"] if n["op"] == "_sg_mkldnn_conv"]
    assert len(fused) == 1
    inner = [n["name"] for n in fused[0]["subgraphs"][0]["nodes"] if n["op"] == "null"]
    assert inner == names


def _fc_rows_net():
    x = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, flatten=False, name="fc0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    return mx.sym.FullyConnected(x, num_hidden=2, name="fc1")


# MXNet 1.9.1's outputs of _fc_rows_net quantized by its quantize_model_mkldnn (auto).
MXNET_FC_ROWS = {
    "naive": [[-1.8804577589035034, 0.1466791182756424],
              [-1.0460586547851562, 1.2257957458496094]],
    "none": [[-1.9001866579055786, 0.14962099492549896],
             [-1.0623090267181396, 1.2568163871765137]],
}


@pytest.mark.parametrize("mode", ["naive", "none"])
@pytest.mark.parametrize("backend", ["NONE", "DNNL"])
def test_quantized_fc_without_flatten_gives_mxnets_output(mode, backend):
    if backend == "DNNL":
        require_onednn()
    rng = np.random.RandomState(5)
    args = {"fc0_weight": rng.uniform(-1, 1, (3, 4)), "fc0_bias": rng.uniform(-.5, .5, 3),
            "fc1_weight": rng.uniform(-1, 1, (2, 18)), "fc1_bias": rng.uniform(-.5, .5, 2)}
    args = {k: mx.nd.array(v.astype("float32")) for k, v in args.items()}
    calib = rng.uniform(-1, 1, (4, 2, 3, 4)).astype("float32")
    data = rng.uniform(-1, 1, (2, 2, 3, 4)).astype("float32")
    qsym, qargs, qauxs = _quantize(_fc_rows_net(), args, {}, calib, mode)
    if backend == "DNNL":   # the FC over the last axis is inside the oneDNN plan
        part = mx.subgraph.partition(qsym, "DNNL", shapes={"data": data.shape})
        assert [n["op"] for n in json.loads(part.tojson())["nodes"]
                if n["op"] != "null"] == ["_sg_dnnl"]
    with subgraph_backend(backend):
        got = _forward(qsym, qargs, qauxs, data)
    np.testing.assert_array_equal(got, np.array(MXNET_FC_ROWS[mode], np.float32))


@pytest.mark.parametrize("mode", ["naive", "none"])
@pytest.mark.parametrize("backend", ["NONE", "DNNL"])
def test_uint8_data_with_a_negative_range_into_a_convolution_is_refused(backend, mode):
    """MXNet 1.9.1 fails at the first forward ("Expect int8 when data_min < 0.0");
    the numpy kernel refuses it, and so does the DNNL backend: by its lowering
    where the range is calibrated, by leaving the convolution to the numpy kernel
    where the range is found at run time (calib_mode none)."""
    if backend == "DNNL":
        require_onednn()
    data = mx.sym.var("data")
    sym = mx.sym.FullyConnected(mx.sym.Convolution(data, num_filter=2, kernel=(1, 1),
                                                   name="conv0"), num_hidden=2, name="fc0")
    args, auxs = _params(sym, (2, 3, 4, 4), 3)
    calib = np.random.RandomState(4).uniform(-1, 1, (4, 3, 4, 4)).astype("float32")
    qsym, qargs, qauxs = _quantize(sym, args, auxs, calib, mode, dtype="uint8")
    with subgraph_backend(backend), pytest.raises(MinimxError, match="uint8 with min -"):
        _forward(qsym, qargs, qauxs, calib[:2])
    if backend == "DNNL" and mode == "none":
        part = mx.subgraph.partition(qsym, "DNNL", shapes={"data": calib[:2].shape})
        assert "_sg_mkldnn_conv" in [n["op"] for n in json.loads(part.tojson())["nodes"]]
