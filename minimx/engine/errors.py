"""Engine errors, and the record a failed operation leaves on its variables.

An operation's exception is never raised on the worker thread that ran it. It
becomes a `Failure`, stored on the variables the operation would have written;
a later wait on one of them raises `OperationError` with the original
exception as ``__cause__``.
"""
from __future__ import annotations

from ..base import MinimxError


class EngineError(MinimxError):
    """Misuse of the dependency engine, or an operation that failed."""


class OperationError(EngineError):
    """An engine operation raised; the original exception is ``__cause__``.

    `op_name` is the name of the operation that raised, which is not always the
    operation whose output was waited on: operations that read a failed
    variable are skipped and carry the same failure.
    """

    def __init__(self, message: str, op_name: str) -> None:
        super().__init__(message)
        self.op_name = op_name


class EngineTimeout(EngineError, TimeoutError):
    """A wait given a ``timeout`` ran out before the work it waited for finished."""


class Failure:
    """One operation's exception, shared by every variable it poisons.

    `seq` is the failing operation's push number: when an operation reads
    several failed variables it carries the earliest failure, and `wait_for_all`
    raises the earliest one not yet raised.
    """

    __slots__ = ("op_name", "exc", "seq", "cleared")

    def __init__(self, op_name: str, exc: BaseException, seq: int) -> None:
        self.op_name = op_name
        self.exc = exc
        self.seq = seq
        self.cleared = False  # raised by a wait: gone from every variable at once

    def to_error(self, waited_on: str = "") -> OperationError:
        """A fresh OperationError (chained to the original) for one raise."""
        where = f" (waited on {waited_on})" if waited_on else ""
        err = OperationError(f"engine operation {self.op_name!r} failed{where}: "
                             f"{type(self.exc).__name__}: {self.exc}", self.op_name)
        err.__cause__ = self.exc
        return err
