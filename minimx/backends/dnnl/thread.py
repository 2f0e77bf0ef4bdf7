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
go through `on_onednn_thread`.

The hand-over is C (`native/worker.c`): the thread's body is a mailbox that
calls back into Python for each job, and both sides spin a little before
they sleep while jobs are short. Waking a sleeping thread costs about 45
microseconds on a 2-core VM, twice per call: a Python queue and lock made
the hop cost 90 microseconds per subgraph run, the mailbox 6 (a trivial
subgraph, the hop against a direct call in one run; before and after the
mailbox in two runs).

Jobs must not use the engine: an executor's prepared forward waits for this
thread while it holds the engine's lock (`Engine.run_if_idle`), so a job
waiting for that lock would wait forever. Nothing here needs it: jobs get
numpy arrays and the engine versions read before the hand-over.

Fork: a child inherits the mailbox but not its thread, so a job posted there
would wait forever; the child resets the mailbox (and its locks, which a
parent thread may hold) and starts a thread of its own on first use. Before
a fork the parent lets the job running now finish, so that the child does
not inherit oneDNN's state in the middle of a call. The fresh thread also keeps libgomp
working in the child: a thread that led an OpenMP team (more than one
thread) before a fork hangs in the child at its next parallel region, which
is why `minimx.onednn` called directly, not through this thread, is not safe
across a fork unless OMP_NUM_THREADS=1.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ... import onednn
from ...onednn import native

T = TypeVar("T")


class _Call:
    """One function call handed to the oneDNN thread, and what came of it."""

    __slots__ = ("fn", "args", "result", "error")

    def __init__(self, fn: Callable[..., Any], args: tuple) -> None:
        self.fn, self.args = fn, args
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn(*self.args)
        except BaseException as exc:  # handed to the caller, which raises it
            self.error = exc


_lock = threading.Lock()
_ident: int | None = None


def _start() -> None:
    """The thread, started on first use (importing minimx starts no thread)."""
    global _ident
    with _lock:
        if _ident is None:
            ffi, lib = native().ffi, native().lib

            @ffi.def_extern(name="mmx_python_job")
            def _job(handle) -> int:
                ffi.from_handle(handle).run()
                return 0

            # A daemon: at exit nothing waits for it, and nothing is left to do.
            # Its body is C (the mailbox), which calls back into Python for each job.
            thread = threading.Thread(target=lib.mmx_worker_serve, daemon=True,
                                      name="minimx-onednn")
            thread.start()
            _ident = thread.ident


def on_onednn_thread(fn: Callable[..., T], *args: object) -> T:
    """`fn(*args)` run on the oneDNN thread (directly when already on it); its
    exception is raised here."""
    if _ident is None:
        _start()
    if threading.get_ident() == _ident:
        return fn(*args)
    call = _Call(fn, args)
    ffi, lib = native().ffi, native().lib
    lib.mmx_worker_call(lib.mmx_python_job, ffi.new_handle(call))
    if call.error is not None:
        raise call.error
    return call.result


def run_bound(run: onednn.BoundRun) -> bool:
    """`run` on the oneDNN thread as a C job: no Python runs there, so the call
    costs the hand-over and nothing else. True when it ran (see
    `BoundRun.served`)."""
    if _ident is None:
        _start()
    return run.served()


def _finish_queued_work_before_fork() -> None:
    if _ident is not None and threading.get_ident() != _ident:
        on_onednn_thread(int)   # a no-op that waits for the job running now


def _forget_thread_in_child() -> None:
    global _ident, _lock
    if _ident is not None:
        native().lib.mmx_worker_forget()
    _ident, _lock = None, threading.Lock()


os.register_at_fork(before=_finish_queued_work_before_fork,
                    after_in_child=_forget_thread_in_child)
