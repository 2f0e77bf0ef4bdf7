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
    with pytest.raises(AssertionError, match="top_k"):   # MXNet asserts it
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
    assert mx.metric.np(lambda label, pred: 0.0).name == "custom(<lambda>)"


@pytest.mark.parametrize("metric", [
    mx.metric.Accuracy(name="acc1"), mx.metric.F1(average="micro"),
    mx.metric.CrossEntropy(eps=1e-6), mx.metric.Perplexity(ignore_label=-1, axis=1),
    mx.metric.CompositeEvalMetric([mx.metric.MAE(), "rmse"])], ids=lambda m: m.name)
def test_create_remakes_a_metric_from_its_config(metric: mx.metric.EvalMetric) -> None:
    config = metric.get_config()
    for spec in (config, json.dumps(config)):
        again = mx.metric.create(spec)
        assert type(again) is type(metric) and again.get_config() == config
    with pytest.raises(MinimxError, match="holds the arguments"):
        mx.metric.create(json.dumps(config), name="other")


def test_perplexity_clips_labels_past_the_classes() -> None:
    # MXNet picks with `pick`'s default clip: label 3 of 3 classes reads class 2.
    metric = mx.metric.Perplexity(ignore_label=-1)
    metric.update([mx.nd.array([3, 1, -1])], [mx.nd.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3],
                                                           [0.9, 0.05, 0.05]])])
    assert metric.get()[1] == pytest.approx(np.exp(-(np.log(0.5) + np.log(0.6)) / 2))


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


# PCC, Torch and Caffe against MXNet 1.9.1: the numbers below are what MXNet's own
# metrics gave on these inputs (/work/venvs/mxnet191, mx.metric.create('pcc') updated
# batch by batch with the same RandomState(7) draws; printed with repr).
def _pcc_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.RandomState(7)
    return [(rng.randint(0, 3, 12), np.round(rng.uniform(size=(12, 3)), 3)),  # scores
            (rng.randint(0, 5, 10), np.round(rng.uniform(size=(10, 5)), 3)),  # grows to 5
            (rng.randint(0, 5, 8), rng.randint(0, 5, 8).astype("float32"))]  # class ids


def test_pcc_equals_mxnets() -> None:
    pcc = mx.metric.create("pcc")
    assert (type(pcc).__name__, pcc.name) == ("PCC", "pcc")
    assert pcc.get_config() == {"metric": "PCC", "name": "pcc", "output_names": None,
                                "label_names": None}
    mxnets = [0.14586499149789456, 0.1900714803174264, 0.16886088258402385]
    for (label, pred), want, classes in zip(_pcc_batches(), mxnets, (3, 5, 5), strict=True):
        pcc.update([mx.nd.array(label)], [mx.nd.array(pred)])
        assert pcc.get() == pcc.get_global() == ("pcc", pytest.approx(want, rel=1e-12))
        assert pcc.k == classes
    pcc.reset_local()
    assert np.isnan(pcc.get()[1]) and pcc.get_global()[1] == pytest.approx(mxnets[-1])
    # One true class: the local value is undefined (nan), the global one is MXNet's.
    pcc.update([mx.nd.array([1, 1, 1])], [mx.nd.array([[0.2, 0.8]] * 3)])
    assert np.isnan(pcc.get()[1])
    assert pcc.get_global()[1] == pytest.approx(0.23741280258288808, rel=1e-12)


def test_pcc_of_two_classes_is_mcc() -> None:
    """MXNet's docstring example: a model that nearly always predicts positive."""
    fp, fn, tp, tn = 1000, 1, 10000, 1
    preds = [mx.nd.array([[.3, .7]] * fp + [[.7, .3]] * tn + [[.7, .3]] * fn + [[.3, .7]] * tp)]
    labels = [mx.nd.array([0] * (fp + tn) + [1] * (fn + tp))]
    for metric in (mx.metric.PCC(), mx.metric.MCC()):
        metric.update(labels, preds)
        assert metric.get()[1] == pytest.approx(0.01917751877733392, rel=1e-12)


def test_pcc_refuses_what_it_cannot_count() -> None:
    with pytest.raises(MinimxError, match="PCC: classes are 0, 1, ...; got a negative class"):
        mx.metric.PCC().update([mx.nd.array([0, -1])], [mx.nd.array([0, 1])])
    with pytest.raises(ShapeError, match=r"PCC: predictions of shape \(4,\) are neither "
                                         r"scores \(batch, classes\) nor class ids shaped as "
                                         r"the labels \(2, 1\)"):
        mx.metric.PCC().update([mx.nd.array([[0], [1]])], [mx.nd.array([0, 1, 1, 0])])
    with pytest.raises(ShapeError, match="PCC: 2 predicted classes for 3 labels"):
        mx.metric.PCC().update([mx.nd.array([0, 1, 1])], [mx.nd.ones((2, 3))])


@pytest.mark.parametrize("name, cls", [("torch", "Torch"), ("caffe", "Caffe")])
def test_torch_and_caffe_are_named_losses(name: str, cls: str) -> None:
    metric = mx.metric.create(name)
    assert type(metric).__name__ == cls and isinstance(metric, mx.metric.Loss)
    metric.update(None, [mx.nd.array([[1.5, 2.0], [0.25, -1.0]])])
    metric.update(None, mx.nd.array([3.0, 4.0, 5.5]))
    assert metric.get() == metric.get_global() == (name, 2.1785714285714284)   # MXNet's
    assert metric.get_config() == {"metric": cls, "name": name, "output_names": None,
                                   "label_names": None}
    assert getattr(mx.metric, cls)("c").name == "c"
