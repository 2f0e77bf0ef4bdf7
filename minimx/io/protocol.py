"""MXNet's data-iterator protocol: `DataDesc`, `DataBatch` and `DataIter`.

A `DataIter` hands out `DataBatch`es until it raises StopIteration, and
starts again after `reset()`. Iterating it (`for batch in it`) calls `next()`,
which MXNet 1.x builds from `iter_next()` and the `get*` methods; a subclass
overrides either `next()` or those. `provide_data` / `provide_label` describe
what each batch holds (`DataDesc`: name, shape with the batch size, dtype,
layout), so that a bind can be made before the first batch.

`MXDataIter` is the base of the iterators MXNet writes in C++ (`CSVIter`, `MNISTIter`,
`ImageRecordIter`, ...): its `iter_next()` / `getdata()` / ... read the current batch as
MXNet's Python wrapper of those does.
"""
from __future__ import annotations

import logging
from collections import namedtuple
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..base import OperatorError, as_dtype, as_shape
from ..ndarray import NDArray

_NameShape = namedtuple("_NameShape", ["name", "shape"])
_log = logging.getLogger(__name__)


class DataDesc(_NameShape):
    """The name and shape of an input (a `(name, shape)` tuple, as MXNet's), with its
    dtype and layout as attributes.

    >>> desc = DataDesc("data", (32, 3, 224, 224))
    >>> name, shape = desc
    >>> desc
    DataDesc[data,(32, 3, 224, 224),float32,NCHW]
    >>> DataDesc.get_batch_axis(desc.layout)
    0
    """

    dtype: np.dtype
    layout: str

    def __new__(cls, name: str, shape: Sequence[int], dtype: Any = np.float32,
                layout: str = "NCHW") -> DataDesc:
        desc = super().__new__(cls, name, as_shape(shape, f"DataDesc {name!r}"))
        desc.dtype = as_dtype(dtype)
        desc.layout = layout
        return desc

    def __repr__(self) -> str:
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout: str | None) -> int:
        """The axis of `layout` that counts examples ('N'); 0 without a layout, -1
        when the layout has no batch axis."""
        return 0 if layout is None else layout.find("N")

    @staticmethod
    def get_list(shapes: Iterable[tuple[str, Sequence[int]]],
                 types: Iterable[tuple[str, Any]] | None) -> list[DataDesc]:
        """DataDescs from `(name, shape)` pairs, with dtypes from `(name, dtype)` pairs."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One batch: lists of data and label arrays, and how many examples at its end are
    padding (`pad`), as MXNet 1.x's DataBatch.

    >>> import minimx as mx
    >>> print(DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1))
    DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]
    """

    def __init__(self, data: Sequence[NDArray] | None, label: Sequence[NDArray] | None = None,
                 pad: int | None = None, index: np.ndarray | None = None,
                 bucket_key: Any = None, provide_data: list[DataDesc] | None = None,
                 provide_label: list[DataDesc] | None = None) -> None:
        for what, arrays in (("data", data), ("label", label)):
            if arrays is not None and not isinstance(arrays, (list, tuple)):
                raise OperatorError(f"DataBatch: {what} must be a list of NDArrays, "
                                    f"got {type(arrays).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data_shapes = [d.shape for d in self.data or ()]
        label_shapes = [a.shape for a in self.label] if self.label else None
        return (f"{type(self).__name__}: data shapes: {data_shapes} "
                f"label shapes: {label_shapes}")


class DataIter:
    """The base of data iterators. A subclass gives `iter_next` (advance; False at
    the end) and `getdata` / `getlabel` / `getpad` / `getindex` for the current
    batch, or overrides `next` itself, and sets `provide_data` / `provide_label`.
    The methods left alone return None, as MXNet's do.
    """

    provide_data: list[DataDesc]
    provide_label: list[DataDesc]

    def __init__(self, batch_size: int = 0) -> None:
        self.batch_size = batch_size

    def __iter__(self) -> DataIter:
        return self

    def reset(self) -> None:
        """Go back to the first batch."""

    def next(self) -> DataBatch:
        """The next batch; StopIteration at the end of the data."""
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                         index=self.getindex())

    def __next__(self) -> DataBatch:
        return self.next()

    def iter_next(self) -> bool:
        """Move to the next batch; False when there is none."""
        return False

    def getdata(self) -> list[NDArray] | None:
        """The data arrays of the current batch."""
        return None

    def getlabel(self) -> list[NDArray] | None:
        """The label arrays of the current batch."""
        return None

    def getindex(self) -> np.ndarray | None:
        """The indices of the current batch's examples, if the iterator knows them."""
        return None

    def getpad(self) -> int | None:
        """How many examples at the end of the current batch are padding."""
        return None


class MXDataIter(DataIter):
    """The base of the iterators MXNet implements in C++, which its Python wraps in an
    MXDataIter (``isinstance(mx.io.CSVIter(...), mx.io.MXDataIter)`` holds in both).
    A subclass gives `_next_batch` (the next batch, or StopIteration) and calls this
    `reset` from its own. `next()` reads a batch and makes it the current one, which
    `getdata()` and `getlabel()` give as one NDArray each, as MXNet's do; `iter_next()`
    reads one too. MXNet's takes a handle to the C++ iterator: minimx has none, so this
    class is made only through its subclasses.
    """

    def __init__(self, batch_size: int = 0) -> None:
        super().__init__(batch_size)
        self._batch: DataBatch | None = None   # the current batch
        self._debug_skip_load = False
        self._debug_at_begin = False

    def _next_batch(self) -> DataBatch:
        raise NotImplementedError(f"{type(self).__name__} must define _next_batch")

    def reset(self) -> None:
        self._batch = None
        self._debug_at_begin = True

    def next(self) -> DataBatch:
        if self._debug_skip_load and not self._debug_at_begin and self._batch is not None:
            batch = self._batch
            return DataBatch(batch.data, batch.label, pad=batch.pad, index=batch.index)
        self._debug_at_begin = False
        if not self.iter_next():
            raise StopIteration
        return self._current()

    def debug_skip_load(self) -> None:
        """From now on `next()` gives the current batch again and again (the first batch
        of an epoch is still read), to time a network without the cost of reading."""
        self._debug_skip_load = True
        _log.info("Set debug_skip_load to be true, will simply return first batch")

    def iter_next(self) -> bool:
        try:
            self._batch = self._next_batch()
        except StopIteration:
            self._batch = None
            return False
        return True

    def _current(self) -> DataBatch:
        if self._batch is None:
            raise OperatorError(f"{type(self).__name__}: no current batch: call iter_next() "
                                "first")
        return self._batch

    def getdata(self) -> NDArray:  # type: ignore[override]
        """The current batch's data (one NDArray, as MXNet's)."""
        return self._current().data[0]  # type: ignore[index]

    def getlabel(self) -> NDArray:  # type: ignore[override]
        """The current batch's label (one NDArray, as MXNet's)."""
        return self._current().label[0]  # type: ignore[index]

    def getpad(self) -> int | None:
        return self._current().pad

    def getindex(self) -> np.ndarray | None:
        return self._current().index
