"""`CSVIter`: batches read from CSV files, as MXNet 1.9's.

Each row of `data_csv` is one example, reshaped to `data_shape`; `label_csv`
gives the labels the same way (all 0 without it), a label of shape (1,)
becoming one number per example. With `round_batch` (the default) the rows
form a ring: the last batch of an epoch is filled from the first rows, its
`pad` saying how many, and the next epoch starts after them and ends at the
last row, as MXNet's does.
Without it every epoch starts at the first row and the last batch is padded
with copies of the first rows (MXNet leaves the previous batch's rows there;
either way `pad` says they are not examples).
A batch's `index` is its rows' numbers (uint64, padding rows included); `MXDataIter`'s
`iter_next()` / `getdata()` / ... give the current batch as MXNet's do. With
`round_batch`, a batch that would need more padding rows than the file holds
is refused, as MXNet's "number of input must be bigger than batch size".
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import DTypeError, ShapeError, as_dtype
from ..ndarray import NDArray, array
from .ndarray_iter import checked_batch_size
from .protocol import DataBatch, DataDesc, MXDataIter
from .ring import check_one_wrap, next_epoch_start


class CSVIter(MXDataIter):
    """Batches of `batch_size` rows of `data_csv` (and `label_csv`)."""

    def __init__(self, data_csv: str, data_shape: Sequence[int], label_csv: str | None = None,
                 label_shape: Sequence[int] = (1,), batch_size: int = 1,
                 round_batch: bool = True, dtype: Any = "float32", data_name: str = "data",
                 label_name: str = "softmax_label", **kwargs: Any) -> None:
        super().__init__(checked_batch_size(batch_size, "CSVIter"))
        dtype = as_dtype(dtype)
        self.data = _rows(data_csv, tuple(data_shape), dtype, "data_csv")
        count = self.data.shape[0]
        label_shape = tuple(label_shape)
        if label_csv is None:
            self.label = np.zeros((count, *label_shape), dtype)
        else:
            self.label = _rows(label_csv, label_shape, dtype, "label_csv")
            if self.label.shape[0] != count:
                raise ShapeError(f"CSVIter: {count} rows in {data_csv} but "
                                 f"{self.label.shape[0]} in {label_csv}")
        if label_shape == (1,):
            self.label = self.label.reshape(count)
        self.round_batch = round_batch
        self.provide_data = [DataDesc(data_name, (self.batch_size, *self.data.shape[1:]), dtype)]
        self.provide_label = [DataDesc(label_name, (self.batch_size, *self.label.shape[1:]),
                                       dtype)]
        self._cursor = 0   # the next batch's first row; past the end when it wrapped
        if round_batch:   # MXNet reads the first batch at once
            check_one_wrap(min(count, self.batch_size), count, self.batch_size, "CSVIter")

    def reset(self) -> None:
        super().reset()
        self._cursor = next_epoch_start(self._cursor, self.data.shape[0], self.round_batch)

    def _next_batch(self) -> DataBatch:
        count, first = self.data.shape[0], self._cursor
        if first >= count:
            raise StopIteration
        real = min(self.batch_size, count - first)
        rows = np.arange(first, first + real)
        if real < self.batch_size:   # padding: the ring's next rows, or the first rows
            if self.round_batch:
                check_one_wrap(real, count, self.batch_size, "CSVIter")
            fill = (np.arange(first + real, first + self.batch_size) if self.round_batch
                    else np.arange(self.batch_size - real))
            rows = np.concatenate([rows, fill % count])
        self._cursor = first + self.batch_size
        return DataBatch([_nd(self.data[rows])], [_nd(self.label[rows])],
                         pad=self.batch_size - real, index=rows.astype(np.uint64))


def _rows(path: str, shape: tuple[int, ...], dtype: np.dtype, what: str) -> np.ndarray:
    try:
        values = np.loadtxt(path, delimiter=",", dtype=dtype, ndmin=2)
    except ValueError as exc:
        raise DTypeError(f"CSVIter: {what} {path}: {exc}") from None
    if values.shape[1] != int(np.prod(shape)):
        raise ShapeError(f"CSVIter: {what} {path} has {values.shape[1]} values a row, but "
                         f"the shape {shape} holds {int(np.prod(shape))}")
    return values.reshape(-1, *shape)


def _nd(values: np.ndarray) -> NDArray:
    return array(values, dtype=values.dtype)
