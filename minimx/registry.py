"""Classes made by name, as MXNet's `mx.registry`: `mx.init.create('xavier')`,
`mx.optimizer.create('sgd')`, `mx.metric.create('acc')` each look a name up
in a registry of their kind.

>>> reg = Registry("thing")
>>> @reg.alias("t")
... @reg.register
... class Thing: pass
>>> reg.get("T") is reg.get("thing") is Thing
True
>>> type(reg.create('["t", {}]')).__name__
'Thing'
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
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

    def create(self, spec: str | Mapping[str, Any], *args: Any, **kwargs: Any) -> Any:
        """An instance from a name, MXNet's JSON of one (``'["xavier", {"magnitude":
        2}]'`` as `dumps` writes, or ``'{"metric": "Accuracy", ...}'``) or a dict of
        the constructor's arguments with the class under the registry's kind (what
        `get_config` returns), as MXNet's `registry.get_create_func` reads them."""
        if isinstance(spec, str) and spec.startswith(("[", "{")):
            try:
                spec = json.loads(spec)
            except ValueError as err:
                raise MinimxError(f"mx.{self.kind}.create: {spec!r} is not JSON") from err
        if isinstance(spec, (list, Mapping)):
            if args or kwargs:
                raise MinimxError(f"mx.{self.kind}.create: {spec!r} holds the arguments; "
                                  "no others may be given")
            try:
                name, arguments = spec if isinstance(spec, list) else \
                    (spec[self.kind], {k: v for k, v in spec.items() if k != self.kind})
                arguments = dict(arguments)
            except (ValueError, TypeError, KeyError) as err:
                raise MinimxError(f"mx.{self.kind}.create: {spec!r} is neither [name, "
                                  f"{{arguments}}] nor {{'{self.kind}': name, ...}}") from err
            return self.create(name, **arguments)
        if not isinstance(spec, str):
            raise MinimxError(f"mx.{self.kind}.create: expected a name, got {spec!r}")
        return self.get(spec)(*args, **kwargs)
