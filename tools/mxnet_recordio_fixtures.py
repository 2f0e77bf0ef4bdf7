"""The ``recordio`` fixture group of `mxnet_fixtures.py`: RecordIO files written by MXNet
1.9.1's `mx.recordio`, and the batches its `mx.io.MNISTIter` and `mx.io.ImageRecordIter`
(and its other names: the uint8 / int8 and legacy ``_v1`` iterators) give on small
synthetic files.

Runs with MXNet's Python only (never minimx), with Pillow beside MXNet to encode the
images (MXNet's `pack_img` needs cv2, which its environment lacks; MXNet decodes with
its own OpenCV). Every case is listed in ``cases.json`` with the arguments given to
MXNet; ``batches.npz`` holds what each epoch gave.
"""
from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import mxnet as mx
import numpy as np
from PIL import Image

# Payloads that exercise the format: empty, unaligned, the magic number at aligned
# offsets (split records), and at an unaligned one (not split).
MAGIC = struct.pack("<I", 0xCED7230A)
RAW_RECORDS = [b"", b"a", b"abcd", MAGIC, b"12" + MAGIC + b"34", b"1234" + MAGIC + b"5678" + MAGIC,
               MAGIC + MAGIC + b"xyz", bytes(range(256))]
HEADERS = [(0, 3.0, 17, 0), (0, [1.0, -2.5, 4.0], 18, 1), (5, 7.0, 2**40, 3)]

# ImageRecordIter cases: (case, rec file, arguments, epochs)
IMAGE_CASES = [
    ("png_center", "png", dict(data_shape=(3, 8, 8), batch_size=4), 2),
    ("png_normalized", "png", dict(data_shape=(3, 6, 7), batch_size=3, mean_r=120.5,
                                   mean_g=110.0, mean_b=100.25, std_r=58.0, std_g=57.0,
                                   std_b=57.5, scale=0.5), 2),
    ("png_no_round", "png", dict(data_shape=(3, 8, 8), batch_size=4, round_batch=False), 2),
    ("png_mirror_idx", "png", dict(data_shape=(3, 5, 8), batch_size=5, mirror=True,
                                   path_imgidx="png.idx"), 1),
    ("png_uint8", "png", dict(data_shape=(3, 8, 8), batch_size=4, dtype="uint8"), 1),
    ("png_int8", "png", dict(data_shape=(3, 8, 8), batch_size=4, dtype="int8", mean_r=100.4,
                             mean_g=20.0, mean_b=200.6), 1),
    ("png_mean_img", "png", dict(data_shape=(3, 8, 8), batch_size=4, mean_img="mean.nd",
                                 scale=2.0), 1),
    ("gray", "gray", dict(data_shape=(1, 6, 6), batch_size=2), 1),
    ("png_as_gray", "png", dict(data_shape=(1, 8, 8), batch_size=4), 1),
    ("multi_label", "multi", dict(data_shape=(3, 8, 8), batch_size=2, label_width=3), 1),
    ("png_resize", "png", dict(data_shape=(3, 8, 8), batch_size=4, resize=9), 1),
    ("small_enlarged", "small", dict(data_shape=(3, 8, 8), batch_size=3), 1),
    ("jpeg", "jpeg", dict(data_shape=(3, 12, 12), batch_size=3, mean_r=100.0, scale=0.25), 1),
]
# MXNet's other names of ImageRecordIter: (case, iterator, rec file, arguments, epochs).
# The uint8 ones ignore mean, std, scale and dtype; int8 rounds the mean half away from
# zero; the v1 ones normalise in two roundings, report the pad without round_batch, and
# the uint8 v1 never mirrors.
ITER_CASES = [
    ("uint8_iter", "ImageRecordUInt8Iter", "png",
     dict(data_shape=(3, 8, 8), batch_size=4, mirror=True, mean_r=50.0, std_g=2.0, scale=0.5,
          dtype="float32"), 2),
    ("int8_iter", "ImageRecordInt8Iter", "png",
     dict(data_shape=(3, 6, 7), batch_size=3, mean_r=100.5, mean_g=20.5, mean_b=-3.5,
          std_g=3.0, scale=0.5), 1),
    ("int8_iter_mean_img", "ImageRecordInt8Iter", "png",
     dict(data_shape=(3, 8, 8), batch_size=4, mean_img="mean.nd"), 1),
    ("v1_normalized", "ImageRecordIter_v1", "png",
     dict(data_shape=(3, 6, 7), batch_size=3, mean_r=120.5, mean_g=110.0, mean_b=100.25,
          std_r=58.0, std_g=57.0, std_b=57.5, scale=0.5), 2),
    ("v1_no_round", "ImageRecordIter_v1", "png",
     dict(data_shape=(3, 8, 8), batch_size=4, round_batch=False, scale=0.3, std_b=7.0), 2),
    ("v1_mirror_resize", "ImageRecordIter_v1", "png",
     dict(data_shape=(3, 8, 8), batch_size=5, mirror=True, resize=9, mean_g=10.0,
          std_b=3.0, scale=0.7, path_imgidx="png.idx"), 1),
    ("v1_mean_img", "ImageRecordIter_v1", "png",
     dict(data_shape=(3, 8, 8), batch_size=4, mean_img="mean.nd", scale=0.3, std_r=1.7), 1),
    ("v1_gray", "ImageRecordIter_v1", "gray",
     dict(data_shape=(1, 6, 6), batch_size=2, mean_r=77.7, std_r=9.0, scale=0.1), 1),
    ("uint8_v1", "ImageRecordUInt8Iter_v1", "png",
     dict(data_shape=(3, 8, 8), batch_size=4, mirror=True, mean_r=50.0, scale=0.5), 2),
    ("uint8_v1_no_round", "ImageRecordUInt8Iter_v1", "small",
     dict(data_shape=(3, 8, 8), batch_size=3, round_batch=False), 1),
]
MNIST_CASES = [
    ("ordered", dict(batch_size=5, shuffle=False), 2),
    ("shuffled", dict(batch_size=4, shuffle=True, seed=0), 2),
    ("shuffled_seed", dict(batch_size=7, shuffle=True, seed=123, flat=True), 1),
    ("part", dict(batch_size=3, shuffle=True, seed=4, num_parts=3, part_index=1), 1),
    ("last_part", dict(batch_size=2, shuffle=False, num_parts=4, part_index=3, flat=True), 1),
]


