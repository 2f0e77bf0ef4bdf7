"""Samplers (`mx.gluon.data.Sampler` and its kinds): the order in which a
`DataLoader` reads a dataset's samples, and how it groups them into batches,
as MXNet 1.9.1's."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np

from ..errors import InputError

LAST_BATCH = ("keep", "discard", "rollover")


class Samples(Protocol):
    """What a dataset is to a sampler: samples by index, and their number."""

    def __getitem__(self, idx: int) -> Any: ...

    def __len__(self) -> int: ...


class Sampler:
    """Yields indices (or, a `BatchSampler`, lists of them)."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start + 1, ..., start + length - 1``."""

    def __init__(self, length: int, start: int = 0) -> None:
        self._length, self._start = int(length), int(start)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._start, self._start + self._length))

    def __len__(self) -> int:
        return self._length


class RandomSampler(Sampler):
    """``0 .. length - 1`` in a new order at each pass, from numpy's global
    generator (``np.random.seed`` repeats it), as MXNet's."""

    def __init__(self, length: int) -> None:
        self._length = int(length)

    def __iter__(self) -> Iterator[int]:
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self) -> int:
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of `dataset` for which `fn(sample)` is true."""

    def __init__(self, fn: Callable[[Any], bool], dataset: Samples) -> None:
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self) -> Iterator[int]:
        return iter(self._indices)

    def __len__(self) -> int:
        return len(self._indices)


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler`. A last, shorter batch is
    kept (``'keep'``), dropped (``'discard'``) or carried to the front of the
    next pass (``'rollover'``)."""

    def __init__(self, sampler: Sampler, batch_size: int, last_batch: str = "keep") -> None:
        if last_batch not in LAST_BATCH:
            raise InputError(f"last_batch must be one of 'keep', 'discard', or 'rollover', "
                             f"but got {last_batch!r}")
        if int(batch_size) < 1:
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
        self._sampler, self._batch_size, self._last_batch = sampler, int(batch_size), last_batch
        self._prev: list[int] = []

    def __iter__(self) -> Iterator[list[int]]:
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch and self._last_batch == "keep":
            yield batch
        elif batch and self._last_batch == "rollover":
            self._prev = batch

    def __len__(self) -> int:
        n = len(self._sampler)
        if self._last_batch == "keep":
            return (n + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return n // self._batch_size
        return (len(self._prev) + n) // self._batch_size
