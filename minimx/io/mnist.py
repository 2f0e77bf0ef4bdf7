"""`MNISTIter`: batches of an MNIST-style pair of idx files, as MXNet 1.9.1's.

The image file is big-endian `u32 magic 0x803, u32 count, u32 rows, u32 cols` then
count x rows x cols bytes; the label file `u32 magic 0x801, u32 count` then a byte per
label. Pixels become float32 `value / 256`, labels float32. Like MXNet's, the iterator
loads its part of the data once (`num_parts` / `part_index` take
`[count / num_parts * part_index, count / num_parts * (part_index + 1))`), shuffles it
once with `seed` (the same permutation as MXNet's: std::mt19937 seeded `seed` driving
libstdc++'s std::shuffle of that build), and hands out full batches only: the examples
after the last full batch are never seen, and every epoch has the same order.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import DataFileError, ShapeError
from ..ndarray import NDArray, array
from .ndarray_iter import checked_batch_size
from .protocol import DataBatch, DataDesc, MXDataIter

_log = logging.getLogger(__name__)

IMAGE_MAGIC, LABEL_MAGIC = 0x803, 0x801
_GZIP_MAGIC = b"\x1f\x8b"


class MNISTIter(MXDataIter):
    """Batches of (batch_size, 1, rows, cols) images - (batch_size, rows * cols) with
    `flat` - and (batch_size,) labels from the idx files `image` and `label`.
    `input_shape` and other keywords (``data_shape``, ``prefetch_buffer``, as MXNet's
    own scripts pass them) are accepted and ignored, as by MXNet's C++ iterator."""

    def __init__(self, image: str = "./train-images-idx3-ubyte",
                 label: str = "./train-labels-idx1-ubyte", batch_size: int = 128,
                 shuffle: bool = True, flat: bool = False, seed: int = 0, silent: bool = False,
                 num_parts: int = 1, part_index: int = 0,
                 input_shape: Sequence[int] | None = None, data_name: str = "data",
                 label_name: str = "softmax_label", **kwargs: Any) -> None:
        super().__init__(checked_batch_size(batch_size, "MNISTIter"))
        if not 0 <= part_index < num_parts:
            raise ShapeError(f"MNISTIter: part_index must be in [0, num_parts), got "
                             f"part_index={part_index}, num_parts={num_parts}")
        images = _read_idx(image, IMAGE_MAGIC, 3, num_parts, part_index)
        labels = _read_idx(label, LABEL_MAGIC, 1, num_parts, part_index)
        if images.shape[0] != labels.shape[0]:
            raise ShapeError(f"MNISTIter: {images.shape[0]} images in {image} but "
                             f"{labels.shape[0]} labels in {label}")
        if shuffle:
            order = mt19937_shuffle(images.shape[0], seed)
            images, labels = images[order], labels[order]
        self.images = (images.astype(np.float32) * np.float32(1 / 256)).reshape(
            (images.shape[0], -1) if flat else (images.shape[0], 1, *images.shape[1:]))
        self.labels = labels.astype(np.float32)
        self.provide_data = [DataDesc(data_name, (self.batch_size, *self.images.shape[1:]))]
        self.provide_label = [DataDesc(label_name, (self.batch_size,))]
        self._cursor = 0
        if not silent:
            _log.info("MNISTIter: load %d images, shuffle=%d, shape=%s", images.shape[0],
                      shuffle, self.provide_data[0].shape)

    def reset(self) -> None:
        super().reset()
        self._cursor = 0

    def _next_batch(self) -> DataBatch:
        first, self._cursor = self._cursor, self._cursor + self.batch_size
        if self._cursor > self.images.shape[0]:
            raise StopIteration
        return DataBatch([_nd(self.images[first:self._cursor])],
                         [_nd(self.labels[first:self._cursor])], pad=0)


def _nd(values: np.ndarray) -> NDArray:
    return array(values, dtype=np.float32)


def _read_idx(path: str, magic: int, ndim: int, num_parts: int, part_index: int) -> np.ndarray:
    """The `part_index`-th of `num_parts` parts of an idx file's items, as uint8."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise DataFileError(f"MNISTIter: {path}: {exc.strerror}") from None
    if raw[:2] == _GZIP_MAGIC:
        raise DataFileError(f"MNISTIter: {path} is gzip-compressed; MXNet's MNISTIter reads "
                            "uncompressed idx files: gunzip it first")
    items = idx_items(raw, magic, ndim, f"MNISTIter: {path}")
    # MXNet's partition arithmetic, in doubles, truncated
    count = len(items)
    return items[int(count / num_parts * part_index):int(count / num_parts * (part_index + 1))]


def idx_items(raw: bytes, magic: int, ndim: int, what: str) -> np.ndarray:
    """The items of idx file bytes `raw` (big-endian u32 `magic`, count and each
    of the item's ``ndim - 1`` dimensions, then a byte per value) as a uint8
    array of shape (count, *dims), a view of `raw`; `what` names the file in
    errors."""
    header = 4 * (ndim + 1)
    fields = np.frombuffer(raw[:header], ">u4").tolist() if len(raw) >= header else []
    if not fields or fields[0] != magic:
        found = f"0x{fields[0]:x}" if fields else f"{len(raw)} bytes"
        raise DataFileError(f"{what} is not an idx file of {ndim}-d items "
                            f"(magic 0x{magic:x} expected, found {found})")
    count, item = fields[1], fields[2:]
    size = int(np.prod(item, dtype=np.int64))
    if len(raw) - header < count * size:
        raise DataFileError(f"{what} announces {count} items of shape {tuple(item)} but "
                            f"holds {len(raw) - header} bytes of them")
    return np.frombuffer(raw, np.uint8, count * size, header).reshape(count, *item)


def mt19937_shuffle(count: int, seed: int) -> np.ndarray:
    """The permutation of range(count) that std::shuffle with std::mt19937(seed) gives in
    MXNet 1.9.1's build (libstdc++'s one-swap-per-draw loop, draws scaled down by
    division and rejection, as uniform_int_distribution did there).

    >>> mt19937_shuffle(10, 5).tolist()
    [2, 5, 6, 3, 9, 0, 1, 7, 8, 4]
    """
    generator = np.random.MT19937()
    # RandomState seeds as std::mt19937(seed) does (init_genrand); seeds wrap as uint32
    state: Any = np.random.RandomState(seed % 2**32).get_state(legacy=False)
    generator.state = state
    order = list(range(count))
    for i in range(1, count):
        span = i + 1
        scaling = 0xFFFFFFFF // span
        while (draw := int(generator.random_raw())) >= span * scaling:
            pass
        j = draw // scaling
        order[i], order[j] = order[j], order[i]
    return np.array(order, dtype=np.int64)
