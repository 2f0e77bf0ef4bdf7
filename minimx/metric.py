"""`mx.metric`: evaluation metrics, with MXNet 1.9's names, arithmetic and
local/global bookkeeping.

A metric takes lists of labels and predictions (NDArrays) per batch in
`update`, and gives ``(name, value)`` from `get`. It keeps two running sums:
the local one (`reset_local` clears it: `Speedometer` does, each time it
reports) and the global one, which only `reset` clears (`fit` reports it at
the end of an epoch).

>>> import minimx as mx
>>> acc = mx.metric.create("acc")
>>> acc.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
>>> acc.get()
('accuracy', 0.6666666666666666)
"""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy  # not as np: mx.metric.np is MXNet's name for a metric maker

from .base import AssertedError, MinimxError, ShapeError
from .ndarray import NDArray
from .registry import Registry

# A custom metric's function: (labels, predictions) as numpy arrays -> value or (sum, count).
FEval = Callable[[numpy.ndarray, numpy.ndarray], Any]

_REGISTRY = Registry("metric")
register = _REGISTRY.register
alias = _REGISTRY.alias


def check_label_shapes(labels: Any, preds: Any, wrap: bool = False, shape: bool = False
                       ) -> tuple[Any, Any]:
    """Refuse labels and predictions of different lengths (or shapes, with `shape`);
    with `wrap`, a single NDArray becomes a list of one."""
    label_shape, pred_shape = ((labels.shape, preds.shape) if shape
                               else (len(labels), len(preds)))
    if label_shape != pred_shape:
        raise ShapeError(f"Shape of labels {label_shape} does not match shape of "
                         f"predictions {pred_shape}")
    if wrap:
        labels = [labels] if isinstance(labels, NDArray) else labels
        preds = [preds] if isinstance(preds, NDArray) else preds
    return labels, preds


class EvalMetric:
    """The base of metrics: a subclass's `update` adds to `sum_metric` / `num_inst`
    and to their global twins; the value is their ratio."""

    def __init__(self, name: str, output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, **kwargs: Any) -> None:
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._kwargs = kwargs
        self.reset()

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> dict[str, Any]:
        """What makes this metric again (`create(**config)`)."""
        return {**self._kwargs, "metric": type(self).__name__, "name": self.name,
                "output_names": self.output_names, "label_names": self.label_names}

    def update_dict(self, label: Mapping[str, NDArray], pred: Mapping[str, NDArray]) -> None:
        """`update` with the labels and outputs by name (`label_names` / `output_names`
        choose among them when given)."""
        preds = [pred[n] for n in self.output_names] if self.output_names is not None \
            else list(pred.values())
        labels = [label[n] for n in self.label_names] if self.label_names is not None \
            else list(label.values())
        self.update(labels, preds)

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define update")

    def _add(self, value: float, count: int) -> None:
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self) -> None:
        """Clear the local and the global sums."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear the local sums only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self) -> tuple[Any, Any]:
        """(name, value) over the updates since the last reset (nan before any)."""
        return self.name, (self.sum_metric / self.num_inst if self.num_inst else float("nan"))

    def get_global(self) -> tuple[Any, Any]:
        """(name, value) over the updates since the last full `reset`."""
        return self.name, (self.global_sum_metric / self.global_num_inst
                           if self.global_num_inst else float("nan"))

    def get_name_value(self) -> list[tuple[str, float]]:
        return _pairs(*self.get())

    def get_global_name_value(self) -> list[tuple[str, float]]:
        return _pairs(*self.get_global())


def _pairs(name: Any, value: Any) -> list[tuple[str, float]]:
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values, strict=True))


def create(metric: Any, *args: Any, **kwargs: Any) -> EvalMetric:
    """A metric from a name (``'acc'``, ``'ce'``, ``'top_k_accuracy'``...), a
    metric's `get_config()` (or its JSON), an EvalMetric (itself), a function
    ``feval(label, pred)`` of numpy arrays (a `CustomMetric`), or a list of them
    (a `CompositeEvalMetric`)."""
    if isinstance(metric, EvalMetric):
        return metric
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if not isinstance(metric, str | Mapping):
        raise MinimxError(f"mx.metric.create: expected a name, an EvalMetric or a list, got "
                          f"{metric!r}")
    return _REGISTRY.create(metric, *args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; `get` lists their names and values."""

    def __init__(self, metrics: Sequence[Any] | None = None, name: str = "composite",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        self.metrics = [create(m) for m in metrics or []]
        super().__init__(name, output_names=output_names, label_names=label_names)

    def add(self, metric: Any) -> None:
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> EvalMetric:
        return self.metrics[index]

    def update_dict(self, labels: Mapping[str, NDArray], preds: Mapping[str, NDArray]) -> None:
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items() if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items() if k in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        for metric in getattr(self, "metrics", []):   # EvalMetric.__init__ resets first
            metric.reset()

    def reset_local(self) -> None:
        for metric in self.metrics:
            metric.reset_local()

    def get(self) -> tuple[list, list]:
        return self._joined([m.get() for m in self.metrics])

    def get_global(self) -> tuple[list, list]:
        return self._joined([m.get_global() for m in self.metrics])

    @staticmethod
    def _joined(results: list[tuple[Any, Any]]) -> tuple[list, list]:
        names: list = []
        values: list = []
        for name, value in results:
            names += name if isinstance(name, list) else [name]
            values += value if isinstance(value, list) else [value]
        return names, values

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "metrics": [m.get_config() for m in self.metrics]}


