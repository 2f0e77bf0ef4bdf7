"""One OS thread does all of the DNNL backend's oneDNN work.

Why: libgomp gives each thread that enters a parallel region an OpenMP team
of its own, and once it manages more threads than there are CPUs it stops
spinning at barriers (100 spins, where one team alone spins 300,000), so
that every step of a plan puts the team's threads to sleep and wakes them.
The engine runs operations on several worker threads, and the weight cache
reorders on whichever thread compiles: oneDNN called from them would build
several teams. Measured on 2 cores, MobileNet v1 in bf16 at batch 1 runs
2.2x slower when its plan runs on a second thread that leads a team than on
the one thread. Compiling, refreshing the weight cache and running plans all
go through `on_onednn_thread`; the hop costs 40-80 microseconds per subgraph
run on a 2-core VM (a queue, a lock, and waking each thread).

Fork: a child inherits the queue of calls but not its thread, so work it queued
would wait forever; the child forgets the queue (and the lock, which a parent
thread may hold) and starts its own on first use. Before a fork the parent
lets the queued oneDNN work finish, so that the child does not inherit
oneDNN's state in the middle of a call. The fresh thread also keeps libgomp
working in the child: a thread that led an OpenMP team (more than one
thread) before a fork hangs in the child at its next parallel region, which
is why `minimx.onednn` called directly, not through this thread, is not safe
across a fork unless OMP_NUM_THREADS=1.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")


class _Call:
    """One function call handed to the oneDNN thread; `done` is released when it ends."""

    __slots__ = ("fn", "args", "done", "result", "error")

    def __init__(self, fn: Callable[..., Any], args: tuple) -> None:
        self.fn, self.args = fn, args
        self.done = threading.Lock()
        self.done.acquire()
        self.result: Any = None
        self.error: BaseException | None = None


_lock = threading.Lock()
_calls: SimpleQueue[_Call] | None = None
_ident: int | None = None


def _serve(calls: SimpleQueue[_Call]) -> None:
    while True:
        call = calls.get()
        try:
            call.result = call.fn(*call.args)
        except BaseException as exc:  # handed to the caller, which raises it
            call.error = exc
        finally:
            call.done.release()


def _start() -> SimpleQueue[_Call]:
    """The thread, started on first use (importing minimx starts no thread)."""
    global _calls, _ident
    with _lock:
        if _calls is None:
            calls: SimpleQueue[_Call] = SimpleQueue()
            # A daemon: at exit nothing waits for it, and nothing is left to do.
            thread = threading.Thread(target=_serve, args=(calls,), daemon=True,
                                      name="minimx-onednn")
            thread.start()
            _ident = thread.ident
            _calls = calls
        return _calls


def on_onednn_thread(fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` run on the oneDNN thread (directly when already on it); its
    exception is raised here."""
    calls = _calls or _start()
    if threading.get_ident() == _ident:
        return fn(*args)
    # A queue and a lock per call: half the cost of a thread pool's future.
    call = _Call(fn, args)
    calls.put(call)
    call.done.acquire()
    if call.error is not None:
        raise call.error
    return call.result


def _finish_queued_work_before_fork() -> None:
    if _calls is not None and threading.get_ident() != _ident:
        on_onednn_thread(int)   # a no-op queued behind the pending work


def _forget_thread_in_child() -> None:
    global _calls, _ident, _lock
    _calls, _ident, _lock = None, None, threading.Lock()


os.register_at_fork(before=_finish_queued_work_before_fork,
                    after_in_child=_forget_thread_in_child)
