"""The two-step flow, quantize_graph / a forward run feeding the collector / calib_graph,
against MXNet 1.9.1's run of it (the quantize_graph fixtures: MXNet's Module with
``collector.collect`` as its executor's monitor callback) and against quantize_model."""
import json
import logging
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError
from minimx.contrib.quantization import (
    _get_optimal_threshold,
    _get_optimal_thresholds,
    _LayerHistogramCollector,
    _LayerOutputMinMaxCollector,
    calib_graph,
    combine_histogram,
    quantize_graph,
    quantize_model,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MXNET = FIXTURES / "quantize_graph"
COLLECTORS = json.loads((MXNET / "collectors.json").read_text())
CALIBNET = {"naive": "auto", "entropy": "int8", "customize": "uint8"}   # mode: dtype
# MXNet's CPU quantized convolution refuses data below 0 (minimx: at calib_graph).
FLOAT_CONV = {"excluded_sym_names": ["conv0"]}


@pytest.fixture(autouse=True)
def no_subgraph_backend(monkeypatch):
    # Calibration watches every layer's output; a backend would fuse some out of sight.
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")


def calibnet():
    sym, args, auxs = mx.model.load_checkpoint(str(FIXTURES / "quantization" / "calibnet"), 0)
    with np.load(FIXTURES / "quantization" / "calibnet-batches.npz") as npz:
        batches = np.concatenate([npz[f"arr_{i}"] for i in range(3)])
    return sym, args, auxs, batches


def qnet():
    qnet_dir = FIXTURES / "quantized_net"
    sym = mx.sym.load(str(qnet_dir / "qnet-symbol.json"))
    _, args, auxs = mx.model.load_checkpoint(str(qnet_dir / "qnet_fp32_mkldnn"), 0)
    with np.load(qnet_dir / "qnet_naive-io.npz") as npz:
        return sym, args, auxs, npz["calib"]


class RecordingCollector:
    """A user's ``customize`` collector: the names it is shown, min/max of some."""

    def __init__(self, include_layer):
        self.include_layer, self.seen, self.min_max_dict = set(include_layer), [], {}

    def collect(self, name, arr):
        self.seen.append(name)
        if name in self.include_layer:
            low, high = arr.min().asscalar(), arr.max().asscalar()
            old = self.min_max_dict.get(name, (low, high))
            self.min_max_dict[name] = (min(old[0], low), max(old[1], high))


def feed(sym, args, auxs, batches, collector, batch_size=4):
    """MXNet's documented middle step: the float model run by a Module over a DataIter."""
    mod = mx.mod.Module(sym, data_names=("data",), label_names=None)
    mod.bind(data_shapes=[("data", (batch_size, *batches.shape[1:]))], for_training=False)
    mod.set_params(args, auxs)
    mod._exec_group.execs[0].set_monitor_callback(collector.collect, monitor_all=True)
    for batch in mx.io.NDArrayIter(batches, batch_size=batch_size):
        mod.forward(batch, is_train=False)
    mx.nd.waitall()


def two_step(sym, args, auxs, batches, calib_mode, quantized_dtype, collector=None, **options):
    qsym, qargs, qauxs, collector = quantize_graph(
        sym, args, auxs, calib_mode=calib_mode, quantized_dtype=quantized_dtype,
        LayerOutputCollector=collector, **options)
    feed(sym, args, auxs, batches, collector)
    return calib_graph(qsym, args, auxs, collector, calib_mode, quantized_dtype), collector


def nodes(sym):
    return json.loads(sym.tojson())["nodes"]


def assert_mxnets(got, want):
    """The same graph node by node; calibrated ranges up to float32 rounding (MXNet's
    convolution sums in another order)."""
    (qsym, qargs, _), (wsym, wargs, _) = got, want
    assert [n["name"] for n in nodes(qsym)] == [n["name"] for n in nodes(wsym)]
    for mine, mxnets in zip(nodes(qsym), nodes(wsym), strict=True):
        mine_attrs, mxnet_attrs = dict(mine.get("attrs", {})), dict(mxnets.get("attrs", {}))
        for key in ("min_calib_range", "max_calib_range"):
            if key in mxnet_attrs:
                assert float(mine_attrs.pop(key)) == pytest.approx(
                    float(mxnet_attrs.pop(key)), rel=1e-6, abs=1e-6), mine["name"]
        assert {**mine, "attrs": mine_attrs} == {**mxnets, "attrs": mxnet_attrs}
    assert sorted(qargs) == sorted(wargs)
    for name, value in wargs.items():
        assert qargs[name].dtype == value.dtype, name
        np.testing.assert_array_equal(qargs[name].asnumpy(), value.asnumpy(), err_msg=name)


def assert_same_model(got, want):
    assert got[0].tojson() == want[0].tojson()
    for mine, theirs in zip(got[1:], want[1:], strict=True):
        assert sorted(mine) == sorted(theirs)
        for name in mine:
            np.testing.assert_array_equal(mine[name].asnumpy(), theirs[name].asnumpy())


@pytest.mark.parametrize("mode", sorted(CALIBNET))
def test_two_step_flow_is_mxnets(mode):
    sym, args, auxs, batches = calibnet()
    user = RecordingCollector(COLLECTORS["naive_include_layer"]) if mode == "customize" else None
    got, collector = two_step(sym, args, auxs, batches, mode, CALIBNET[mode], user,
                              **FLOAT_CONV)
    assert_mxnets(got, mx.model.load_checkpoint(str(MXNET / f"calibnet_{mode}"), 0))
    if mode == "customize":   # a user's collector is shown what MXNet's monitor shows it
        assert collector.seen == COLLECTORS["customize_seen"] * 3
    else:
        assert collector.include_layer == COLLECTORS[f"{mode}_include_layer"]
        assert type(collector).__name__ == {"naive": "_LayerOutputMinMaxCollector",
                                            "entropy": "_LayerHistogramCollector"}[mode]


def test_two_step_flow_on_a_residual_net_is_mxnets_and_quantize_models():
    sym, args, auxs, batches = qnet()
    options = dict(quantize_mode="smart", excluded_op_names=["BatchNorm"])
    got, _ = two_step(sym, args, auxs, batches, "naive", "uint8", **options)
    assert_mxnets(got, mx.model.load_checkpoint(str(MXNET / "qnet_plain"), 0))
    assert_same_model(got, quantize_model(
        sym, args, auxs, calib_mode="naive", quantized_dtype="uint8", label_names=None,
        calib_data=mx.io.NDArrayIter(batches, batch_size=4), **options))


@pytest.mark.parametrize("mode, dtype", [("naive", "auto"), ("entropy", "int8"),
                                         ("entropy", "auto")])
def test_two_step_flow_gives_quantize_models_result(mode, dtype):
    sym, args, auxs, batches = calibnet()
    got, _ = two_step(sym, args, auxs, batches, mode, dtype, quantize_mode="smart",
                      **FLOAT_CONV)
    assert_same_model(got, quantize_model(sym, args, auxs, calib_mode=mode,
                                          quantized_dtype=dtype, label_names=None,
                                          calib_data=mx.io.NDArrayIter(batches, batch_size=4),
                                          **FLOAT_CONV))


def test_calib_mode_none_gives_the_final_graph_and_no_collector():
    sym, args, auxs, _ = calibnet()
    qsym, qargs, qauxs, collector = quantize_graph(sym, args, auxs, calib_mode="none",
                                                   quantize_mode="smart", **FLOAT_CONV)
    assert collector is None
    assert_same_model((qsym, qargs, qauxs), quantize_model(
        sym, args, auxs, calib_mode="none", label_names=None, **FLOAT_CONV))


def test_a_collector_fed_by_an_executor_directly():
    sym, args, auxs, batches = calibnet()
    qsym, _, _, collector = quantize_graph(sym, args, auxs, calib_mode="naive",
                                           quantized_dtype="auto", **FLOAT_CONV)
    exe = sym.simple_bind(mx.cpu(), grad_req="null", data=(4, 2, 6, 6))
    exe.copy_params_from(args, auxs)
    exe.set_monitor_callback(collector.collect, monitor_all=True)
    for batch in np.split(batches, 3):
        exe.forward(is_train=False, data=batch)
    assert_mxnets(calib_graph(qsym, args, auxs, collector, "naive", "auto", logger=None)[:2]
                  + ({},), mx.model.load_checkpoint(str(MXNET / "calibnet_naive"), 0))


def test_calib_graph_leaves_its_inputs_as_they_were():
    """MXNet's _get_optimal_thresholds empties hist_dict; minimx's calib_graph may run again."""
    sym, args, auxs, batches = calibnet()
    qsym, _, _, collector = quantize_graph(sym, args, auxs, calib_mode="entropy",
                                           **FLOAT_CONV)
    before = qsym.tojson()
    feed(sym, args, auxs, batches, collector)
    first = calib_graph(qsym, args, auxs, collector)
    assert qsym.tojson() == before and len(collector.hist_dict) == 2
    assert_same_model(calib_graph(qsym, args, auxs, collector), first)


def test_logging_follows_mxnets_steps(caplog):
    sym, args, auxs, batches = calibnet()
    logger = logging.getLogger("quantize-graph-test")
    with caplog.at_level(logging.INFO, logger="quantize-graph-test"):
        qsym, _, _, collector = quantize_graph(sym, args, auxs, calib_mode="entropy",
                                               logger=logger, **FLOAT_CONV)
        feed(sym, args, auxs, batches, collector)
        calib_graph(qsym, args, auxs, collector, logger=logger)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[:2] == ["Quantizing graph", "Collector created, please use "
                         "set_monitor_callback to collect calibration information."]
    assert "Calculating optimal thresholds for quantization" in lines
    assert [line.split(",")[0] for line in lines if line.startswith("layer=")] == \
        ["layer=conv0_output", "layer=fc0_output"]


def test_combine_histogram_and_thresholds_are_mxnets():
    """The data layer's histogram is the batches': MXNet's merged one and its thresholds
    are in the quantization fixtures."""
    _, _, _, batches = calibnet()
    first = batches[:4]
    th = max(abs(first.min()), abs(first.max()))
    hist = (*np.histogram(first, bins=8001, range=(-float(th), float(th))), first.min(),
            first.max(), th)
    for batch in (batches[4:8], batches[8:]):
        hist = combine_histogram(hist, batch, batch.min(), batch.max(),
                                 max(abs(batch.min()), abs(batch.max())))
    with np.load(FIXTURES / "quantization" / "calibnet-histograms.npz") as npz:
        np.testing.assert_array_equal(hist[0], npz["data:counts"])
        assert float(hist[4]) == pytest.approx(float(npz["data:threshold"]), rel=1e-6)
    ranges = json.loads((FIXTURES / "quantization" / "calibnet-ranges.json").read_text())
    want = ranges["entropy-int8-None"]["ranges"]["data"]
    assert _get_optimal_thresholds({"data": hist}, "int8")["data"] == pytest.approx(want,
                                                                                   rel=1e-6)
    low, high, threshold, _ = _get_optimal_threshold(hist, "int8")
    assert (low, high, threshold) == pytest.approx((batches.min(), batches.max(), want[1]),
                                                   rel=1e-6)


def _calibrated(calib_mode="naive"):
    sym, args, auxs, batches = calibnet()
    qsym, qargs, qauxs, collector = quantize_graph(sym, args, auxs, calib_mode=calib_mode,
                                                   **FLOAT_CONV)
    return sym, args, auxs, batches, qsym, qargs, collector


@pytest.mark.parametrize("kwargs, message", [
    (dict(calib_mode="kl"), "quantize_graph: unknown calib_mode 'kl', expected one of none, "
                            "naive, entropy, customize"),
    (dict(calib_mode="customize"), "calib_mode='customize' needs LayerOutputCollector"),
    (dict(ctx="cpu"), "ctx must be one Context, got 'cpu'"),
    (dict(excluded_sym_names="conv0"), "excluded_sym_names must be a list of names"),
    (dict(excluded_op_names=["Softmax"]), r"excluded_op_names \['Softmax'\] name no operator"),
    (dict(quantized_dtype="int4"), "unknown quantized_dtype 'int4'"),
    (dict(quantize_granularity="row-wise"), "unknown quantize_granularity 'row-wise'"),
])
def test_quantize_graph_refuses_bad_arguments(kwargs, message):
    sym, args, auxs, _ = calibnet()
    with pytest.raises(MinimxError, match=message):
        quantize_graph(sym, args, auxs, **kwargs)


class NoRanges:
    def collect(self, name, arr):
        pass


@pytest.mark.parametrize("change, message", [
    (dict(calib_mode="none"), "calib_graph: calib_mode must be naive, entropy or customize, "
                              "got 'none'"),
    (dict(calib_mode=None), "must be naive, entropy or customize, got None"),
    (dict(quantized_dtype="int4"), "calib_graph: unknown quantized_dtype 'int4'"),
    (dict(calib_mode="entropy"), "calib_mode='entropy' reads the collector's hist_dict, which "
                                 "_LayerOutputMinMaxCollector does not have"),
    (dict(calib_mode="customize", collector=NoRanges()),
     "reads the collector's min_max_dict, which NoRanges does not have"),
    (dict(collector="fresh"), r"the collector has no range for conv0_output, fc0_output \(read "
                              r"by conv0_output_quantize, requantize_fc0\); run the float "
                              r"model .*MINIMX_SUBGRAPH_BACKEND=NONE"),
    (dict(collector="bad range"), r"the range of fc0_output must be \(min, max\), two finite "
                                  r"numbers with min <= max; the collector has \(2.0, 1.0\)"),
    (dict(arg_params="quantized"), "fc0_weight_quantize is fc0_weight quantized, and "
                                   "arg_params has no fc0_weight"),
])
def test_calib_graph_refuses_bad_arguments(change, message):
    sym, args, auxs, batches, qsym, qargs, collector = _calibrated()
    feed(sym, args, auxs, batches, collector)
    call = {"arg_params": args, "collector": collector, "calib_mode": "naive",
            "quantized_dtype": "int8", **change}
    if call["collector"] == "fresh":
        call["collector"] = quantize_graph(sym, args, auxs, calib_mode="naive",
                                           **FLOAT_CONV)[3]
    elif call["collector"] == "bad range":
        collector.min_max_dict["fc0_output"] = (2.0, 1.0)
        call["collector"] = collector
    if call["arg_params"] == "quantized":
        call["arg_params"] = qargs
    with pytest.raises(MinimxError, match=message):
        calib_graph(qsym, call.pop("arg_params"), auxs, call.pop("collector"), **call)


def test_a_subgraph_backend_in_the_calibration_bind_is_named(monkeypatch):
    """MXNet's own trap (its MKLDNN backend fuses layers out of the monitor's sight and
    leaves them uncalibrated): minimx says which ranges are missing, and why."""
    sym, args, auxs, batches, qsym, _, collector = _calibrated()
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    feed(sym, args, auxs, batches, collector)
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    with pytest.raises(MinimxError, match="has no range for .*conv0_output"):
        calib_graph(qsym, args, auxs, collector, "naive")


@pytest.mark.parametrize("make, message", [
    (lambda: _LayerHistogramCollector(), "_LayerHistogramCollector: include_layer must list "
                                         "the layer names to collect"),
    (lambda: _LayerOutputMinMaxCollector("int8", include_layer="data"),
     "_LayerOutputMinMaxCollector: include_layer must list"),
    (lambda: combine_histogram(([1, 2], [0, 1, 2]), np.ones(3), 1, 1, 1),
     r"combine_histogram: a histogram is the tuple \(counts, edges, min, max, threshold\)"),
    (lambda: _get_optimal_threshold("hist", "int8"), "_get_optimal_threshold: a histogram is"),
])
def test_collector_pieces_refuse_bad_arguments(make, message):
    with pytest.raises(MinimxError, match=message):
        make()


def test_collectors_ignore_what_they_were_not_asked_for():
    collector = _LayerOutputMinMaxCollector("int8", include_layer=["fc0_output"])
    collector.collect("fc0_weight", mx.nd.array([-9.0, 9.0]))
    collector.collect("fc0_output", mx.nd.array([-1.0, 2.0]))
    collector.collect("fc0_output", np.array([0.5, 3.0], dtype=np.float32))
    assert collector.min_max_dict == {"fc0_output": (-1.0, 3.0)}
