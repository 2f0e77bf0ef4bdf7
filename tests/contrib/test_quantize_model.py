"""quantize_model_mkldnn against MXNet 1.9.1's run on the quantized_net fixture:
the same graph node by node, the same parameters and the same outputs.

One difference is MXNet's arithmetic, not the pass: MXNet calibrates on its
fused float convolutions as oneDNN computes them (BatchNorm folded into the
weights, oneDNN's FMA order); minimx's numpy float path rounds about a third
of those values differently in the last bit, so a calibrated range can differ
in its last printed digit (6.261865 for 6.261866) and the outputs by ulps."""
import json
import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import DTypeError, MinimxError, ShapeError, subgraph_backend
from minimx.contrib.quantization import quantize_model, quantize_model_mkldnn
from minimx.contrib.quantization.mkldnn_fusion import fuse_float

from ..onednn_required import require_onednn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "quantized_net"
RUNS = {"naive": ("naive", "tensor-wise"), "none": ("none", "tensor-wise"),
        "naive_channel": ("naive", "channel-wise")}


def float_model():
    sym = mx.sym.load(str(FIXTURES / "qnet-symbol.json"))
    _, args, auxs = mx.model.load_checkpoint(str(FIXTURES / "qnet_fp32_mkldnn"), 0)
    return sym, args, auxs


def nodes(sym):
    return json.loads(sym.tojson())["nodes"]


def forward(sym, args, auxs, data):
    feeds = {**args, "data": mx.nd.array(data)}
    ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                  aux_states=auxs)
    return ex.forward(is_train=False)[0].asnumpy()


def quantize(run, **kwargs):
    sym, args, auxs = float_model()
    mode, granularity = RUNS[run]
    with np.load(FIXTURES / f"qnet_{run}-io.npz") as npz:
        io = {k: npz[k] for k in npz.files}
    options = dict(ctx=mx.cpu(), calib_mode=mode, quantized_dtype="auto",
                   calib_data=mx.io.NDArrayIter(io["calib"], batch_size=2),
                   num_calib_examples=8, quantize_granularity=granularity, label_names=None)
    return quantize_model_mkldnn(sym, args, auxs, **{**options, **kwargs}), io


def test_float_fusion_is_mxnets_partition():
    sym, _, _ = float_model()
    want = mx.sym.load(str(FIXTURES / "qnet_fp32_mkldnn-symbol.json"))
    assert nodes(fuse_float(sym)) == nodes(want)


@pytest.mark.parametrize("backend", ["MKLDNN_QUANTIZE", "DNNL_QUANTIZE"])
def test_the_quantize_backend_on_a_float_graph_is_mxnets_partition(backend):
    sym, _, _ = float_model()
    before = sym.tojson()
    want = mx.sym.load(str(FIXTURES / "qnet_fp32_mkldnn-symbol.json"))
    assert backend in mx.subgraph.list_backends()
    assert nodes(sym.get_backend_symbol(backend)) == nodes(want)
    assert sym.tojson() == before


def test_mxnets_recipe_with_the_quantize_backend_is_quantize_model_mkldnn():
    """MXNet 1.9.1's quantize_model_mkldnn is quantize_model between two passes of the
    MKLDNN_QUANTIZE backend; a user who writes those steps gets its graph."""
    (want, wargs, _), io = quantize("naive")
    sym, args, auxs = float_model()
    qsym, qargs, _ = quantize_model(
        sym.get_backend_symbol("MKLDNN_QUANTIZE"), args, auxs, calib_mode="naive",
        quantized_dtype="auto", calib_data=mx.io.NDArrayIter(io["calib"], batch_size=2),
        num_calib_examples=8, label_names=None)
    assert nodes(qsym.get_backend_symbol("MKLDNN_QUANTIZE")) == nodes(want)
    assert sorted(qargs) == sorted(wargs)


def test_the_quantize_backend_at_bind_fuses_for_inference_only():
    sym, args, auxs = float_model()
    with np.load(FIXTURES / "qnet_naive-io.npz") as npz:
        data = npz["data"]
    plain = forward(sym, args, auxs, data)
    with subgraph_backend("MKLDNN_QUANTIZE"):
        np.testing.assert_allclose(forward(sym, args, auxs, data), plain, rtol=1e-5, atol=1e-5)
        with pytest.warns(UserWarning, match="inference-only"):
            ex = sym.simple_bind(mx.cpu(), data=data.shape)
    assert "_sg_mkldnn_conv" not in ex.debug_str()