def _encoded(pixels: np.ndarray, fmt: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return out.getvalue()


def _smooth_image(rng: np.random.RandomState, rows: int, cols: int, channels: int
                  ) -> np.ndarray:
    """A gradient with noise: JPEG keeps it close, where pure noise would not."""
    y, x = np.mgrid[0:rows, 0:cols]
    planes = [(40 + 150 * (x * (c + 1) + y * (3 - c)) / (rows + cols) / 2
               + rng.randint(0, 40, (rows, cols))) for c in range(channels)]
    pixels = np.clip(np.stack(planes, -1), 0, 255).astype(np.uint8)
    return pixels[..., 0] if channels == 1 else pixels


def _write_images(out: Path, name: str, shapes: list[tuple[int, int, int]], fmt: str,
                  multi: bool = False) -> None:
    rng = np.random.RandomState(len(name))
    rec = mx.recordio.MXIndexedRecordIO(str(out / f"{name}.idx"), str(out / f"{name}.rec"), "w")
    for i, (rows, cols, channels) in enumerate(shapes):
        label = [float(i), i * 0.5, -1.0] if multi else float(i % 4)
        payload = _encoded(_smooth_image(rng, rows, cols, channels), fmt)
        rec.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, label, 100 + i, 0), payload))
    rec.close()


def _epochs(it: mx.io.DataIter, epochs: int) -> list[list[dict]]:
    got = []
    for _ in range(epochs):
        got.append([{"data": b.data[0].asnumpy(), "label": b.label[0].asnumpy(), "pad": b.pad}
                    for b in it])
        it.reset()
    return got


