"""`PrefetchingIter`: batches of one or more iterators, read ahead on a thread.

One thread per epoch reads the next batch of every inner iterator and joins
them (data after data, label after label, in the iterators' order) while the
caller works on the current one. The thread reads a batch only while fewer
than `capacity` (one, as MXNet's) read batches wait untaken, so the inner
iterators are at most that far ahead of the caller (which matters to a
`reset()` of stateful ones, such as NDArrayIter's roll_over). An error in
an inner iterator is raised by `next()` in the caller's thread; iterators that
run out at different batches are an error, not a hang. `reset()` stops the
thread, resets the inner iterators and starts a new one; `close()` (or garbage
collection: the thread holds the inner iterators, not the PrefetchingIter)
stops it for good.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import OperatorError
from .protocol import DataBatch, DataDesc, DataIter

_END = object()   # what the thread queues when the iterators are done


class _Failed:
    """An exception raised on the thread, carried to the caller."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class PrefetchingIter(DataIter):
    """Batches of `iters` (one iterator or a list), joined and read ahead.
    `rename_data` / `rename_label` (one dict per iterator) rename their inputs.

    >>> import numpy as np, minimx as mx
    >>> it = PrefetchingIter(mx.io.NDArrayIter(np.arange(4.0), batch_size=2))
    >>> [b.data[0].asnumpy().tolist() for b in it]
    [[0.0, 1.0], [2.0, 3.0]]
    >>> it.close()
    """

    def __init__(self, iters: DataIter | Sequence[DataIter],
                 rename_data: Sequence[Mapping[str, str]] | None = None,
                 rename_label: Sequence[Mapping[str, str]] | None = None,
                 capacity: int = 1) -> None:
        self.iters: list[DataIter] = [iters] if isinstance(iters, DataIter) else list(iters)
        if not self.iters:
            raise OperatorError("PrefetchingIter: no iterators given")
        if capacity < 1:
            raise OperatorError(f"PrefetchingIter: capacity={capacity} must be at least 1")
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.capacity = capacity
        super().__init__(self.provide_data[0].shape[0])
        self.current_batch: DataBatch | None = None
        self._thread: threading.Thread | None = None
        self._start()

    # -- what the batches hold ------------------------------------------------------------
    @property
    def provide_data(self) -> list[DataDesc]:  # type: ignore[override]
        return _renamed([it.provide_data for it in self.iters], self.rename_data)

    @property
    def provide_label(self) -> list[DataDesc]:  # type: ignore[override]
        return _renamed([it.provide_label for it in self.iters], self.rename_label)

    # -- the thread -----------------------------------------------------------------------
    def _start(self) -> None:
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._slots = _Slots(self.capacity)   # batches the thread may read
        self._thread = threading.Thread(
            target=_produce, name="PrefetchingIter", daemon=True,
            args=(self.iters, (self.provide_data, self.provide_label), self._queue, self._stop,
                  self._slots))
        self._thread.start()

    def _halt(self) -> None:
        """Stop the thread once it has read the batches it may (the one after the
        current, as MXNet's reset waits for it), into an unbounded queue: the join
        cannot hang."""
        if self._thread is None:
            return
        self._stop.set()
        self._slots.wake()
        if self._thread is not threading.current_thread():   # __del__ by gc on it
            self._thread.join()
        self._thread = None

    # -- the protocol -----------------------------------------------------------------------
    def reset(self) -> None:
        self._halt()
        for it in self.iters:
            it.reset()
        self._start()

    def close(self) -> None:
        """Stop the reading thread (a closed iterator gives no more batches)."""
        self._halt()

    def __del__(self) -> None:
        if getattr(self, "_thread", None) is not None:
            self._halt()

    def iter_next(self) -> bool:
        if self._thread is None:
            return False
        item = self._queue.get()
        self._slots.release()   # taken: the thread may read the next batch
        if item is _END:
            self._thread.join()
            self._thread = None
            return False
        if isinstance(item, _Failed):
            self._thread.join()
            self._thread = None
            raise item.error
        self.current_batch = item
        return True

    def next(self) -> DataBatch:
        if not self.iter_next() or self.current_batch is None:
            raise StopIteration
        return self.current_batch

    def getdata(self) -> list:
        return list(self.current_batch.data or []) if self.current_batch else []

    def getlabel(self) -> list:
        return list(self.current_batch.label or []) if self.current_batch else []

    def getpad(self) -> int | None:
        return self.current_batch.pad if self.current_batch else None

    def getindex(self) -> Any:
        return self.current_batch.index if self.current_batch else None


def _produce(iters: list[DataIter], descs: tuple[list[DataDesc], list[DataDesc]],
             out: queue.Queue, stop: threading.Event, slots: _Slots) -> None:
    """The thread: queue joined batches until the end, an error, or `stop`; each read
    takes a slot (one per batch the caller has taken), and the slots given are used
    even after `stop`."""
    while True:
        if not slots.acquire(stop):
            return
        try:
            item: Any = _read_all(iters, descs)
        except BaseException as exc:  # noqa: BLE001  (re-raised in the caller's thread)
            item = _Failed(exc)
        out.put(item)
        if item is _END or isinstance(item, _Failed):
            return


class _Slots:
    """A counting semaphore whose waiters also wake on a stop event."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._cond = threading.Condition()

    def acquire(self, stop: threading.Event) -> bool:
        """Take a slot, waiting for one unless `stop` is set; False if stopped without."""
        with self._cond:
            self._cond.wait_for(lambda: self._count > 0 or stop.is_set())
            if self._count == 0:
                return False
            self._count -= 1
            return True

    def release(self) -> None:
        with self._cond:
            self._count += 1
            self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()


def _read_all(iters: list[DataIter], descs: tuple[list[DataDesc], list[DataDesc]]) -> Any:
    """The joined next batch of every iterator, or _END when all are done."""
    batches: list[DataBatch | None] = []
    for it in iters:
        try:
            batches.append(it.next())
        except StopIteration:
            batches.append(None)
    if all(b is None for b in batches):
        return _END
    ready = [b for b in batches if b is not None]
    if len(ready) < len(batches) or len({b.pad for b in ready}) > 1:
        raise OperatorError("PrefetchingIter: the iterators hold different numbers of "
                            "examples (one ran out, or their pads differ)")
    return DataBatch(sum((list(b.data or []) for b in ready), []),
                     sum((list(b.label or []) for b in ready), []),
                     ready[0].pad, ready[0].index, provide_data=descs[0], provide_label=descs[1])


def _renamed(descs: list[list[DataDesc]], renames: Sequence[Mapping[str, str]] | None
             ) -> list[DataDesc]:
    """The iterators' descriptions joined, each renamed by its iterator's dict."""
    if renames is None:
        return [d for group in descs for d in group]
    if len(renames) != len(descs):
        raise OperatorError(f"PrefetchingIter: {len(renames)} renaming dicts for "
                            f"{len(descs)} iterators")
    return [DataDesc(rename.get(d.name, d.name), d.shape, d.dtype, d.layout)
            for rename, group in zip(renames, descs, strict=True) for d in group]