@pytest.mark.parametrize("run", sorted(RUNS))
def test_quantize_model_mkldnn_is_mxnets(run, tmp_path):
    (qsym, qargs, qauxs), io = quantize(run)
    want, wargs, wauxs = mx.model.load_checkpoint(str(FIXTURES / f"qnet_{run}"), 0)
    got_nodes, want_nodes = nodes(qsym), nodes(want)
    assert [n["name"] for n in got_nodes] == [n["name"] for n in want_nodes]
    for got, expected in zip(got_nodes, want_nodes, strict=True):
        # Calibrated ranges: minimx's float fused convolution runs BatchNorm after the
        # convolution, MXNet's oneDNN folds it into the weights: a last-digit difference.
        for key in ("min_calib_range", "max_calib_range"):
            if key in expected.get("attrs", {}):
                mxnets = float(expected["attrs"].pop(key))
                assert float(got["attrs"].pop(key)) == pytest.approx(mxnets, rel=1e-6, abs=2e-6)
        assert got == expected, got["name"]
    assert sorted(qargs) == sorted(wargs) and sorted(qauxs) == sorted(wauxs)
    for name, value in wargs.items():
        assert qargs[name].dtype == value.dtype, name
        np.testing.assert_array_equal(qargs[name].asnumpy(), value.asnumpy(), err_msg=name)
    # With MXNet's ranges, minimx's parameters give MXNet's outputs exactly ...
    np.testing.assert_array_equal(forward(want, qargs, qauxs, io["data"]), io["output"])
    out = forward(qsym, qargs, qauxs, io["data"])
    if run == "none":
        np.testing.assert_array_equal(out, io["output"])
    else:   # ... with its own, scales move in their last bits: outputs by a few ulps
        np.testing.assert_allclose(out, io["output"], rtol=0, atol=1e-6 * 10)
    # saved and loaded again, it gives the same outputs
    mx.model.save_checkpoint(str(tmp_path / "q"), 0, qsym, qargs, qauxs)
    again = mx.model.load_checkpoint(str(tmp_path / "q"), 0)
    np.testing.assert_array_equal(forward(*again, io["data"]), out)


def test_entropy_calibration_logs_each_layer(caplog):
    logger = logging.getLogger("quantize-test")
    with caplog.at_level(logging.INFO, logger="quantize-test"):
        (qsym, qargs, qauxs), io = quantize("naive", calib_mode="entropy", logger=logger)
    attrs = {n["name"]: n.get("attrs", {}) for n in nodes(qsym)}
    fc = attrs["quantized_sg_mkldnn_fully_connected_eltwise_0"]
    assert float(fc["min_calib_range"]) == 0.0 and float(fc["max_calib_range"]) > 0
    data = attrs["data_quantize"]    # int8 data: a symmetric threshold
    assert float(data["min_calib_range"]) == -float(data["max_calib_range"])
    assert "Quantizing symbol" in caplog.text and "sg_mkldnn_conv_bn_act_0_output" in caplog.text
    out = forward(qsym, qargs, qauxs, io["data"])
    assert np.abs(out - io["fp32_output"]).max() < 0.1 * np.abs(io["fp32_output"]).max()


def test_excluded_layer_stays_float():
    (qsym, qargs, qauxs), io = quantize("naive", excluded_sym_names=["conv0"])
    ops = {n["name"]: n["op"] for n in nodes(qsym)}
    assert ops["sg_mkldnn_conv_bn_act_0"] == "_sg_mkldnn_conv"
    assert "quantized_sg_mkldnn_conv_bn_act_0" not in ops
    assert ops["sg_mkldnn_conv_bn_act_0_output_quantize"] == "_contrib_quantize_v2"
    out = forward(qsym, qargs, qauxs, io["data"])
    assert np.abs(out - io["fp32_output"]).max() < 0.1 * np.abs(io["fp32_output"]).max()


