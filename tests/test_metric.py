"""Metrics equal MXNet 1.9.1's on fixed predictions: get and get_global after each
of two batches and after reset_local (fixtures: tests/fixtures/training, group
training, METRIC_CASES)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError, ShapeError

FIXTURES = Path(__file__).parent / "fixtures" / "training"
RECORD = json.loads((FIXTURES / "training.json").read_text())["metrics"]
ARRAYS = np.load(FIXTURES / "training-arrays.npz")


def _same(got: tuple, want: list) -> None:
    names, values = got
    assert names == want[0]
    np.testing.assert_allclose(np.asarray(values, dtype=float), np.asarray(want[1], float),
                               rtol=1e-6)


def _created(spec: dict) -> mx.metric.EvalMetric:
    args = [a for a in spec["args"] if not isinstance(a, dict)]
    kwargs = next((a for a in spec["args"] if isinstance(a, dict)), {})
    return mx.metric.create(*args, **kwargs)


def _update(metric: mx.metric.EvalMetric, case: str, k: int) -> None:
    metric.update([mx.nd.array(ARRAYS[f"{case}:label_{k}"])],
                  [mx.nd.array(ARRAYS[f"{case}:pred_{k}"])])


# MXNet 1.9's PearsonCorrelation(average='micro').get_global() is always 0.0 (it
# never fills the global sums); minimx's is the pooled value, tested apart.
@pytest.mark.parametrize("case", sorted(set(RECORD) - {"pearsonr_micro"}))
def test_metric_equals_mxnets(case: str) -> None:
    spec = RECORD[case]
    metric = _created(spec)
    for k, want in enumerate(spec["results"][:2]):
        _update(metric, case, k)
        _same(metric.get(), want["get"])
        _same(metric.get_global(), want["global"])
    metric.reset_local()
    _same(metric.get(), spec["results"][2]["get"])
    _same(metric.get_global(), spec["results"][2]["global"])


def test_pearsonr_micro_equals_mxnets_and_its_global_value_is_the_pooled_one() -> None:
    spec = RECORD["pearsonr_micro"]
    metric = _created(spec)
    for k, want in enumerate(spec["results"][:2]):
        _update(metric, "pearsonr_micro", k)
        _same(metric.get(), want["get"])
        assert want["global"] == ["pearsonr", 0.0]   # MXNet's
        _same(metric.get_global(), want["get"])
    metric.reset_local()
    _same(metric.get(), spec["results"][2]["get"])   # nan: no batch since reset_local
    _same(metric.get_global(), spec["results"][1]["get"])
    # One value at a time, MXNet's streaming moments are exact: numpy's correlation.
    labels, preds = np.array([0.5, 1.0, -2.0, 3.0]), np.array([1.0, 0.0, -1.0, 2.5])
    metric = mx.metric.PearsonCorrelation(average="micro")
    for label, pred in zip(labels, preds, strict=True):
        metric.update([mx.nd.array([label])], [mx.nd.array([pred])])
    assert metric.get()[1] == pytest.approx(np.corrcoef(labels, preds)[0, 1], rel=1e-12)


def test_mcc_of_one_class_predictions_is_zero() -> None:
    # A zero factor of the denominator counts as 1 (MXNet's rule): 0, not nan.
    always_one = [mx.nd.array([[0.2, 0.8]] * 4)]
    for average in ("macro", "micro"):
        mcc = mx.metric.create("mcc", average=average)
        mcc.update([mx.nd.array([1, 0, 1, 1])], always_one)
        assert mcc.get() == ("mcc", 0.0)
    perfect = mx.metric.MCC()
    perfect.update([mx.nd.array([1, 0, 1])], [mx.nd.array([[0, 1.0], [1.0, 0], [0.4, 0.6]])])
    assert perfect.get() == ("mcc", 1.0)


def test_update_dict_picks_names() -> None:
    acc = mx.metric.Accuracy(output_names=["b"], label_names=["y"])
    acc.update_dict({"x": mx.nd.array([0]), "y": mx.nd.array([1])},
                    {"a": mx.nd.array([[1.0, 0]]), "b": mx.nd.array([[0, 1.0]])})
    assert acc.get() == ("accuracy", 1.0)
    assert acc.get_config()["metric"] == "Accuracy"


def test_refusals() -> None:
    with pytest.raises(ShapeError, match="does not match"):
        mx.metric.Accuracy().update([mx.nd.zeros((2,))], [])
    with pytest.raises(MinimxError, match="unknown metric 'nosuch'"):
        mx.metric.create("nosuch")
    with pytest.raises(MinimxError, match="top_k"):
        mx.metric.TopKAccuracy(top_k=1)
    with pytest.raises(MinimxError, match="binary"):
        mx.metric.F1().update([mx.nd.array([0, 1, 2])], [mx.nd.ones((3, 2))])


def test_custom_metrics_from_functions() -> None:
    def wrong(label, pred):   # (sum, count)
        return float((pred.argmax(1) != label).sum()), len(label)
    labels, preds = [mx.nd.array([0, 1])], [mx.nd.array([[1.0, 0], [1.0, 0]])]
    for metric, name in ((mx.metric.create(wrong), "wrong"), (mx.metric.np(wrong), "wrong"),
                         (mx.metric.CustomMetric(lambda label, pred: 0.25), "custom(<lambda>)")):
        metric.update(labels, preds)
        metric.update(labels, preds)
        assert metric.get() == (name, 0.5 if name == "wrong" else 0.25)
    with pytest.raises(MinimxError, match="cannot be serialized"):
        mx.metric.np(wrong).get_config()


def test_metrics_refuse_what_they_cannot_compute() -> None:
    for name, metric in (("pearsonr", "PearsonCorrelation"), ("mcc", "MCC"), ("f1", "F1")):
        with pytest.raises(mx.MinimxError, match=f"{metric}: average='weighted' is not"):
            mx.metric.create(name, average="weighted")
    with pytest.raises(MinimxError, match="MCC currently only supports binary"):
        mx.metric.MCC().update([mx.nd.array([0, 1, 2])], [mx.nd.ones((3, 2))])
    with pytest.raises(mx.ShapeError, match=r"Perplexity: 4 labels for predictions of shape "
                                            r"\(3, 2\)"):
        mx.metric.create("perplexity", ignore_label=None).update(
            [mx.nd.array([0, 1, 1, 0])], [mx.nd.ones((3, 2))])