@register
@alias("acc")
class Accuracy(EvalMetric):
    """The fraction of predictions (the arg-max along `axis`, unless a prediction
    already has the label's shape) that equal the label."""

    def __init__(self, axis: int = 1, name: str = "accuracy",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names)
        self.axis = axis

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            predicted = pred.asnumpy()
            if predicted.shape != label.shape:
                predicted = predicted.argmax(axis=self.axis)
            predicted = predicted.astype("int32").ravel()
            truth = label.asnumpy().astype("int32").ravel()
            check_label_shapes(truth, predicted)
            self._add(int((predicted == truth).sum()), len(predicted))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """The fraction of labels among the `top_k` highest predictions."""

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        if top_k <= 1:
            raise AssertedError(f"TopKAccuracy: top_k={top_k}; use Accuracy if top_k is no "
                                "more than 1")
        super().__init__(f"{name}_{top_k}", top_k=top_k, output_names=output_names,
                         label_names=label_names)
        self.top_k = top_k

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            if pred.ndim > 2:
                raise ShapeError(f"TopKAccuracy: predictions should be no more than 2 dims, "
                                 f"got shape {pred.shape}")
            ranked = numpy.argpartition(pred.asnumpy().astype("float32"), -self.top_k)
            truth = label.asnumpy().astype("int32").ravel()
            check_label_shapes(truth, ranked)
            if ranked.ndim == 1:
                correct = int((ranked == truth).sum())
            else:
                classes = ranked.shape[1]
                top = ranked[:, classes - min(classes, self.top_k):]
                correct = int((top == truth[:, None]).sum())
            self._add(correct, ranked.shape[0])


