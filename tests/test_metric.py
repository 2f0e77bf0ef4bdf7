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


@pytest.mark.parametrize("case", sorted(RECORD))
def test_metric_equals_mxnets(case: str) -> None:
    spec = RECORD[case]
    args = [a for a in spec["args"] if not isinstance(a, dict)]
    kwargs = next((a for a in spec["args"] if isinstance(a, dict)), {})
    metric = mx.metric.create(*args, **kwargs)
    for k, want in enumerate(spec["results"][:2]):
        metric.update([mx.nd.array(ARRAYS[f"{case}:label_{k}"])],
                      [mx.nd.array(ARRAYS[f"{case}:pred_{k}"])])
        _same(metric.get(), want["get"])
        _same(metric.get_global(), want["global"])
    metric.reset_local()
    _same(metric.get(), spec["results"][2]["get"])
    _same(metric.get_global(), spec["results"][2]["global"])


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
    with pytest.raises(mx.MinimxError, match="average='micro'; only 'macro'"):
        mx.metric.create("pearsonr", average="micro")
    with pytest.raises(mx.ShapeError, match=r"Perplexity: 4 labels for predictions of shape "
                                            r"\(3, 2\)"):
        mx.metric.create("perplexity", ignore_label=None).update(
            [mx.nd.array([0, 1, 1, 0])], [mx.nd.ones((3, 2))])