def test_plain_quantize_model_runs_and_is_mxnets_graph():
    """The sums are quantized to int32 and requantized after (MXNet's FNeedRequantize),
    where quantize_model_mkldnn folds the requantize back."""
    sym, args, auxs = float_model()
    with np.load(FIXTURES / "qnet_naive-io.npz") as npz:
        calib = npz["calib"]
    # uint8 throughout: MXNet's oneDNN quantized convolution takes no int8 data. A
    # quantized BatchNorm writes int8 (as MXNet's), so the BatchNorms stay float.
    qsym, qargs, qauxs = quantize_model(sym, args, auxs, calib_mode="naive",
                                        calib_data=[calib[:4], calib[4:]],
                                        quantized_dtype="uint8", label_names=None,
                                        excluded_op_names=["BatchNorm"])
    want = json.loads((FIXTURES.parent / "quantized_plain" / "qnet_plain-symbol.json")
                      .read_text())["nodes"]
    assert [(n["name"], n["op"], n["inputs"]) for n in nodes(qsym)] == \
        [(n["name"], n["op"], n["inputs"]) for n in want]
    for mine, mxnets in zip(nodes(qsym), want, strict=True):
        ranges = [k for k in mine.get("attrs", {}) if k.endswith("calib_range")]
        assert ranges == [k for k in mxnets.get("attrs", {}) if k.endswith("calib_range")]
        assert {k: v for k, v in mine.get("attrs", {}).items() if k not in ranges} == \
            {k: v for k, v in mxnets.get("attrs", {}).items() if k not in ranges}
        assert [float(mine["attrs"][k]) for k in ranges] == pytest.approx(
            [float(mxnets["attrs"][k]) for k in ranges], rel=1e-5, abs=1e-6)
    ops = {n["op"] for n in nodes(qsym)}
    assert {"_contrib_quantized_conv", "_contrib_quantized_fully_connected",
            "_contrib_requantize", "_contrib_dequantize"} <= ops
    assert "fc0_weight_quantize" in qargs and qargs["fc0_weight_quantize"].dtype == np.int8
    assert "conv0_weight_quantize" in qargs and "conv0_weight" not in qargs
    out = forward(qsym, qargs, qauxs, calib[:2])
    assert out.shape == (2, 5) and np.isfinite(out).all()


@pytest.mark.parametrize("kwargs, message", [
    (dict(excluded_sym_names=["conv9"]), r"excluded_sym_names \['conv9'\] name no operator"),
    (dict(excluded_op_names=["Softmax"]), r"excluded_op_names \['Softmax'\] name no operator"),
    (dict(calib_data=None), "calib_data must be given when calib_mode='naive'"),
    (dict(quantized_dtype="int4"), "unknown quantized_dtype 'int4'"),
    (dict(quantize_mode="half"), "unknown quantize_mode 'half'"),
    (dict(quantize_granularity="row-wise"), "unknown quantize_granularity 'row-wise'"),
    (dict(calib_mode="kl"), "unknown calib_mode 'kl'"),
    (dict(num_calib_examples=0), "num_calib_examples must be a positive integer or None, got 0"),
    (dict(data_names=("x",)), "data_names x are not inputs of the symbol"),
    (dict(ctx="cpu"), "ctx must be one Context, got 'cpu'"),
    # A bare string was read letter by letter (MXNet asks for a list).
    (dict(excluded_sym_names="conv0"), r"excluded_sym_names must be a list of names, got "
                                       r"the string 'conv0' \(write \['conv0'\]\)"),
    (dict(excluded_op_names="Pooling"), "excluded_op_names must be a list of names"),
])
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(MinimxError, match=message):
        quantize("naive", **kwargs)


@pytest.mark.parametrize("dtype, calib_mode, excluded, layer", [
    ("int8", "naive", ["BatchNorm"], "quantized_conv0"),
    ("auto", "none", ["BatchNorm"], "quantized_conv0"),  # uncalibrated 'auto' is int8
    ("uint8", "naive", [], "quantized_conv1"),  # after a quantized BatchNorm (int8 out)
])
def test_plain_quantize_model_refuses_int8_data_into_a_convolution(dtype, calib_mode,
                                                                   excluded, layer):
    """MXNet's CPU _contrib_quantized_conv takes uint8 only and fails at the first
    forward; minimx says so when quantizing."""
    sym, args, auxs = float_model()
    with np.load(FIXTURES / "qnet_naive-io.npz") as npz:
        calib = npz["calib"]
    with pytest.raises(DTypeError, match=rf"quantization: {layer} "
                                         r"\(_contrib_quantized_conv\): data is int8: MXNet's "
                                         r"oneDNN quantized convolution takes uint8.*"
                                         r"use quantize_model_mkldnn"):
        quantize_model(sym, args, auxs, calib_mode=calib_mode, quantized_dtype=dtype,
                       calib_data=None if calib_mode == "none" else [calib[:4]],
                       label_names=None, excluded_op_names=excluded)


