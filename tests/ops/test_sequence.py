"""SequenceMask, SequenceLast and SequenceReverse against per-sequence loop references,
their gradients, inference and errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.base import OperatorError

from gradcheck import check_gradient
from ops_support import infer, run

FAST = settings(max_examples=50, deadline=None)


@st.composite
def sequences(draw):
    """(data (T, B, F) or (B, T, F), lengths in [1, T] as float32, axis)."""
    steps, batch, feat = draw(st.integers(1, 5)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    axis = draw(st.sampled_from([0, 1]))
    shape = (steps, batch, feat) if axis == 0 else (batch, steps, feat)
    lengths = rng.integers(1, steps + 1, batch).astype(np.float32)
    return rng.standard_normal(shape), lengths, axis


@FAST
@given(sequences(), st.sampled_from([0.0, -1.5]))
def test_sequence_mask_and_last_match_loops(case, value):
    data, lengths, axis = case
    masked = run("SequenceMask", dict(use_sequence_length=True, value=value, axis=axis),
                 data, lengths)
    last = run("SequenceLast", dict(use_sequence_length=True, axis=axis), data, lengths)
    for b, n in enumerate(lengths.astype(int)):
        seq = data[:, b] if axis == 0 else data[b]
        got = masked[:, b] if axis == 0 else masked[b]
        np.testing.assert_array_equal(got[:n], seq[:n])
        assert np.all(got[n:] == value)
        np.testing.assert_array_equal(last[b], seq[n - 1])
    np.testing.assert_array_equal(run("SequenceMask", dict(axis=axis), data), data)
    np.testing.assert_array_equal(run("SequenceLast", dict(axis=axis), data),
                                  data[-1] if axis == 0 else data[:, -1])


@FAST
@given(sequences())
def test_sequence_reverse_matches_loop(case):
    data, lengths, axis = case
    if axis == 1:
        data = np.swapaxes(data, 0, 1)
    out = run("SequenceReverse", dict(use_sequence_length=True), data, lengths)
    for b, n in enumerate(lengths.astype(int)):
        np.testing.assert_array_equal(out[:n, b], data[:n, b][::-1])
        np.testing.assert_array_equal(out[n:, b], data[n:, b])
    np.testing.assert_array_equal(run("SequenceReverse", {}, data), data[::-1])


def test_sequence_gradients():
    rng = np.random.default_rng(5)
    # Lengths between integers: MXNet truncates them, so small steps change nothing.
    data, lengths = rng.standard_normal((4, 3, 2)), np.array([2.5, 4.5, 1.5])
    for name, axis in (("SequenceMask", 0), ("SequenceMask", 1), ("SequenceLast", 0),
                       ("SequenceLast", 1), ("SequenceReverse", 0)):
        x = data if axis == 0 else np.swapaxes(data, 0, 1).copy()
        grads = check_gradient(name, dict(use_sequence_length=True, axis=axis), [x, lengths])
        assert not grads[1].any()


def test_sequence_inference_and_errors():
    assert infer("SequenceLast", dict(use_sequence_length=True, axis=1), [(3, 5, 2), None]) == \
        ([(3, 5, 2), (3,)], [(3, 2)])
    assert infer("SequenceMask", dict(use_sequence_length=True), [(5, 3, 2), None]) == \
        ([(5, 3, 2), (3,)], [(5, 3, 2)])
    data, lengths = mx.sym.var("data"), mx.sym.var("len")
    last = mx.sym.SequenceLast(data, lengths, use_sequence_length=True, name="last")
    assert last.list_arguments() == ["data", "len"]
    assert last.infer_type(data="float32", len="int32")[0] == [np.float32, np.int32]
    assert mx.sym.SequenceReverse(data, name="rev").list_arguments() == ["data"]
    with pytest.raises(OperatorError, match="axis=1"):
        infer("SequenceReverse", dict(axis=1), [(3, 5, 2)])
    with pytest.raises(OperatorError, match="lengths"):
        run("SequenceLast", dict(use_sequence_length=True), np.zeros((2, 1)), np.array([3.0]))
