"""NaiveEngine: runs each operation inside `push`, on the caller's thread.

For debugging: a failing operation is easy to step into, and execution order
is push order. Failures still surface at the next wait, exactly as with
`ThreadedEngine`, so switching engines does not change what a program sees.
Pushes from several threads are serialized by a re-entrant lock, so an
operation may itself push (the nested operation runs at once).
"""
from __future__ import annotations

import threading

from .core import Engine, inherit_failure, run_op
from .errors import EngineError, EngineTimeout
from .var import Op, Var


class NaiveEngine(Engine):
    """Runs every operation synchronously at push time.

    >>> eng = NaiveEngine()
    >>> v = eng.new_variable()
    >>> eng.push(lambda: None, [], [v], name="touch")
    >>> v.version
    1
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()

    def _idle(self) -> bool:
        return True   # every operation finished inside its push

    def _schedule(self, op: Op, here_if_ready: bool) -> bool:
        for v in op.reads + op.writes:
            inherit_failure(op, v)
        # Ctrl-C in the caller's own thread should stop the program, not be stored.
        run_op(op, Exception)
        self._record_completion(op)
        return False

    def wait_for_var(self, var: Var, timeout: float | None = None) -> None:
        if var.__class__ is not Var:
            raise EngineError(f"wait_for_var takes a Var, got {type(var).__name__}")
        # The lock is only busy while another thread's push runs an operation.
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise EngineTimeout(f"wait_for_var({var!r}) timed out after {timeout} s")
        try:
            failure = self._consume_var_failure(var, var.pending_error())
        finally:
            self._lock.release()
        if failure is not None:
            raise failure.to_error(repr(var))

    def wait_for_all(self, timeout: float | None = None) -> None:
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise EngineTimeout(f"wait_for_all timed out after {timeout} s")
        try:
            failure = self._consume_all_failures()
        finally:
            self._lock.release()
        if failure is not None:
            raise failure.to_error()