def test_calib_mode_none_refuses_a_quantized_batch_norm():
    """A standalone BatchNorm quantized needs a calibrated range: MXNet's fails at the
    first forward (LOG(FATAL)); minimx when quantizing, naming the node."""
    sym, args, auxs = float_model()
    with pytest.raises(MinimxError, match=r"calib_mode='none' leaves quantized_bn0, "
                                          r"quantized_bn2 \(_contrib_quantized_batch_norm\)"):
        quantize_model(sym, args, auxs, calib_mode="none", quantized_dtype="uint8",
                       label_names=None)




def test_an_excluded_op_fused_into_a_quantized_node_is_named_in_a_warning():
    """MXNet matches excluded_op_names against the fused node's own op, so a
    Convolution inside _sg_mkldnn_conv is quantized with it; minimx does the
    same, and says so."""
    sym, args, auxs = float_model()
    call = {"calib_mode": "naive", "calib_data": _calib_iter(), "quantized_dtype": "auto",
            "label_names": None}
    plain = quantize_model_mkldnn(sym, args, auxs, **call)[0].tojson()
    with pytest.warns(UserWarning, match=r"\(Convolution in _sg_mkldnn_conv\); as in MXNet, "
                                         r"exclude the fused op or the layers by name"):
        excluded = quantize_model_mkldnn(sym, args, auxs, excluded_op_names=["Convolution"],
                                         **call)[0].tojson()
    assert excluded == plain
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = quantize_model_mkldnn(sym, args, auxs, excluded_op_names=["_sg_mkldnn_conv"],
                                     **call)[0]
    assert not any(n["op"] == "_sg_mkldnn_conv" and n.get("attrs", {}).get("quantized") == "true"
                   for n in nodes(kept))

@pytest.mark.parametrize("missing", ["conv1_bias", "bn0_moving_var"])
def test_calibration_refuses_a_missing_parameter(missing):
    """MXNet's calibration refuses it in set_params; run without it, it would
    calibrate on zeros in its place."""
    sym, args, auxs = float_model()
    assert missing in sym.list_arguments() + sym.list_auxiliary_states()
    args = {k: v for k, v in args.items() if k != missing}
    auxs = {k: v for k, v in auxs.items() if k != missing}
    for quantize_fn in (quantize_model, quantize_model_mkldnn):
        with pytest.raises(MinimxError, match=f"calibration needs every parameter, and "
                                              f"{missing} are in neither"):
            quantize_fn(sym, args, auxs, calib_mode="naive", calib_data=_calib_iter(),
                        quantized_dtype="auto", label_names=None)

def _calib_iter(change=None):
    with np.load(FIXTURES / "qnet_naive-io.npz") as npz:
        calib = npz["calib"].copy()
    batches = [calib[:4], calib[4:8]]
    if change is not None:
        batches[1] = change(batches[1])
    return batches


@pytest.mark.parametrize("calib_data, error, message", [
    (_calib_iter(lambda b: b[:, :, :4]), ShapeError,
     r"calibration batch 1: data has shape \(4, 3, 4, 8\), but the symbol is bound for data "
     r"of shape \(4, 3, 8, 8\)"),
    (_calib_iter(lambda b: np.where(np.arange(b.size).reshape(b.shape) < 3, np.nan, b)),
     MinimxError, "calibration batch 1: data has 3 NaN or infinite values"),
    (_calib_iter(lambda b: np.full_like(b, np.inf)), MinimxError,
     "calibration batch 1: data has 768 NaN or infinite values"),
    ([], MinimxError, "calibration: calib_data gave no batches"),
    ([{"x": np.zeros((4, 3, 8, 8), np.float32)}], MinimxError,
     "calibration batch 0: has no data"),
])
def test_bad_calibration_data_is_refused(calib_data, error, message):
    sym, args, auxs = float_model()
    for quantize_fn in (quantize_model, quantize_model_mkldnn):
        with pytest.raises(error, match=message):
            quantize_fn(sym, args, auxs, calib_mode="entropy", calib_data=calib_data,
                        quantized_dtype="auto", label_names=None)


