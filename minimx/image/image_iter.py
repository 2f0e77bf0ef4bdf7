"""`mx.image.ImageIter`: batches of augmented images from a RecordIO file of image records
or from image files named in a list, as MXNet 1.9.1's.

Each image is decoded as RGB, passed through the augmenters (`CreateAugmenter(data_shape,
**kwargs)` unless `aug_list` is given) and stored channels-first in a float32 batch.
The order is the file's or the list's, shuffled at each reset with Python's `random`
(as MXNet's) when `shuffle`. `last_batch_handle`: 'pad' completes the last batch from
the first images (`pad` counts them), 'discard' drops it, 'roll_over' starts the next
epoch with it.
"""
from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..base import DataFileError, MinimxError, ShapeError
from ..io import DataBatch, DataDesc, DataIter
from ..recordio import MXIndexedRecordIO, MXRecordIO, unpack
from .augmenters import Augmenter, CreateAugmenter
from .image import imdecode

_LAST_BATCH = ("pad", "discard", "roll_over")
_LABEL_DTYPES = ("int32", "float32", "int64", "float64")


def _read_list(path: str, dtype: str) -> tuple[dict[Any, tuple[np.ndarray, str]], list[Any]]:
    """An im2rec .lst file: tab-separated index, label(s) and relative path per line."""
    images, keys = {}, []
    try:
        with open(path) as fin:
            for number, line in enumerate(fin, 1):
                fields = line.strip().split("\t")
                if len(fields) < 3:
                    raise DataFileError(f"{path}:{number}: expected index, label(s) and path "
                                        f"separated by tabs, got {line.strip()!r}")
                images[int(fields[0])] = (np.array(fields[1:-1], dtype=np.float64).astype(dtype),
                                          fields[-1])
                keys.append(int(fields[0]))
    except OSError as exc:
        raise DataFileError(f"ImageIter: cannot read image list {path!r} "
                            f"({exc.strerror})") from None
    return images, keys