def _store(arrays: dict, case: str, epochs: list[list[dict]]) -> list[list[int]]:
    """Put each batch's arrays in `arrays`; return the pads per epoch."""
    for e, batches in enumerate(epochs):
        for b, batch in enumerate(batches):
            arrays[f"{case}:{e}:{b}:data"] = batch["data"]
            arrays[f"{case}:{e}:{b}:label"] = batch["label"]
    return [[batch["pad"] for batch in batches] for batches in epochs]


def write_recordio(out: Path) -> None:
    """RecordIO files of raw and packed records, and MNISTIter / ImageRecordIter batches."""
    out.mkdir(parents=True, exist_ok=True)
    packed = [mx.recordio.pack(mx.recordio.IRHeader(*h), b"payload%d" % i)
              for i, h in enumerate(HEADERS)]
    rec = mx.recordio.MXIndexedRecordIO(str(out / "raw.idx"), str(out / "raw.rec"), "w")
    for i, payload in enumerate(RAW_RECORDS + packed):
        rec.write_idx(10 * i, payload)
    rec.close()
    cases: dict = {"raw": [p.hex() for p in RAW_RECORDS], "headers": HEADERS,
                   "packed": [p.hex() for p in packed]}

    rng = np.random.RandomState(0)
    images = rng.randint(0, 256, (37, 5, 4)).astype(np.uint8)
    labels = rng.randint(0, 10, 37).astype(np.uint8)
    (out / "mnist-images-idx3-ubyte").write_bytes(struct.pack(">iiii", 2051, 37, 5, 4)
                                                  + images.tobytes())
    (out / "mnist-labels-idx1-ubyte").write_bytes(struct.pack(">ii", 2049, 37) + labels.tobytes())
    arrays: dict[str, np.ndarray] = {}
    cases["mnist"] = {}
    for case, kwargs, epochs in MNIST_CASES:
        it = mx.io.MNISTIter(image=str(out / "mnist-images-idx3-ubyte"),
                             label=str(out / "mnist-labels-idx1-ubyte"), silent=True, **kwargs)
        cases["mnist"][case] = {"kwargs": kwargs, "pads": _store(arrays, f"mnist_{case}",
                                                                 _epochs(it, epochs))}

    sizes = [(8, 8, 3), (10, 9, 3), (9, 12, 3), (16, 8, 3), (8, 11, 3), (13, 10, 3),
             (8, 9, 3)]
    _write_images(out, "png", sizes, "PNG")
    _write_images(out, "gray", [(6, 6, 1), (7, 9, 1), (10, 6, 1)], "PNG")
    _write_images(out, "multi", sizes[:4], "PNG", multi=True)
    _write_images(out, "small", [(5, 6, 3), (9, 4, 3), (3, 3, 3), (12, 7, 3)], "PNG")
    _write_images(out, "jpeg", [(16, 16, 3), (12, 20, 3), (18, 13, 3)], "JPEG")
    mean = np.random.RandomState(1).uniform(50, 150, (3, 8, 8)).astype(np.float32)
    mx.nd.save(str(out / "mean.nd"), {"mean_img": mx.nd.array(mean)})
    cases["image"] = {}
    for case, name, kwargs, epochs in IMAGE_CASES:
        given = {k: str(out / v) if k in ("path_imgidx", "mean_img") else v
                 for k, v in kwargs.items()}
        it = mx.io.ImageRecordIter(path_imgrec=str(out / f"{name}.rec"), **given)
        cases["image"][case] = {"rec": name, "kwargs": kwargs, "epochs": epochs,
                                "provide_label": list(it.provide_label[0].shape),
                                "pads": _store(arrays, case, _epochs(it, epochs))}
        del it
    for case, iterator, name, kwargs, epochs in ITER_CASES:
        given = {k: str(out / v) if k in ("path_imgidx", "mean_img") else v
                 for k, v in kwargs.items()}
        it = getattr(mx.io, iterator)(path_imgrec=str(out / f"{name}.rec"), **given)
        cases["image"][case] = {"iter": iterator, "rec": name, "kwargs": kwargs,
                                "epochs": epochs,
                                "provide_label": list(it.provide_label[0].shape),
                                "pads": _store(arrays, case, _epochs(it, epochs))}
        del it
    np.savez_compressed(out / "batches.npz", **arrays)
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
