"""What every engine shares: the interface, failure bookkeeping, running one op.

Guarantees common to `NaiveEngine` and `ThreadedEngine`:
- An operation runs after every earlier-pushed write to a variable it reads,
  and after every earlier-pushed read or write of a variable it writes. A
  variable listed as both read and written is written.
- Each finished write operation adds one to the `version` of each variable it
  writes - also when the operation failed or was skipped, since its outputs
  may have changed (or must be treated as changed).
- An exception inside an operation is stored on the variables it writes (but
  those made `orders_only`, such as the random generator's). An
  operation that reads or writes such a variable is skipped and carries the
  same failure on to the variables it writes. `wait_for_var(v)` raises
  `OperationError` (original exception as ``__cause__``) when `v` carries a
  failure, and clears that failure from every variable it poisoned: each
  failure raises once, as in MXNet (whose variables share one exception
  pointer, nulled by the wait that throws it), and operations pushed after
  that run normally on all of them - a failed backward does not stop the
  training steps after it. `wait_for_all()` raises the earliest failure that
  no wait has raised yet and clears every failure. Nothing else is disturbed:
  operations on unrelated variables run as usual.
- `run_if_idle` runs work on the calling thread without a push only when no
  operation is pending and no failure is stored, and then counts it as one
  finished write of the variables it names: to every other operation it is
  as if that work had been pushed and had finished before the next push.
- Profiling costs one global read per operation while no recorder is set.
"""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from time import perf_counter_ns

from .errors import EngineError, Failure
from .var import Op, Var, split_vars

# (name, kind, symbolic, start_ns, end_ns) -> None, called on the thread that
# ran the operation. Set by minimx.profiler while it records; None otherwise.
Recorder = Callable[[str, str, bool, int, int], None]
_recorder: Recorder | None = None


def set_op_recorder(recorder: Recorder | None) -> None:
    """Install (or with None remove) the function told about every operation run."""
    global _recorder
    _recorder = recorder


def run_op(op: Op, catch: type[BaseException]) -> None:
    """Run `op.fn` unless the op already carries a failure; never raises `catch`.

    An exception becomes `op.failure`, with the op's own push number, which is
    how completion tells a new failure from an inherited one.
    """
    if op.failure is not None:
        return
    recorder = _recorder
    try:
        if recorder is None:
            op.fn()  # type: ignore[misc]
        else:
            start = perf_counter_ns()
            try:
                op.fn()  # type: ignore[misc]
            finally:
                recorder(op.name, op.kind, op.symbolic, start, perf_counter_ns())
    except catch as exc:
        op.failure = Failure(op.name, exc, op.seq)


def inherit_failure(op: Op, var: Var) -> None:
    """Let `op` carry the failure on `var` if it is earlier than what it carries."""
    err = var._error
    if err is not None and not err.cleared and (op.failure is None or err.seq < op.failure.seq):
        op.failure = err


