"""MXNet 1.9.1's detection augmenters (`mx.image.DetAugmenter` and its subclasses),
`CreateMultiRandCropAugmenter` and `CreateDetAugmenter`.

A detection augmenter is called on an image (height x width x channels NDArray) and its
label, a numpy array with one row per object, `[class, xmin, ymin, xmax, ymax, ...]`,
the corners normalised to [0, 1] by the image's width and height; it returns both,
augmented alike. Random choices use Python's `random` module, in MXNet's order, so a
seeded `random` gives MXNet's crops, pads and flips.
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..base import MinimxError, warn_user
from ..ndarray import NDArray
from .augmenters import (
    Augmenter,
    CastAug,
    ForceResizeAug,
    ResizeAug,
    color_augmenters,
    normalize_augmenter,
    plain_kwargs,
)
from .image import copyMakeBorder, fixed_crop


class DetAugmenter:
    """The base class: keeps its arguments for `dumps`; subclasses give `__call__`."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = plain_kwargs(kwargs)

    def dumps(self) -> Any:
        """The augmenter as JSON: `[class name in lower case, its arguments]`."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        raise NotImplementedError(f"{type(self).__name__} must define __call__")


class DetBorrowAug(DetAugmenter):
    """A classification `Augmenter` that leaves the label alone (resizes, colours)."""

    def __init__(self, augmenter: Augmenter) -> None:
        if not isinstance(augmenter, Augmenter):
            raise MinimxError(f"DetBorrowAug: expected an mx.image.Augmenter, got "
                              f"{type(augmenter).__name__}")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self) -> Any:
        """`[name, the borrowed augmenter's dumps()]` (a list, as MXNet's)."""
        return [type(self).__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """One of `aug_list`, picked at random, or none with probability `skip_prob` (always
    none for an empty list)."""

    def __init__(self, aug_list: DetAugmenter | Sequence[DetAugmenter],
                 skip_prob: float = 0) -> None:
        super().__init__(skip_prob=skip_prob)
        augs: list[Any] = list(aug_list) if isinstance(aug_list, (list, tuple)) else [aug_list]
        for aug in augs:
            if not isinstance(aug, DetAugmenter):
                raise MinimxError(f"DetRandomSelectAug: aug_list holds a "
                                  f"{type(aug).__name__}, not a DetAugmenter")
        self.aug_list: list[DetAugmenter] = augs
        self.skip_prob = skip_prob if augs else 1

    def dumps(self) -> Any:
        """`[name, [each augmenter's dumps()]]` (a list, as MXNet's)."""
        return [type(self).__name__.lower(), [aug.dumps() for aug in self.aug_list]]

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)   # MXNet's pick: the first after a shuffle
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Mirror the image and its boxes left to right with probability `p` (the label in
    place, as MXNet's)."""

    def __init__(self, p: float) -> None:
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            left = 1.0 - label[:, 3]
            label[:, 3] = 1.0 - label[:, 1]
            label[:, 1] = left
        return src, label


def _as_range(value: Any, what: str, name: str) -> tuple[float, float]:
    """A (low, high) range: a number means the range of that one value."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise MinimxError(f"{what}: {name} must be a number or (low, high), got {value!r}")
        return float(value[0]), float(value[1])
    if not isinstance(value, (int, float)):
        raise MinimxError(f"{what}: {name} must be a number or (low, high), got {value!r}")
    return float(value), float(value)


def _areas(boxes: np.ndarray) -> np.ndarray:
    """Areas of `[xmin, ymin, xmax, ymax]` rows, 0 for empty boxes."""
    return np.maximum(0, boxes[:, 3] - boxes[:, 1]) * np.maximum(0, boxes[:, 2] - boxes[:, 0])


def _intersect(boxes: np.ndarray, xmin: float, ymin: float, xmax: float,
               ymax: float) -> np.ndarray:
    """The boxes cut to the window, all-zero rows where nothing is left."""
    out = boxes.copy()
    out[:, 0] = np.maximum(boxes[:, 0], xmin)
    out[:, 1] = np.maximum(boxes[:, 1], ymin)
    out[:, 2] = np.minimum(boxes[:, 2], xmax)
    out[:, 3] = np.minimum(boxes[:, 3], ymax)
    out[(out[:, 0] >= out[:, 2]) | (out[:, 1] >= out[:, 3])] = 0
    return out


class _WindowAug(DetAugmenter):
    """A crop or pad proposed in up to `max_attempts` tries within `area_range` (of the
    image's area) and `aspect_ratio_range` (width / height); disabled, with a warning,
    when a range is empty or the largest area is not above `area_floor`."""

    def __init__(self, area_floor: float, **kwargs: Any) -> None:
        what = type(self).__name__
        for name in ("aspect_ratio_range", "area_range"):
            kwargs[name] = _as_range(kwargs[name], what, name)
        super().__init__(**kwargs)
        self.aspect_ratio_range: tuple[float, float] = kwargs["aspect_ratio_range"]
        self.area_range: tuple[float, float] = kwargs["area_range"]
        self.max_attempts: int = kwargs["max_attempts"]
        area, aspect = self.area_range, self.aspect_ratio_range
        self.enabled = False
        if area[1] <= area_floor or area[0] > area[1]:
            warn_user(f"{what} skipped: invalid area_range {area}")
        elif aspect[0] <= 0 or aspect[0] > aspect[1]:
            warn_user(f"{what} skipped: invalid aspect_ratio_range {aspect}")
        else:
            self.enabled = True

    def _attempts(self, height: int, width: int) -> Iterator[tuple[float, int, int]]:
        """Per attempt (none when disabled): a random aspect ratio and the heights of
        the least and the most area at that ratio."""
        if not self.enabled or height <= 0 or width <= 0:
            return
        min_area, max_area = (a * height * width for a in self.area_range)
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio > 0:
                yield (ratio, int(round(math.sqrt(min_area / ratio))),
                       int(round(math.sqrt(max_area / ratio))))


class DetRandomCropAug(_WindowAug):
    """A random crop (up to `max_attempts` proposals; else none) of `area_range` of the
    image (a fraction) and `aspect_ratio_range` (width / height), accepted when every
    box it touches keeps more than `min_object_covered` of its area; boxes keeping
    `min_eject_coverage` or less are dropped. Invalid ranges disable it, with a warning."""

    def __init__(self, min_object_covered: float = 0.1,
                 aspect_ratio_range: Any = (0.75, 1.33), area_range: Any = (0.05, 1.0),
                 min_eject_coverage: float = 0.3, max_attempts: int = 50) -> None:
        super().__init__(0.0, min_object_covered=min_object_covered,
                         aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _random_crop_proposal(self, label: np.ndarray, height: int, width: int) -> tuple:
        """(x, y, w, h, new label) of an accepted crop, or () - MXNet's draws and
        rounding, step for step."""
        min_area, max_area = (a * height * width for a in self.area_range)
        for ratio, h, max_h in self._attempts(height, width):
            if round(max_h * ratio) > width:   # the largest max_h whose width fits
                max_h = int((width + 0.4999999) / ratio)
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if w * h < min_area:   # rounding took it out of range: one step back in
                h += 1
                w = int(round(h * ratio))
            if w * h > max_area:
                h -= 1
                w = int(round(h * ratio))
            if not (min_area <= w * h <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._satisfies(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return x, y, w, h, new_label
        return ()

    def _satisfies(self, label: np.ndarray, xmin: int, ymin: int, xmax: int, ymax: int,
                   width: int, height: int) -> bool:
        """Whether the crop holds more than one pixel and every box of more than two
        pixels that it touches keeps more than `min_object_covered` of its area."""
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        areas = _areas(label[:, 1:])
        valid = np.where(areas * width * height > 2)[0]
        if valid.size < 1:
            return False
        cut = _intersect(label[valid, 1:], xmin / width, ymin / height, xmax / width,
                         ymax / height)
        coverages = _areas(cut) / areas[valid]
        coverages = coverages[coverages > 0]
        return bool(coverages.size > 0 and np.amin(coverages) > self.min_object_covered)

    def _update_labels(self, label: np.ndarray, crop_box: tuple[int, int, int, int],
                       height: int, width: int) -> np.ndarray | None:
        """The boxes in the crop's coordinates, clipped to it; those left with
        `min_eject_coverage` or less of their area dropped (None if none is left)."""
        xmin, ymin = crop_box[0] / width, crop_box[1] / height
        w, h = crop_box[2] / width, crop_box[3] / height
        out = label.copy()
        out[:, (1, 3)] -= xmin
        out[:, (2, 4)] -= ymin
        out[:, (1, 3)] /= w
        out[:, (2, 4)] /= h
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        with np.errstate(divide="ignore", invalid="ignore"):   # empty boxes: dropped below
            coverage = _areas(out[:, 1:]) * w * h / _areas(label[:, 1:])
        valid = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2])
        valid &= coverage > self.min_eject_coverage
        return out[valid] if valid.any() else None


class DetRandomPadAug(_WindowAug):
    """Place the image at a random spot of a larger canvas (up to `max_attempts`
    proposals; else unchanged) of `area_range` times its area and `aspect_ratio_range`
    (width / height), filled with `pad_val` per channel. Invalid ranges disable it,
    with a warning."""

    def __init__(self, aspect_ratio_range: Any = (0.75, 1.33), area_range: Any = (1.0, 3.0),
                 max_attempts: int = 50, pad_val: Any = (128, 128, 128)) -> None:
        if not isinstance(pad_val, (list, tuple, int, float)):
            raise MinimxError(f"DetRandomPadAug: pad_val must be a number or one per "
                              f"channel, got {pad_val!r}")
        super().__init__(1.0, aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.pad_val = pad_val

    def __call__(self, src: NDArray, label: np.ndarray) -> tuple[NDArray, np.ndarray]:
        height, width, _ = src.shape
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            fill = self.pad_val
            values = tuple(fill) if isinstance(fill, (list, tuple)) else (fill,) * 3
            src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, values=values)
        return src, label

    def _random_pad_proposal(self, label: np.ndarray, height: int, width: int) -> tuple:
        """(x, y, w, h, new label): the image's place on the canvas and the canvas
        size, or () - MXNet's draws and rounding, step for step."""
        for ratio, h, max_h in self._attempts(height, width):
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)
            h = min(max(h, height), max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if h - height < 2 or w - width < 2:
                continue   # marginal padding does not help
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            out = label.copy()
            out[:, (1, 3)] = (out[:, (1, 3)] * width + x) / w
            out[:, (2, 4)] = (out[:, (2, 4)] * height + y) / h
            return x, y, w, h, out
        return ()


def _aligned(params: list[Any]) -> list[list[Any]]:
    """Per-augmenter values: lists stay, single values are repeated to the longest
    list's length."""
    lists = [p if isinstance(p, list) else [p] for p in params]
    count = max(len(p) for p in lists)
    for p in lists:
        if len(p) not in (1, count):
            raise MinimxError(f"CreateMultiRandCropAugmenter: parameter lists must have "
                              f"one value or {count}, got {p!r}")
    return [p * count if len(p) == 1 else p for p in lists]


def CreateMultiRandCropAugmenter(min_object_covered: Any = 0.1,  # noqa: N802
                                 aspect_ratio_range: Any = (0.75, 1.33),
                                 area_range: Any = (0.05, 1.0), min_eject_coverage: Any = 0.3,
                                 max_attempts: Any = 50,
                                 skip_prob: float = 0) -> DetRandomSelectAug:
    """A `DetRandomSelectAug` of `DetRandomCropAug`s, one per value of the arguments
    given as lists (a single value serves them all).

    >>> import minimx as mx
    >>> aug = mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5])
    >>> len(aug.aug_list)
    2
    """
    columns = _aligned([min_object_covered, aspect_ratio_range, area_range,
                        min_eject_coverage, max_attempts])
    augs: list[DetAugmenter] = [
        DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                         min_eject_coverage=mec, max_attempts=ma)
        for moc, arr, ar, mec, ma in zip(*columns, strict=True)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def CreateDetAugmenter(data_shape: Sequence[int], resize: int = 0,  # noqa: N802
                       rand_crop: float = 0, rand_pad: float = 0, rand_gray: float = 0,
                       rand_mirror: bool = False, mean: Any = None, std: Any = None,
                       brightness: float = 0, contrast: float = 0, saturation: float = 0,
                       pca_noise: float = 0, hue: float = 0, inter_method: int = 2,
                       min_object_covered: Any = 0.1, aspect_ratio_range: Any = (0.75, 1.33),
                       area_range: Any = (0.05, 3.0), min_eject_coverage: Any = 0.3,
                       max_attempts: Any = 50,
                       pad_val: Any = (127, 127, 127)) -> list[DetAugmenter]:
    """MXNet's detection augmenter list for `data_shape` (channels, height, width):
    resize the shorter side to `resize` (if > 0), crop at random with probability
    `rand_crop` (`CreateMultiRandCropAugmenter`), mirror by a coin (`rand_mirror`), pad
    at random with probability `rand_pad` (up to `area_range[1]` times the area), force
    the size to the data's, cast to float32, jitter colours and normalise (`mean` /
    `std`: per-channel values, or True for ImageNet's).

    >>> import minimx as mx
    >>> [aug.dumps()[0] for aug in mx.image.CreateDetAugmenter((3, 300, 300), mean=True)]
    ['detborrowaug', 'detborrowaug', 'detborrowaug']
    """
    auglist: list[DetAugmenter] = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range,
                                                    area_range, min_eject_coverage,
                                                    max_attempts, skip_prob=1 - rand_crop))
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:   # as late as possible: the canvas costs time
        pad_aug = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts,
                                  pad_val)
        auglist.append(DetRandomSelectAug([pad_aug], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    auglist += [DetBorrowAug(aug) for aug in
                color_augmenters(brightness, contrast, saturation, hue, pca_noise, rand_gray)]
    normalize = normalize_augmenter(mean, std, "CreateDetAugmenter")
    if normalize is not None:
        auglist.append(DetBorrowAug(normalize))
    return auglist