class ImageIter(DataIter):
    """Batches of `data_shape` (3, height, width) images with `label_width` labels each,
    from `path_imgrec` (with `path_imgidx` for shuffling and parts), or from the files of
    `path_imglist` / `imglist` (`[label(s)..., path]` items) under `path_root`.

    As MXNet's scripts call it (files of theirs, so not a doctest)::

        it = mx.image.ImageIter(batch_size=32, data_shape=(3, 224, 224),
                                path_imgrec="val.rec", resize=256, mean=True, std=True)
    """

    def __init__(self, batch_size: int, data_shape: Sequence[int], label_width: int = 1,
                 path_imgrec: str | None = None, path_imglist: str | None = None,
                 path_root: str | None = None, path_imgidx: str | None = None,
                 shuffle: bool = False, part_index: int = 0, num_parts: int = 1,
                 aug_list: list[Augmenter] | None = None, imglist: list | None = None,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32", last_batch_handle: str = "pad", **kwargs: Any) -> None:
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise MinimxError("ImageIter: give path_imgrec, path_imglist or imglist")
        if dtype not in _LABEL_DTYPES or last_batch_handle not in _LAST_BATCH:
            raise MinimxError(f"ImageIter: dtype must be one of {_LABEL_DTYPES} and "
                              f"last_batch_handle one of {_LAST_BATCH}, got {dtype!r} and "
                              f"{last_batch_handle!r}")
        if len(data_shape) != 3 or data_shape[0] != 3:
            raise ShapeError(f"ImageIter: data_shape must be (3, height, width), "
                             f"got {tuple(data_shape)}")
        self.imgrec: MXRecordIO | None = None
        self.imgidx: list[Any] | None = None
        if path_imgrec and path_imgidx:
            self.imgrec = MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
            self.imgidx = list(self.imgrec.keys)
        elif path_imgrec:
            self.imgrec = MXRecordIO(path_imgrec, "r")
        keys: list[Any] = []
        self.imglist: dict[Any, tuple[np.ndarray, str]] | None = None
        if path_imglist:
            self.imglist, keys = _read_list(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist = {}
            for index, item in enumerate(imglist, 1):   # MXNet keys them "1", "2", ...
                label = item[:-1] if len(item) > 2 else item[0]
                self.imglist[str(index)] = (np.atleast_1d(np.asarray(label, dtype=dtype)), item[-1])
                keys.append(str(index))
        self.path_root = path_root or ""
        self.data_shape = tuple(int(d) for d in data_shape)
        self.label_width = label_width
        self.provide_data = [DataDesc(data_name, (batch_size, *self.data_shape))]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [DataDesc(label_name, label_shape)]
        self.shuffle = shuffle
        self.seq: list[Any] | None = keys if self.imgrec is None else (
            self.imgidx if shuffle or num_parts > 1 or path_imgidx else None)
        if self.seq is None and (shuffle or num_parts > 1):
            raise MinimxError("ImageIter: shuffle and num_parts need path_imgidx with path_imgrec")
        if num_parts > 1 and self.seq is not None:
            if not 0 <= part_index < num_parts:
                raise MinimxError(f"ImageIter: part_index={part_index} not in [0, {num_parts})")
            part = len(self.seq) // num_parts
            self.seq = self.seq[part_index * part:(part_index + 1) * part]
        # Any: ImageDetIter keeps detection augmenters here, as MXNet's.
        self.auglist: list[Any] = (CreateAugmenter(data_shape, **kwargs) if aug_list is None
                                   else aug_list)
        self.last_batch_handle = last_batch_handle
        self.cur = 0
        self._allow_read = True
        self._cache: tuple[np.ndarray, np.ndarray, int] | None = None
        self.reset()

    def reset(self) -> None:
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self) -> None:
        """Reset, dropping a rolled-over partial batch."""
        self._cache = None
        self.reset()

    def next_sample(self) -> tuple[Any, bytes]:
        """The next (label, encoded image); StopIteration at the end of the data."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:   # a .rec read in file order
            assert self.imgrec is not None
            record = self.imgrec.read()
            if record is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            header, img = unpack(record)
            return header.label, img
        if self.cur >= len(self.seq):
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if isinstance(self.imgrec, MXIndexedRecordIO):
            header, img = unpack(self.imgrec.read_idx(idx) or b"")
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        assert self.imglist is not None
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def read_image(self, fname: str) -> bytes:
        """The bytes of image file `fname` under `path_root`."""
        path = os.path.join(self.path_root, fname)
        try:
            with open(path, "rb") as fin:
                return fin.read()
        except OSError as exc:
            raise DataFileError(f"ImageIter: cannot read image {path!r} ({exc.strerror})") from None

    def _batchify(self, data: np.ndarray, label: np.ndarray, start: int) -> int:
        """Fill `data` / `label` from position `start`; return how many are filled."""
        i = start
        try:
            while i < self.batch_size:
                example = self._example(*self.next_sample())
                if example is not None:
                    data[i], label[i] = example
                    i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _example(self, label: Any, buf: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        """One batch row: the decoded, augmented image (channels first) and its label
        (None would skip the sample)."""
        img = imdecode(buf, what=f"ImageIter image {self.cur}")
        for aug in self.auglist:
            img = aug(img)
        return (np.transpose(img.asnumpy(), (2, 0, 1)),
                np.reshape(label, self.provide_label[0].shape[1:]))

    def _empty_batch(self) -> tuple[np.ndarray, np.ndarray]:
        """The data and label arrays of a batch before it is filled."""
        return (np.zeros((self.batch_size, *self.data_shape), np.float32),
                np.zeros(self.provide_label[0].shape, np.float32))

    def next(self) -> DataBatch:
        if self._cache is not None:
            data, label, filled = self._cache
        else:
            data, label = self._empty_batch()
            filled = self._batchify(data, label, 0)
        pad = self.batch_size - filled
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache is None:
                self._cache = (data, label, filled)
                raise StopIteration
            self._batchify(data, label, filled)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache = None
        return DataBatch([nd.array(data)], [nd.array(label)], pad=pad)
