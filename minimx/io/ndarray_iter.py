"""`NDArrayIter`: batches from arrays in memory, with MXNet 1.9's names and behaviour.

Each input is named (MXNet's rules: one array takes `data_name`, a list takes
`_0_<data_name>`, `_1_<data_name>`, ..., a dict keeps its keys) and the named
inputs are sorted by name. A numpy array becomes float32, an NDArray keeps its
dtype, as `mx.nd.array` does. A batch is the rows the cursor points at; what
happens to the last, incomplete one is `last_batch_handle`:

- ``pad``: filled up with rows from the start (wrapping as often as needed);
  `pad` says how many.
- ``discard``: dropped.
- ``roll_over``: kept back; after `reset()` the first batch is those rows
  followed by the first rows of the new epoch (its `pad` counts the kept rows).
  A `reset()` elsewhere in an epoch, and `hard_reset()`, start afresh. A
  `batch_size` over twice the examples is refused: no batch would ever fill.

The cursor arithmetic is MXNet's (`cursor` starts at `-batch_size`), so batches
and pads match MXNet's across resets. The iterator keeps the row order and
indexes the inputs with it, so shuffling (`mx.random.seed` seeds it: MXNet
uses numpy's global generator) reorders indices, not data.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from ..ndarray import NDArray, array, random
from .protocol import DataBatch, DataDesc, DataIter

LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")

Named = list[tuple[str, np.ndarray]]


class NDArrayIter(DataIter):
    """Batches of `batch_size` examples from numpy arrays or NDArrays.

    >>> import numpy as np
    >>> it = NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5), batch_size=2)
    >>> it.provide_data, it.provide_label
    ([DataDesc[data,(2, 2),float32,NCHW]], [DataDesc[softmax_label,(2,),float32,NCHW]])
    >>> [(b.label[0].asnumpy().tolist(), b.pad) for b in it]
    [([0.0, 1.0], 0), ([2.0, 3.0], 0), ([4.0, 0.0], 1)]
    """

    def __init__(self, data: Any, label: Any = None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data",
                 label_name: str = "softmax_label", layout: str = "NCHW") -> None:
        super().__init__(checked_batch_size(batch_size, "NDArrayIter"))
        if last_batch_handle not in LAST_BATCH_HANDLES:
            raise OperatorError(f"NDArrayIter: last_batch_handle={last_batch_handle!r} is not "
                                f"one of {', '.join(LAST_BATCH_HANDLES)}")
        self.batch_axis = DataDesc.get_batch_axis(layout)
        if self.batch_axis < 0:
            raise OperatorError(f"NDArrayIter: layout={layout!r} has no batch axis 'N'")
        self.layout = layout
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        if data is None:
            raise OperatorError("NDArrayIter: data is None")
        self._data = _named(data, data_name, "data")
        self._label = _named(label, label_name, "label")
        self.num_data = self._count_examples()
        if last_batch_handle == "roll_over" and self.batch_size > 2 * self.num_data:
            # An epoch's leftover joins only the next epoch's rows, once: no batch would
            # ever fill (MXNet 1.9.1 fails at its first batch with a slicing error).
            raise ShapeError(f"NDArrayIter: roll_over with {self.num_data} examples can "
                             f"never fill a batch of {self.batch_size} (a leftover and the "
                             f"next epoch hold at most {2 * self.num_data})")
        self._order = np.arange(self.num_data)
        self._kept = self._order[:0]   # rows roll_over carries into the next epoch
        self.cursor = -self.batch_size
        self.reset()

    # -- what the batches hold ---------------------------------------------------------
    @property
    def provide_data(self) -> list[DataDesc]:  # type: ignore[override]
        """The name, batch shape, dtype and layout of each data input."""
        return self._describe(self._data)

    @property
    def provide_label(self) -> list[DataDesc]:  # type: ignore[override]
        """The name, batch shape, dtype and layout of each label input."""
        return self._describe(self._label)

    @property
    def data(self) -> list[tuple[str, NDArray]]:
        """The named data inputs, in their original order (MXNet's attribute)."""
        return [(name, array(values, dtype=values.dtype)) for name, values in self._data]

    @property
    def label(self) -> list[tuple[str, NDArray]]:
        """The named label inputs, in their original order (MXNet's attribute)."""
        return [(name, array(values, dtype=values.dtype)) for name, values in self._label]

    def _describe(self, named: Named) -> list[DataDesc]:
        axis = self.batch_axis
        return [DataDesc(name, (*values.shape[:axis], self.batch_size, *values.shape[axis + 1:]),
                         values.dtype, self.layout) for name, values in named]

    # -- the cursor ------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the first batch, reshuffled if `shuffle`; under roll_over, the rows of
        an incomplete last batch lead the next epoch."""
        rolls = (self.last_batch_handle == "roll_over"
                 and self.num_data - self.batch_size < self.cursor < self.num_data)
        self._kept = self._order[self.cursor:] if rolls else self._order[:0]
        self._shuffle()
        self.cursor = self.cursor - self.num_data - self.batch_size if rolls else -self.batch_size

    def hard_reset(self) -> None:
        """Back to the first batch, dropping rows that roll_over kept."""
        self._shuffle()
        self._kept = self._order[:0]
        self.cursor = -self.batch_size

    def _shuffle(self) -> None:
        if self.shuffle:
            self._order = random.rng.permutation(self.num_data)

    def iter_next(self) -> bool:
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self) -> DataBatch:
        """The next full batch (a padded one under pad); StopIteration at the end."""
        if not self.iter_next():
            raise StopIteration
        rows = self._rows()
        if len(rows) != self.batch_size:   # incomplete: discard and roll_over stop here
            raise StopIteration
        return DataBatch(data=self._take(self._data, rows), label=self._take(self._label, rows),
                         pad=self.getpad(), index=None)

    def _rows(self) -> np.ndarray:
        """The original row numbers of the current batch."""
        size, count, cursor = self.batch_size, self.num_data, self.cursor
        if not -size < cursor < count:
            raise OperatorError(f"NDArrayIter: no current batch (cursor {cursor} of "
                                f"{count} examples): call next() after reset()")
        if cursor < 0:   # the first batch after a roll_over reset
            return np.concatenate([self._kept, self._order[:cursor + size]])
        if self.last_batch_handle == "pad" and cursor + size > count:
            return self._order[(cursor + np.arange(size)) % count]
        return self._order[cursor:cursor + size]

    def _take(self, named: Named, rows: np.ndarray) -> list[NDArray]:
        return [array(np.take(values, rows, axis=self.batch_axis), dtype=values.dtype)
                for _, values in named]

    # -- the protocol's accessors ------------------------------------------------------------
    def getdata(self) -> list[NDArray]:
        return self._take(self._data, self._rows())

    def getlabel(self) -> list[NDArray]:
        return self._take(self._label, self._rows())

    def getpad(self) -> int:
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _count_examples(self) -> int:
        """The number of examples, which every input must have along the batch axis."""
        counts = {}
        for name, values in self._data + self._label:
            if values.ndim <= self.batch_axis:
                raise ShapeError(f"NDArrayIter: {name!r} has shape {values.shape}, without "
                                 f"the batch axis {self.batch_axis} of layout {self.layout!r}")
            counts[name] = values.shape[self.batch_axis]
        if len(set(counts.values())) > 1:
            listed = ", ".join(f"{name} {n}" for name, n in counts.items())
            raise ShapeError(f"NDArrayIter: the inputs hold different numbers of examples "
                             f"along the batch axis: {listed}")
        return next(iter(counts.values()))


def checked_batch_size(batch_size: Any, what: str) -> int:
    """`batch_size` as an int; OperatorError naming `what` (the iterator) if it is not
    a positive integer."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size <= 0:
        raise OperatorError(f"{what}: batch_size={batch_size!r} must be a positive integer")
    return int(batch_size)


def _named(inputs: Any, default_name: str, what: str) -> Named:
    """MXNet's `_init_data`: the inputs as (name, array) pairs sorted by name."""
    if inputs is None:
        return []
    if isinstance(inputs, (np.ndarray, NDArray)):
        inputs = [inputs]
    if isinstance(inputs, (list, tuple)):
        if len(inputs) == 1:
            inputs = {default_name: inputs[0]}
        else:
            inputs = {f"_{i}_{default_name}": value for i, value in enumerate(inputs)}
    if not isinstance(inputs, Mapping):
        raise DTypeError(f"NDArrayIter: {what} must be an NDArray, a numpy array, or a list "
                         f"or dict of them, got {type(inputs).__name__}")
    if what == "data" and not inputs:
        raise OperatorError("NDArrayIter: data holds no arrays")
    if not all(isinstance(name, str) for name in inputs):
        raise OperatorError(f"NDArrayIter: {what} names must be strings, got "
                            f"{sorted(map(repr, inputs))}")
    return [(name, _values(value, name)) for name, value in sorted(inputs.items())]


def _values(value: Any, name: str) -> np.ndarray:
    """An input's values as `mx.nd.array` makes them (float32 unless an NDArray)."""
    if isinstance(value, NDArray):
        return value.asnumpy()
    try:
        return array(value).asnumpy()
    except DTypeError as exc:
        raise DTypeError(f"NDArrayIter: input {name!r}: {exc}") from None
