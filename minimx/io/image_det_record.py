"""`ImageDetRecordIter`: batches of images and object labels from a RecordIO file of image
records with detection labels (MXNet's im2rec with `--pack-label`), as MXNet 1.9.1's C++
iterator (src/io/iter_image_det_recordio.cc, the default detection augmenter and
ImageDetNormalizeIter).

Each record's image is decoded, augmented with its label (image_det_aug.py: resize,
mirror, pad, crop, fit to `data_shape` by `resize_mode`), placed at the top left of a
zero `data_shape` array in RGB planes, and normalised: `(pixel - mean) / std * scale`
per channel (a mean is subtracted only when some mean is positive, a std divides only
when positive, as MXNet's). Its label row is `[channels, rows, cols, n, label...,
label_pad_value...]`: the augmented image's size, then the n numbers of the augmented
raw label (header and kept objects), padded to `label_pad_width + 4`. Batches, pads and
epochs are those of `ImageRecordIter` (`round_batch`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import DataFileError, OperatorError, ShapeError, as_dtype
from ..formats.image_codec import imdecode
from ..formats.image_resize import resize
from . import image_det_aug as det
from .image_aug import short_side_size
from .image_record import _DECODE_FLAG, _IGNORED, RecordBatcher
from .protocol import DataDesc

_COLOR_PROBS = ("random_hue_prob", "random_saturation_prob", "random_illumination_prob",
                "random_contrast_prob")
_IGNORED_HERE = _IGNORED | {"max_random_hue", "max_random_saturation", "aug_seq",
                            "max_random_illumination", "max_random_contrast"}
_CROP_DEFAULTS: dict[str, tuple] = {
    "min_crop_scales": (0.0,), "max_crop_scales": (1.0,), "min_crop_aspect_ratios": (1.0,),
    "max_crop_aspect_ratios": (1.0,), "min_crop_overlaps": (0.0,), "max_crop_overlaps": (1.0,),
    "min_crop_sample_coverages": (0.0,), "max_crop_sample_coverages": (1.0,),
    "min_crop_object_coverages": (0.0,), "max_crop_object_coverages": (1.0,),
    "max_crop_trials": (25,)}


def _read_label_list(path: str, label_width: int) -> dict[int, np.ndarray]:
    """MXNet's detection image list: per line an image index, its labels (`label_width`
    of them, or all but the last field, the path, for -1), whitespace-separated."""
    labels = {}
    try:
        with open(path) as fin:
            for number, line in enumerate(fin, 1):
                fields = line.split()
                values = fields[1:1 + label_width] if label_width > 0 else fields[1:-1]
                if not fields or not values or len(values) < label_width:
                    raise DataFileError(f"ImageDetRecordIter: {path}:{number}: bad image list "
                                        f"line {line.strip()!r}")
                labels[int(float(fields[0]))] = np.array(values, np.float32)
    except OSError as exc:
        raise DataFileError(f"ImageDetRecordIter: cannot read {path!r} ({exc.strerror})") from None
    return labels


def _tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


class ImageDetRecordIter(RecordBatcher):
    """Batches of `data_shape` (channels, height, width) images and their padded detection
    labels from the image records of `path_imgrec`.

    As MXNet's SSD example calls it (a file of theirs, so not a doctest)::

        it = mx.io.ImageDetRecordIter(path_imgrec="train.rec", data_shape=(3, 300, 300),
                                      batch_size=32, label_pad_width=350, rand_mirror_prob=0.5,
                                      rand_crop_prob=0.8, rand_pad_prob=0.5, max_pad_scale=4,
                                      mean_r=123, mean_g=117, mean_b=104)
    """

    def __init__(self, path_imgrec: str, data_shape: Sequence[int], batch_size: int,
                 path_imgidx: str = "", path_imglist: str = "", label_width: int = -1,
                 label_pad_width: int = 0, label_pad_value: float = -1.0,
                 shuffle: bool = False, seed: int = 0, round_batch: bool = True,
                 resize: int = -1, resize_mode: str = "force", inter_method: int = 1,
                 rand_mirror_prob: float = 0.0, rand_pad_prob: float = 0.0,
                 max_pad_scale: float = 1.0, fill_value: int = 127,
                 rand_crop_prob: float = 0.0, num_crop_sampler: int = 1,
                 crop_emit_mode: str = "center", emit_overlap_thresh: float = 0.3,
                 mean_r: float = 0.0, mean_g: float = 0.0, mean_b: float = 0.0,
                 mean_a: float = 0.0, std_r: float = 0.0, std_g: float = 0.0,
                 std_b: float = 0.0, std_a: float = 0.0, scale: float = 1.0,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: Any = None, **kwargs: Any) -> None:
        crop_params = {name: _tuple(kwargs.pop(name, default))
                       for name, default in _CROP_DEFAULTS.items()}
        self._check_options(kwargs, data_shape, dtype, resize, resize_mode, inter_method,
                            crop_emit_mode)
        super().__init__(path_imgrec, path_imgidx, batch_size, shuffle, seed, round_batch,
                         "ImageDetRecordIter")
        self.data_shape = (int(data_shape[0]), int(data_shape[1]), int(data_shape[2]))
        self.dtype = np.dtype(np.float32)
        self.resize, self.resize_mode, self.inter_method = resize, resize_mode, inter_method
        self.rand_mirror_prob, self.rand_crop_prob = rand_mirror_prob, rand_crop_prob
        self.rand_pad_prob, self.max_pad_scale = rand_pad_prob, max_pad_scale
        self.fill_value = fill_value
        self.crop_emit_mode, self.emit_overlap_thresh = crop_emit_mode, emit_overlap_thresh
        self._samplers = (det.crop_samplers(crop_params, num_crop_sampler)
                          if num_crop_sampler > 0 else [])
        self.label_width = label_width
        self._label_map = _read_label_list(path_imglist, label_width) if path_imglist else None
        widest = self._widest_label()
        if 0 < label_pad_width < widest:
            raise ShapeError(f"ImageDetRecordIter: label_pad_width={label_pad_width} is "
                             f"smaller than the widest label ({widest})")
        self.label_pad_width = max(label_pad_width, widest)
        self.label_pad_value = label_pad_value
        self.label_size = self.label_pad_width + 4
        channels = self.data_shape[0]   # one channel takes the r values
        means = np.array([mean_r, mean_g, mean_b, mean_a], np.float32)
        self._mean = means[:channels] if (means > 0).any() else np.zeros(channels, np.float32)
        self._std = np.array([std_r, std_g, std_b, std_a], np.float32)[:channels]
        self._scale = np.float32(scale)
        self.provide_data = [DataDesc(data_name, (self.batch_size, *self.data_shape))]
        self.provide_label = [DataDesc(label_name, (self.batch_size, self.label_size))]

    @staticmethod
    def _check_options(kwargs: dict[str, Any], data_shape: Sequence[int], dtype: Any,
                       resize: int, resize_mode: str, inter_method: int,
                       crop_emit_mode: str) -> None:
        """OperatorError / ShapeError for what MXNet refuses or minimx does not do."""
        colour = [name for name in _COLOR_PROBS if kwargs.get(name, 0) > 0]
        unknown = sorted(set(kwargs) - _IGNORED_HERE - set(_COLOR_PROBS))
        if colour or unknown or kwargs.get("aug_seq", "det_aug_default") != "det_aug_default":
            raise OperatorError(f"ImageDetRecordIter: {', '.join(colour + unknown) or 'aug_seq'}"
                                f" not supported (minimx has resize, mirror, pad, crop and "
                                f"mean/std/scale)")
        if len(data_shape) != 3 or data_shape[0] not in _DECODE_FLAG or min(data_shape) <= 0:
            raise ShapeError(f"ImageDetRecordIter: data_shape must be (channels, height, "
                             f"width) with 1, 3 or 4 channels, got {tuple(data_shape)}")
        if dtype is not None and as_dtype(dtype) != np.float32:
            raise OperatorError(f"ImageDetRecordIter: only float32 data, got dtype={dtype}")
        if resize != -1 and resize <= 0:
            raise OperatorError(f"ImageDetRecordIter: resize must be positive or -1, got {resize}")
        if resize_mode not in det.RESIZE_MODES or crop_emit_mode not in det.EMIT_MODES:
            raise OperatorError(f"ImageDetRecordIter: resize_mode must be one of "
                                f"{det.RESIZE_MODES} and crop_emit_mode one of "
                                f"{det.EMIT_MODES}, got {resize_mode!r}, {crop_emit_mode!r}")
        if inter_method not in (1, 2, 3, 4, 9, 10):
            raise OperatorError(f"ImageDetRecordIter: invalid inter_method {inter_method} "
                                f"(1-4, 9 or 10)")

    def _raw_label(self, header: Any, what: str) -> np.ndarray:
        """The record's raw label: from the image list by its id, else its header's."""
        if self._label_map is not None:
            if int(header.id) not in self._label_map:
                raise DataFileError(f"{what}: image {header.id} is not in the image list")
            return self._label_map[int(header.id)]
        if header.flag <= 0:
            raise ShapeError(f"{what}: the record holds no label array (flag 0)")
        label = np.atleast_1d(np.asarray(header.label, np.float32))
        if self.label_width > 0 and label.size != self.label_width:
            raise ShapeError(f"{what}: the record has {label.size} labels but label_width "
                             f"is {self.label_width}")
        return label

    def _widest_label(self) -> int:
        """The most numbers any record's raw label has."""
        if self._label_map is not None:
            return max((len(v) for v in self._label_map.values()), default=0)
        widest = 0
        for index in range(len(self._offsets)):
            header, _, what = self._record(index)
            widest = max(widest, self._raw_label(header, what).size)
        return widest

    def _example(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        header, payload, what = self._record(index)
        label = det.DetLabel(self._raw_label(header, what), what)
        img = imdecode(payload, _DECODE_FLAG[self.data_shape[0]], what)
        channels = 1 if img.ndim == 2 else img.shape[2]
        if channels != self.data_shape[0]:
            raise ShapeError(f"{what}: the image has {channels} channels, data_shape "
                             f"{self.data_shape} asks for {self.data_shape[0]}")
        img = self._augment(img, label, what)
        raw = label.to_array()
        row = np.full(self.label_size, self.label_pad_value, np.float32)
        row[:4] = (channels, img.shape[0], img.shape[1], raw.size)
        row[4:4 + raw.size] = raw
        return self._normalize(img), row

    def _augment(self, img: np.ndarray, label: det.DetLabel, what: str) -> np.ndarray:
        """MXNet's default detection augmenter, step by step (image_det_aug.py)."""
        rng = self._rng
        if self.resize != -1:
            rows, cols = img.shape[:2]
            size = short_side_size(rows, cols, self.resize)
            img = resize(img, *size, det.inter_method(self.inter_method, (cols, rows), size, rng))
        if self.rand_mirror_prob > 0 and rng.random() < self.rand_mirror_prob:
            label.mirror()
            img = img[:, ::-1]
        if self.rand_pad_prob > 0 and self.max_pad_scale > 1 \
                and rng.random() < self.rand_pad_prob:
            img = det.pad(img, label, self.max_pad_scale, self.fill_value, rng)
        if self.rand_crop_prob > 0 and self._samplers and rng.random() < self.rand_crop_prob:
            img = det.crop(img, label, self._samplers, self.crop_emit_mode,
                           self.emit_overlap_thresh, rng, what)
        return det.fit(np.ascontiguousarray(img), self.resize_mode, self.data_shape[1],
                       self.data_shape[2], self.inter_method, rng)

    def _normalize(self, img: np.ndarray) -> np.ndarray:
        """The image at the top left of zero RGB(A) planes, normalised as
        ImageDetNormalizeIter (the means only if one is positive; the positive stds)."""
        planes = img[..., None] if img.ndim == 2 else img
        if planes.shape[2] >= 3:   # OpenCV's BGR(A) -> RGB(A)
            planes = planes[..., [2, 1, 0, 3][:planes.shape[2]]]
        data = np.zeros(self.data_shape, np.float32)
        data[:, :planes.shape[0], :planes.shape[1]] = np.moveaxis(planes, 2, 0)
        data -= self._mean[:, None, None]
        std = np.where(self._std > 0, self._std, np.float32(1))
        return data / std[:, None, None] * self._scale
