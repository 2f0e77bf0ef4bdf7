"""Engine variables and the record of one pushed operation.

A `Var` stands for one piece of mutable state (an NDArray's buffer). Its
`version` counts the write operations on it that have finished. Everything
else on a Var is engine bookkeeping, touched only under the owning engine's
lock: one engine at a time may schedule work on a Var.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from operator import attrgetter

from .errors import EngineError, Failure


class Var:
    """An engine variable: what operations declare they read or write.

    >>> v = Var("weight")
    >>> v.version
    0
    """

    __slots__ = ("name", "orders_only", "_version", "_pushed", "_error", "_queue", "_readers",
                 "_writing", "__weakref__")

    def __init__(self, name: str = "", orders_only: bool = False) -> None:
        self.name = name
        # Only orders the operations that name it (the random generator): a failed one
        # leaves nothing behind that the next could not use, so no failure is stored.
        self.orders_only = orders_only
        self._version = 0
        self._pushed = 0        # write operations pushed: `version` once they have finished
        self._error: Failure | None = None
        # Operations waiting for this variable, in push order, each with
        # True when it writes. The head is always a write unless the var is
        # idle, because granted reads leave the queue together.
        self._queue: deque[tuple[Op, bool]] = deque()
        self._readers = 0       # granted reads not yet finished
        self._writing = False   # a granted write not yet finished

    @property
    def version(self) -> int:
        """How many write operations on this variable have finished."""
        return self._version

    def __reduce__(self) -> tuple:
        # A copy would clone the engine's record of pending work on this
        # variable, which nothing would ever complete: its waits would hang.
        raise EngineError(f"{self!r} cannot be copied or pickled: it belongs to the engine's "
                          "schedule (copy the NDArray, which gets a fresh variable)")

    def pending_error(self) -> Failure | None:
        """The failure a wait on this variable would raise now, if any."""
        err = self._error
        return None if err is None or err.cleared else err

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Var{label} version={self._version}>"


class Op:
    """One pushed operation: its function, its variables and its progress."""

    __slots__ = ("fn", "reads", "writes", "priority", "name", "symbolic", "kind", "seq",
                 "wait", "failure", "done")

    def __init__(self, fn: Callable[[], object] | None, reads: tuple[Var, ...],
                 writes: tuple[Var, ...], priority: int, name: str, symbolic: bool,
                 seq: int, kind: str = "") -> None:
        self.fn = fn            # None marks a wait barrier, which runs no code
        self.reads = reads
        self.writes = writes
        self.priority = priority
        self.name = name
        self.symbolic = symbolic
        self.kind = kind        # the operator a graph node's op runs ('': the name)
        self.seq = seq
        self.wait = 0           # variables not yet granted to this operation
        # Before running: the earliest failure found on its variables (then the
        # operation is skipped); after running: its own exception, if any.
        self.failure: Failure | None = None
        self.done = False


_VERSION = attrgetter("_version")
_PUSHED = attrgetter("_pushed")


def versions(variables: Iterable[Var]) -> list[int]:
    """Each variable's `version`, read in one pass in C (a forward reads hundreds)."""
    return list(map(_VERSION, variables))


def pushed_writes(variables: Iterable[Var]) -> list[int]:
    """How many write operations have been pushed on each variable so far, finished
    or not: what a caller compares to tell, at once, whether anything has been
    pushed to write a variable since some point."""
    return list(map(_PUSHED, variables))


class VarSet(tuple[Var, ...]):
    """Variables checked once - Var objects, each once - for an operation pushed
    again and again with the same ones (an executor's forward reads every
    weight: hundreds). `split_vars` takes them as they are.

    >>> a, b = Var("a"), Var("b")
    >>> len(VarSet([a, b, a]))
    2
    """

    def __new__(cls, variables: Iterable[Var]) -> VarSet:
        checked, _ = split_vars(variables, ())
        return super().__new__(cls, checked)

    def __init__(self, variables: Iterable[Var]) -> None:
        self.members = frozenset(self)


def split_vars(const_vars: Iterable[Var], mutable_vars: Iterable[Var]
               ) -> tuple[tuple[Var, ...], tuple[Var, ...]]:
    """Deduplicated (reads, writes); a variable in both counts as a write."""
    if const_vars.__class__ is VarSet and mutable_vars.__class__ is VarSet \
            and const_vars.members.isdisjoint(mutable_vars):
        return const_vars, mutable_vars
    try:
        reads, writes = tuple(const_vars), tuple(mutable_vars)
        # Deduplicating costs more than the rest of a push; most ops need none.
        # (A forward reads hundreds of weights: the loops here run in C.)
        if len(writes) > 1:
            writes = tuple(dict.fromkeys(writes))
        if len(reads) > 1:
            reads = tuple(dict.fromkeys(reads))
        if writes and reads and not set(writes).isdisjoint(reads):
            reads = tuple([v for v in reads if v not in writes])
    except TypeError as exc:
        raise EngineError(f"engine operations take iterables of Var: {exc}") from exc
    if not set(map(type, reads + writes)) <= {Var}:
        v = next(v for v in reads + writes if v.__class__ is not Var)
        raise EngineError(f"engine operations take Var objects, got {type(v).__name__}: {v!r}")
    return reads, writes
