"""The ``imagedet`` fixture group of `mxnet_fixtures.py`: what MXNet 1.9.1's detection data
pipeline gives on small synthetic PNG records - `mx.image.imrotate` / `random_rotate`,
the detection augmenters and `CreateDetAugmenter` lists under a seeded `random`,
`mx.image.ImageDetIter` batches (from a .rec, a .lst and a list in memory) and
`mx.io.ImageDetRecordIter` batches without random augmentation.

Runs with MXNet's Python only (never minimx), with Pillow beside MXNet to encode the
images. ``cases.json`` lists each case; ``results.npz`` holds what MXNet returned, keyed
by case name (`<case>:data` / `:label`: the iterators' batches, stacked in order).
"""
from __future__ import annotations

import io
import json
import random
from pathlib import Path

import mxnet as mx
import numpy as np
from PIL import Image

# (rows, cols, objects): objects are [class, xmin, ymin, xmax, ymax]; one box is empty
# (dropped by parsing) and the counts differ, so labels are padded.
SAMPLES = [(10, 12, [[0, 0.1, 0.2, 0.6, 0.7]]),
           (8, 14, [[1, 0.3, 0.1, 0.9, 0.8], [2, 0.05, 0.5, 0.4, 0.95]]),
           (12, 9, [[2, 0.2, 0.2, 0.8, 0.6], [0, 0.5, 0.5, 0.5, 0.9], [1, 0.0, 0.0, 1.0, 1.0]]),
           (9, 9, [[0, 0.25, 0.25, 0.75, 0.75]]),
           (11, 10, [[1, 0.1, 0.6, 0.3, 0.9], [2, 0.6, 0.1, 0.95, 0.4]])]
# The same images with a 4-number header (two extras) and 6-number objects.
WIDE_EXTRA = [7.0, 8.0]
# imrotate cases: (case, angle(s), zoom_in, zoom_out, batched)
ROTATIONS = [(f"rot_{angle}_{zoom}", angle, zoom == "in", zoom == "out", False)
             for angle in (0, 30, -45, 90, 135) for zoom in ("none", "in", "out")] + [
    ("rot_batch", [10.0, -60.0, 200.0], False, False, True),
    ("rot_batch_scalar", 25.0, False, True, True)]
# Detection augmenters on sample 1 under random.seed(seed): (case, augmenter, seeds)
AUGMENTERS = [
    ("flip", "DetHorizontalFlipAug(1.0)"),
    ("crop_default", "DetRandomCropAug()"),
    ("crop_covered", "DetRandomCropAug(min_object_covered=0.5, area_range=(0.3, 1.0), "
                     "aspect_ratio_range=(0.5, 2.0))"),
    ("crop_whole", "DetRandomCropAug(aspect_ratio_range=14 / 8, area_range=1.0)"),
    ("pad_default", "DetRandomPadAug()"),
    ("pad_wide", "DetRandomPadAug(aspect_ratio_range=(1.0, 2.0), area_range=(1.5, 4.0), "
                 "pad_val=(10, 20, 30))"),
    ("select", "DetRandomSelectAug([DetHorizontalFlipAug(1.0), DetRandomCropAug()], 0.3)"),
    ("multi_crop", "CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5, 0.9], "
                   "area_range=[(0.1, 1.0), (0.3, 1.0), (0.5, 1.0)])"),
]
AUG_SEEDS = (0, 1, 2, 3)
# CreateDetAugmenter lists applied to every sample under random.seed(seed)
PIPELINES = [("det_plain", dict(data_shape=(3, 8, 8), inter_method=1)),
             ("det_norm", dict(data_shape=(3, 6, 7), resize=9, mean=True, std=True)),
             ("det_random", dict(data_shape=(3, 10, 10), rand_crop=0.7, rand_pad=0.5,
                                 rand_mirror=True, inter_method=1, area_range=(0.2, 2.5)))]
PIPE_SEEDS = (0, 1)
# ImageDetIter cases: (case, arguments, epochs, seed); `path_*` relative to the group.
_IMGLIST = [[[2, 5] + sum(objects, []), f"files/{i}.png"]
            for i, (_, _, objects) in enumerate(SAMPLES)]
