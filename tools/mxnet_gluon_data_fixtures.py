"""The ``gluon_data`` fixture group (tools/mxnet_fixtures.py writes it with MXNet
1.9.1): ``mx.gluon.data`` and its vision transforms, as tests/gluon/test_data.py
checks minimx's.

- ``transforms.npz``: a seeded uint8 image (``image``, HWC) and a batch of two
  (``batch``, NHWC), and what each deterministic transform of
  `TRANSFORM_CASES` makes of them (``<case>``); ``cases.json`` lists the cases.
- ``loaders.json``: the batches DataLoader gives over a small ArrayDataset
  (``dataset``: its arrays) for
  each `LOADER_CASES` entry (two passes each), with their dtypes and shapes;
  the datasets' ``take`` / ``shard`` / ``filter`` / ``transform_first`` samples;
  RandomSampler's orders after ``np.random.seed``.
- ``folder/``: a folder dataset (PNG images, one file to skip) and what
  ImageFolderDataset reads of it; the ImageRecordDataset samples of the
  ``recordio`` group's ``gray.rec``.

Runs with MXNet's Python only, with Pillow beside MXNet to write the PNGs.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet.gluon.data import ArrayDataset, DataLoader, RandomSampler
from mxnet.gluon.data.vision import ImageFolderDataset, ImageRecordDataset, transforms
from PIL import Image

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# (case, input: "image" / "batch" / "tensor" (the image through ToTensor), transform
# as Python source over `transforms`)
TRANSFORM_CASES = [
    ("to_tensor", "image", "ToTensor()"),
    ("to_tensor_batch", "batch", "ToTensor()"),
    ("normalize", "tensor", f"Normalize({MEAN}, {STD})"),
    ("normalize_scalar", "tensor", "Normalize(0.5, 0.25)"),
    ("cast_f16", "image", "Cast('float16')"),
    ("resize_int", "image", "Resize(20)"),
    ("resize_pair", "image", "Resize((24, 16))"),
    ("resize_keep", "image", "Resize(20, keep_ratio=True)"),
    ("resize_nearest", "image", "Resize((30, 41), interpolation=0)"),
    ("resize_batch", "batch", "Resize((12, 10))"),
    ("center_crop", "image", "CenterCrop(16)"),
    ("center_crop_pair", "image", "CenterCrop((20, 12))"),
    ("center_crop_up", "image", "CenterCrop((64, 48))"),
    ("crop_resize", "image", "CropResize(3, 4, 10, 12)"),
    ("crop_resize_size", "image", "CropResize(3, 4, 10, 12, size=(8, 6), interpolation=1)"),
    ("rotate", "tensor", "Rotate(30)"),
    ("rotate_zoom_in", "tensor", "Rotate(-45, zoom_in=True)"),
    ("eval_pipeline", "image", "Compose([Resize(32, keep_ratio=True), CenterCrop(24), "
                               f"ToTensor(), Normalize({MEAN}, {STD})])"),
    ("eval_pipeline_batch", "batch", f"Compose([Resize((20, 18)), ToTensor(), "
                                     f"Normalize({MEAN}, {STD})])"),
]
# (case, DataLoader arguments); the dataset is `_dataset()`
LOADER_CASES = [
    ("keep", dict(batch_size=4)),
    ("discard", dict(batch_size=4, last_batch="discard")),
    ("rollover", dict(batch_size=4, last_batch="rollover")),
    ("workers", dict(batch_size=3, num_workers=2, thread_pool=True)),
    ("labels_only", dict(batch_size=5)),
]
SEEDS = (0, 7)


# Ten samples: (2x3 float32 features, a Python float label, an int label); for the
# ``labels_only`` case the float labels alone. Recorded in ``loaders.json``.
DATASET = {"features": np.arange(60).reshape(10, 2, 3).tolist(),
           "labels": [i * 0.5 for i in range(10)], "ints": list(range(10, 20))}


def _dataset(case: str) -> ArrayDataset:
    if case == "labels_only":
        return ArrayDataset(DATASET["labels"])
    return ArrayDataset(np.array(DATASET["features"], np.float32), DATASET["labels"],
                        DATASET["ints"])


def _batch_json(batch) -> list:
    parts = batch if isinstance(batch, list) else [batch]
    return [{"dtype": str(p.dtype.__name__ if isinstance(p.dtype, type) else p.dtype),
             "shape": list(p.shape), "values": p.asnumpy().tolist()} for p in parts]


def _samples(ds) -> list:
    out = []
    for i in range(len(ds)):
        sample = ds[i]
        sample = sample if isinstance(sample, tuple) else (sample,)
        out.append([np.asarray(s.asnumpy() if isinstance(s, mx.nd.NDArray) else s).tolist()
                    for s in sample])
    return out


def write_gluon_data(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(5)
    image = rng.randint(0, 256, (37, 53, 3)).astype(np.uint8)
    batch = rng.randint(0, 256, (2, 14, 15, 3)).astype(np.uint8)
    inputs = {"image": mx.nd.array(image, dtype="uint8"),
              "batch": mx.nd.array(batch, dtype="uint8")}
    inputs["tensor"] = transforms.ToTensor()(inputs["image"])
    arrays = {"image": image, "batch": batch}
    for case, source, code in TRANSFORM_CASES:
        transform = eval(code, vars(transforms))
        arrays[case] = transform(inputs[source]).asnumpy()
    np.savez_compressed(out / "transforms.npz", **arrays)
    (out / "cases.json").write_text(json.dumps(
        {"transforms": TRANSFORM_CASES, "loaders": LOADER_CASES}, indent=1) + "\n")

    loaders = {}
    for case, kwargs in LOADER_CASES:
        loader = DataLoader(_dataset(case), **kwargs)
        loaders[case] = {"len": len(loader),
                         "passes": [[_batch_json(b) for b in loader] for _ in range(2)]}
    ds = _dataset("keep")
    datasets = {
        "take3": _samples(ds.take(3)), "take_all": _samples(ds.take(None)),
        "shard_3_0": _samples(ds.shard(3, 0)), "shard_3_2": _samples(ds.shard(3, 2)),
        "filter_even": _samples(ds.filter(lambda s: s[2] % 2 == 0)),
        "transform_first": _samples(ds.transform_first(lambda x: x * 2)),
        "transform": _samples(ds.transform(lambda x, y, z: (y, z))),
    }
    orders = {}
    for seed in SEEDS:
        np.random.seed(seed)
        orders[str(seed)] = [[int(i) for i in RandomSampler(10)] for _ in range(2)]
    (out / "loaders.json").write_text(json.dumps(
        {"dataset": DATASET, "loaders": loaders, "datasets": datasets,
         "random_orders": orders}) + "\n")

    folder = out / "folder"
    for label, (name, sizes) in enumerate({"cat": [(5, 4), (6, 7)], "dog": [(3, 8)],
                                           "emu": [(4, 4), (2, 5), (7, 3)]}.items()):
        (folder / name).mkdir(parents=True, exist_ok=True)
        for k, (h, w) in enumerate(sizes):
            pixels = rng.randint(0, 256, (h, w, 3)).astype(np.uint8)
            Image.fromarray(pixels).save(folder / name / f"{k}_{label}.png")
    (folder / "dog" / "notes.txt").write_text("not an image\n")
    (folder / "readme.txt").write_text("not a class\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        folder_ds = ImageFolderDataset(str(folder))
    seen = {"synsets": folder_ds.synsets,
            "items": [[str(Path(p).relative_to(folder)), label] for p, label in folder_ds.items],
            "warnings": len(caught),
            "samples": [[folder_ds[i][0].asnumpy().tolist(), folder_ds[i][1]]
                        for i in range(len(folder_ds))],
            "grey": folder_ds.__class__(str(folder), flag=0)[0][0].asnumpy().tolist()}
    rec = out.parent / "recordio" / "gray.rec"
    rec_ds = ImageRecordDataset(str(rec), flag=0)
    seen["gray_rec"] = [[rec_ds[i][0].asnumpy().tolist(), float(rec_ds[i][1])]
                        for i in range(len(rec_ds))]
    (out / "folder.json").write_text(json.dumps(seen) + "\n")
