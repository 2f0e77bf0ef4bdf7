"""The `Updater`: applies an optimizer to parameters by index, making each one's
state at its first update, and saves or restores those states.

`get_states` / `set_states` give and take bytes (a pickle, as MXNet's
Module writes to ``prefix-%04d.states``: the states by index, and with
`dump_optimizer` the optimizer too, its update counts included). The bytes
hold minimx NDArrays, so they load back into minimx, not into MXNet.
"""
from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from ..base import MinimxError
from ..ndarray import NDArray
from .optimizer import Optimizer, State


class Updater:
    """Calls ``optimizer.update_multi_precision(index, weight, grad, state)`` with the
    index's state (`create_state_multi_precision`'s), as MXNet's.

    >>> import minimx as mx
    >>> updater = Updater(mx.optimizer.Adam())
    >>> updater(0, mx.nd.ones((3,)), mx.nd.zeros((3,)))
    >>> restored = Updater(mx.optimizer.Adam())
    >>> restored.set_states(updater.get_states())
    >>> [s.shape for s in restored.states[0]]
    [(3,), (3,)]
    """

    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer = optimizer
        self.states: dict[int, State] = {}

    def __call__(self, index: int | str | Sequence[int | str],
                 grad: NDArray | Sequence[NDArray], weight: NDArray | Sequence[NDArray]) -> None:
        """Update `weight` from `grad`; or, as MXNet's, lists of indices, gradients and
        weights, in order (MXNet's `Module` calls its updater so). A kvstore's str key
        is an index too, as in MXNet."""
        indices: list[Any] = list(index) if isinstance(index, (list, tuple)) else [index]
        grads = [grad] if isinstance(grad, NDArray) else list(grad)
        weights = [weight] if isinstance(weight, NDArray) else list(weight)
        if not len(indices) == len(grads) == len(weights):
            raise MinimxError(f"Updater: {len(indices)} indices, {len(grads)} gradients and "
                              f"{len(weights)} weights")
        if self.optimizer.aggregate_num > 0:
            self._update_in_chunks(list(zip(indices, grads, weights, strict=True)))
            return
        for i, g, w in zip(indices, grads, weights, strict=True):
            self._update(i, g, w)

    def _update_in_chunks(self, updates: list[tuple[int, NDArray, NDArray]]) -> None:
        """MXNet's aggregated updates: by dtype, in chunks of `aggregate_num`, each
        chunk's updates counted before any is made."""
        size = self.optimizer.aggregate_num
        for dtype in dict.fromkeys(w.dtype for _, _, w in updates):
            same = [u for u in updates if u[2].dtype == dtype]
            for start in range(0, len(same), size):
                chunk = same[start:start + size]
                self.optimizer.count_ahead(i for i, _, _ in chunk)
                for i, g, w in chunk:
                    self._update(i, g, w)

    def _update(self, index: int, grad: NDArray, weight: NDArray) -> None:
        if grad.shape != weight.shape:
            raise MinimxError(f"Updater: the gradient of parameter {index} "
                              f"({self.optimizer.idx2name.get(index, 'unnamed')}) has shape "
                              f"{grad.shape}, the weight {weight.shape}")
        if index not in self.states:
            self.states[index] = self.optimizer.create_state_multi_precision(index, weight)
        self.optimizer.update_multi_precision(index, weight, grad, self.states[index])

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states (and, with `dump_optimizer`, the optimizer) as bytes."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)

    def set_states(self, states: bytes) -> None:
        """Restore what `get_states` gave (the optimizer too, if it was dumped)."""
        loaded = pickle.loads(states)
        if isinstance(loaded, tuple) and len(loaded) == 2 \
                and isinstance(loaded[1], Optimizer):
            loaded, self.optimizer = loaded
        if not isinstance(loaded, dict):
            raise MinimxError(f"Updater.set_states: expected optimizer states by index, got "
                              f"{type(loaded).__name__}")
        self.states = loaded


def get_updater(optimizer: Optimizer) -> Updater:
    """An `Updater` for `optimizer`."""
    return Updater(optimizer)
