"""`ImageRecordIter`: batches of decoded, cropped and normalised images from a RecordIO
file of image records (`mx.recordio.pack_img`, MXNet's im2rec), as MXNet 1.9.1's.

Each record is decoded (grey for `data_shape[0] == 1`, colour for 3, as stored with 4
channels), resized so its shorter side is `resize` (if given), cut to `data_shape`'s size
(centred, or anywhere with `rand_crop`; an image smaller than that is enlarged first),
mirrored (`mirror`, or by a coin with `rand_mirror`) and normalised per channel,
`(pixel - mean) * scale / std`, into RGB planes (image_aug.py). Labels come from the
record headers: one number, or `label_width` numbers for multi-label records.

Batches and epochs follow MXNet's: with `round_batch` (the default) the records form a
ring, so the last batch of an epoch is completed from the first records (`pad` counts
them) and the next epoch starts after those; without it the last batch is padded (zeros
here; MXNet leaves the previous batch's images) and every epoch starts at the first
record. Unlike MXNet's, `shuffle`, `rand_crop` and `rand_mirror` draw from a numpy
generator seeded by `seed`: the order and the crops are MXNet's only in distribution.

MXNet's other names for it: `ImageRecordUInt8Iter` / `ImageRecordInt8Iter` (its dtype
fixed), and the legacy `ImageRecordIter_v1` / `ImageRecordUInt8Iter_v1`, whose
normalisation rounds differently and whose uint8 version never mirrors.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import DataFileError, DTypeError, OperatorError, ShapeError, as_dtype
from ..formats import load_arrays, save_arrays
from ..formats.image_codec import COLOR, GRAYSCALE, UNCHANGED, imdecode
from ..ndarray import array
from ..recordio import RecordReader, read_index, unpack
from .image_aug import crop, normalize, resize_short
from .ndarray_iter import checked_batch_size
from .protocol import DataBatch, DataDesc, MXDataIter
from .ring import check_one_wrap, next_epoch_start

# Arguments of MXNet's that only tune its threads and buffers, accepted and ignored
# (and fill_value, which only fills what rotations and pads make).
_IGNORED = frozenset({"preprocess_threads", "prefetch_buffer", "verbose", "ctx",
                      "device_id", "shuffle_chunk_size", "shuffle_chunk_seed", "fill_value"})
# MXNet's augmentations and partitioning that minimx does not have, with the values that
# leave the images as they are (its defaults): accepted at those values, as MXNet's own
# example scripts always pass them (src/io/image_aug_default.cc, image_rec parser).
_NO_OP: dict[str, Any] = {
    "max_rotate_angle": 0, "rotate": -1, "max_aspect_ratio": 0, "min_aspect_ratio": None,
    "max_shear_ratio": 0, "max_crop_size": -1, "min_crop_size": -1, "max_random_scale": 1,
    "min_random_scale": 1, "max_random_area": 1, "min_random_area": 1, "max_img_size": 1e10,
    "min_img_size": 0, "brightness": 0, "contrast": 0, "saturation": 0, "pca_noise": 0,
    "random_h": 0, "random_s": 0, "random_l": 0, "pad": 0, "random_resized_crop": False,
    "num_parts": 1, "part_index": 0}


def _is_no_op(key: str, value: Any) -> bool:
    """Whether MXNet's argument `key` at `value` leaves the images as they are."""
    default = _NO_OP[key]
    if default is None or isinstance(default, bool):
        return value in (default, str(default))
    try:
        return float(value) == float(default)
    except (TypeError, ValueError):
        return False


_DECODE_FLAG = {1: GRAYSCALE, 3: COLOR, 4: UNCHANGED}
_DTYPES = ("float32", "uint8", "int8")


