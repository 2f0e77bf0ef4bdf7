"""``_contrib_calibrate_entropy`` (`mx.nd.contrib.calibrate_entropy`): given a histogram
(float32 counts over an odd number of bins centred on zero, and their edges), the
threshold among the bin edges right of zero whose clipped distribution `p` is closest,
in KL divergence, to `q`, the same distribution squeezed into `num_quantized_bins`
levels and spread back; and that divergence (MXNet 1.9.1's
src/operator/quantization/calibrate.cc, which entropy calibration calls through
``_get_optimal_threshold``, contrib/quantization/entropy.py here).

The search gives MXNet's numbers bit for bit: in float32 with the running (left to
right) sums of MXNet's C++ loop, not numpy's pairwise ones, and the counts cut to whole
numbers where MXNet's loop keeps them as ``size_t`` (the levels). It takes the windows
a block at a time, one per column, so that numpy adds them in that order and each pass
serves a block (see `divergences`).

>>> import numpy as np
>>> counts = np.array([0, 1, 3, 9, 20, 9, 3, 1, 0], np.float32)
>>> threshold, divergence = calibrate_entropy(counts, np.linspace(-1, 1, 10), 3)
>>> round(float(threshold), 4), round(float(divergence), 4)
(1.0, 0.0876)
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from .infer import merge, merge_dtype
from .params import Params
from .registry import OpContext, OpDef, Param, register

_F32 = np.float32


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
    their exact running totals (of counts, of nonzero bins) for level sums, the
    counts cut to whole numbers as MXNet's loop keeps them (size_t) for its levels."""

    counts: np.ndarray
    padded: np.ndarray
    left_sums: np.ndarray
    totals: np.ndarray
    nonzeros: np.ndarray
    exact: bool   # whole counts below 2**24 in all: every partial sum exact in float32

    @classmethod
    def of(cls, counts: np.ndarray) -> _Histogram:
        def running(values: np.ndarray) -> np.ndarray:
            return np.concatenate([[0], np.cumsum(values, dtype=np.int64)])

        whole = counts.astype(np.int64)
        totals = running(whole)
        return cls(counts, np.concatenate([counts, np.zeros_like(counts)]),
                   np.cumsum(counts, dtype=_F32), totals, running(whole != 0),
                   bool(np.array_equal(whole, counts)) and totals[-1] < 2**24)


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
    if h.exact:
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


def divergences(counts: np.ndarray, halves: np.ndarray, num_quantized_bins: int,
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


def check_bins(num_bins: int, num_quantized_bins: int, what: str) -> None:
    """Refuse what MXNet's loop reads out of bounds for: an even number of bins (the last
    window's threshold edge is past the edges), more levels than bins."""
    if num_bins % 2 != 1 or not 1 <= num_quantized_bins <= num_bins:
        raise OperatorError(f"{what}: needs an odd number of bins, at least "
                            f"num_quantized_bins={num_quantized_bins} (>= 1); got {num_bins}")


def calibrate_entropy(counts: np.ndarray, edges: np.ndarray, num_quantized_bins: int = 255,
                      what: str = "calibrate_entropy") -> tuple[np.float32, np.float32]:
    """The float32 threshold and divergence MXNet's ``_contrib_calibrate_entropy`` gives
    for a histogram's `counts` and `edges`. The divergence of a window whose quantized
    version is all zeros is infinite; the first least one wins, and where every one is
    infinite, MXNet's starting minimum, FLT_MAX, stays with the first window's threshold."""
    counts = np.asarray(counts, dtype=_F32).ravel()
    edges = np.asarray(edges, dtype=_F32).ravel()
    check_bins(len(counts), num_quantized_bins, what)
    if len(edges) != len(counts) + 1:
        raise ShapeError(f"{what}: hist_edges must hold one more edge than the {len(counts)} "
                         f"bins, got {len(edges)}")
    if not np.all(counts >= 0):   # MXNet's loop casts them to size_t
        raise OperatorError(f"{what}: the counts must be finite and non-negative, got "
                            f"{counts[~(counts >= 0)][:4].tolist()}")
    zero = len(counts) // 2
    halves = np.arange(num_quantized_bins // 2, zero + 1)
    divergence = divergences(counts, halves, num_quantized_bins)
    best = int(np.argmin(divergence))
    least = min(divergence[best], np.finfo(_F32).max)
    return edges[zero + halves[best] + 1], _F32(least)


def _calibrate_forward(p: Params, ctx: OpContext, inputs: list[np.ndarray]) -> list[np.ndarray]:
    threshold, divergence = calibrate_entropy(inputs[0], inputs[1], p.num_quantized_bins,
                                              p.label)
    return [np.array([threshold]), np.array([divergence])]


def _calibrate_shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    hist, edges = in_shapes
    if hist is not None and len(hist) == 1 and hist[0]:
        check_bins(hist[0], p.num_quantized_bins, p.label)
        edges = merge(edges, (hist[0] + 1,))
    return [hist, edges], [merge(out, (1,)) for out in out_shapes]


def _calibrate_type(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    f32 = np.dtype(_F32)
    if in_types[0] not in (None, f32):
        raise DTypeError(f"{p.label}: hist must be float32, got {in_types[0]}")
    return [f32, merge_dtype(in_types[1], f32)], [merge_dtype(t, f32) for t in out_types]


register(OpDef(
    "_contrib_calibrate_entropy", _calibrate_forward, inputs=("hist", "hist_edges"),
    outputs=("threshold", "divergence"),
    params=(Param("num_quantized_bins", "int", 255, "The number of quantized bins."),),
    infer_shape=_calibrate_shape, infer_type=_calibrate_type, bfloat16="refuse",
    aliases=("_npx_contrib_calibrate_entropy",),
    doc="Provide calibrated min/max for input histogram (the KL-divergence threshold and "
        "its divergence; forward only)."))
