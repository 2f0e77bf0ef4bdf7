"""Automatic node names: ``mx.name.NameManager`` and ``mx.name.Prefix``.

Auto names are ``<hint><k>`` with one counter per hint for the process
(``convolution0``, ``convolution1``...), as in MXNet.
"""
from __future__ import annotations

import threading
from collections import defaultdict


class NameManager:
    """Gives names to nodes the user did not name; a context manager."""

    _local = threading.local()

    def __init__(self) -> None:
        self._counter: defaultdict[str, int] = defaultdict(int)
        self._old: NameManager | None = None

    def get(self, name: str | None, hint: str) -> str:
        """`name` if given, else the next ``<hint><k>``."""
        if name:
            return name
        count = self._counter[hint]
        self._counter[hint] += 1
        return f"{hint}{count}"

    def __enter__(self) -> NameManager:
        self._old = current()
        NameManager._local.current = self
        return self

    def __exit__(self, *exc: object) -> None:
        NameManager._local.current = self._old


class Prefix(NameManager):
    """Prefixes every name, given or automatic: ``with mx.name.Prefix('p_'):``."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def get(self, name: str | None, hint: str) -> str:
        return self._prefix + super().get(name, hint)


_DEFAULT = NameManager()


def current() -> NameManager:
    """The innermost active name manager."""
    return getattr(NameManager._local, "current", None) or _DEFAULT
