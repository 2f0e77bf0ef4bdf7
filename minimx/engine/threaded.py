"""ThreadedEngine: operations run on a fixed pool of worker threads.

Scheduling, all under one lock:
- Each variable keeps a FIFO queue of the operations waiting for it. A read
  is granted when no write is running or queued ahead of it; a write when
  nothing runs or is queued on the variable. Grants follow push order on
  every variable, so an operation only ever waits for earlier ones and the
  waits-for relation cannot form a cycle: no deadlock.
- Each operation counts the variables not yet granted to it; at zero it goes
  on a ready heap ordered by (-priority, push number), which workers pop.
- A wait is a barrier: an operation without code that reads the variable and
  completes on whichever thread grants it, waking the waiter.

Worker threads are daemons and the engine is shut down at interpreter exit,
so pending work never keeps the process alive. Waiting from inside an
operation would starve the pool and raises `EngineError` instead.
"""
from __future__ import annotations

import atexit
import threading
from heapq import heappop, heappush

from ..base import settings
from .core import Engine, inherit_failure, run_op
from .errors import EngineError, EngineTimeout, Failure
from .var import Op, Var


class ThreadedEngine(Engine):
    """Runs operations on `num_workers` threads (default MINIMX_CPU_WORKER_NTHREADS).

    >>> eng = ThreadedEngine(num_workers=2)
    >>> v = eng.new_variable()
    >>> eng.push(lambda: None, [], [v], name="touch")
    >>> eng.wait_for_var(v, timeout=5.0)
    >>> v.version
    1
    >>> eng.shutdown()
    """

    def __init__(self, num_workers: int | None = None) -> None:
        super().__init__()
        n = settings().cpu_worker_nthreads if num_workers is None else num_workers
        if n < 1:
            raise EngineError(f"ThreadedEngine needs at least one worker, got {n}")
        self.num_workers = n
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)     # workers wait for ready ops
        self._settled = threading.Condition(self._lock)  # waiters wait for completions
        self._ready: list[tuple[int, int, Op]] = []
        self._due: list[Op] = []  # barriers granted but not yet completed
        self._pending = 0         # pushed operations (not barriers) not yet finished
        self._sleeping = 0        # workers waiting for work
        self._woken = 0           # of those, already notified (never overestimated)
        self._workers = [threading.Thread(target=self._work_loop, daemon=True,
                                          name=f"minimx-engine-{i}") for i in range(n)]
        for t in self._workers:
            t.start()
        self._worker_ids = frozenset(t.ident for t in self._workers)
        self._running_here = threading.local()  # `.op`: the op a caller's thread runs
        atexit.register(self._stop_at_exit)

    # -- public interface ------------------------------------------------------
    def _schedule(self, op: Op, here_if_ready: bool) -> bool:
        self._pending += 1
        if not self._enqueue(op):
            return False
        if here_if_ready and threading.get_ident() not in self._worker_ids \
                and getattr(self._running_here, "op", None) is None:
            return True
        heappush(self._ready, (-op.priority, op.seq, op))
        self._wake(1)
        return False

    def _idle(self) -> bool:
        return self._pending == 0

    def _run_here(self, op: Op) -> None:
        self._running_here.op = op   # waits inside it would wait for it: refused
        try:
            # Ctrl-C in the caller's own thread should stop the program (after
            # marking what the operation writes as failed), not be stored.
            run_op(op, Exception)
        except BaseException as exc:
            op.failure = Failure(op.name, exc, op.seq)
            raise
        finally:
            self._running_here.op = None
            with self._lock:
                self._wake(self._complete(op) + self._finish_due())

    def wait_for_var(self, var: Var, timeout: float | None = None) -> None:
        if var.__class__ is not Var:
            raise EngineError(f"wait_for_var takes a Var, got {type(var).__name__}")
        self._refuse_worker("wait_for_var")
        with self._lock:
            if var._writing or var._queue:
                self._seq += 1
                barrier = Op(None, (var,), (), 0, "wait_for_var", False, self._seq)
                self._enqueue(barrier)  # queued: a write is running or waiting
                if not self._settled.wait_for(lambda: barrier.done, timeout):
                    raise EngineTimeout(f"wait_for_var({var!r}) timed out after {timeout} s")
                pending = barrier.failure
            else:  # fast path: no write pending, nothing to wait for
                pending = var.pending_error()
            failure = self._consume_var_failure(var, pending)
        if failure is not None:
            raise failure.to_error(repr(var))

    def wait_for_all(self, timeout: float | None = None) -> None:
        self._refuse_worker("wait_for_all")
        with self._lock:
            if not self._settled.wait_for(lambda: not self._pending, timeout):
                raise EngineTimeout(f"wait_for_all timed out after {timeout} s with "
                                    f"{self._pending} operations pending")
            failure = self._consume_all_failures()
        if failure is not None:
            raise failure.to_error()

    def shutdown(self, wait: bool = True) -> None:
        with self._lock:
            self._closed = True
            self._work.notify_all()
        atexit.unregister(self._stop_at_exit)
        if wait and threading.get_ident() not in self._worker_ids:
            for t in self._workers:
                t.join()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until nothing is pending, without raising failures; False on timeout.

        Does nothing (returns False) on a worker thread, where waiting would deadlock.
        """
        if threading.get_ident() in self._worker_ids:
            return False
        with self._lock:
            return self._settled.wait_for(lambda: not self._pending, timeout)

    def _stop_at_exit(self) -> None:
        self.shutdown(wait=False)

    def _refuse_worker(self, what: str) -> None:
        if threading.get_ident() in self._worker_ids \
                or getattr(self._running_here, "op", None) is not None:
            raise EngineError(f"{what} called inside an engine operation: it would wait for "
                              "work that needs this worker thread")

    # -- scheduling (the lock is held) -----------------------------------------
    def _enqueue(self, op: Op) -> bool:
        """Queue `op` on its variables, granting what is free; True if ready now."""
        wait = 0
        # A forward reads every weight: the checks are inlined (no call per
        # variable unless it carries a failure).
        for v in op.reads:
            if v._writing or v._queue:
                v._queue.append((op, False))
                wait += 1
            else:
                v._readers += 1
                if v._error is not None:
                    inherit_failure(op, v)
        for v in op.writes:
            if v._writing or v._readers or v._queue:
                v._queue.append((op, True))
                wait += 1
            else:
                v._writing = True
                if v._error is not None:
                    inherit_failure(op, v)
        op.wait = wait
        return not wait

    def _grant(self, op: Op, var: Var) -> int:
        """Give `var` to `op`; the number of operations this made ready (0 or 1)."""
        inherit_failure(op, var)
        op.wait -= 1
        if op.wait:
            return 0
        if op.fn is None:
            # Completing a barrier here would re-enter the variable being
            # released; the top-level caller completes it afterwards.
            self._due.append(op)
            return 0
        heappush(self._ready, (-op.priority, op.seq, op))
        return 1

    def _release(self, var: Var) -> int:
        """Grant `var` to the head of its queue after a write; ops made ready."""
        queue = var._queue
        if not queue:
            return 0
        if queue[0][1]:
            var._writing = True
            return self._grant(queue.popleft()[0], var)
        made = 0
        while queue and not queue[0][1]:
            var._readers += 1
            made += self._grant(queue.popleft()[0], var)
        return made

    def _complete(self, op: Op) -> int:
        """Release `op`'s variables; the number of operations this made ready."""
        made = 0
        for v in op.reads:
            v._readers -= 1
            if not v._readers and v._queue:  # the head is a write, see Var._queue
                v._writing = True
                made += self._grant(v._queue.popleft()[0], v)
        self._record_completion(op)
        for v in op.writes:
            v._writing = False
            made += self._release(v)
        if op.fn is None:
            op.done = True
            self._settled.notify_all()
        else:
            self._pending -= 1
            if not self._pending:
                self._settled.notify_all()
                if self._closed:
                    self._work.notify_all()  # idle workers may now exit
        return made

    def _finish_due(self) -> int:
        """Complete every granted barrier; the number of operations made ready."""
        made = 0
        while self._due:
            made += self._complete(self._due.pop())
        return made

    def _wake(self, n: int) -> None:
        # Waking a worker costs a GIL round trip: wake only sleepers that are
        # not already on their way. A worker only sleeps when nothing is ready,
        # so this never leaves a ready operation behind.
        n = min(n, self._sleeping - self._woken)
        if n > 0:
            self._woken += n
            self._work.notify(n)

    def _work_loop(self) -> None:
        lock, ready = self._lock, self._ready
        with lock:
            while True:
                while not ready:
                    if self._closed and not self._pending:
                        return
                    self._sleeping += 1
                    self._work.wait()
                    self._sleeping -= 1
                    self._woken = max(0, self._woken - 1)
                op = heappop(ready)[2]
                lock.release()
                try:
                    # Catch everything: a worker that dies would strand its op's waiters.
                    run_op(op, BaseException)
                finally:
                    lock.acquire()
                made = self._complete(op) + self._finish_due()
                if made > 1:  # this worker takes one of them itself
                    self._wake(made - 1)