class _BinaryCounts:
    """True/false positives/negatives of binary predictions, local and global."""

    FIELDS = ("tp", "fp", "fn", "tn")

    def __init__(self) -> None:
        self.local = dict.fromkeys(self.FIELDS, 0)
        self.total = dict.fromkeys(self.FIELDS, 0)

    def update(self, label: NDArray, pred: NDArray, what: str) -> None:
        probs = pred.asnumpy()
        truth = label.asnumpy().astype("int32")
        check_label_shapes(truth, probs)
        if len(numpy.unique(truth)) > 2:
            raise MinimxError(f"{what} currently only supports binary classification "
                              f"(labels {numpy.unique(truth).tolist()})")
        positive, actual = probs.argmax(axis=1) == 1, truth == 1
        counts = {"tp": positive & actual, "fp": positive & ~actual,
                  "fn": ~positive & actual, "tn": ~positive & ~actual}
        for key, hits in counts.items():
            self.local[key] += int(hits.sum())
            self.total[key] += int(hits.sum())

    @staticmethod
    def fscore(c: Mapping[str, int]) -> float:
        precision = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else 0.0
        recall = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    @staticmethod
    def matthewscc(c: Mapping[str, int]) -> float:
        """Matthews' correlation; zero factors of the denominator count as 1 (MXNet's
        rule), and no examples give 0."""
        factors = (c["tp"] + c["fp"], c["tp"] + c["fn"], c["tn"] + c["fp"], c["tn"] + c["fn"])
        denominator = math.prod(float(f) for f in factors if f)
        return (c["tp"] * c["tn"] - c["fp"] * c["fn"]) / math.sqrt(denominator)

    @staticmethod
    def count(c: Mapping[str, int]) -> int:
        return sum(c.values())


class _BinaryScore(EvalMetric):
    """A score of binary predictions (class 1 positive) from their counts: with
    ``average='macro'`` the mean of the per-batch scores, with ``'micro'`` the
    score of all counts since the last reset (local) or full reset (global)."""

    def __init__(self, name: str, output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, average: str = "macro") -> None:
        if average not in ("macro", "micro"):
            raise MinimxError(f"{type(self).__name__}: average={average!r} is not 'macro' or "
                              "'micro'")
        self.average = average
        self.counts = _BinaryCounts()
        super().__init__(name, output_names=output_names, label_names=label_names)

    def score(self, counts: Mapping[str, int]) -> float:
        raise NotImplementedError

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            self.counts.update(label, pred, type(self).__name__)
        local, total = self.counts.local, self.counts.total
        if self.average == "macro":
            self._add(self.score(local), 1)
            self.counts = _BinaryCounts()
        else:
            self.sum_metric = self.score(local) * _BinaryCounts.count(local)
            self.global_sum_metric = self.score(total) * _BinaryCounts.count(total)
            self.num_inst = _BinaryCounts.count(local)
            self.global_num_inst = _BinaryCounts.count(total)

    def reset(self) -> None:
        super().reset()
        self.counts = _BinaryCounts()

    def reset_local(self) -> None:
        super().reset_local()
        self.counts.local = dict.fromkeys(_BinaryCounts.FIELDS, 0)


@register
class F1(_BinaryScore):
    """F1 score of binary predictions: the harmonic mean of precision and recall."""

    def __init__(self, name: str = "f1", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, average: str = "macro") -> None:
        super().__init__(name, output_names, label_names, average)

    def score(self, counts: Mapping[str, int]) -> float:
        return _BinaryCounts.fscore(counts)


@register
class MCC(_BinaryScore):
    """Matthews' correlation coefficient of binary predictions,
    ``(tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn))``: unlike F1, it shows
    a model that always predicts one class (0).

    >>> import minimx as mx
    >>> mcc = mx.metric.create("mcc")
    >>> mcc.update([mx.nd.array([0, 1, 1, 0])],
    ...            [mx.nd.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.9, 0.1]])])
    >>> round(mcc.get()[1], 6)   # tp=1 tn=2 fp=0 fn=1: 2 / sqrt(1*2*2*3)
    0.57735
    """

    def __init__(self, name: str = "mcc", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, average: str = "macro") -> None:
        super().__init__(name, output_names, label_names, average)

    def score(self, counts: Mapping[str, int]) -> float:
        return _BinaryCounts.matthewscc(counts)


