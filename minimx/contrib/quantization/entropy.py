"""Entropy calibration: histograms of a layer's output and the KL-divergence threshold.

MXNet 1.9.1 keeps, per layer, a histogram of the output over ``(-th, th)``,
``th`` being the largest magnitude seen so far (8001 bins to start with). A
later batch that reaches further widens the histogram by whole bins of the
old width on both sides (`Histogram.merge`). The threshold is then the one,
among the bin edges right of zero, whose clipped distribution `p` is closest
(in KL divergence) to `q`, the same distribution squeezed into
`num_quantized_bins` levels and spread back (`get_optimal_threshold`; MXNet's
``_contrib_calibrate_entropy`` operator).

Both give MXNet's numbers bit for bit: the histogram as numpy 1.x computed
it for MXNet, the search as the operator does (ops/calibrate.py, where it lives).

>>> import numpy as np
>>> values = np.random.default_rng(0).normal(size=10_000).astype(np.float32)
>>> best = get_optimal_threshold(values, num_bins=801, num_quantized_bins=31)
>>> round(best.min, 3), round(best.max, 3), round(best.threshold, 3)
(-3.899, 3.482, 3.617)
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...base import MinimxError
from ...ops.calibrate import calibrate_entropy
from ...ops.calibrate import smooth_distribution as smooth_distribution  # MXNet's name here

_F32 = np.float32
QUANTIZED_DTYPES = ("int8", "uint8", "auto")
# MXNet widens a histogram by bins of the old width, however many that takes: a
# batch reaching a thousand times further than the first makes millions of bins,
# and the threshold search, quadratic in them, runs for hours (8001 bins took 0.4 s
# here, 32,001 5.7 s, 64,001 23 s). Past this many, minimx starts the histogram
# over at its size, across the new range (`Histogram.combine`).
MAX_BINS = 4 * 8001


def _bounds(th: np.floating) -> tuple[float, float]:
    """``(-th, th)`` as Python floats. numpy 1.x, which MXNet ran on, computed the
    edges of a float32 range in float64; numpy 2 computes them in float32 unless the
    bounds are Python floats, and rounds some edges differently."""
    return -float(th), float(th)


class Histogram(NamedTuple):
    """What MXNet's ``_LayerHistogramCollector`` keeps per layer: counts over
    ``(-threshold, threshold)``, their edges, and the smallest and largest value seen."""

    counts: np.ndarray
    edges: np.ndarray
    min: np.floating
    max: np.floating
    threshold: np.floating

    @classmethod
    def of(cls, values: np.ndarray, num_bins: int = 8001) -> Histogram:
        """The histogram of `values` over ``(-m, m)``, m the largest magnitude in them."""
        low, high = np.min(values), np.max(values)
        th = max(abs(low), abs(high))
        counts, edges = np.histogram(values, bins=num_bins, range=_bounds(th))
        return cls(counts, edges, low, high, th)

    def merge(self, values: np.ndarray) -> Histogram:
        """This histogram with `values` added (MXNet's ``combine_histogram``). Values
        beyond the range widen it by whole bins of the current width on each side."""
        low, high = np.min(values), np.max(values)
        return self.combine(values, low, high, max(abs(low), abs(high)))

    def combine(self, values: np.ndarray, low: np.floating, high: np.floating,
                th: np.floating) -> Histogram:
        """`merge`, given the extremes of `values` and their largest magnitude `th`."""
        low, high = min(self.min, low), max(self.max, high)
        if self.threshold == 0 < th:
            # Every value so far was 0 (a relu dead on the first batches): MXNet fails
            # to widen bins of width 0. Start over, with the zeros in the middle bin.
            fresh = Histogram.of(values, len(self.counts))
            fresh.counts[len(fresh.counts) // 2] += self.counts.sum()
            return fresh._replace(min=low, max=high)
        if th <= self.threshold:
            counts, _ = np.histogram(values, bins=len(self.counts),
                                     range=_bounds(self.threshold))
            return Histogram(self.counts + counts, self.edges, low, high, self.threshold)
        # MXNet ran on numpy 1.x, which did this scalar arithmetic in float64.
        step = 2.0 * float(self.threshold) / len(self.counts)
        grow = int((th - self.threshold) // np.float64(step) + 1)
        if len(self.counts) + 2 * grow > max(MAX_BINS, len(self.counts)):
            return self._restarted(values, low, high)
        wide = np.float64(grow * step + float(self.threshold))
        counts, edges = np.histogram(values, bins=len(self.counts) + 2 * grow,
                                     range=_bounds(wide))
        counts[grow:len(counts) - grow] += self.counts
        return Histogram(counts, edges, low, high, wide)

    def _restarted(self, values: np.ndarray, low: np.floating, high: np.floating
                   ) -> Histogram:
        """A histogram of this one's size over the range of `values` (wider than
        this one's), holding them and this one's counts, each at its bin's centre."""
        fresh = Histogram.of(values, len(self.counts))
        centres = (self.edges[:-1] + self.edges[1:]) / 2
        moved, _ = np.histogram(centres, bins=len(fresh.counts),
                                range=_bounds(fresh.threshold), weights=self.counts)
        counts = fresh.counts + moved.astype(fresh.counts.dtype)
        return fresh._replace(counts=counts, min=low, max=high)


def as_histogram(value: tuple, what: str) -> Histogram:
    """`value`, MXNet's ``(counts, edges, min, max, threshold)`` tuple, as a `Histogram`."""
    if not isinstance(value, tuple) or len(value) != len(Histogram._fields):
        raise MinimxError(f"{what}: a histogram is the tuple (counts, edges, min, max, "
                          f"threshold), got {type(value).__name__} {str(value)[:60]}")
    return Histogram(*value)


def combine_histogram(old_hist: tuple, arr: np.ndarray, new_min: np.floating,
                      new_max: np.floating, new_th: np.floating) -> Histogram:
    """MXNet 1.9.1's ``combine_histogram``: `old_hist`, a ``(counts, edges, min, max,
    threshold)`` tuple, with `arr` (whose min, max and largest magnitude are the
    other three) added; `Histogram.merge` with MXNet's arguments."""
    return as_histogram(old_hist, "combine_histogram").combine(np.asarray(arr), new_min,
                                                              new_max, new_th)


class OptimalThreshold(NamedTuple):
    """What MXNet 1.9.1's ``_get_optimal_threshold`` returns, in its order."""

    min: float
    max: float
    threshold: float
    divergence: float


def get_optimal_threshold(hist_data: Histogram | np.ndarray, quantized_dtype: str = "int8",
                          num_bins: int = 8001, num_quantized_bins: int = 255
                          ) -> OptimalThreshold:
    """The threshold with the least KL divergence between a layer's distribution and
    its quantized version, as MXNet 1.9.1's ``_get_optimal_threshold`` finds it.

    `hist_data` is a `Histogram` (what `HistogramCollector` gathers) or the values
    themselves, then histogrammed into `num_bins` bins. A non-negative layer
    quantized to ``uint8`` or ``auto`` gets ``2 * num_quantized_bins + 1`` levels,
    since the histogram's negative half is empty. The divergence of a window
    whose quantized version is all zeros is infinite; the first smallest wins.
    """
    hist = hist_data if isinstance(hist_data, Histogram) else Histogram.of(
        np.asarray(hist_data, dtype=_F32), num_bins)
    if quantized_dtype not in QUANTIZED_DTYPES:
        raise MinimxError(f"quantized_dtype must be one of {', '.join(QUANTIZED_DTYPES)}, "
                          f"got {quantized_dtype!r}")
    if hist.min >= 0 and quantized_dtype in ("auto", "uint8"):
        num_quantized_bins = num_quantized_bins * 2 + 1
    threshold, divergence = calibrate_entropy(hist.counts, hist.edges, num_quantized_bins,
                                              "get_optimal_threshold")
    return OptimalThreshold(float(hist.min), float(hist.max), float(threshold),
                            float(divergence))


def _get_optimal_threshold(hist_data: tuple, quantized_dtype: str,
                           num_quantized_bins: int = 255) -> OptimalThreshold:
    """MXNet 1.9.1's name and arguments for `get_optimal_threshold` of a
    ``(counts, edges, min, max, threshold)`` tuple (what ``hist_dict`` holds)."""
    hist = as_histogram(hist_data, "_get_optimal_threshold")
    return get_optimal_threshold(hist, quantized_dtype, num_quantized_bins=num_quantized_bins)