def test_a_head_a_float_operator_also_reads_is_dequantized_once():
    """conv -> sigmoid, both outputs: MXNet 1.9.1 dequantizes the sigmoid's
    dequantized input again for the second head (its bind then fails on the
    ranges' shapes); minimx gives that head the one dequantize."""
    conv = mx.sym.Convolution(mx.sym.var("data"), kernel=(1, 1), num_filter=2, name="conv")
    sym = mx.sym.Group([mx.sym.Activation(conv, act_type="sigmoid", name="sig"), conv])
    rng = np.random.default_rng(0)
    args = {"conv_weight": mx.nd.array(rng.uniform(0.5, 1.5, (2, 2, 1, 1))),
            "conv_bias": mx.nd.array(rng.uniform(0.5, 1.5, (2,)))}
    calib = rng.uniform(-1, 1, (2, 2, 3, 3)).astype(np.float32)
    qsym, qargs, _ = quantize_model_mkldnn(
        sym, args, {}, ctx=mx.cpu(), calib_mode="naive", quantized_dtype="auto",
        calib_data=mx.io.NDArrayIter(calib, batch_size=1), label_names=None)
    assert [n["op"] for n in nodes(qsym) if n["op"] != "null"] == [
        "_contrib_quantize_v2", "_sg_mkldnn_conv", "_contrib_dequantize", "Activation"]
    data = calib[:1]
    got = qsym.bind(mx.cpu(), {**qargs, "data": mx.nd.array(data)}, grad_req="null").forward()
    want = sym.bind(mx.cpu(), {**args, "data": mx.nd.array(data)}, grad_req="null").forward()
    for g, w in zip(got, want, strict=True):   # one int8 step of the conv's range
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), atol=0.02)


def _two_input_model():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    sym = mx.sym.elemwise_add(mx.sym.FullyConnected(a, num_hidden=2, name="fa"),
                              mx.sym.FullyConnected(b, num_hidden=2, name="fb"), name="add")
    rng = np.random.default_rng(0)
    args = {n: mx.nd.array(rng.uniform(-1, 1, s).astype(np.float32)) for n, s in
            [("fa_weight", (2, 3)), ("fa_bias", (2,)), ("fb_weight", (2, 3)), ("fb_bias", (2,))]}
    return sym, args


def _input_ranges(qsym):
    return {n["name"]: (n["attrs"]["min_calib_range"], n["attrs"]["max_calib_range"])
            for n in nodes(qsym) if n["op"] == "_contrib_quantize_v2"}


def test_a_data_iter_is_read_by_the_names_it_provides():
    """NDArrayIter provides its inputs sorted by name (a, b); with data_names
    ('b', 'a') minimx fed a's batches to b. MXNet 1.9.1's ranges."""
    sym, args = _two_input_model()
    rng = np.random.default_rng(1)
    data = {"a": rng.uniform(0, 1, (4, 3)).astype(np.float32),
            "b": rng.uniform(5, 6, (4, 3)).astype(np.float32)}
    qsym, _, _ = quantize_model(sym, args, {}, data_names=("b", "a"), label_names=None,
                                calib_mode="naive", quantized_dtype="uint8",
                                calib_data=mx.io.NDArrayIter(data, batch_size=2))
    ranges = _input_ranges(qsym)
    assert float(ranges["a_quantize"][1]) < 1 and float(ranges["b_quantize"][0]) > 5
    misnamed = mx.io.NDArrayIter({"x": data["a"], "b": data["b"]}, batch_size=2)
    with pytest.raises(MinimxError, match=r"calibration batch 0: has no a of data_names "
                                          r"b, a \(it has b, x\)"):
        quantize_model(sym, args, {}, data_names=("b", "a"), label_names=None,
                       calib_mode="naive", calib_data=misnamed)


def test_calib_mode_none_may_be_given_as_none():
    """MXNet 1.9.1 takes calib_mode=None for 'none' (and then needs no data)."""
    sym, args, auxs = float_model()
    for quantize_fn in (quantize_model, quantize_model_mkldnn):
        qsym, _, _ = quantize_fn(sym, args, auxs, calib_mode=None, quantized_dtype="uint8",
                                 excluded_op_names=["BatchNorm"], label_names=None)
        want, _, _ = quantize_fn(sym, args, auxs, calib_mode="none", quantized_dtype="uint8",
                                 excluded_op_names=["BatchNorm"], label_names=None)
        assert qsym.tojson() == want.tojson()


