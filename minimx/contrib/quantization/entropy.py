"""Entropy calibration: histograms of a layer's output and the KL-divergence threshold.

MXNet 1.9.1 keeps, per layer, a histogram of the output over ``(-th, th)``,
``th`` being the largest magnitude seen so far (8001 bins to start with). A
later batch that reaches further widens the histogram by whole bins of the
old width on both sides (`Histogram.merge`). The threshold is then the one,
among the bin edges right of zero, whose clipped distribution `p` is closest
(in KL divergence) to `q`, the same distribution squeezed into
`num_quantized_bins` levels and spread back (`get_optimal_threshold`; MXNet's
``_contrib_calibrate_entropy`` operator).

Both are written to give MXNet's numbers bit for bit: the histogram as
numpy 1.x computed it for MXNet, the search in float32 with the running
(left to right) sums of MXNet's C++ loop, not numpy's pairwise ones. The
search takes the windows a block at a time, one per column, so that numpy
adds them in that order and each pass serves a block (see `_divergences`).

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

_F32 = np.float32
QUANTIZED_DTYPES = ("int8", "uint8", "auto")


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
        wide = np.float64(grow * step + float(self.threshold))
        counts, edges = np.histogram(values, bins=len(self.counts) + 2 * grow,
                                     range=_bounds(wide))
        counts[grow:len(counts) - grow] += self.counts
        return Histogram(counts, edges, low, high, wide)


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


def smooth_distribution(p: np.ndarray, eps: float = 0.0001) -> np.ndarray | None:
    """`p` (float32 counts) with every zero raised to `eps` and the same total taken
    evenly off the nonzero entries, so that KL divergence is defined; None where MXNet
    gives up (all zeros, or nonzero entries too few to pay for the zeros)."""
    column = np.asarray(p, dtype=_F32)[:, None]
    smooth, ok = _smooth(column, np.array([len(column)]), eps)
    return smooth[:, 0] if ok[0] else None


# The search works on a block of windows at once, one window per column, padded
# at the bottom to the longest (their lengths differ by 2 from one to the next).
# The C++ loop sums each window in float32 left to right; numpy reduces the outer
# axis of a C-ordered array a row at a time (pairwise summation is for the inner
# axis only), which adds each column in that order. Entries below a column's
# window are junk, kept out of every sum and count.

def _smooth(columns: np.ndarray, lengths: np.ndarray, eps: float = 0.0001,
            zeros: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`smooth_distribution` of each column's window (whose zeros are `zeros`, when
    known), and whether MXNet could smooth that column."""
    zeros = columns == 0 if zeros is None else zeros
    n_zeros = _column_counts(zeros, lengths)
    n_nonzeros = lengths - n_zeros
    eps32 = _F32(eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps1 = eps32 * n_zeros.astype(_F32) / n_nonzeros.astype(_F32)
    smooth = columns - eps1
    np.copyto(smooth, eps32, where=zeros)
    return smooth, (n_nonzeros > 0) & (eps1 < 1.0)


def _below(columns: np.ndarray, lengths: np.ndarray, fill: bool | np.float32) -> np.ndarray:
    """The rows of `columns` below the shortest window, `fill` below each window."""
    rows = np.arange(lengths.min(), len(columns))[:, None]
    return np.where(rows < lengths, columns[lengths.min():], fill)


def _column_counts(mask: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """How many entries of each column's window `mask` marks."""
    head = np.count_nonzero(mask[:lengths.min()], axis=0)
    return head + np.count_nonzero(_below(mask, lengths, False), axis=0)


def _running_sums(columns: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each column's window summed in float32, top to bottom as a C++ loop adds it."""
    if columns.shape[1] == 1:  # a single column is the inner axis: numpy's running sum
        return np.cumsum(columns[:lengths[0]], axis=0, dtype=_F32)[-1]
    head = np.add.reduce(columns[:lengths.min()], axis=0, dtype=_F32)
    rest = np.concatenate([head[None], _below(columns, lengths, _F32(0))])
    return np.add.reduce(rest, axis=0, dtype=_F32)


def _kl_divergences(p: np.ndarray, q: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """KL(p || q) of each column's window, positive float32 distributions, each
    normalised first."""
    p = p / _running_sums(p, lengths)
    q = q / _running_sums(q, lengths)
    # float32's log, correctly rounded: C's logf, where numpy's own float32 log
    # differs in the last bit.
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (p / q).astype(np.float64)
        log_ratio = np.log(ratio, out=ratio).astype(_F32)
        return _running_sums(p * log_ratio, lengths)


class _Histogram(NamedTuple):
    """The float32 counts, zero-padded at the end for windows read past them, and
    their exact running totals (of counts, of nonzero bins) for level sums."""

    counts: np.ndarray
    padded: np.ndarray
    left_sums: np.ndarray
    totals: np.ndarray
    nonzeros: np.ndarray

    @classmethod
    def of(cls, counts: np.ndarray) -> _Histogram:
        def running(values: np.ndarray) -> np.ndarray:
            return np.concatenate([[0], np.cumsum(values, dtype=np.int64)])

        return cls(counts, np.concatenate([counts, np.zeros_like(counts)]),
                   np.cumsum(counts, dtype=_F32), running(counts.astype(np.int64)),
                   running(counts != 0))


def _windows(h: _Histogram, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The windows ``counts[start : start + length]``, one per column (`starts` fall
    by one from column to column), with MXNet's first and last bins: everything left
    of the window folded into its first, everything right of it into its last."""
    k, longest = len(starts), int(lengths.max())
    rows = np.lib.stride_tricks.sliding_window_view(h.padded[starts[-1]:], k)[:longest]
    p = rows[:, ::-1].copy()
    p[0] = h.left_sums[starts]
    p[lengths - 1, np.arange(k)] = _tail_sums(h, starts + lengths - 1)
    return p


def _tail_sums(h: _Histogram, firsts: np.ndarray) -> np.ndarray:
    """``counts[first:]`` summed left to right in float32, for each of `firsts`
    (ascending by one)."""
    n = len(h.counts)
    if h.totals[-1] < 2**24:  # every partial sum is an integer float32 holds exactly
        return (h.totals[n] - h.totals[firsts]).astype(_F32)
    rows = np.lib.stride_tricks.sliding_window_view(h.padded[firsts[0]:], len(firsts))
    return _running_sums(np.ascontiguousarray(rows[:n - firsts[0]]),
                         np.full(len(firsts), n - firsts[0]))


def _quantized(h: _Histogram, p_zeros: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
               num_quantized_bins: int) -> np.ndarray:
    """Each window, its first bin left empty (MXNet's loop never fills it), merged
    into `num_quantized_bins` levels of `width` bins (the last level also takes the
    bins left over), each level's total spread evenly over its nonzero bins, and
    kept where `p` is nonzero (not at `p_zeros`). Every window of the block has the
    same `width`."""
    width = int(lengths[0]) // num_quantized_bins
    cut = num_quantized_bins * width
    edges = starts + (np.arange(num_quantized_bins + 1) * width)[:, None]
    edges[0] += 1
    last = [starts + cut, starts + lengths]

    def per_level(running: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return running[edges[1:]] - running[edges[:-1]], running[last[1]] - running[last[0]]

    regular, extra = per_level(h.totals)
    # MXNet adds the bins left over to the float32 total of the last level's own ones.
    totals = regular.astype(_F32)
    totals[-1] += extra.astype(_F32)
    regular, extra = per_level(h.nonzeros)
    norm = regular.astype(_F32)
    norm[-1] += extra
    level_value = np.divide(totals, norm, out=np.zeros_like(totals), where=norm > 0)
    q = np.empty(p_zeros.shape, dtype=_F32)
    q[:cut].reshape(num_quantized_bins, width, -1)[:] = level_value[:, None]
    q[cut:] = level_value[-1]
    np.copyto(q, _F32(0), where=p_zeros)
    return q


def _divergences(counts: np.ndarray, halves: np.ndarray, num_quantized_bins: int,
                 at_once: int = 32) -> np.ndarray:
    """The float32 KL divergence of each window (`halves`, ascending by one), as
    MXNet's loop computes it, a block of windows of one level width at a time;
    infinite where MXNet gives up smoothing."""
    h = _Histogram.of(counts)
    zero = len(counts) // 2
    widths = (2 * halves + 1) // num_quantized_bins
    divergence = np.empty(len(halves), dtype=_F32)
    for width in np.unique(widths):
        same = np.flatnonzero(widths == width)
        for block in np.array_split(same, -(-len(same) // at_once)):
            starts, lengths = zero - halves[block], 2 * halves[block] + 1
            p = _windows(h, starts, lengths)
            p_zeros = p == 0
            q, q_ok = _smooth(_quantized(h, p_zeros, starts, lengths, num_quantized_bins),
                              lengths)
            p, p_ok = _smooth(p, lengths, zeros=p_zeros)
            kl = _kl_divergences(p, q, lengths)
            divergence[block] = np.where(p_ok & q_ok, kl, _F32(np.inf))
    return divergence


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
    total_bins = len(hist.counts)
    if total_bins % 2 != 1 or not 2 <= num_quantized_bins <= total_bins:
        raise MinimxError(f"get_optimal_threshold: needs an odd number of bins, at least "
                          f"num_quantized_bins={num_quantized_bins} (>= 2); got {total_bins}")
    if hist.min >= 0 and quantized_dtype in ("auto", "uint8"):
        num_quantized_bins = num_quantized_bins * 2 + 1
    # MXNet hands the histogram to its operator as float32 counts and edges.
    counts = hist.counts.astype(_F32)
    edges = hist.edges.astype(_F32)
    zero = total_bins // 2
    halves = np.arange(num_quantized_bins // 2, zero + 1)
    divergence = _divergences(counts, halves, num_quantized_bins)
    best = int(np.argmin(divergence))
    # MXNet starts its minimum at FLT_MAX, which an infinite divergence never beats.
    least = min(float(divergence[best]), float(np.finfo(_F32).max))
    return OptimalThreshold(float(hist.min), float(hist.max),
                            float(edges[zero + halves[best] + 1]), least)


def _get_optimal_threshold(hist_data: tuple, quantized_dtype: str,
                           num_quantized_bins: int = 255) -> OptimalThreshold:
    """MXNet 1.9.1's name and arguments for `get_optimal_threshold` of a
    ``(counts, edges, min, max, threshold)`` tuple (what ``hist_dict`` holds)."""
    hist = as_histogram(hist_data, "_get_optimal_threshold")
    return get_optimal_threshold(hist, quantized_dtype, num_quantized_bins=num_quantized_bins)
