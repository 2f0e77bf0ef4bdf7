"""get_optimal_threshold against MXNet 1.9.1's _get_optimal_threshold, and its parts."""
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minimx import MinimxError
from minimx.contrib.quantization import (
    Histogram,
    get_optimal_threshold,
    smooth_distribution,
)
from minimx.ops import calibrate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "quantization"
CASES = json.loads((FIXTURES / "thresholds.json").read_text())


@pytest.fixture(scope="module")
def arrays():
    with np.load(FIXTURES / "threshold-arrays.npz") as npz:
        return {k: npz[k] for k in npz.files}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['array']}-{c['quantized_dtype']}")
def test_threshold_is_mxnets(case, arrays):
    got = get_optimal_threshold(arrays[case["array"]], case["quantized_dtype"])
    want = (case["min"], case["max"], case["threshold"], case["divergence"])
    np.testing.assert_allclose(tuple(got), want, rtol=1e-6)
    # Not only close: the same float32 threshold, the same bin chosen.
    assert np.float32(got.threshold) == np.float32(case["threshold"])


def test_uint8_doubles_the_levels_of_a_non_negative_layer(arrays):
    relu = arrays["relu"]
    assert (get_optimal_threshold(relu, "uint8")
            == get_optimal_threshold(relu, "int8", num_quantized_bins=511))
    # A layer with negative values keeps 255 levels whatever the dtype.
    normal = arrays["normal"]
    assert get_optimal_threshold(normal, "uint8") == get_optimal_threshold(normal, "int8")


def test_a_histogram_gives_what_its_values_give(arrays):
    values = arrays["heavy"]
    assert (get_optimal_threshold(Histogram.of(values, 801), num_quantized_bins=31)
            == get_optimal_threshold(values, num_bins=801, num_quantized_bins=31))