@register
class PCC(EvalMetric):
    """The multi-class generalisation of Matthews' correlation (discrete Pearson) over
    a confusion matrix that grows with the largest class seen: ``(n * trace(C) - x.y)
    / sqrt((n^2 - x.x) (n^2 - y.y))``, x and y the predicted and true class counts;
    nan while either has one class only. Predictions are scores (their argmax
    counts) or, shaped as the labels, class indices. Local and global matrices
    accumulate across updates (MXNet 1.9.1's ``PCC``).

    >>> import minimx as mx
    >>> pcc = mx.metric.create("pcc")
    >>> pcc.update([mx.nd.array([0, 1, 2, 2])], [mx.nd.array([0, 1, 2, 1])])
    >>> pcc.get()   # n=4, trace 3, x=(1, 2, 1), y=(1, 1, 2): (12 - 5) / 10
    ('pcc', 0.7)
    """

    lcm: numpy.ndarray   # the local confusion matrix
    gcm: numpy.ndarray   # the global one

    def __init__(self, name: str = "pcc", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, has_global_stats: bool = True
                 ) -> None:
        # has_global_stats is MXNet's; the global matrix is always kept.
        self.k = 2   # classes so far; reset keeps it, as MXNet's
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            truth = label.asnumpy().astype("int32")
            counts = self._confusion(self._classes(pred.asnumpy(), truth.shape), truth.ravel())
            self.lcm += counts
            self.gcm += counts
        self.num_inst += 1
        self.global_num_inst += 1

    @staticmethod
    def _classes(pred: numpy.ndarray, label_shape: tuple[int, ...]) -> numpy.ndarray:
        """The predicted classes: class ids shaped as the labels, or the argmax of scores."""
        if pred.shape == label_shape:
            return pred.astype("int32").ravel()
        if pred.ndim != 2:
            raise ShapeError(f"PCC: predictions of shape {pred.shape} are neither scores "
                             f"(batch, classes) nor class ids shaped as the labels "
                             f"{label_shape}")
        return pred.argmax(axis=1)

    def _confusion(self, guess: numpy.ndarray, truth: numpy.ndarray) -> numpy.ndarray:
        """The batch's confusion matrix (rows predicted, columns true), grown first."""
        if guess.size != truth.size:
            raise ShapeError(f"PCC: {guess.size} predicted classes for {truth.size} labels")
        if min(guess.min(initial=0), truth.min(initial=0)) < 0:
            raise MinimxError("PCC: classes are 0, 1, ...; got a negative class in the "
                              f"labels {truth.min(initial=0)} or predictions "
                              f"{guess.min(initial=0)}")
        largest = max(guess.max(initial=0), truth.max(initial=0))
        if largest >= self.k:
            grow = ((0, largest + 1 - self.k),) * 2
            self.lcm, self.gcm = numpy.pad(self.lcm, grow), numpy.pad(self.gcm, grow)
            self.k = int(largest) + 1
        counts = numpy.zeros((self.k, self.k))
        numpy.add.at(counts, (guess, truth), 1)
        return counts

    @staticmethod
    def _mcc(cmat: numpy.ndarray) -> float:
        n = cmat.sum()
        x, y = cmat.sum(axis=1), cmat.sum(axis=0)
        cov_xx, cov_yy = numpy.sum(x * (n - x)), numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
        return float(cov_xy / (cov_xx * cov_yy) ** 0.5)

    # The sums are the score times the count, as MXNet's properties (get divides back).
    @property
    def sum_metric(self) -> float:  # type: ignore[override]
        return self._mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self) -> float:  # type: ignore[override]
        return self._mcc(self.gcm) * self.global_num_inst

    def reset(self) -> None:
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self) -> None:
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))


