"""The dependency engine: runs work in an order its variables allow.

Every NDArray owns a `Var`; an operation is pushed with the variables it
reads and writes, and runs once every earlier conflicting operation has
finished (see `core` for the full contract, `threaded` for how). One engine
serves the process, chosen by MINIMX_ENGINE_TYPE when first used:
``ThreadedEngine`` (default; MXNet's ``ThreadedEnginePerDevice`` and
``ThreadedEnginePooled`` mean the same here) or ``NaiveEngine``. This is also
MXNet's ``mx.engine``: `bulk` and `set_bulk_size` take and remember a bulk size.

>>> from minimx import engine
>>> v = engine.new_variable("x")
>>> box = []
>>> engine.push(lambda: box.append(1), [], [v], name="append")
>>> engine.wait_for_var(v)
>>> box, v.version
([1], 1)
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from ..base import settings
from .core import Engine, set_op_recorder
from .errors import EngineError, EngineTimeout, OperationError
from .naive import NaiveEngine
from .threaded import ThreadedEngine
from .var import Var, VarSet, pushed_writes, versions

ENGINE_TYPES: dict[str, type[Engine]] = {
    "ThreadedEngine": ThreadedEngine,
    "ThreadedEnginePerDevice": ThreadedEngine,
    "ThreadedEnginePooled": ThreadedEngine,
    "NaiveEngine": NaiveEngine,
}

_engine: Engine | None = None
_engine_lock = threading.Lock()
_here = threading.local()   # `.engine`: this thread's own engine, inside `synchronous()`


def create_engine(engine_type: str | None = None, num_workers: int | None = None) -> Engine:
    """A new engine of `engine_type` (default: MINIMX_ENGINE_TYPE).

    `num_workers` applies to threaded engines (default MINIMX_CPU_WORKER_NTHREADS).
    """
    engine_type = engine_type or settings().engine_type
    cls = ENGINE_TYPES.get(engine_type)
    if cls is None:
        raise EngineError(f"unknown engine type {engine_type!r} (known: "
                          f"{', '.join(ENGINE_TYPES)})")
    return ThreadedEngine(num_workers) if cls is ThreadedEngine else cls()


def get_engine() -> Engine:
    """The process-wide engine, created on first use (this thread's own inside
    `synchronous`)."""
    global _engine
    eng = getattr(_here, "engine", None) or _engine
    if eng is None:
        with _engine_lock:
            if _engine is None:
                _engine = create_engine()
            eng = _engine
    return eng


def set_engine(new: Engine) -> Engine:
    """Make `new` the process-wide engine; the previous one is drained and shut down.

    Failures the previous engine stored on variables stay there and are
    raised by the next `wait_for_var` on them.
    """
    global _engine
    with _engine_lock:
        old, _engine = _engine, new
    if old is not None and old is not new:
        old.shutdown(wait=True)
    return new


@contextmanager
def synchronous() -> Iterator[None]:
    """Within it, this thread's pushes and waits go to a `NaiveEngine` of its own:
    each operation runs at once, here. For Python code run inside an engine
    operation (a custom operator's NDArray calls, as MXNet runs them outside
    its engine), which could neither wait for the worker pool nor be waited for.
    The arrays it touches must be its own (made or wrapped inside it)."""
    outer = getattr(_here, "engine", None)
    _here.engine = NaiveEngine()
    try:
        yield
    finally:
        _here.engine = outer


def set_engine_type(engine_type: str, num_workers: int | None = None) -> Engine:
    """Switch the process-wide engine to a new one of `engine_type`; returns it."""
    return set_engine(create_engine(engine_type, num_workers))


# The process-wide engine's operations, for code that does not hold an engine.
def new_variable(name: str = "", orders_only: bool = False) -> Var:
    """A fresh variable with version 0 (usable with any engine); `orders_only`: one
    that orders operations but carries no failure (see `Var`)."""
    return Var(name, orders_only)


def push(fn: Callable[[], object], const_vars: Iterable[Var] = (),
         mutable_vars: Iterable[Var] = (), priority: int = 0, name: str = "op",
         *, symbolic: bool = False, kind: str = "", here_if_ready: bool = False) -> None:
    """`Engine.push` on the process-wide engine."""
    get_engine().push(fn, const_vars, mutable_vars, priority, name, symbolic=symbolic, kind=kind,
                      here_if_ready=here_if_ready)


def run_if_idle(fn: Callable[[], bool], mutable_vars: Iterable[Var]) -> bool:
    """`Engine.run_if_idle` on the process-wide engine."""
    return get_engine().run_if_idle(fn, mutable_vars)


def wait_for_var(var: Var, timeout: float | None = None) -> None:
    """`Engine.wait_for_var` on the process-wide engine."""
    get_engine().wait_for_var(var, timeout)


def wait_for_all(timeout: float | None = None) -> None:
    """`Engine.wait_for_all` on the process-wide engine."""
    get_engine().wait_for_all(timeout)


class _BulkSize(threading.local):
    size = 0   # MXNet's per-thread bulk size starts at 0 too


_bulk = _BulkSize()


def set_bulk_size(size: int) -> int:
    """MXNet's limit on how many operations its engine bundles into one; returns the
    previous one (per thread, as MXNet's). minimx's engine does not bundle imperative
    operations, so the value is only remembered."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise EngineError(f"set_bulk_size: size must be an int, got {size!r}")
    previous, _bulk.size = _bulk.size, size
    return previous


class _BulkScope:
    """`bulk`'s scope: the bulk size set inside it, and the previous one restored after."""

    def __init__(self, size: int) -> None:
        self._size, self._old_size = size, 0

    def __enter__(self) -> _BulkScope:
        self._old_size = set_bulk_size(self._size)
        return self

    def __exit__(self, *exc: object) -> None:
        set_bulk_size(self._old_size)


def bulk(size: int) -> _BulkScope:
    """``with mx.engine.bulk(10): ...``: the bulk size (see `set_bulk_size`) inside."""
    return _BulkScope(size)


def _drain_before_fork() -> None:
    # A child inherits the variables but not the worker threads: let pending
    # work finish first, so no variable in the child waits for it forever.
    if isinstance(_engine, ThreadedEngine):
        _engine.drain()


def _forget_engine_in_child() -> None:
    # The locks may be held by parent threads that do not exist here: the
    # child starts a fresh engine on first use.
    global _engine, _engine_lock
    _engine, _engine_lock = None, threading.Lock()


os.register_at_fork(before=_drain_before_fork, after_in_child=_forget_engine_in_child)

__all__ = ["ENGINE_TYPES", "Engine", "EngineError", "EngineTimeout", "NaiveEngine",
           "OperationError", "ThreadedEngine", "Var", "VarSet", "bulk", "create_engine",
           "get_engine", "new_variable", "push", "pushed_writes", "run_if_idle",
           "set_bulk_size", "set_engine", "set_engine_type", "set_op_recorder", "synchronous",
           "versions", "wait_for_all", "wait_for_var"]
