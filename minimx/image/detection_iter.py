"""`mx.image.ImageDetIter`: batches of augmented images and their object labels, from a
RecordIO file of image records, an image list or a list in memory, as MXNet 1.9.1's.

A raw label is `[header_width, object_width, header extras..., objects...]`, each object
`object_width` numbers `[class, xmin, ymin, xmax, ymax, extras...]` with normalised
corners (im2rec's detection lists). Parsing drops the header and the empty boxes. A
batch's label is (batch, objects, object_width), each image's objects first and rows of
-1 after; the object count is the largest in the data, found by reading every label
once when the iterator is made. Samples whose label is unusable after augmentation are
skipped, as MXNet's. `draw_next` draws the boxes with Pillow where MXNet used OpenCV.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..base import MinimxError, ShapeError
from ..formats.image_codec import ImageLibraryError, pillow
from ..io import DataDesc
from ..ndarray import NDArray
from .detection import CreateDetAugmenter, DetAugmenter
from .image import imdecode
from .image_iter import ImageIter

# What `draw_next` takes `mean=True` and `std=True` for: ImageNet's RGB statistics on a
# 0-255 scale, the ones CreateDetAugmenter normalises with.
IMAGENET_MEAN = np.array([123.68, 116.28, 103.53])
IMAGENET_STD = np.array([58.395, 57.12, 57.375])


def _statistic(value: Any, default: np.ndarray, what: str) -> np.ndarray | None:
    """`draw_next`'s `mean` or `std`: None, True for ImageNet's, or 1 or 3 numbers."""
    if value is None or value is False:
        return None
    if value is True:
        return default
    out = np.asarray(value, np.float64).ravel()
    if out.size not in (1, 3):
        raise ShapeError(f"ImageDetIter.draw_next: {what} must be True or 1 or 3 numbers, "
                         f"got {out.size}")
    return out


def _check_data_shape(data_shape: Sequence[int]) -> None:
    if len(data_shape) != 3 or data_shape[0] != 3:
        raise ShapeError(f"ImageDetIter: data_shape must be (3, height, width), "
                         f"got {tuple(data_shape)}")


class ImageDetIter(ImageIter):
    """Batches of `data_shape` (3, height, width) images with detection labels, from
    `path_imgrec` (with `path_imgidx` for shuffling and parts) or the files of
    `path_imglist` / `imglist` under `path_root`; augmented by `aug_list` or
    `CreateDetAugmenter(data_shape, **kwargs)`.

    As MXNet's SSD scripts call it (files of theirs, so not a doctest)::

        it = mx.image.ImageDetIter(32, (3, 300, 300), path_imgrec="train.rec",
                                   rand_crop=0.5, rand_pad=0.5, rand_mirror=True, mean=True)
        it.label_shape   # (most objects in an image, object width)
    """

    def __init__(self, batch_size: int, data_shape: Sequence[int],
                 path_imgrec: str | None = None, path_imglist: str | None = None,
                 path_root: str | None = None, path_imgidx: str | None = None,
                 shuffle: bool = False, part_index: int = 0, num_parts: int = 1,
                 aug_list: list[DetAugmenter] | None = None, imglist: list | None = None,
                 data_name: str = "data", label_name: str = "label",
                 last_batch_handle: str = "pad", **kwargs: Any) -> None:
        super().__init__(batch_size, data_shape, path_imgrec=path_imgrec,
                         path_imglist=path_imglist, path_root=path_root,
                         path_imgidx=path_imgidx, shuffle=shuffle, part_index=part_index,
                         num_parts=num_parts, aug_list=[], imglist=imglist,
                         data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.label_shape = self._estimate_label_shape()
        self.provide_label = [DataDesc(label_name, (batch_size, *self.label_shape))]

    def _estimate_label_shape(self) -> tuple[int, int]:
        """(most objects of any image, object width), from every label once."""
        count, width = 0, None
        self.reset()
        try:
            while True:
                label = self._parse_label(self.next_sample()[0])
                count = max(count, label.shape[0])
                width = label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise MinimxError("ImageDetIter: the data holds no image")
        return count, width

    @staticmethod
    def _parse_label(label: Any) -> np.ndarray:
        """The objects of a raw label as rows, empty boxes (xmax <= xmin or ymax <= ymin)
        dropped; ShapeError for a malformed label or one without a box."""
        raw = np.asarray(label.asnumpy() if isinstance(label, NDArray) else label).ravel()
        if raw.size < 7:
            raise ShapeError(f"ImageDetIter: a detection label needs at least 7 numbers "
                             f"(header width, object width, one object), got {raw.size}")
        header_width, obj_width = int(raw[0]), int(raw[1])
        if obj_width < 5 or not 2 <= header_width <= raw.size \
                or (raw.size - header_width) % obj_width:
            raise ShapeError(f"ImageDetIter: label of {raw.size} numbers does not hold a "
                             f"header of {header_width} and objects of {obj_width} (>= 5)")
        out = raw[header_width:].reshape(-1, obj_width)
        out = out[(out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2])]
        if out.shape[0] < 1:
            raise ShapeError("ImageDetIter: a label without a valid box")
        return out

    @staticmethod
    def _check_valid_label(label: np.ndarray) -> None:
        """ShapeError unless (objects, >= 5) with a box of class >= 0."""
        if label.ndim != 2 or label.shape[1] < 5:
            raise ShapeError(f"ImageDetIter: label with shape (1+, 5+) required, got "
                             f"{label.shape}")
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise ShapeError("ImageDetIter: no valid box left after augmentation")

    def augmentation_transform(self, data: NDArray, label: np.ndarray
                               ) -> tuple[NDArray, np.ndarray]:
        """`data` and `label` through every augmenter of `auglist`."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def _example(self, label: Any, buf: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        img = imdecode(buf, what=f"ImageDetIter image {self.cur}")
        try:
            img, objects = self.augmentation_transform(img, self._parse_label(label))
            self._check_valid_label(objects)
        except ShapeError as exc:   # MXNet skips such samples
            logging.debug("ImageDetIter: invalid sample skipped: %s", exc)
            return None
        data = np.transpose(img.asnumpy(), (2, 0, 1))
        if data.shape != self.data_shape:
            raise ShapeError(f"ImageDetIter: an augmented image is {data.shape}, "
                             f"data_shape is {self.data_shape}")
        row = np.full(self.label_shape, -1, np.float32)
        if objects.shape[0] > row.shape[0] or objects.shape[1] != row.shape[1]:
            raise ShapeError(f"ImageDetIter: a label of shape {objects.shape} does not fit "
                             f"label_shape {self.label_shape}")
        row[:objects.shape[0]] = objects
        return data, row

    def _empty_batch(self) -> tuple[np.ndarray, np.ndarray]:
        data, _ = super()._empty_batch()
        return data, np.full(self.provide_label[0].shape, -1, np.float32)

    def reshape(self, data_shape: Sequence[int] | None = None,
                label_shape: Sequence[int] | None = None) -> None:
        """Give batches a new `data_shape` (3, height, width) and/or `label_shape`
        (objects, object width): more objects only, the same width."""
        if data_shape is not None:
            _check_data_shape(data_shape)
            self.data_shape = tuple(int(d) for d in data_shape)
            self.provide_data = [DataDesc(self.provide_data[0].name,
                                          (self.batch_size, *self.data_shape))]
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.label_shape = (int(label_shape[0]), int(label_shape[1]))
            self.provide_label = [DataDesc(self.provide_label[0].name,
                                           (self.batch_size, *self.label_shape))]

    def check_label_shape(self, label_shape: Sequence[int]) -> None:
        """ShapeError unless `label_shape` is (objects, width) with no fewer objects and
        the same width as now."""
        if len(label_shape) != 2:
            raise ShapeError(f"ImageDetIter: label_shape must be (objects, width), "
                             f"got {tuple(label_shape)}")
        if label_shape[0] < self.label_shape[0]:
            raise ShapeError(f"ImageDetIter: label_shape may not reduce the object count "
                             f"from {self.label_shape[0]} to {label_shape[0]}")
        if label_shape[1] != self.label_shape[1]:
            raise ShapeError(f"ImageDetIter: label_shape object width inconsistent: "
                             f"{self.label_shape[1]} vs {label_shape[1]}")

    def draw_next(self, color: Sequence[float] | None = None, thickness: int = 2,
                  mean: Any = None, std: Any = None, clip: bool = True,
                  waitKey: int | None = None, window_name: str = "draw_next",
                  id2labels: dict[int, str] | None = None) -> Iterator[np.ndarray]:
        """The next images, augmented, with their boxes drawn, as MXNet's: each a
        (height, width, 3) uint8 array in BGR order (OpenCV's), until the data ends.

        `color` is the boxes' RGB colour (None: a random one per box, from numpy's global
        generator); `thickness` their lines' width in pixels. `std`, then `mean` (True:
        ImageNet's; or 1 or 3 numbers) undo the augmenters' colour normalisation, and
        `clip` clamps to 0-255 before the cast. With `id2labels` each box whose class it
        names is labelled in white at its top left. With `waitKey` each image is also
        shown in OpenCV's window `window_name` for that many milliseconds (needs the
        opencv-python package; without `waitKey` nothing is shown). Samples whose label
        cannot be parsed are skipped; padding rows (xmin < 0) are not drawn."""
        if thickness < 1:
            raise MinimxError(f"ImageDetIter.draw_next: thickness must be >= 1, got {thickness}")
        std_values = _statistic(std, IMAGENET_STD, "std")
        mean_values = _statistic(mean, IMAGENET_MEAN, "mean")
        show = None if waitKey is None else _opencv_show(window_name, waitKey)
        image_module = pillow()
        from PIL import ImageDraw  # pillow() has checked that Pillow is there
        while True:
            try:
                label, buf = self.next_sample()
            except StopIteration:
                return
            data = imdecode(buf, what=f"ImageDetIter image {self.cur}")
            try:
                objects = self._parse_label(label)
            except ShapeError as exc:   # MXNet skips such samples
                logging.debug("ImageDetIter.draw_next: invalid sample skipped: %s", exc)
                continue
            data, objects = self.augmentation_transform(data, objects)
            pixels = data.asnumpy().astype(np.float64)
            if std_values is not None:
                pixels = pixels * std_values
            if mean_values is not None:
                pixels = pixels + mean_values
            if clip:
                pixels = np.clip(pixels, 0, 255)
            bgr = np.ascontiguousarray(pixels[:, :, ::-1]).astype(np.uint8)
            image = image_module.fromarray(bgr)
            draw = ImageDraw.Draw(image)
            height, width = bgr.shape[:2]
            for row in np.asarray(objects):
                x1 = int(row[1] * width)
                if x1 < 0:
                    continue
                y1, x2, y2 = int(row[2] * height), int(row[3] * width), int(row[4] * height)
                rgb = np.random.rand(3) * 255 if color is None else color
                draw.rectangle([x1, y1, max(x1, x2), max(y1, y2)], width=thickness,
                               outline=tuple(int(c) for c in reversed(list(rgb))))
                name = None if id2labels is None else id2labels.get(int(row[0]))
                if name is not None:
                    draw.text((x1 + 5, y1 + 5), str(name), fill=(255, 255, 255))
            out = np.asarray(image).copy()
            if show is not None:
                show(out)
            yield out

    def sync_label_shape(self, it: ImageDetIter, verbose: bool = False) -> ImageDetIter:
        """Pad this iterator's and `it`'s labels to the larger object count of the two
        (train and validation iterators must agree); returns `it`."""
        if not isinstance(it, ImageDetIter):
            raise MinimxError(f"ImageDetIter.sync_label_shape: expected an ImageDetIter, "
                              f"got {type(it).__name__}")
        if it.label_shape[1] != self.label_shape[1]:
            raise ShapeError(f"ImageDetIter.sync_label_shape: object widths differ: "
                             f"{self.label_shape[1]} vs {it.label_shape[1]}")
        count = max(self.label_shape[0], it.label_shape[0])
        for each in (self, it):
            if count > each.label_shape[0]:
                each.reshape(None, (count, each.label_shape[1]))
        if verbose:
            logging.info("Resized label_shape to (%d, %d).", count, self.label_shape[1])
        return it


def _opencv_show(window_name: str, wait_ms: int):
    """A function showing a BGR image in OpenCV's window `window_name` for `wait_ms`
    milliseconds; ImageLibraryError where OpenCV is missing."""
    try:
        import cv2  # optional: only showing images needs it
    except ImportError:
        raise ImageLibraryError("ImageDetIter.draw_next: showing images (waitKey) needs "
                                "OpenCV: pip install opencv-python, or pass waitKey=None "
                                "and show the arrays it yields yourself") from None

    def show(image: np.ndarray) -> None:
        cv2.imshow(window_name, image)
        cv2.waitKey(wait_ms)
    return show
