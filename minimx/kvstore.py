"""`mx.kv` (alias `mx.kvstore`): MXNet 1.x's single-process key-value store.

minimx runs on one CPU context, so the only stores are MXNet's local ones
(``local``, ``device``): one process, `rank` 0 of `num_workers` 1. A key
(an int or a str, or a list of them with a list of values) holds one array.
`push` sums the values given for a key and, when an optimizer is set, applies
it to the stored array as the update of that key (else the sum replaces it);
`pull` copies the stored array out. Module accepts such a store for `kvstore`
(and updates its parameters itself, as MXNet's does on one device).

>>> import minimx as mx
>>> kv = mx.kv.create("local")
>>> kv.init(3, mx.nd.ones((2,)))
>>> kv.push(3, [mx.nd.ones((2,)), mx.nd.ones((2,))])
>>> out = mx.nd.zeros((2,))
>>> kv.pull(3, out=out)
>>> out.asnumpy().tolist()
[2.0, 2.0]
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import MinimxError, ShapeError
from .ndarray import NDArray
from .optimizer import Optimizer, Updater

LOCAL_TYPES = ("local", "device")
Key = int | str


class KVStore:
    """A single-process store of arrays by key (see the module docstring)."""

    def __init__(self, name: str = "local") -> None:
        self.type = name
        self.rank = 0
        self.num_workers = 1
        self._store: dict[Key, NDArray] = {}
        self._index: dict[Key, int] = {}   # the optimizer's parameter index of each key
        self._updater: Updater | None = None

    def init(self, key: Key | Sequence[Key], value: Any) -> None:
        """Store a copy of each value under its key (a key is initialised once)."""
        for k, v in _pairs(key, value, "init"):
            if k in self._store:
                raise MinimxError(f"KVStore.init: key {k!r} is already initialised")
            self._store[k] = v.copy()
            self._index[k] = k if isinstance(k, int) else len(self._index)

    def push(self, key: Key | Sequence[Key], value: Any, priority: int = 0) -> None:
        """Sum the values of each key (a list of arrays each) and update its array."""
        for k, v in _pairs(key, value, "push"):
            stored = self._stored(k, "push")
            values = v if isinstance(v, (list, tuple)) else [v]
            total = values[0].copy()
            for other in values[1:]:
                total += other
            if total.shape != stored.shape:
                raise ShapeError(f"KVStore.push: key {k!r} holds shape {stored.shape}, got "
                                 f"{total.shape}")
            if self._updater is not None:
                self._updater(self._index[k], total, stored)
            else:
                total.copyto(stored)

    def pull(self, key: Key | Sequence[Key], out: Any = None, priority: int = 0,
             ignore_sparse: bool = True) -> None:
        """Copy each key's array into its `out` (an array or a list of arrays)."""
        if out is None:
            raise MinimxError("KVStore.pull: give the arrays to pull into as out=")
        for k, o in _pairs(key, out, "pull"):
            for target in o if isinstance(o, (list, tuple)) else [o]:
                self._stored(k, "pull").copyto(target)

    def set_optimizer(self, optimizer: Optimizer) -> None:
        """Apply `optimizer` to each pushed sum, as the update of its key."""
        self._updater = Updater(optimizer)

    def _stored(self, key: Key, what: str) -> NDArray:
        if key not in self._store:
            raise MinimxError(f"KVStore.{what}: key {key!r} is not initialised")
        return self._store[key]


def create(name: str = "local") -> KVStore:
    """A store of type `name`: ``local`` or ``device`` (the same here)."""
    if name not in LOCAL_TYPES:
        raise MinimxError(f"kvstore {name!r} is not supported: minimx runs in one process on "
                          f"one CPU context ({' and '.join(LOCAL_TYPES)} are)")
    return KVStore(name)


def _pairs(key: Key | Sequence[Key], value: Any, what: str) -> list[tuple[Key, Any]]:
    if isinstance(key, (int, str)):
        return [(key, value)]
    keys = list(key)
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(keys) != len(values):
        raise MinimxError(f"KVStore.{what}: {len(keys)} keys for {len(values)} values")
    return list(zip(keys, values, strict=True))