class Engine(ABC):
    """A dependency engine: runs pushed functions in an order their variables allow."""

    def __init__(self) -> None:
        self._seq = 0                       # push counter, also the FIFO tie-break
        self._failures: list[Failure] = []  # new failures, for wait_for_all
        self._closed = False
        self._lock: threading.Lock | threading.RLock  # set by each engine

    @staticmethod
    def new_variable(name: str = "", orders_only: bool = False) -> Var:
        """A fresh variable with version 0; `orders_only`: one that carries no failure."""
        return Var(name, orders_only)

    def push(self, fn: Callable[[], object], const_vars: Iterable[Var] = (),
             mutable_vars: Iterable[Var] = (), priority: int = 0, name: str = "op",
             *, symbolic: bool = False, kind: str = "", here_if_ready: bool = False) -> None:
        """Schedule ``fn()``, which reads `const_vars` and writes `mutable_vars`.

        Among operations ready at the same time, higher `priority` runs first,
        then earlier pushes. `name` labels errors and profiler events;
        `symbolic` marks executor work (profiled under ``profile_symbolic``)
        as opposed to imperative NDArray work (``profile_imperative``); `kind`,
        the operator a graph node's operation runs, is what the profiler's
        table groups it under (default: `name`).
        With `here_if_ready`, an operation that nothing pending holds back
        runs on the calling thread before push returns (saving the hop to a
        worker and back); its failure is still stored, not raised.
        """
        if not callable(fn):
            raise EngineError(f"push {name!r}: fn must be callable, got {type(fn).__name__}")
        reads, writes = split_vars(const_vars, mutable_vars)
        with self._lock:
            if self._closed:
                raise EngineError(f"push {name!r}: the engine is shut down")
            self._seq += 1
            for v in writes:
                v._pushed += 1
            op = Op(fn, reads, writes, priority, name, symbolic, self._seq, kind)
            here = self._schedule(op, here_if_ready)
        if here:
            self._run_here(op)

    def run_if_idle(self, fn: Callable[[], bool], mutable_vars: Iterable[Var]) -> bool:
        """Run `fn` now, on the calling thread, as a write of `mutable_vars`, when
        nothing is pending on any variable: for work run again and again on the
        same arrays (an executor's inference forward), without the cost of a
        push over every variable it reads.

        True when `fn` ran and returned True: the versions of `mutable_vars`
        then count one more finished write. False, having run nothing, when an
        operation is pending or a failure is stored on some variable, the
        profiler records operations or the engine is shut down; False also when
        `fn` returned False, saying it wrote nothing. The caller then pushes the
        work as usual. While `fn` runs, pushes and waits from other threads
        wait for it; `fn` itself must not use the engine.
        """
        with self._lock:
            if not self._idle() or self._failures or self._closed or _recorder is not None:
                return False
            if not fn():
                return False
            for v in mutable_vars:
                v._version += 1
                v._pushed += 1
            return True

    @abstractmethod
    def _idle(self) -> bool:
        """Whether no pushed operation is pending; called with the engine's lock held."""

    @abstractmethod
    def _schedule(self, op: Op, here_if_ready: bool) -> bool:
        """Run `op` or queue it to run; called by `push` with the engine's lock held.
        True when `op` was granted its variables for the caller to run (`_run_here`)."""

    def _run_here(self, op: Op) -> None:
        """Run `op`, granted by `_schedule`, on the calling thread, then complete it."""
        raise EngineError(f"{type(self).__name__} never hands an operation to the caller")

    @abstractmethod
    def wait_for_var(self, var: Var, timeout: float | None = None) -> None:
        """Block until every write to `var` pushed so far has finished.

        Raises `OperationError` if `var` carries a failure, `EngineTimeout`
        after `timeout` seconds.
        """

    @abstractmethod
    def wait_for_all(self, timeout: float | None = None) -> None:
        """Block until every operation pushed so far has finished.

        Raises the earliest not-yet-raised failure as `OperationError`, and
        `EngineTimeout` after `timeout` seconds.
        """

    def shutdown(self, wait: bool = True) -> None:
        """Stop the engine: later pushes raise `EngineError`; waits still work.

        Operations already pushed still run; with `wait`, return once they have.
        """
        self._closed = True

    # -- failure bookkeeping (callers hold the engine's lock) -------------------
    def _record_completion(self, op: Op) -> None:
        """Bump the versions of what `op` wrote and spread its failure there."""
        failure = op.failure
        for v in op.writes:
            v._version += 1
            if failure is not None and not v.orders_only:
                v._error = failure
        if failure is not None and failure.seq == op.seq:
            self._failures.append(failure)

    @staticmethod
    def _consume_var_failure(var: Var, failure: Failure | None) -> Failure | None:
        """The failure a wait on `var` must raise (then cleared everywhere), or None."""
        if failure is None or failure.cleared:
            return None
        if var._error is failure:
            var._error = None
        failure.cleared = True
        return failure

    def _consume_all_failures(self) -> Failure | None:
        """The earliest failure no wait has raised; every failure is cleared."""
        first = min((f for f in self._failures if not f.cleared), key=lambda f: f.seq,
                    default=None)
        for f in self._failures:
            f.cleared = True
        self._failures.clear()
        return first
