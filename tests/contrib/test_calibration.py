"""collect_ranges on a conv-relu-fc net against MXNet 1.9.1's calibration of it."""
import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx import MinimxError, ShapeError
from minimx.contrib.quantization import HistogramCollector, collect_ranges, run_calibration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "quantization"
EXPECTED = json.loads((FIXTURES / "calibnet-ranges.json").read_text())
LAYERS = ["data", "conv0_output", "relu0_output", "fc0_output"]


@pytest.fixture(scope="module")
def net():
    sym, args, auxs = mx.model.load_checkpoint(str(FIXTURES / "calibnet"), 0)
    with np.load(FIXTURES / "calibnet-batches.npz") as npz:
        batches = [npz[f"arr_{i}"] for i in range(3)]
    return sym, args, auxs, batches


class StandInIter:
    """The DataIter protocol as MXNet's calibration uses it: reset(), batches with .data."""

    class Batch:
        def __init__(self, data):
            self.data = data

    def __init__(self, arrays):
        self.arrays, self.resets = arrays, 0

    def reset(self):
        self.resets += 1
        self.position = 0

    def __iter__(self):
        while self.position < len(self.arrays):
            self.position += 1
            yield self.Batch([mx.nd.array(self.arrays[self.position - 1])])


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_ranges_are_mxnets(key, net):
    sym, args, auxs, batches = net
    mode, dtype, limit = key.split("-")
    got = collect_ranges(sym, args, auxs, batches, mode, LAYERS, quantized_dtype=dtype,
                         num_calib_examples=None if limit == "None" else int(limit))
    want = EXPECTED[key]["ranges"]
    assert list(got) == LAYERS
    for name in LAYERS:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)


def test_examples_counted_as_mxnet_counts_them(net):
    sym, args, auxs, batches = net
    for limit, want in [(None, 12), (3, 4), (4, 4), (5, 8), (100, 12)]:
        collector = HistogramCollector(["data"])
        assert run_calibration(sym, args, auxs, batches, collector,
                               num_calib_examples=limit) == want


def test_histograms_merge_as_mxnets(net):
    sym, args, auxs, batches = net
    collector = HistogramCollector(LAYERS)
    run_calibration(sym, args, auxs, batches, collector)
    with np.load(FIXTURES / "calibnet-histograms.npz") as npz:
        for name in LAYERS:
            hist = collector.hist_dict[name]
            # The second batch widened these histograms beyond 8001 bins, not fc0's.
            assert (len(hist.counts) > 8001) == (name != "fc0_output")
            np.testing.assert_array_equal(hist.counts, npz[f"{name}:counts"])
            for field in ("min", "max", "threshold"):
                np.testing.assert_allclose(getattr(hist, field), npz[f"{name}:{field}"],
                                           rtol=1e-6, err_msg=f"{name} {field}")


def _forms(batches):
    labels = np.zeros(4, np.float32)
    return {
        "numpy": batches,
        "ndarray": [mx.nd.array(b) for b in batches],
        "dicts": [{"data": b, "label": labels} for b in batches],
        "pairs": [(b, labels) for b in batches],
        "generator": (b for b in batches),
        "data_iter": StandInIter(batches),
    }


@pytest.mark.parametrize("form", list(_forms([])))
def test_every_form_of_calibration_data_gives_the_same_ranges(form, net):
    sym, args, auxs, batches = net
    got = collect_ranges(sym, args, auxs, _forms(batches)[form], "naive", LAYERS)
    assert got == collect_ranges(sym, args, auxs, batches, "naive", LAYERS)
    for name, want in EXPECTED["naive-int8-None"]["ranges"].items():
        np.testing.assert_allclose(got[name], want, rtol=1e-6)


def test_a_data_iter_is_reset_first(net):
    sym, args, auxs, batches = net
    it = StandInIter(batches)
    first = collect_ranges(sym, args, auxs, it, "naive", LAYERS)
    assert collect_ranges(sym, args, auxs, it, "naive", LAYERS) == first
    assert it.resets == 2


def test_ndarray_iter(net):
    sym, args, auxs, batches = net
    it = mx.io.NDArrayIter(np.concatenate(batches), batch_size=4, shuffle=False)
    got = collect_ranges(sym, args, auxs, it, "naive", LAYERS, num_calib_examples=3)
    for name, want in EXPECTED["naive-int8-3"]["ranges"].items():
        np.testing.assert_allclose(got[name], want, rtol=1e-6)


def test_no_subgraph_backend_during_calibration(net, monkeypatch):
    sym, args, auxs, batches = net
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    got = collect_ranges(sym, args, auxs, batches, "naive", LAYERS)
    assert got == collect_ranges(sym, args, auxs, batches, "naive", LAYERS)
    assert list(got) == LAYERS  # a DNNL subgraph would have hidden conv0 and relu0
    assert os.environ["MINIMX_SUBGRAPH_BACKEND"] == "DNNL"


