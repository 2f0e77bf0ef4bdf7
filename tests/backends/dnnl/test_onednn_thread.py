"""on_onednn_thread: calls run on one thread, in order, and their results and
exceptions come back to the caller."""
from __future__ import annotations

import threading

import pytest

from minimx.backends.dnnl.thread import on_onednn_thread


def test_calls_from_several_threads_run_on_one_thread_and_return_results():
    seen: list[int] = []
    results: list[int] = []

    def call(i: int) -> None:
        results.append(on_onednn_thread(lambda: seen.append(threading.get_ident()) or i * i))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results) == [i * i for i in range(8)]
    assert len(set(seen)) == 1 and seen[0] != threading.get_ident()


def test_an_exception_is_raised_in_the_caller():
    def fail() -> None:
        raise ValueError("oneDNN said no")

    with pytest.raises(ValueError, match="oneDNN said no"):
        on_onednn_thread(fail)
    assert on_onednn_thread(int) == 0   # the thread lives on


def test_a_call_made_on_the_thread_runs_directly():
    outer = on_onednn_thread(lambda: (threading.get_ident(),
                                      on_onednn_thread(threading.get_ident)))
    assert outer[0] == outer[1]


def test_short_and_long_calls_from_two_threads_all_return():
    """Short jobs (each side spins) and long ones (each side sleeps), mixed
    from two threads: no hand-over is lost, every result comes back."""
    results: dict[int, list[int]] = {0: [], 1: []}

    def job(i: int) -> int:
        if i % 50 == 0:  # a long job: past the spin, so the next waits asleep
            threading.Event().wait(0.001)
        return i

    def caller(k: int) -> None:
        for i in range(1000):
            results[k].append(on_onednn_thread(job, i))

    threads = [threading.Thread(target=caller, args=(k,), daemon=True) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {0: list(range(1000)), 1: list(range(1000))}