class _Regression(EvalMetric):
    """A per-batch mean of an error between labels and predictions (vectors count as
    columns), averaged over batches; named `NAME` unless `name` is given."""

    NAME = ""

    def __init__(self, name: str | None = None, output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        super().__init__(name or self.NAME, output_names=output_names, label_names=label_names)

    def error(self, difference: numpy.ndarray) -> float:
        raise NotImplementedError

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            truth, guess = label.asnumpy(), pred.asnumpy()
            truth = truth.reshape(truth.shape[0], 1) if truth.ndim == 1 else truth
            guess = guess.reshape(guess.shape[0], 1) if guess.ndim == 1 else guess
            self._add(self.error(truth - guess), 1)


@register
class MAE(_Regression):
    """Mean absolute error."""

    NAME = "mae"

    def error(self, difference: numpy.ndarray) -> float:
        return float(numpy.abs(difference).mean())


@register
class MSE(_Regression):
    """Mean squared error."""

    NAME = "mse"

    def error(self, difference: numpy.ndarray) -> float:
        return float((difference ** 2.0).mean())


@register
class RMSE(_Regression):
    """Root mean squared error, per batch, averaged over batches (as MXNet's)."""

    NAME = "rmse"

    def error(self, difference: numpy.ndarray) -> float:
        return float(numpy.sqrt((difference ** 2.0).mean()))


Moments = tuple[int, float, float]   # count, mean, sum of squared deviations


def _welford(moments: Moments, values: numpy.ndarray) -> Moments:
    """`moments` with `values` added, a batch at a time as MXNet's Welford update
    (exact for one value at a time, close for batches)."""
    count, mean, squares = moments
    count += len(values)
    delta = values - mean
    mean += float(numpy.sum(delta / count))
    squares += float(numpy.sum(delta * (values - mean)))
    return count, mean, squares


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson's correlation of predictions with labels: with ``average='macro'``
    per batch, averaged over batches; with ``'micro'`` from running moments and
    co-moment of all batches since the last full `reset` (MXNet's streaming
    formulas, which are close to, not equal to, the pooled correlation).

    With ``'micro'``, MXNet 1.9's `get_global` gives 0.0 (it never fills the
    global sum); here it gives the same pooled value as `get`.
    """

    def __init__(self, name: str = "pearsonr", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None, average: str = "macro") -> None:
        if average not in ("macro", "micro"):
            raise MinimxError(f"PearsonCorrelation: average={average!r} is not 'macro' or "
                              "'micro'")
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names)

    def reset(self) -> None:
        super().reset()
        self._labels: Moments = (0, 0.0, 0.0)
        self._preds: Moments = (0, 0.0, 0.0)
        self._comoment = 0.0

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            check_label_shapes(label, pred, shape=True)
            truth = label.asnumpy().ravel().astype(numpy.float64)
            guess = pred.asnumpy().ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(float(numpy.corrcoef(guess, truth)[0, 1]), 1)
                continue
            # MXNet's order: the labels' mean moves before the co-moment, the
            # predictions' after it.
            self._labels = _welford(self._labels, truth)
            self._comoment += float(numpy.sum((truth - self._labels[1])
                                              * (guess - self._preds[1])))
            self._preds = _welford(self._preds, guess)
            self._add(0.0, 1)   # counts the batch; the value is the moments'

    def _pooled(self) -> float:
        count, squares_p, squares_l = self._labels[0], self._preds[2], self._labels[2]
        with numpy.errstate(divide="ignore", invalid="ignore"):
            return float(numpy.float64(self._comoment) / (
                (count - 1) * numpy.sqrt(squares_p / (count - 1))
                * numpy.sqrt(squares_l / (count - 1))))

    def get(self) -> tuple[Any, Any]:
        if self.average == "macro" or not self.num_inst:
            return super().get()
        return self.name, self._pooled()

    def get_global(self) -> tuple[Any, Any]:
        if self.average == "macro" or not self.global_num_inst:
            return super().get_global()
        return self.name, self._pooled()


@register
class Loss(EvalMetric):
    """The mean of the outputs themselves (a loss layer's), over their elements;
    labels are not read."""

    def __init__(self, name: str = "loss", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names)

    def update(self, labels: Any, preds: Sequence[NDArray] | NDArray) -> None:
        for pred in [preds] if isinstance(preds, NDArray) else preds:
            self._add(float(pred.asnumpy().sum()), pred.size)


@register
class Torch(Loss):
    """`Loss` named ``torch`` (MXNet's dummy metric for torch criterions, deprecated)."""

    def __init__(self, name: str = "torch", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """`Loss` named ``caffe`` (MXNet's dummy metric for caffe criterions, deprecated)."""

    def __init__(self, name: str = "caffe", output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Perplexity(EvalMetric):
    """exp of the mean negative log-probability of the labels (floored at 1e-10),
    leaving out positions labelled `ignore_label` (None: none)."""

    def __init__(self, ignore_label: int | None, axis: int = -1, name: str = "perplexity",
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            probs = numpy.moveaxis(pred.asnumpy(), self.axis, -1)
            probs = probs.reshape(-1, probs.shape[-1])
            truth = label.asnumpy().ravel()
            if truth.shape[0] != probs.shape[0]:
                raise ShapeError(f"Perplexity: {truth.shape[0]} labels for predictions of "
                                 f"shape {pred.shape}")
            # Labels past either end pick the nearest class, as MXNet's `pick` clips.
            classes = numpy.clip(truth.astype(numpy.int64), 0, probs.shape[-1] - 1)
            picked = probs[numpy.arange(truth.shape[0]), classes]
            count = picked.size
            if self.ignore_label is not None:
                ignore = truth == self.ignore_label
                picked = numpy.where(ignore, 1.0, picked)
                count -= int(ignore.sum())
            self._add(float(-numpy.log(numpy.maximum(1e-10, picked)).sum()), count)

    def get(self) -> tuple[Any, Any]:
        name, value = super().get()
        return name, math.exp(value)

    def get_global(self) -> tuple[Any, Any]:
        name, value = super().get_global()
        return name, math.exp(value)


@register
@alias("ce")
class CrossEntropy(EvalMetric):
    """Mean of -log(probability of the label + eps) over examples."""

    NAME = "cross-entropy"

    def __init__(self, eps: float = 1e-12, name: str | None = None,
                 output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        super().__init__(name or self.NAME, eps=eps, output_names=output_names,
                         label_names=label_names)
        self.eps = eps

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds, strict=True):
            truth, probs = label.asnumpy().ravel(), pred.asnumpy()
            if truth.shape[0] != probs.shape[0]:
                raise ShapeError(f"CrossEntropy: {truth.shape[0]} labels for {probs.shape[0]} "
                                 "predictions")
            prob = probs[numpy.arange(truth.shape[0]), numpy.int64(truth)]
            self._add(float((-numpy.log(prob + self.eps)).sum()), truth.shape[0])


@register
@alias("nll_loss")
class NegativeLogLikelihood(CrossEntropy):
    """CrossEntropy under MXNet's other name: -log(probability of the label + eps)."""

    NAME = "nll-loss"


@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on numpy arrays, per output: its value,
    or a ``(sum, count)`` pair. Named after `feval` unless `name` is given."""

    def __init__(self, feval: FEval, name: str | None = None,
                 allow_extra_outputs: bool = False, output_names: Sequence[str] | None = None,
                 label_names: Sequence[str] | None = None) -> None:
        if name is None:
            name = feval.__name__
            name = f"custom({name})" if "<" in name else name
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels: Sequence[NDArray], preds: Sequence[NDArray]) -> None:
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels, strict=False):
            value = self._feval(label.asnumpy(), pred.asnumpy())
            self._add(*(value if isinstance(value, tuple) else (value, 1)))

    def get_config(self) -> dict[str, Any]:
        raise MinimxError("CustomMetric cannot be serialized")


def np(numpy_feval: FEval, name: str | None = None,
       allow_extra_outputs: bool = False) -> CustomMetric:
    """A `CustomMetric` from a function of numpy arrays (MXNet's ``mx.metric.np``)."""
    return CustomMetric(numpy_feval, name, allow_extra_outputs)
