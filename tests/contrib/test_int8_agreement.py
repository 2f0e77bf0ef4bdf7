"""INT8 against fp32 on the model fixtures, against MXNet 1.9.1's figures
(tests/fixtures/int8_agreement, written by tools/mxnet_fixtures.py): the same
images, measured the same way (benchmarks/int8_agreement.py, which prints the
README's table), and minimx's INT8 agreeing with its fp32 at least as well as
MXNet's does with its own."""
import gzip
import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx import onednn

from ..onednn_required import require_onednn

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "int8_agreement.py"
# benchmarks/ is no package: the script is loaded from its file
_spec = importlib.util.spec_from_file_location("int8_agreement", BENCHMARK)
assert _spec is not None and _spec.loader is not None
agreement_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agreement_script)
RECORD, FIXTURES = agreement_script.RECORD, agreement_script.FIXTURES / "int8_agreement"
# Quantized by minimx into MXNet's graph, node for node.
SAME_GRAPH = ["resnet18_v1_narrow", "resnet18_v1_wide16", "resnet50_v2_narrow",
              "densenet_narrow"]
# Their INT8 outputs are MXNet's: the calibrated ranges come out as MXNet's to the digit.
SAME_OUTPUTS = ["resnet18_v1_narrow", "resnet50_v2_narrow"]
# DenseNet's ranges differ from MXNet's in the last printed digit (calibration runs on
# each runtime's own float32 rounding); on MXNet's ranges its outputs are MXNet's.
AGREES_AT_LEAST = ["resnet18_v1_narrow", "resnet18_v1_wide16", "resnet50_v2_narrow"]
# The MobileNets' fp32 logits do not move over the images (collapsed): their figures are
# compared in the benchmark's table only.
SAME_GRAPH_COLLAPSED = ["mobilenet0.125_c10", "mobilenetv2_0.25_c10"]


@pytest.mark.parametrize("model", sorted(RECORD["models"]))
def test_images_are_the_ones_mxnet_was_measured_on(model):
    _, evaluation = agreement_script.model_images(model)
    assert hashlib.sha256(evaluation.tobytes()).hexdigest() == RECORD["models"][model][
        "eval_sha256"]


@pytest.mark.parametrize("model", sorted(RECORD["models"]))
def test_mxnets_figures_measured_as_minimx_measures(model):
    with np.load(FIXTURES / "outputs.npz") as outputs:
        got = agreement_script.agreement(outputs[f"{model}:fp32"], outputs[f"{model}:int8"])
    want = {k: RECORD["models"][model][k] for k in got._fields}
    have = got._asdict()
    # A figure that is undefined for a collapsed model is None in both.
    assert {k for k, v in have.items() if v is None} == {k for k, v in want.items() if v is None}
    assert {k: v for k, v in have.items() if v is not None} == pytest.approx(
        {k: v for k, v in want.items() if v is not None}, rel=1e-12, abs=1e-12)


def _nodes(text):
    return json.loads(text)["nodes"]


def _without_ranges(node):
    attrs = dict(node.get("attrs", {}))
    ranges = [float(attrs.pop(k)) for k in ("min_calib_range", "max_calib_range") if k in attrs]
    return {**node, "attrs": attrs}, ranges


@pytest.mark.parametrize("model", SAME_GRAPH + SAME_GRAPH_COLLAPSED)
def test_quantized_graph_is_mxnets(model):
    """gluon's ResNet v1 block sums `residual + x`: the fused convolution's chain operand
    comes first and the residual is its `sum` input, as MXNet orders them. MobileNet v2's
    relu6 (`clip` from zero) is fused into its convolution (`with_act`)."""
    calib, _ = agreement_script.model_images(model)
    _, (qsym, _, _) = agreement_script.quantized(model, calib)
    with gzip.open(FIXTURES / f"{model}-int8-symbol.json.gz") as f:
        want = _nodes(f.read())
    got = _nodes(qsym.tojson())
    assert [n["name"] for n in got] == [n["name"] for n in want]
    for mine, mxnets in zip(got, want, strict=True):
        (mine, my_ranges), (mxnets, mxnet_ranges) = map(_without_ranges, (mine, mxnets))
        assert mine == mxnets
        assert my_ranges == pytest.approx(mxnet_ranges, rel=1e-5, abs=1e-6), mine["name"]