def test_smoothing_moves_eps_onto_the_zeros():
    p = np.array([0, 4, 0, 0, 2], dtype=np.float32)
    got = smooth_distribution(p)
    eps1 = np.float32(1e-4) * np.float32(3) / np.float32(2)
    np.testing.assert_array_equal(got, np.array([1e-4, 4 - eps1, 1e-4, 1e-4, 2 - eps1],
                                                dtype=np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.sum(), p.sum(), rtol=1e-6)


def test_smoothing_gives_up_as_mxnet_does():
    assert smooth_distribution(np.zeros(4, np.float32)) is None
    # One nonzero entry cannot pay 1e-4 for each of 10**4 zeros.
    assert smooth_distribution(np.r_[np.float32(5), np.zeros(10**4, np.float32)]) is None


def test_bad_arguments_are_refused():
    values = np.linspace(-1, 1, 101, dtype=np.float32)
    with pytest.raises(MinimxError, match="quantized_dtype must be one of int8, uint8, auto, "
                                          "got 'int4'"):
        get_optimal_threshold(values, "int4")
    with pytest.raises(MinimxError, match="odd number of bins.*got 100"):
        get_optimal_threshold(values, num_bins=100)
    with pytest.raises(MinimxError, match="num_quantized_bins=255"):
        get_optimal_threshold(values, num_bins=101)


def test_a_histogram_of_zeros_widens():
    # MXNet's combine_histogram divides by the zero bin width here and fails.
    zeros = Histogram.of(np.zeros(6, np.float32), 11)
    merged = zeros.merge(np.array([-1, 0.5, 2], np.float32))
    fresh = Histogram.of(np.array([-1, 0.5, 2], np.float32), 11)
    np.testing.assert_array_equal(merged.counts - fresh.counts, [0] * 5 + [6] + [0] * 5)
    assert (merged.min, merged.max, merged.threshold) == (-1, 2, 2)
    np.testing.assert_array_equal(merged.edges, fresh.edges)


def test_merging_narrower_values_keeps_the_bins():
    first = Histogram.of(np.array([-2, 1, 2], np.float32), 5)
    merged = first.merge(np.array([0.1, -0.3], np.float32))
    np.testing.assert_array_equal(merged.counts, [1, 0, 2, 1, 1])
    assert (merged.min, merged.max, merged.threshold) == (-2, 2, 2)


def test_merging_wider_values_adds_whole_bins_each_side():
    first = Histogram.of(np.array([-1, 1], np.float32), 5)  # bins of width 0.4
    merged = first.merge(np.array([1.5], np.float32))
    # 0.5 beyond the range is 2 bins (rounded up as MXNet does, one more than 0.5 // 0.4).
    assert len(merged.counts) == 9
    np.testing.assert_allclose(merged.threshold, 1.8)
    np.testing.assert_array_equal(merged.counts, [0, 0, 1, 0, 0, 0, 1, 0, 1])


def _mxnets_loop(counts: np.ndarray, num_quantized_bins: int) -> np.ndarray:
    """The divergence of every window, as MXNet 1.9.1's CalibrateComputeCPU loop
    computes it, one window at a time with float32 sums taken left to right."""
    f32 = np.float32

    def running_sum(values):
        return np.cumsum(values, dtype=f32)[-1]

    def smooth(p):
        zeros = p == 0
        nonzero = p.size - np.count_nonzero(zeros)
        eps1 = f32(1e-4) * f32(np.count_nonzero(zeros)) / f32(nonzero) if nonzero else 1
        return None if eps1 >= 1 else np.where(zeros, f32(1e-4), p - f32(eps1)).astype(f32)

    hist, zero, out = counts.astype(f32), len(counts) // 2, []
    for half in range(num_quantized_bins // 2, zero + 1):
        start, stop = zero - half, zero + half + 1
        p = hist[start:stop].copy()
        p[0], p[-1] = running_sum(hist[:start + 1]), running_sum(hist[stop - 1:])
        sliced = hist[start:stop].astype(np.int64)
        sliced[0] = 0
        width = len(sliced) // num_quantized_bins
        q = np.zeros(len(p), f32)
        for j in range(num_quantized_bins):
            lo, hi = j * width, (len(q) if j == num_quantized_bins - 1 else (j + 1) * width)
            total = f32(sliced[lo:(j + 1) * width].sum())
            if j == num_quantized_bins - 1:
                total += f32(sliced[num_quantized_bins * width:].sum())
            norm = np.count_nonzero(sliced[lo:hi])
            if norm:
                q[lo:hi] = np.where(p[lo:hi] != 0, total / f32(norm), f32(0))
        p, q = smooth(p), smooth(q)
        if p is None or q is None:
            out.append(np.inf)
            continue
        p, q = p / running_sum(p), q / running_sum(q)
        log = np.log((p / q).astype(np.float64)).astype(f32)
        out.append(running_sum(p * log))
    return np.array(out, f32)


@settings(max_examples=40, deadline=None)
@given(half_bins=st.integers(2, 60), levels=st.integers(1, 20), seed=st.integers(0, 2**16),
       scale=st.sampled_from([3, 1e3, 4e7]), zeros=st.floats(0, 0.9))
def test_the_search_is_mxnets_loop(half_bins, levels, seed, scale, zeros):
    """The windows searched a block at a time give the divergences of MXNet's loop bit
    for bit: sums taken in its order (also past float32's integers, 2**24), the same
    levels, smoothing and logarithms; windows of one column or many."""
    num_bins = 2 * half_bins + 1
    num_quantized_bins = min(2 * levels + 1, num_bins)
    rng = np.random.default_rng(seed)
    counts = rng.poisson(scale, num_bins) * (rng.random(num_bins) >= zeros)
    halves = np.arange(num_quantized_bins // 2, half_bins + 1)
    got = calibrate.divergences(counts.astype(np.float32), halves, num_quantized_bins)
    np.testing.assert_array_equal(got, _mxnets_loop(counts, num_quantized_bins))
