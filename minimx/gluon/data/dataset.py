"""Datasets (`mx.gluon.data.Dataset` and its kinds), as MXNet 1.9.1's: anything
with ``len`` and ``[i]``; ``transform`` and ``transform_first`` map samples
lazily, ``filter``, ``shard``, ``take`` and ``sample`` choose them."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ... import recordio
from ...base import DataFileError
from ...ndarray import NDArray
from ..errors import InputError
from .sampler import FilterSampler, Sampler, SequentialSampler


class Dataset:
    """A sequence of samples: subclasses give ``__getitem__`` and ``__len__``."""

    def __getitem__(self, idx: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def filter(self, fn: Callable[[Any], bool]) -> Dataset:
        """The samples for which `fn(sample)` is true (all read once, now)."""
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards: int, index: int) -> Dataset:
        """Part `index` of `num_shards` contiguous parts; the first
        ``len % num_shards`` parts hold one sample more."""
        if not 0 <= index < num_shards:
            raise InputError(f"shard index {index} is out of range for {num_shards} shards")
        size, rest = divmod(len(self), num_shards)
        start = size * index + min(index, rest)
        return _SampledDataset(self, SequentialSampler(size + (index < rest), start))

    def take(self, count: int | None) -> Dataset:
        """The first `count` samples (all, for None or more than there are)."""
        count = len(self) if count is None or count > len(self) else count
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler: Sampler) -> Dataset:
        """The samples at the indices `sampler` yields, in its order."""
        if not isinstance(sampler, Sampler):
            raise InputError(f"Invalid sampler type: {type(sampler).__name__}. Expected "
                             f"gluon.data.Sampler instead.")
        return _SampledDataset(self, sampler)

    def transform(self, fn: Callable[..., Any], lazy: bool = True) -> Dataset:
        """Each sample mapped by `fn` (a tuple sample spread over its arguments),
        when read (`lazy`) or all now."""
        mapped = _LazyTransformDataset(self, fn)
        return mapped if lazy else SimpleDataset([mapped[i] for i in range(len(mapped))])

    def transform_first(self, fn: Callable[[Any], Any], lazy: bool = True) -> Dataset:
        """Each sample's first element mapped by `fn` (an image, not its label)."""
        return self.transform(_TransformFirst(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any sequence (a list, a numpy array)."""

    def __init__(self, data: Sequence[Any]) -> None:
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data: Dataset, fn: Callable[..., Any]) -> None:
        self._data, self._fn = data, fn

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, idx: int) -> Any:
        item = self._data[idx]
        return self._fn(*item) if isinstance(item, tuple) else self._fn(item)


class _TransformFirst:
    """`fn` on a sample's first element, the others passed through."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self._fn = fn

    def __call__(self, x: Any, *args: Any) -> Any:
        return (self._fn(x), *args) if args else self._fn(x)


class _SampledDataset(Dataset):
    def __init__(self, dataset: Dataset, sampler: Sampler) -> None:
        self._dataset, self._indices = dataset, list(sampler)

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, idx: int) -> Any:
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """Samples from arrays of one length: sample i is ``a[i]``, or the tuple
    ``(a[i], b[i], ...)`` for several. A 1-D NDArray is read as numpy, so that
    its elements are numbers (labels), as MXNet does."""

    def __init__(self, *args: Sequence[Any]) -> None:
        if not args:
            raise InputError("Needs at least 1 arrays")
        self._length = len(args[0])
        for i, data in enumerate(args[1:], 1):
            if len(data) != self._length:
                raise InputError(f"All arrays must have the same length; array[0] has length "
                                 f"{self._length} while array[{i}] has {len(data)}.")
        self._data = [a.asnumpy() if isinstance(a, NDArray) and a.ndim == 1 else a
                      for a in args]

    def __getitem__(self, idx: int) -> Any:
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self) -> int:
        return self._length


class RecordFileDataset(Dataset):
    """The records of a RecordIO file (``.rec``, with its ``.idx`` beside it), as bytes."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx: int) -> bytes:
        record = self._record.read_idx(self._record.keys[idx])
        if record is None:
            raise DataFileError(f"{self.filename}: record {idx} (key "
                                f"{self._record.keys[idx]}) is past the end of the file")
        return record

    def __len__(self) -> int:
        return len(self._record.keys)
