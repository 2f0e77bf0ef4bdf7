"""`ResizeIter`: an iterator cut or stretched to a fixed number of batches per epoch."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import OperatorError
from ..ndarray import NDArray
from .protocol import DataBatch, DataIter


class ResizeIter(DataIter):
    """`size` batches of `data_iter` per epoch: the inner iterator starts again
    (reset) when it runs out, and, with `reset_internal`, at each `reset`; without
    it, the next epoch goes on where this one stopped.

    >>> import numpy as np, minimx as mx
    >>> inner = mx.io.NDArrayIter(np.arange(6.0), batch_size=2)
    >>> [b.data[0].asnumpy().tolist() for b in ResizeIter(inner, 4)]
    [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [0.0, 1.0]]
    """

    def __init__(self, data_iter: DataIter, size: int, reset_internal: bool = True) -> None:
        super().__init__(data_iter.batch_size)
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise OperatorError(f"ResizeIter: size={size!r} must be a whole number of batches")
        self.data_iter = data_iter
        self.size = int(size)
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: DataBatch | None = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key: Any = data_iter.default_bucket_key

    def reset(self) -> None:
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            # An inner epoch with no batch ends this one early (MXNet's StopIteration).
            try:
                self.current_batch = self.data_iter.next()
            except StopIteration:
                return False
        self.cur += 1
        return True

    def _current(self) -> DataBatch:
        if self.current_batch is None:
            raise OperatorError("ResizeIter: no current batch: call next() first")
        return self.current_batch

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        return self._current()

    def getdata(self) -> list[NDArray] | None:
        data = self._current().data
        return None if data is None else list(data)

    def getlabel(self) -> list[NDArray] | None:
        label = self._current().label
        return None if label is None else list(label)

    def getindex(self) -> np.ndarray | None:
        return self._current().index

    def getpad(self) -> int | None:
        return self._current().pad
