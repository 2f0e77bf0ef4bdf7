"""Classes made by name, as MXNet's `mx.registry`: `mx.init.create('xavier')`,
`mx.optimizer.create('sgd')`, `mx.metric.create('acc')` each look a name up
in a registry of their kind.

>>> reg = Registry("thing")
>>> @reg.alias("t")
... @reg.register
... class Thing: pass
>>> reg.get("T") is reg.get("thing") is Thing
True
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import MinimxError


class Registry:
    """Classes of one kind by lower-cased name (the class's own, and aliases)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, Any] = {}

    def register(self, klass: Any) -> Any:
        """Register `klass` under its lower-cased name (a class decorator)."""
        self._classes[klass.__name__.lower()] = klass
        return klass

    def alias(self, *names: str) -> Callable[[Any], Any]:
        """A class decorator registering further names."""
        def add(klass: Any) -> Any:
            for name in names:
                self._classes[name.lower()] = klass
            return klass
        return add

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._classes

    def get(self, name: str) -> Any:
        """The class registered as `name` (any case)."""
        if name not in self:
            raise MinimxError(f"unknown {self.kind} {name!r} "
                              f"(known: {', '.join(sorted(self._classes))})")
        return self._classes[name.lower()]
