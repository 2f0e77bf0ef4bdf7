"""`mx.gluon.data.DataLoader`: a dataset's samples in batches, as MXNet 1.9.1's.

Batches come in the order the batch sampler gives them, each made by
`batchify_fn` from the samples it names. With ``num_workers`` > 0 that many
threads make the next ``prefetch`` batches while the caller uses the current
one (MXNet 1.9.1 uses processes unless ``thread_pool=True``; here both are
threads, which give the same batches: numpy and the engine's kernels release
the GIL, and a dataset need not be picklable).
"""
from __future__ import annotations

import concurrent.futures
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ... import ndarray as nd
from ...ndarray import NDArray
from ..errors import InputError, WorkerTimeout
from .sampler import BatchSampler, RandomSampler, Sampler, Samples, SequentialSampler


def default_batchify_fn(data: Sequence[Any]) -> Any:
    """Samples stacked along a new first axis: NDArrays by ``nd.stack``, tuples
    element-wise into a list, anything else through ``numpy.asarray`` into an
    NDArray of numpy's dtype (Python floats give float64, as in MXNet)."""
    if isinstance(data[0], NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(field) for field in zip(*data, strict=True)]
    try:
        array = np.asarray(data)
    except ValueError as exc:   # samples of different shapes
        raise InputError(f"default_batchify_fn: the samples of a batch do not stack into one "
                         f"array ({exc}); give a batchify_fn for them") from None
    return nd.array(array, dtype=array.dtype)


class DataLoader:
    """Batches of `dataset`: `batch_size` samples in order (``shuffle``: a new
    random order each pass) or by `sampler`, the last short batch as
    `last_batch` says (``'keep'``, ``'discard'``, ``'rollover'``); or the
    index lists of `batch_sampler`. ``pin_memory`` and ``pin_device_id`` are
    taken and change nothing (CPU memory only); ``auto_reload`` starts nothing
    early (each pass starts its batches when iterated)."""

    def __init__(self, dataset: Samples, batch_size: int | None = None,
                 shuffle: bool = False, sampler: Sampler | None = None,
                 last_batch: str | None = None, batch_sampler: Sampler | None = None,
                 batchify_fn: Callable[[list[Any]], Any] | None = None,
                 num_workers: int = 0, pin_memory: bool = False, pin_device_id: int = 0,
                 prefetch: int | None = None, thread_pool: bool = False,
                 timeout: float = 120, auto_reload: bool = False) -> None:
        if timeout <= 0:
            raise InputError(f"timeout must be positive, given {timeout}")
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise InputError(f"DataLoader: the dataset must have a length and items by index "
                             f"(a Dataset, a list, an array), not {type(dataset).__name__}")
        if batch_sampler is None:
            if batch_size is None:
                raise InputError("batch_size must be specified unless batch_sampler is "
                                 "specified")
            if sampler is None:
                sampler = (RandomSampler if shuffle else SequentialSampler)(len(dataset))
            elif shuffle:
                raise InputError("shuffle must not be specified if sampler is specified")
            batch_sampler = BatchSampler(sampler, batch_size, last_batch or "keep")
        elif batch_size is not None or shuffle or sampler is not None \
                or last_batch is not None:
            raise InputError("batch_size, shuffle, sampler and last_batch must not be "
                             "specified if batch_sampler is specified.")
        self._dataset = dataset
        self._batch_sampler = batch_sampler
        self._batchify_fn = batchify_fn or default_batchify_fn
        self._num_workers = max(0, int(num_workers))
        self._prefetch = max(0, int(prefetch) if prefetch is not None
                             else 2 * self._num_workers)
        self._timeout = timeout
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def __len__(self) -> int:
        return len(self._batch_sampler)

    def _batch(self, indices: list[int]) -> Any:
        return self._batchify_fn([self._dataset[i] for i in indices])

    def __iter__(self) -> Iterator[Any]:
        if self._num_workers == 0:
            for indices in self._batch_sampler:
                yield self._batch(indices)
            return
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                self._num_workers, thread_name_prefix="minimx-dataloader")
        pending: deque[concurrent.futures.Future] = deque()
        for indices in self._batch_sampler:
            pending.append(self._pool.submit(self._batch, indices))
            if len(pending) > self._prefetch:
                yield self._result(pending.popleft())
        while pending:
            yield self._result(pending.popleft())

    def _result(self, future: concurrent.futures.Future) -> Any:
        try:
            return future.result(self._timeout)
        except concurrent.futures.TimeoutError:
            raise WorkerTimeout(f"Worker timed out after {self._timeout} seconds making a "
                                f"batch (DataLoader timeout={self._timeout})") from None

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)   # not set if __init__ raised
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