def _skip_without(backend):
    if backend == "DNNL":
        require_onednn()


@pytest.mark.parametrize("backend", [None, "DNNL"])
@pytest.mark.parametrize("model", SAME_OUTPUTS)
def test_int8_outputs_are_mxnets_where_the_ranges_are(model, backend):
    """The calibrated ranges come out as MXNet's to the printed digit; ResNet v2's
    standalone BatchNorms run as MXNet's _contrib_quantized_batch_norm."""
    _skip_without(backend)
    _, int8 = agreement_script.measure(model, backend)
    with np.load(FIXTURES / "outputs.npz") as outputs:
        np.testing.assert_array_equal(int8, outputs[f"{model}:int8"])


@pytest.mark.parametrize("backend", [None, "DNNL"])
def test_mxnets_quantized_densenet_gives_mxnets_outputs(backend):
    """MXNet's own quantized DenseNet graph (its ranges, minimx's quantized
    parameters): quantized BatchNorm, relu and concat with the aligned scales of its
    inputs give MXNet's INT8 outputs exactly."""
    _skip_without(backend)
    model = "densenet_narrow"
    calib, evaluation = agreement_script.model_images(model)
    _, (_, qargs, qauxs) = agreement_script.quantized(model, calib)
    with gzip.open(FIXTURES / f"{model}-int8-symbol.json.gz") as f:
        mxnets = mx.sym.load_json(f.read().decode())
    int8 = agreement_script.forward((mxnets, qargs, qauxs), evaluation, backend)
    with np.load(FIXTURES / "outputs.npz") as outputs:
        np.testing.assert_array_equal(int8, outputs[f"{model}:int8"])


def test_densenet_agrees_with_fp32_as_mxnet_does_up_to_calibration_rounding():
    ours, _ = agreement_script.measure("densenet_narrow", "DNNL" if onednn.available() else None)
    mxnets = RECORD["models"]["densenet_narrow"]
    assert ours.top1 >= mxnets["top1"] > 0.9
    assert ours.cosine == pytest.approx(mxnets["cosine"], abs=1e-6)
    assert ours.centred_cosine == pytest.approx(mxnets["centred_cosine"], abs=1e-4)


@pytest.mark.parametrize("backend", [None, "DNNL"])
@pytest.mark.parametrize("model", AGREES_AT_LEAST)
def test_int8_agrees_with_fp32_at_least_as_mxnets_does(model, backend):
    _skip_without(backend)
    ours, _ = agreement_script.measure(model, backend)
    mxnets = RECORD["models"][model]
    assert ours.top1 >= mxnets["top1"] > 0.9
    assert ours.cosine >= mxnets["cosine"] - 1e-7
    # the image-dependent part: ranges calibrated on minimx's float arithmetic differ from
    # MXNet's in the last digits, which moves this by a few 1e-4 either way
    assert ours.centred_cosine >= mxnets["centred_cosine"] - 1e-3


@pytest.mark.parametrize("backend", [None, "DNNL"])
@pytest.mark.parametrize("model", SAME_GRAPH_COLLAPSED)
def test_collapsed_int8_agrees_with_fp32_as_mxnets_does(model, backend):
    """Logits that do not move over the images leave top-1 and cosine; MobileNet v2's
    cosine rose from 0.999961 to MXNet's once relu6 was fused (no dequantize/quantize
    around each clip)."""
    _skip_without(backend)
    ours, _ = agreement_script.measure(model, backend)
    mxnets = RECORD["models"][model]
    assert ours.top1 == mxnets["top1"] == 1.0
    assert ours.cosine >= mxnets["cosine"] - 1e-7
