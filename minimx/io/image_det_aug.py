"""The image and label steps of `ImageDetRecordIter`, as MXNet 1.9.1's default detection
augmenter (src/io/image_det_aug_default.cc) takes them, in its order: resize the shorter
side, mirror, pad, crop, then fit the result to the data shape.

Images are OpenCV's layout (height x width [x channels], BGR, uint8). A label is the
record's raw detection label, `[header_width, object_width, header extras...,
objects...]`, each object `[class, xmin, ymin, xmax, ymax, extras...]` normalised;
boxes are float32 as MXNet's. Random draws come from a numpy generator (MXNet's come
from a std::mt19937 per decoding thread, so only their distribution is matched).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import OperatorError, ShapeError
from ..formats.image_resize import AREA, CUBIC, LINEAR, resize

F32 = np.float32
RESIZE_MODES = ("force", "shrink", "fit")
EMIT_MODES = ("center", "overlap")
CROP_PARAMS = ("min_crop_scales", "max_crop_scales", "min_crop_aspect_ratios",
               "max_crop_aspect_ratios", "min_crop_overlaps", "max_crop_overlaps",
               "min_crop_sample_coverages", "max_crop_sample_coverages",
               "min_crop_object_coverages", "max_crop_object_coverages", "max_crop_trials")
Box = tuple[np.float32, np.float32, np.float32, np.float32]   # cv::Rect_<float>: x, y, w, h


class DetLabel:
    """A raw detection label split into its header and its non-empty boxes (rows)."""

    def __init__(self, raw: np.ndarray, what: str) -> None:
        raw = np.asarray(raw, F32).ravel()
        header_width = int(raw[0]) if raw.size else 0
        width = int(raw[1]) if raw.size > 1 else 0
        if raw.size < 7 or header_width < 2 or width < 5 or header_width > raw.size \
                or (raw.size - header_width) % width:
            raise ShapeError(f"{what}: a detection label is [header width >= 2, object width "
                             f">= 5, ..., objects] with at least one object; got "
                             f"{raw.tolist()}")
        self.header = raw[:header_width]
        objects = raw[header_width:].reshape(-1, width)
        self.objects = objects[(objects[:, 3] > objects[:, 1]) & (objects[:, 4] > objects[:, 2])]

    def to_array(self) -> np.ndarray:
        return np.concatenate([self.header, self.objects.ravel()])

    def project(self, box: Box, rows: np.ndarray | None = None) -> np.ndarray:
        """The boxes of `rows` (default all) in the coordinates of `box`, clipped to it."""
        out = (self.objects if rows is None else self.objects[rows]).copy()
        x, y, w, h = box
        out[:, 1] = np.maximum(F32(0), (out[:, 1] - x) / w)
        out[:, 2] = np.maximum(F32(0), (out[:, 2] - y) / h)
        out[:, 3] = np.minimum(F32(1), (out[:, 3] - x) / w)
        out[:, 4] = np.minimum(F32(1), (out[:, 4] - y) / h)
        return out

    def mirror(self) -> None:
        left = F32(1) - self.objects[:, 3]
        self.objects[:, 3] = F32(1) - self.objects[:, 1]
        self.objects[:, 1] = left


def _cut_areas(box: Box, boxes: np.ndarray) -> np.ndarray:
    """Areas of `box` & each of `boxes` (x, y, w, h columns), as cv::Rect_'s `&`."""
    x, y, w, h = box
    x1, y1 = np.maximum(x, boxes[:, 0]), np.maximum(y, boxes[:, 1])
    cut_w = np.minimum(x + w, boxes[:, 0] + boxes[:, 2]) - x1
    cut_h = np.minimum(y + h, boxes[:, 1] + boxes[:, 3]) - y1
    return np.where((cut_w > 0) & (cut_h > 0), cut_w * cut_h, F32(0))


