"""`ResizeIter` (a fixed number of batches per epoch) and `PrefetchingIter`
(batches read ahead on a thread) give MXNet 1.9's batches, and the thread
neither hangs nor hides an error."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import minimx as mx
from minimx.base import OperatorError


def rows(n: int, first: int = 0) -> np.ndarray:
    return np.arange(first, first + n, dtype=np.float32).reshape(n, 1)


def firsts(it: mx.io.DataIter) -> list[float]:
    return [float(b.data[0].asnumpy()[0, 0]) for b in it]


def test_resize_wraps_and_cuts() -> None:
    inner = mx.io.NDArrayIter(rows(10), batch_size=3, last_batch_handle="discard")
    it = mx.io.ResizeIter(inner, 5)
    assert firsts(it) == [0, 3, 6, 0, 3]
    it.reset()
    assert firsts(it) == [0, 3, 6, 0, 3]
    assert it.provide_data == inner.provide_data and it.batch_size == 3


def test_resize_without_reset_internal_goes_on() -> None:
    it = mx.io.ResizeIter(mx.io.NDArrayIter(rows(9), batch_size=3), 2, reset_internal=False)
    assert firsts(it) == [0, 3]
    it.reset()
    assert firsts(it) == [6, 0]


def test_prefetch_gives_the_inner_batches_across_resets() -> None:
    inner = mx.io.NDArrayIter(rows(7), rows(7, 100), batch_size=3)
    it = mx.io.PrefetchingIter(inner)
    for _ in range(2):
        batches = list(it)
        assert [b.data[0].asnumpy().ravel().tolist() for b in batches] == [
            [0, 1, 2], [3, 4, 5], [6, 0, 1]]
        assert [b.label[0].asnumpy()[0, 0] for b in batches] == [100, 103, 106]
        assert [b.pad for b in batches] == [0, 0, 2]
        it.reset()
    it.reset()   # in the middle of an epoch, too
    next(it)
    it.reset()
    assert firsts(it) == [0, 3, 6]
    it.close()


def test_prefetch_joins_and_renames_iterators() -> None:
    a = mx.io.NDArrayIter(rows(4), batch_size=2, data_name="a", label_name="la")
    b = mx.io.NDArrayIter(rows(4, 10), rows(4, 20), batch_size=2, data_name="b", label_name="lb")
    it = mx.io.PrefetchingIter([a, b], rename_data=[{"a": "x"}, {"b": "y"}])
    assert [d.name for d in it.provide_data] == ["x", "y"]
    assert [d.name for d in it.provide_label] == ["lb"]
    batch = next(it)
    assert [d.asnumpy().ravel().tolist() for d in batch.data] == [[0, 1], [10, 11]]
    assert batch.provide_data == it.provide_data
    it.close()


def test_prefetch_raises_inner_errors_and_mismatches() -> None:
    class Failing(mx.io.NDArrayIter):
        def next(self) -> mx.io.DataBatch:
            raise ValueError("disk gone")
    it = mx.io.PrefetchingIter(Failing(rows(4), batch_size=2))
    with pytest.raises(ValueError, match="disk gone"):
        next(it)
    short = mx.io.NDArrayIter(rows(2), batch_size=2)
    long = mx.io.NDArrayIter(rows(4), batch_size=2)
    it = mx.io.PrefetchingIter([short, long])
    next(it)
    with pytest.raises(OperatorError, match="different numbers of examples"):
        next(it)


def test_prefetch_reads_at_most_capacity_ahead_and_closes() -> None:
    calls = []

    class Counting(mx.io.NDArrayIter):
        def next(self) -> mx.io.DataBatch:
            calls.append(1)
            return super().next()
    it = mx.io.PrefetchingIter(Counting(rows(40), batch_size=2), capacity=2)
    next(it)
    threading.Event().wait(0.2)   # time for the thread to run ahead (the bound holds anyway)
    # one handed out, two queued, one more read and waiting for room
    assert len(calls) <= 4
    thread = it._thread
    it.close()
    assert thread is not None and not thread.is_alive()
    with pytest.raises(StopIteration):
        next(it)


def test_a_dropped_prefetching_iter_stops_its_thread() -> None:
    it = mx.io.PrefetchingIter(mx.io.NDArrayIter(rows(40), batch_size=2))
    next(it)
    thread = it._thread
    del it   # the thread does not keep the iterator alive: collection stops it
    gc.collect()
    assert thread is not None and not thread.is_alive()