DET_ITERS = [
    ("detiter_rec", dict(path_imgrec="det.rec", batch_size=2, data_shape=(3, 8, 8)), 2, 0),
    ("detiter_idx_discard", dict(path_imgrec="det.rec", path_imgidx="det.idx", batch_size=2,
                                 data_shape=(3, 8, 8), last_batch_handle="discard",
                                 inter_method=1, mean=True), 1, 0),
    ("detiter_wide", dict(path_imgrec="wide.rec", batch_size=3, data_shape=(3, 9, 7),
                          last_batch_handle="roll_over"), 2, 0),
    ("detiter_list", dict(path_imglist="det.lst", path_root=".", batch_size=2,
                          data_shape=(3, 8, 8), rand_mirror=True), 2, 5),
    ("detiter_imglist", dict(imglist=_IMGLIST, path_root=".", batch_size=4,
                             data_shape=(3, 8, 8), rand_crop=0.5, rand_pad=0.5,
                             inter_method=1), 2, 11),
    ("detiter_shuffle", dict(path_imgrec="det.rec", path_imgidx="det.idx", shuffle=True,
                             batch_size=2, data_shape=(3, 8, 8), inter_method=0), 2, 3),
]
# ImageDetRecordIter cases without random augmentation: (case, arguments, epochs)
RECORD_ITERS = [
    ("rec_default", dict(path_imgrec="det.rec", data_shape=(3, 8, 8), batch_size=2), 2),
    ("rec_pad_value", dict(path_imgrec="det.rec", data_shape=(3, 8, 8), batch_size=3,
                           label_pad_width=20, label_pad_value=-2.5), 2),
    ("rec_fit", dict(path_imgrec="det.rec", data_shape=(3, 9, 9), batch_size=2, resize=14,
                     resize_mode="fit", mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=4,
                     std_b=8), 1),
    ("rec_shrink", dict(path_imgrec="det.rec", data_shape=(3, 9, 11), batch_size=5,
                        resize_mode="shrink", inter_method=2, scale=0.5), 1),
    ("rec_mirror", dict(path_imgrec="wide.rec", data_shape=(3, 8, 6), batch_size=2,
                        rand_mirror_prob=1.0, inter_method=3, round_batch=False), 2),
    ("rec_cubic_lanczos", dict(path_imgrec="det.rec", data_shape=(3, 16, 12), batch_size=4,
                               inter_method=4, resize=9), 1),
    ("rec_auto", dict(path_imgrec="det.rec", data_shape=(3, 10, 10), batch_size=4,
                      inter_method=9), 1),
    ("rec_gray", dict(path_imgrec="det.rec", data_shape=(1, 7, 7), batch_size=2,
                      mean_r=100, std_r=50), 1),
    ("rec_imglist", dict(path_imgrec="det.rec", path_imglist="det_ids.lst",
                         data_shape=(3, 8, 8), batch_size=5), 1),
]


def _pixels(rng: np.random.RandomState, rows: int, cols: int) -> np.ndarray:
    """A gradient with noise, per channel: it compresses, where pure noise would not."""
    y, x = np.mgrid[0:rows, 0:cols]
    planes = [20 + 200 * (x * (c + 1) + y * (3 - c)) / (4 * (rows + cols))
              + rng.randint(0, 30, (rows, cols)) for c in range(3)]
    return np.clip(np.stack(planes, -1), 0, 255).astype(np.uint8)


def _compact(values: np.ndarray) -> np.ndarray:
    """Float arrays of whole numbers in [0, 255] (pixels not yet normalised) stored as
    uint8, which is lossless; the tests compare them as float32."""
    if values.dtype == np.float32 and values.size and np.all(values == np.round(values)) \
            and values.min() >= 0 and values.max() <= 255:
        return values.astype(np.uint8)
    return values


def _png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def _write_sources(out: Path) -> None:
    """`det.rec` / `.idx` (header 2, objects of 5), `wide.rec` (header 4, objects of 6),
    the PNGs as `files/` with `det.lst`, and `det_ids.lst` (labels by image id, wider
    boxes) for ImageDetRecordIter's path_imglist."""
    rng = np.random.RandomState(11)
    (out / "files").mkdir(exist_ok=True)
    det = mx.recordio.MXIndexedRecordIO(str(out / "det.idx"), str(out / "det.rec"), "w")
    wide = mx.recordio.MXIndexedRecordIO(str(out / "wide.idx"), str(out / "wide.rec"), "w")
    lst, ids = [], []
    for i, (rows, cols, objects) in enumerate(SAMPLES):
        payload = _png(_pixels(rng, rows, cols))
        label = [2, 5] + sum(objects, [])
        det.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, label, i, 0), payload))
        wide_label = [4, 6] + WIDE_EXTRA + sum((o + [i] for o in objects), [])
        wide.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, wide_label, i, 0), payload))
        (out / "files" / f"{i}.png").write_bytes(payload)
        lst.append("\t".join([str(i)] + [str(v) for v in label] + [f"files/{i}.png"]))
        grown = [[c, x0 / 2, y0 / 2, (x1 + 1) / 2, (y1 + 1) / 2] for c, x0, y0, x1, y1 in objects]
        ids.append("\t".join([str(i)] + [str(v) for v in [2, 5] + sum(grown, [])]
                             + [f"files/{i}.png"]))
    det.close()
    wide.close()
    (out / "det.lst").write_text("\n".join(lst) + "\n")
    (out / "det_ids.lst").write_text("\n".join(ids) + "\n")