class RecordBatcher(MXDataIter, ABC):
    """Batches of the image records of a RecordIO file, in MXNet's C++ iterators' order:
    the file's (or shuffled per epoch with `seed`), a ring with `round_batch`. A
    subclass sets `data_shape`, `dtype`, `label_size` and gives `_example`."""

    data_shape: tuple[int, int, int]
    dtype: np.dtype
    label_size: int

    def __init__(self, path_imgrec: str, path_imgidx: str, batch_size: int, shuffle: bool,
                 seed: int, round_batch: bool, what: str) -> None:
        super().__init__(checked_batch_size(batch_size, what))
        self.shuffle, self.round_batch = shuffle, round_batch
        self._rng = np.random.default_rng(seed)
        self._reader = RecordReader(path_imgrec)
        if path_imgidx:
            self._offsets = sorted(read_index(path_imgidx).values())
        else:
            self._offsets = self._reader.offsets()
        if not self._offsets:
            raise DataFileError(f"{what}: {path_imgrec} holds no records")
        self._order = self._new_order()
        self._cursor = 0
        if round_batch:   # MXNet reads the first batch at once
            count = len(self._offsets)
            check_one_wrap(min(count, self.batch_size), count, self.batch_size, what)
        self._what = what

    def _new_order(self) -> np.ndarray:
        count = len(self._offsets)
        return self._rng.permutation(count) if self.shuffle else np.arange(count)

    def reset(self) -> None:
        super().reset()
        self._cursor = next_epoch_start(self._cursor, len(self._offsets), self.round_batch)
        self._order = self._new_order()

    def _next_batch(self) -> DataBatch:
        count, first = len(self._offsets), self._cursor
        if first >= count:
            raise StopIteration
        real = min(self.batch_size, count - first)
        if self.round_batch:
            check_one_wrap(real, count, self.batch_size, self._what)
        taken = real if not self.round_batch else self.batch_size
        data = np.zeros((self.batch_size, *self.data_shape), self.dtype)
        labels = np.zeros((self.batch_size, self.label_size), np.float32)
        for row, position in enumerate(range(first, first + taken)):
            data[row], labels[row] = self._example(int(self._order[position % count]))
        self._cursor = first + self.batch_size
        label = labels[:, 0] if self.label_size == 1 else labels
        return DataBatch([array(data, dtype=self.dtype)], [array(label, dtype=np.float32)],
                         pad=self.batch_size - real)

    def _record(self, index: int) -> tuple[Any, bytes, str]:
        """The header and the payload of the `index`-th record, and words naming it."""
        offset = self._offsets[index]
        self._reader.seek(offset)
        record = self._reader.read()
        if record is None:
            raise DataFileError(f"{self._what}: {self._reader.uri} has no record at byte "
                                f"{offset}")
        header, payload = unpack(record)
        return header, payload, (f"{self._what}: {self._reader.uri}, record {header.id} "
                                 f"(byte {offset})")

    @abstractmethod
    def _example(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The image and the label row of the `index`-th record, processed."""


class ImageRecordIter(RecordBatcher):
    """Batches of `data_shape` (channels, height, width) images and their labels from the
    image records of `path_imgrec` (`path_imgidx`: its `.idx`, which spares a scan).

    As MXNet's ImageNet scripts call it (a file of theirs, so not a doctest)::

        it = ImageRecordIter(path_imgrec="train.rec", data_shape=(3, 224, 224),
                             batch_size=32, resize=256, rand_mirror=True,
                             mean_r=123.68, mean_g=116.28, mean_b=103.53)
    """

    def __init__(self, path_imgrec: str, data_shape: Sequence[int], batch_size: int,
                 path_imgidx: str = "", label_width: int = 1, shuffle: bool = False,
                 seed: int = 0, resize: int = -1, rand_crop: bool = False,
                 rand_mirror: bool = False, mirror: bool = False, mean_img: str = "",
                 mean_r: float = 0.0, mean_g: float = 0.0, mean_b: float = 0.0,
                 mean_a: float = 0.0, std_r: float = 1.0, std_g: float = 1.0,
                 std_b: float = 1.0, std_a: float = 1.0, scale: float = 1.0,
                 round_batch: bool = True, inter_method: int = 1,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: Any = "float32", **kwargs: Any) -> None:
        what = type(self).__name__
        unknown = sorted(k for k in set(kwargs) - _IGNORED
                         if k not in _NO_OP or not _is_no_op(k, kwargs[k]))
        if unknown:
            given = ", ".join(f"{k}={kwargs[k]!r}" for k in unknown)
            raise OperatorError(f"{what}: MXNet's {given} not supported (minimx has "
                                "resize, crops, mirrors and mean/std/scale; MXNet's other "
                                "augmentations only at the values that do nothing)")
        shape = tuple(int(d) for d in data_shape)
        if len(shape) != 3 or shape[0] not in _DECODE_FLAG:
            raise ShapeError(f"{what}: data_shape must be (channels, height, width) "
                             f"with 1, 3 or 4 channels, got {tuple(data_shape)}")
        self.data_shape: tuple[int, int, int] = (shape[0], shape[1], shape[2])
        if inter_method != 1:
            raise OperatorError(f"{what}: only inter_method=1 (bilinear) is "
                                f"supported, got {inter_method}")
        self.dtype = as_dtype(dtype)
        if self.dtype.name not in _DTYPES:
            raise OperatorError(f"{what}: dtype must be one of {_DTYPES}, got {self.dtype}")
        super().__init__(path_imgrec, path_imgidx, batch_size, shuffle, seed, round_batch,
                         what)
        self.label_width = self.label_size = label_width
        self.resize, self.rand_crop = resize, rand_crop
        self.rand_mirror, self.mirror = rand_mirror, mirror
        channels = self.data_shape[0]
        self._mean: np.ndarray = np.array([mean_r, mean_g, mean_b, mean_a][:channels]
                                          if channels > 1 else [mean_r], np.float32)
        std = [std_r, std_g, std_b, std_a][:channels] if channels > 1 else [std_r]
        self._mult, self._divisor = self._factors(np.float32(scale), np.array(std, np.float32))
        if mean_img and self.dtype != np.uint8:   # MXNet's uint8 parser reads no mean
            self._mean = self._mean_image(mean_img)
        label_shape = (self.batch_size,) if label_width == 1 else (self.batch_size, label_width)
        self.provide_data = [DataDesc(data_name, (self.batch_size, *self.data_shape),
                                      self.dtype)]
        self.provide_label = [DataDesc(label_name, label_shape)]

    def _example(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        header, payload, what = self._record(index)
        label = np.atleast_1d(np.asarray(header.label, np.float32))
        if label.size != self.label_width:
            raise ShapeError(f"{what}: {label.size} label(s), but label_width is "
                             f"{self.label_width}")
        img = imdecode(payload, _DECODE_FLAG[self.data_shape[0]], what)
        channels = 1 if img.ndim == 2 else img.shape[2]
        if channels != self.data_shape[0]:
            raise ShapeError(f"{what}: the image has {channels} channels, data_shape "
                             f"{self.data_shape} asks for {self.data_shape[0]}")
        if self.resize > 0:
            img = resize_short(img, self.resize)
        img = crop(img, self.data_shape[1], self.data_shape[2],
                   self._rng if self.rand_crop else None, what)
        mirror = bool(self.rand_mirror and self._rng.random() < 0.5) or self.mirror
        return normalize(img, self.dtype, self._mean, self._mult, self._divisor, mirror), label

    @staticmethod
    def _factors(scale: np.float32, std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What the centred pixels are multiplied by, then divided by: MXNet's
        ProcessImage multiplies by ``scale / std`` at once."""
        return scale / std, np.ones_like(std)

    def _mean_image(self, path: str) -> np.ndarray:
        """The mean image of `path`; if there is no such file, the mean of every
        record's image (normalised by mean_r/g/b, std and scale, as MXNet computes it),
        saved there as MXNet saves it."""
        if os.path.exists(path):
            arrays = load_arrays(path)
            values = next(iter(arrays.values() if isinstance(arrays, dict) else arrays))
            mean = np.asarray(values, np.float32)
            if mean.shape != self.data_shape:
                raise ShapeError(f"{type(self).__name__}: mean_img {path} has shape "
                                 f"{mean.shape}, data_shape is {self.data_shape}")
            return mean
        total = np.zeros(self.data_shape, np.float64)
        for index in range(len(self._offsets)):
            total += self._example(index)[0]
        mean = (total / len(self._offsets)).astype(np.float32)
        save_arrays(path, {"mean_img": mean})
        return mean


class _OneDtypeIter(ImageRecordIter):
    """An `ImageRecordIter` whose data is `data_dtype` whatever `dtype` says (MXNet 1.9.1
    registers these names over its ImageRecordIter2 parser of that type, which ignores
    the `dtype` argument)."""

    data_dtype = "float32"

    def __init__(self, path_imgrec: str, data_shape: Sequence[int], batch_size: int,
                 **kwargs: Any) -> None:
        kwargs.pop("dtype", None)
        super().__init__(path_imgrec, data_shape, batch_size, dtype=self.data_dtype, **kwargs)


class ImageRecordUInt8Iter(_OneDtypeIter):
    """``ImageRecordIter(dtype='uint8')`` under MXNet's deprecated name: the decoded,
    resized, cropped and mirrored pixels, with no mean, std or scale."""

    data_dtype = "uint8"


class ImageRecordInt8Iter(_OneDtypeIter):
    """``ImageRecordIter(dtype='int8')`` under MXNet's deprecated name: ``pixel -
    round(mean)``, saturated (std and scale are not applied)."""

    data_dtype = "int8"


class ImageRecordIter_v1(ImageRecordIter):  # noqa: N801  (MXNet's name)
    """MXNet 1.9.1's deprecated first ImageRecordIter (src/io/iter_image_recordio.cc):
    the same batches, but its normalisation rounds twice, ``(pixel - mean) * scale / std``
    (ImageRecordIter multiplies by ``scale / std``: the two differ in the last bit), and
    its data is float32 only (MXNet fails at the first batch for another `dtype`)."""

    def __init__(self, path_imgrec: str, data_shape: Sequence[int], batch_size: int,
                 dtype: Any = None, **kwargs: Any) -> None:
        _check_v1_dtype(type(self).__name__, dtype, np.float32)
        super().__init__(path_imgrec, data_shape, batch_size, **kwargs)

    @staticmethod
    def _factors(scale: np.float32, std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full_like(std, scale), std


class ImageRecordUInt8Iter_v1(ImageRecordIter):  # noqa: N801  (MXNet's name)
    """MXNet 1.9.1's deprecated first uint8 iterator: the decoded, resized and cropped
    pixels, never mirrored (its pipeline has no normalising step, which is where the v1
    iterators mirror: `mirror` and `rand_mirror` are ignored), and no `dtype` (MXNet
    fails at the first batch when one is given, uint8 included)."""

    def __init__(self, path_imgrec: str, data_shape: Sequence[int], batch_size: int,
                 dtype: Any = None, **kwargs: Any) -> None:
        _check_v1_dtype(type(self).__name__, dtype, None)
        kwargs.pop("mirror", None)
        kwargs.pop("rand_mirror", None)
        super().__init__(path_imgrec, data_shape, batch_size, dtype="uint8", **kwargs)


def _check_v1_dtype(what: str, dtype: Any, allowed: Any) -> None:
    """Refuse a `dtype` other than `allowed` (None: refuse any), which MXNet's v1
    iterators accept and then fail on at the first batch ("data type do not match")."""
    if dtype is None or (allowed is not None and as_dtype(dtype) == allowed):
        return
    takes = "no dtype" if allowed is None else f"dtype {as_dtype(allowed).name} only"
    raise DTypeError(f"{what}: dtype={dtype!r}: MXNet 1.9.1's legacy iterator takes {takes} "
                     "(it fails at the first batch otherwise); use ImageRecordIter(dtype=...)")