@dataclass
class CropSampler:
    """One crop sampler's constraints (MXNet's min/max_crop_* parameters)."""
    scales: tuple[float, float]
    aspect_ratios: tuple[float, float]
    overlaps: tuple[float, float]
    sample_coverages: tuple[float, float]
    object_coverages: tuple[float, float]
    trials: int

    def box(self, rng: np.random.Generator, img_aspect: np.float32) -> Box:
        """A random crop box in normalised coordinates (MXNet's GenerateCropBox, whose
        upper ratio bound `1 / scale * scale` is 1)."""
        scale = F32(rng.uniform(*self.scales)) + F32(1e-12)
        low = max(F32(self.aspect_ratios[0]) / img_aspect, scale * scale)
        high = min(F32(self.aspect_ratios[1]) / img_aspect, F32(1.0 / scale * scale))
        ratio = np.sqrt(F32(rng.uniform(low, high)))
        w, h = min(F32(1), scale * ratio), min(F32(1), scale / ratio)
        return F32(rng.uniform(0, 1 - w)), F32(rng.uniform(0, 1 - h)), w, h

    def accepts(self, box: Box, label: DetLabel) -> bool:
        """MXNet's test: only when every bound is strict does some box have to meet
        them all; otherwise any crop passes."""
        bounds = (self.overlaps, self.sample_coverages, self.object_coverages)
        if not all(low > 0 and high < 1 for low, high in bounds):
            return True
        gt = np.stack([label.objects[:, 1], label.objects[:, 2],
                       label.objects[:, 3] - label.objects[:, 1],
                       label.objects[:, 4] - label.objects[:, 2]], 1)
        cut = _cut_areas(box, gt)
        gt_area, box_area = gt[:, 2] * gt[:, 3], box[2] * box[3]
        iou = np.where(cut > 0, cut / (box_area + gt_area - cut), F32(0))
        ok = np.ones(len(gt), bool)
        for (low, high), value in zip(bounds, (iou, cut / box_area, cut / gt_area), strict=True):
            ok &= (value >= F32(low)) & (value <= F32(high))
        return bool(ok.any())


def crop_samplers(params: dict[str, tuple], count: int) -> list[CropSampler]:
    """`count` samplers from MXNet's crop tuples (one value serves them all)."""
    columns = {}
    for name in CROP_PARAMS:
        values = tuple(params[name])
        if len(values) not in (1, count) or (count == 1 and len(values) != 1):
            raise OperatorError(f"ImageDetRecordIter: {name} has {len(values)} values for "
                                f"num_crop_sampler={count}")
        columns[name] = values * count if len(values) == 1 else values
    samplers = []
    for i in range(count):
        pair = {name: columns[name][i] for name in CROP_PARAMS}
        sampler = CropSampler(
            (pair["min_crop_scales"], pair["max_crop_scales"]),
            (pair["min_crop_aspect_ratios"], pair["max_crop_aspect_ratios"]),
            (pair["min_crop_overlaps"], pair["max_crop_overlaps"]),
            (pair["min_crop_sample_coverages"], pair["max_crop_sample_coverages"]),
            (pair["min_crop_object_coverages"], pair["max_crop_object_coverages"]),
            int(pair["max_crop_trials"]))
        if not (0 <= sampler.scales[0] < sampler.scales[1] <= 1
                and 0 <= sampler.aspect_ratios[0] <= sampler.aspect_ratios[1]
                and all(lo <= hi for lo, hi in (sampler.overlaps, sampler.sample_coverages,
                                                  sampler.object_coverages))):
            raise OperatorError(f"ImageDetRecordIter: crop sampler {i} has invalid ranges "
                                f"{sampler}")
        samplers.append(sampler)
    return samplers


def inter_method(code: int, old: tuple[int, int], new: tuple[int, int],
                 rng: np.random.Generator) -> int:
    """MXNet's GetInterMethod: 9 picks by the sizes ((width, height) old and new), 10 at
    random, else the code."""
    if code == 9:
        if new[0] > old[0] and new[1] > old[1]:
            return CUBIC
        return AREA if new[0] < old[0] and new[1] < old[1] else LINEAR
    return int(rng.integers(0, 5)) if code == 10 else code