def _rotations(results: dict[str, np.ndarray]) -> None:
    rng = np.random.RandomState(3)
    image = rng.uniform(0, 255, (3, 7, 10)).astype(np.float32)
    batch = rng.uniform(0, 255, (3, 2, 6, 5)).astype(np.float32)
    results["rot:image"], results["rot:batch"] = image, batch
    for case, angle, zoom_in, zoom_out, batched in ROTATIONS:
        src = mx.nd.array(batch if batched else image)
        angles = mx.nd.array(angle) if isinstance(angle, list) else angle
        results[case] = mx.image.imrotate(src, angles, zoom_in, zoom_out).asnumpy()
    for seed, batched in ((4, False), (5, True)):
        np.random.seed(seed)
        src = mx.nd.array(batch if batched else image)
        results[f"random_rotate:{seed}"] = mx.image.random_rotate(
            src, (-50, 70), zoom_in=batched).asnumpy()


def _augmenters(out: Path, results: dict[str, np.ndarray]) -> None:
    names = {n: getattr(mx.image, n) for n in dir(mx.image) if n[0].isupper()}
    img = mx.image.imdecode((out / "files" / "1.png").read_bytes())
    label = np.array(SAMPLES[1][2], np.float32)
    for case, expression in AUGMENTERS:
        aug = eval(expression, names)  # noqa: S307 - the fixed expressions above
        for seed in AUG_SEEDS:
            random.seed(seed)
            got, got_label = aug(img, label.copy())
            results[f"{case}:{seed}:data"] = got.asnumpy()
            results[f"{case}:{seed}:label"] = np.asarray(got_label, np.float32)
    for case, kwargs in PIPELINES:
        augs = mx.image.CreateDetAugmenter(**kwargs)
        for i, (_, _, objects) in enumerate(SAMPLES):
            src = mx.image.imdecode((out / "files" / f"{i}.png").read_bytes())
            for seed in PIPE_SEEDS:
                random.seed(seed)
                data, det_label = src, np.array(objects, np.float32)
                for aug in augs:
                    data, det_label = aug(data, det_label)
                results[f"{case}:{i}:{seed}:data"] = data.asnumpy()
                results[f"{case}:{i}:{seed}:label"] = np.asarray(det_label, np.float32)


def _path_args(out: Path, kwargs: dict) -> dict:
    return {k: str(out / v) if k.startswith("path_") else v for k, v in kwargs.items()}


def _iterate(it: mx.io.DataIter, case: str, epochs: int, results: dict) -> list[list[int]]:
    """Every batch of `epochs` epochs, stacked in order as `<case>:data` / `:label`; the
    pads per epoch."""
    pads, data, labels = [], [], []
    for _ in range(epochs):
        pads.append([])
        for batch in it:
            data.append(batch.data[0].asnumpy())
            labels.append(batch.label[0].asnumpy())
            pads[-1].append(batch.pad)
        it.reset()
    results[f"{case}:data"], results[f"{case}:label"] = np.stack(data), np.stack(labels)
    return pads


def write_imagedet(out: Path) -> None:
    """Sources, results of every case, and the cases themselves."""
    out.mkdir(parents=True, exist_ok=True)
    _write_sources(out)
    results: dict[str, np.ndarray] = {}
    _rotations(results)
    _augmenters(out, results)
    det_iters = {}
    for case, kwargs, epochs, seed in DET_ITERS:
        random.seed(seed)
        it = mx.image.ImageDetIter(**_path_args(out, kwargs))
        det_iters[case] = {"kwargs": kwargs, "seed": seed, "label_shape": it.label_shape,
                           "pads": _iterate(it, case, epochs, results)}
    record_iters = {}
    for case, kwargs, epochs in RECORD_ITERS:
        it = mx.io.ImageDetRecordIter(**_path_args(out, kwargs))
        record_iters[case] = {"kwargs": kwargs, "provide_label": it.provide_label[0][1],
                              "pads": _iterate(it, case, epochs, results)}
    np.savez_compressed(out / "results.npz", **{k: _compact(v) for k, v in results.items()})
    (out / "cases.json").write_text(json.dumps(
        {"rotations": ROTATIONS, "augmenters": AUGMENTERS, "aug_seeds": AUG_SEEDS,
         "pipelines": PIPELINES, "pipe_seeds": PIPE_SEEDS, "samples": SAMPLES,
         "det_iters": det_iters, "record_iters": record_iters}, indent=1))
