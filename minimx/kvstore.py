"""`mx.kv` (alias `mx.kvstore`): MXNet 1.x's single-process key-value store.

minimx runs in one process, so the only stores are MXNet's local ones
(``local``, ``device``): `rank` 0 of `num_workers` 1. A key
(an int or a str, or a list of them with a list of values; one store takes keys
of one type, as MXNet's) holds one array. `push` sums the values given for a
key (a key listed twice too) and, when an optimizer or an updater is set,
applies it to the stored array as the update of that key (else the sum
replaces it); `pull` copies the stored array out; `pushpull` does both. A Module
over several contexts sums their gradients through one (and runs its optimizer
there), as MXNet's does.

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

from collections.abc import Callable, Sequence
from typing import Any

from .base import MinimxError, ShapeError
from .ndarray import NDArray
from .optimizer import Optimizer, Updater

# The single-process types MXNet 1.9.1 makes on a CPU (its allreduce variants included).
LOCAL_TYPES = ("local", "device", "local_allreduce_cpu", "local_allreduce_device")
Key = int | str
# What a store calls with each pushed sum: (key, the sum, the stored array to change).
UpdateFn = Callable[[Any, NDArray, NDArray], None]


class KVStore:
    """A single-process store of arrays by key (see the module docstring)."""

    def __init__(self, name: str = "local") -> None:
        self.type = name
        self.rank = 0
        self.num_workers = 1
        self._store: dict[Key, NDArray] = {}
        self._key_type: type | None = None
        self._updater: UpdateFn | None = None

    def init(self, key: Key | Sequence[Key], value: Any) -> None:
        """Store a copy of each value under its key (a key is initialised once)."""
        for k, v in self._pairs(key, value, "init"):
            if k in self._store:
                raise MinimxError(f"KVStore.init: key {k!r} is already initialised")
            if not isinstance(v, NDArray):
                raise MinimxError(f"KVStore.init: key {k!r} takes one array, got "
                                  f"{type(v).__name__}")
            self._store[k] = v.copy()

    def broadcast(self, key: Key | Sequence[Key], value: Any, out: Any,
                  priority: int = 0) -> None:
        """`init` the keys with `value`, then `pull` them into `out`."""
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    def push(self, key: Key | Sequence[Key], value: Any, priority: int = 0) -> None:
        """Sum the values of each key (a list of arrays each, or the key listed several
        times) and update its array, in MXNet's order of keys (see `_rank`)."""
        sums: dict[Key, NDArray] = {}
        for k, v in self._pairs(key, value, "push"):
            for array in v if isinstance(v, (list, tuple)) else [v]:
                if k in sums:
                    sums[k] += array
                else:
                    sums[k] = array.copy()
        for k, total in sorted(sums.items(), key=lambda item: self._rank(item[0])):
            stored = self._stored(k, "push")
            if total.shape != stored.shape:
                raise ShapeError(f"KVStore.push: key {k!r} holds shape {stored.shape}, got "
                                 f"{total.shape}")
            if self._updater is not None:
                self._updater(k, total, stored)
            else:
                total.copyto(stored)

    def pull(self, key: Key | Sequence[Key], out: Any = None, priority: int = 0,
             ignore_sparse: bool = True) -> None:
        """Copy each key's array into its `out` (an array or a list of arrays)."""
        if out is None:
            raise MinimxError("KVStore.pull: give the arrays to pull into as out=")
        for k, o in self._pairs(key, out, "pull"):
            for target in o if isinstance(o, (list, tuple)) else [o]:
                self._stored(k, "pull").copyto(target)

    def pushpull(self, key: Key | Sequence[Key], value: Any, out: Any = None,
                 priority: int = 0) -> None:
        """`push` the values, then `pull` into `out` (into the values themselves
        when `out` is None)."""
        self.push(key, value, priority)
        self.pull(key, out=value if out is None else out, priority=priority)

    def set_optimizer(self, optimizer: Optimizer) -> None:
        """Apply `optimizer` to each pushed sum, as the update of its key (the key is
        the optimizer's parameter index, a str key too, as in MXNet)."""
        self._set_updater(Updater(optimizer))

    def _set_updater(self, updater: UpdateFn) -> None:
        """Call ``updater(key, pushed sum, stored array)`` on each push instead."""
        self._updater = updater

    def is_capable(self, capability: str) -> bool:
        """Whether the store can do `capability` ('optimizer': it can)."""
        return capability.lower() == "optimizer"

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the optimizer's states (and, with `dump_optimizer`, the optimizer) to
        `fname`."""
        states = self._optimizer_updater("save_optimizer_states").get_states(dump_optimizer)
        with open(fname, "wb") as f:   # opened once there is something to write
            f.write(states)

    def load_optimizer_states(self, fname: str) -> None:
        """Restore the optimizer's states from a file `save_optimizer_states` wrote."""
        with open(fname, "rb") as f:
            self._optimizer_updater("load_optimizer_states").set_states(f.read())

    def _optimizer_updater(self, what: str) -> Updater:
        if not isinstance(self._updater, Updater):
            raise MinimxError(f"KVStore.{what}: no optimizer is set (call set_optimizer "
                              "first)")
        return self._updater

    def _rank(self, key: Key) -> int:
        """Where `key` comes in MXNet's updates: int keys by value, str keys in the order
        they were initialised (MXNet numbers them so)."""
        return key if isinstance(key, int) else list(self._store).index(key)

    def _stored(self, key: Key, what: str) -> NDArray:
        if key not in self._store:
            raise MinimxError(f"KVStore.{what}: key {key!r} is not initialised")
        return self._store[key]

    def _pairs(self, key: Key | Sequence[Key], value: Any, what: str) -> list[tuple[Key, Any]]:
        """(key, value) pairs, the keys checked to be of the store's one type."""
        keys = [key] if isinstance(key, (int, str)) else list(key)
        if isinstance(key, (int, str)):
            values = [value]
        else:
            values = list(value) if isinstance(value, (list, tuple)) else [value]
        if len(keys) != len(values):
            raise MinimxError(f"KVStore.{what}: {len(keys)} keys for {len(values)} values")
        for k in keys:
            self._check_key_type(k, what)
        return list(zip(keys, values, strict=True))

    def _check_key_type(self, key: Key, what: str) -> None:
        if not isinstance(key, (int, str)):
            raise MinimxError(f"KVStore.{what}: a key is an int or a str, got {key!r}")
        key_type = str if isinstance(key, str) else int
        if self._key_type is None:
            self._key_type = key_type
        elif key_type is not self._key_type:
            raise MinimxError(f"KVStore.{what}: key {key!r}: a store takes keys of one type, "
                              f"and this one's are {self._key_type.__name__}s (MXNet refuses "
                              "mixed key types too)")


def create(name: str = "local") -> KVStore:
    """A store of type `name`: one of `LOCAL_TYPES` (the same store here)."""
    if not isinstance(name, str):
        raise MinimxError(f"kvstore: name must be a string, got {name!r}")
    name = name.lower()
    if name not in LOCAL_TYPES:
        raise MinimxError(f"kvstore {name!r} is not supported: minimx runs in one process, "
                          f"without distributed or GPU stores ({', '.join(LOCAL_TYPES)} are)")
    return KVStore(name)