def _relu_chain() -> mx.sym.Symbol:
    """conv -> relu -> conv -> relu -> conv: each relu's output feeds a quantized
    convolution as uint8."""
    y = mx.sym.Variable("data")
    for i, (kernel, filters) in enumerate([(3, 16), (3, 16), (1, 8)]):
        y = mx.sym.Convolution(y, kernel=(kernel, kernel), pad=(kernel // 2,) * 2,
                               num_filter=filters, name=f"c{i}")
        if i < 2:
            y = mx.sym.Activation(y, act_type="relu", name=f"r{i}")
    return y


def test_entropy_int8_gives_a_uint8_output_a_range_from_zero():
    """Entropy calibration with quantized_dtype='int8' gives every layer a symmetric
    range, as MXNet's; a convolution + relu still writes uint8, and a uint8 range
    below zero is one the next quantized convolution refuses (MXNet 1.9.1 stops
    there with "Expect int8 when data_min < 0.0"). Its range starts at zero
    instead: the integers are the same (a uint8 output's scale is 255 over the
    larger bound either way) and the model runs, on numpy and in DNNL alike."""
    sym = _relu_chain()
    rng = np.random.default_rng(0)
    shape = (2, 3, 16, 16)
    args = {n: mx.nd.array(rng.standard_normal(s).astype(np.float32) * 0.3)
            for n, s in zip(sym.list_arguments(), sym.infer_shape(data=shape)[0], strict=True)
            if n != "data"}
    calib = mx.io.NDArrayIter(rng.uniform(-1, 1, (8, *shape[1:])).astype(np.float32),
                              batch_size=2)
    qsym, qargs, qauxs = quantize_model_mkldnn(
        sym, args, {}, ctx=mx.cpu(), calib_mode="entropy", calib_data=calib,
        num_calib_examples=8, quantized_dtype="int8", label_names=None)
    convs = [n for n in nodes(qsym) if n["op"] == "_sg_mkldnn_conv"]
    ranges = [(float(n["attrs"]["min_calib_range"]), float(n["attrs"]["max_calib_range"]))
              for n in convs]
    assert [lo == 0 for lo, _ in ranges] == [True, True, False]   # the last is linear: int8
    assert all(hi > 0 for _, hi in ranges) and ranges[2][0] == -ranges[2][1]
    data = rng.uniform(-1, 1, shape).astype(np.float32)
    want = forward(qsym, qargs, qauxs, data)
    np.testing.assert_allclose(want, forward(sym, args, {}, data), atol=0.1 * np.abs(want).max())
    require_onednn()
    got = forward(mx.subgraph.partition(qsym, "DNNL", shapes={"data": shape}), qargs, qauxs,
                  data)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", [None, "DNNL"])
def test_uint8_data_from_below_zero_is_refused_naming_the_convolution(backend):
    """A checkpoint whose uint8 output has a range from below zero (as MXNet 1.9.1's
    int8 + entropy calibration writes one) is refused where it is read, naming the
    reading node, on numpy and in DNNL."""
    if backend:
        require_onednn()
    sym, shape = _relu_chain(), (2, 3, 16, 16)
    rng = np.random.default_rng(1)
    args = {n: mx.nd.array(rng.standard_normal(s).astype(np.float32) * 0.3)
            for n, s in zip(sym.list_arguments(), sym.infer_shape(data=shape)[0], strict=True)
            if n != "data"}
    qsym, qargs, qauxs = quantize_model_mkldnn(
        sym, args, {}, ctx=mx.cpu(), calib_mode="naive", num_calib_examples=2,
        calib_data=[rng.uniform(-1, 1, shape).astype(np.float32)], label_names=None)
    graph = json.loads(qsym.tojson())
    first = next(n for n in graph["nodes"] if n["op"] == "_sg_mkldnn_conv")
    first["attrs"]["min_calib_range"] = "-3.000000"
    bad = mx.sym.load_json(json.dumps(graph))
    if backend:
        bad = mx.subgraph.partition(bad, backend, shapes={"data": shape})
    with pytest.raises(MinimxError, match=r"quantized_sg_mkldnn_conv_act_1 \(_sg_mkldnn_conv\)"
                                             r": data is uint8 with min -3\.0"):
        forward(bad, qargs, qauxs, rng.uniform(-1, 1, shape).astype(np.float32))


def test_the_star_import_gives_what_mxnets_examples_use():
    # MXNet's quantization examples call cpu() (and save with nd_save) after
    # `from mxnet.contrib.quantization import *`, whose module has no __all__
    names: dict = {}
    exec("from minimx.contrib.quantization import *", names)  # noqa: S102
    assert names["cpu"]() == mx.cpu() and names["nd_save"] is mx.nd.save
    assert names["quantize_model"] is mx.contrib.quantization.quantize_model
    assert names["Module"] is mx.mod.Module and names["DataIter"] is mx.io.DataIter