def test_logger_gets_one_line_per_layer(net, caplog):
    sym, args, auxs, batches = net
    logger = logging.getLogger("test_calibration")
    with caplog.at_level(logging.INFO, logger="test_calibration"):
        collect_ranges(sym, args, auxs, batches, "entropy", ["data", "fc0_output"],
                       logger=logger)
    layer_lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("layer=")]
    assert [line.split(",")[0] for line in layer_lines] == ["layer=data", "layer=fc0_output"]
    # MXNet's figures, up to the float32 rounding of the layer's sums on this CPU.
    logged = dict(field.strip().split("=") for field in layer_lines[-1].split(","))
    assert float(logged["min"]) == pytest.approx(
        EXPECTED["naive-int8-None"]["ranges"]["fc0_output"][0], rel=1e-6)
    assert float(logged["threshold"]) == pytest.approx(
        EXPECTED["entropy-int8-None"]["ranges"]["fc0_output"][1], rel=1e-6)
    assert "Collected statistics from 3 batches with batch_size=4" in caplog.text


def test_none_needs_no_data(net):
    sym, args, auxs, _ = net
    assert collect_ranges(sym, args, auxs, None, "none", LAYERS) == {}


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "minmax"}, "calib_mode must be one of none, naive, entropy, got 'minmax'"),
    ({"mode": "naive", "calib_data": None}, "calib_data must be given when calib_mode='naive'"),
    ({"num_calib_examples": 0}, "num_calib_examples must be a positive integer or None, got 0"),
    ({"num_calib_examples": -4}, "positive integer or None, got -4"),
    ({"num_calib_examples": 2.5}, "positive integer or None, got 2.5"),
    ({"quantized_dtype": "int4"}, "quantized_dtype must be one of int8, uint8, auto"),
    ({"layer_names": ["conv0_output", "conv9_output"]},
     "the symbol has no output or input named conv9_output"),
    ({"data_names": ("x",)}, "data_names x are not inputs of the symbol"),
    ({"calib_data": []}, "calib_data gave no batches"),
])
def test_bad_options_are_refused(kwargs, message, net):
    sym, args, auxs, batches = net
    call = {"mode": "entropy", "calib_data": batches, "layer_names": LAYERS, **kwargs}
    with pytest.raises(MinimxError, match=message):
        collect_ranges(sym, args, auxs, call.pop("calib_data"), call.pop("mode"),
                       call.pop("layer_names"), **call)


def test_a_batch_of_another_shape_names_both(net):
    sym, args, auxs, batches = net
    bad = batches[:2] + [batches[2][:, :1]]
    with pytest.raises(ShapeError, match=r"calibration batch 2: data has shape \(4, 1, 6, 6\), "
                                         r"but the symbol is bound for data of shape "
                                         r"\(4, 2, 6, 6\)"):
        collect_ranges(sym, args, auxs, bad, "naive", LAYERS)



def test_data_that_does_not_fit_the_parameters_is_named(net):
    sym, args, auxs, batches = net
    wide = [np.pad(b, ((0, 0), (0, 0), (0, 1), (0, 1))) for b in batches]
    with pytest.raises(ShapeError, match=r"calibration data of shape data \(4, 2, 7, 7\) does "
                                         r"not fit the model's parameters: .*fc0_weight"):
        collect_ranges(sym, args, auxs, wide, "naive", LAYERS)

@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nan_or_inf_names_the_batch(value, net):
    sym, args, auxs, batches = net
    bad = [b.copy() for b in batches]
    bad[1][0, 0, 0, :2] = value
    with pytest.raises(MinimxError, match="calibration batch 1: data has 2 NaN or infinite"):
        collect_ranges(sym, args, auxs, bad, "entropy", LAYERS)


def test_batches_of_the_wrong_kind_are_refused(net):
    sym, args, auxs, batches = net
    with pytest.raises(MinimxError, match="calibration batch 0: has no data"):
        collect_ranges(sym, args, auxs, [{"x": batches[0]}], "naive", LAYERS)
    with pytest.raises(MinimxError, match="calibration batch 0: 0 arrays for the 1 inputs"):
        collect_ranges(sym, args, auxs, [()], "naive", LAYERS)


def test_nan_in_a_layer_names_the_layer(net):
    sym, args, auxs, batches = net
    bad = dict(args, fc0_bias=mx.nd.array([0, np.nan, 0, 0, 0]))
    with pytest.raises(MinimxError, match="calibration batch 0: layer output fc0_output has 4 "
                                          "NaN or infinite values"):
        collect_ranges(sym, bad, auxs, batches, "naive", LAYERS)


def test_a_histogram_widened_past_max_bins_starts_over_at_its_size():
    # MXNet would widen to about 8 million bins of the first batch's width here, and
    # its threshold search would run for hours (a fuzz's watchdog stopped minimx's).
    from minimx.contrib.quantization.entropy import MAX_BINS, Histogram
    rng = np.random.default_rng(0)
    first = rng.normal(0, 1e-3, 5000).astype(np.float32)
    wide = rng.normal(0, 1.0, 5000).astype(np.float32)
    hist = Histogram.of(first).merge(wide)
    assert len(hist.counts) == 8001 <= MAX_BINS
    assert hist.counts.sum() == 10_000 and hist.threshold == np.abs(wide).max()
    assert (hist.min, hist.max) == (min(first.min(), wide.min()), max(first.max(), wide.max()))
    # the first batch's values, within a few of the new bins' widths of 0, sit there
    middle = len(hist.counts) // 2
    assert hist.counts[middle - 6:middle + 7].sum() >= 5000
    # up to MAX_BINS it widens as MXNet's does (test_histograms_merge_as_mxnets)
    assert len(Histogram.of(first).merge(first * 3).counts) > 8001
