"""Helpers for the engine tests. Every wait has a timeout: a deadlock fails, never hangs."""
from __future__ import annotations

import threading

from minimx.engine import Engine, ThreadedEngine

WAIT = 10.0  # seconds; generous, only reached when something is wrong


def close(eng: Engine) -> None:
    """Shut `eng` down, failing (not hanging) if its work does not finish."""
    if isinstance(eng, ThreadedEngine):
        assert eng.drain(WAIT), "engine did not drain: deadlock?"
    eng.shutdown()


class Gate:
    """An event whose wait fails the test instead of blocking forever."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def open(self) -> None:
        self._event.set()

    def wait(self) -> None:
        assert self._event.wait(WAIT), "gate never opened"