def pad(img: np.ndarray, label: DetLabel, max_scale: float, fill: int,
        rng: np.random.Generator) -> np.ndarray:
    """`img` on a canvas up to `max_scale` times its size (unchanged below 1.05 times),
    the boxes moved with it."""
    scale = F32(rng.uniform(1, max_scale))
    if scale < F32(1.05):
        return img
    x0, y0 = F32(rng.uniform(0, scale - 1)), F32(rng.uniform(0, scale - 1))
    label.objects = label.project((-x0, -y0, scale, scale))
    rows, cols = img.shape[:2]
    top, left = int(y0 * rows), int(x0 * cols)
    bottom, right = int((scale - y0 - 1) * rows), int((scale - x0 - 1) * cols)
    widths = ((top, bottom), (left, right)) + ((0, 0),) * (img.ndim - 2)
    out = np.pad(img, widths)
    canvas = np.pad(np.zeros(img.shape[:2], bool), widths[:2], constant_values=True)
    channels = 1 if img.ndim == 2 else img.shape[2]
    out[canvas] = np.array([fill, fill, fill, 0][:channels] if channels > 1 else [fill],
                           img.dtype).squeeze()
    return out


def crop(img: np.ndarray, label: DetLabel, samplers: list[CropSampler], emit_mode: str,
         emit_thresh: float, rng: np.random.Generator, what: str) -> np.ndarray:
    """A crop from the first sampler (in random order) whose box passes within its
    trials, the boxes emitted by `emit_mode` and projected; `img` if none passes."""
    rows, cols = img.shape[:2]
    for index in rng.permutation(len(samplers)):
        sampler = samplers[index]
        for _ in range(sampler.trials):
            box = sampler.box(rng, F32(cols) / F32(rows))
            if _try_crop(label, box, sampler, emit_mode, emit_thresh):
                left, top = int(box[0] * cols), int(box[1] * rows)
                width, height = int(box[2] * cols), int(box[3] * rows)
                if width < 1 or height < 1:
                    raise ShapeError(f"{what}: the crop box {box} of a {cols}x{rows} image "
                                     f"holds no pixel")
                return img[top:top + height, left:left + width]
    return img


def _try_crop(label: DetLabel, box: Box, sampler: CropSampler, emit_mode: str,
              emit_thresh: float) -> bool:
    """Whether `box` passes; if so, the boxes it keeps replace the label's."""
    if len(label.objects) == 0:
        return True
    if not sampler.accepts(box, label):
        return False
    obj = label.objects
    if emit_mode == "center":
        cx, cy = (obj[:, 1] + obj[:, 3]) * F32(0.5), (obj[:, 2] + obj[:, 4]) * F32(0.5)
        keep = (box[0] <= cx) & (cx < box[0] + box[2]) & (box[1] <= cy) & (cy < box[1] + box[3])
    else:
        gt = np.stack([obj[:, 1], obj[:, 2], obj[:, 3] - obj[:, 1], obj[:, 4] - obj[:, 2]], 1)
        keep = _cut_areas(box, gt) / (gt[:, 2] * gt[:, 3]) > F32(emit_thresh)
    if not keep.any():
        return False
    label.objects = label.project(box, keep)
    return True


def fit(img: np.ndarray, mode: str, height: int, width: int, code: int,
        rng: np.random.Generator) -> np.ndarray:
    """The image sized for a `height` x `width` data shape: `force` to it, `shrink`
    only when larger (keeping the aspect), `fit` to touch it (keeping the aspect)."""
    rows, cols = img.shape[:2]
    if mode == "force":
        new_h, new_w = height, width
    else:
        if mode == "shrink" and rows <= height and cols <= width:
            return img
        ratio = min(F32(height) / F32(rows), F32(width) / F32(cols))
        new_h, new_w = int(ratio * F32(rows)), int(ratio * F32(cols))
    return resize(img, new_w, new_h, inter_method(code, (cols, rows), (new_w, new_h), rng))
