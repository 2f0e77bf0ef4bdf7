"""ImageDetRecordIter against MXNet 1.9.1's batches on the same small files
(tests/fixtures/imagedet, tools/mxnet_imagedet_fixtures.py) where no random augmentation
runs (a mirror of probability 1 included), and the invariants of the random pads and
crops, whose draws cannot follow MXNet's per-thread std::mt19937 streams."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import DataFileError, OperatorError, ShapeError

pytest.importorskip("PIL")

FIXTURES = Path(__file__).parents[1] / "fixtures" / "imagedet"
CASES = json.loads((FIXTURES / "cases.json").read_text())
RESULTS = np.load(FIXTURES / "results.npz")
REC = str(FIXTURES / "det.rec")


def _args(kwargs: dict) -> dict:
    return {k: str(FIXTURES / v) if k.startswith("path_") else v for k, v in kwargs.items()}


@pytest.mark.parametrize("case", sorted(CASES["record_iters"]))
def test_batches_equal_mxnet(case):
    spec = CASES["record_iters"][case]
    it = mx.io.ImageDetRecordIter(**_args(spec["kwargs"]))
    assert it.provide_label[0].shape == tuple(spec["provide_label"])
    batches = []
    for pads in spec["pads"]:
        epoch = list(it)
        it.reset()
        assert [b.pad for b in epoch] == pads
        batches += epoch
    data, labels = RESULTS[f"{case}:data"], RESULTS[f"{case}:label"]
    for number, batch in enumerate(batches):
        real = len(data[number]) - batch.pad
        got = batch.data[0].asnumpy()
        assert got.dtype == np.float32
        np.testing.assert_allclose(got[:real], data[number][:real].astype(np.float32),
                                   rtol=1e-6, atol=1e-5)
        np.testing.assert_array_equal(batch.label[0].asnumpy()[:real], labels[number][:real])


def _boxes(row: np.ndarray) -> np.ndarray:
    """The objects of a label row: [c, rows, cols, n, header width, object width, ...]."""
    raw = row[4:4 + int(row[3])]
    return raw[int(raw[0]):].reshape(-1, int(raw[1]))


def test_random_pad_and_crop_keep_their_invariants():
    it = mx.io.ImageDetRecordIter(REC, (3, 12, 12), 5, rand_pad_prob=1.0, max_pad_scale=3.0,
                                  rand_crop_prob=0.5, min_crop_scales=(0.3,),
                                  max_crop_scales=(1.0,), min_crop_aspect_ratios=(0.5,),
                                  max_crop_aspect_ratios=(2.0,), fill_value=7, seed=3,
                                  resize_mode="shrink")
    padded = 0
    for _ in range(4):
        for batch in it:
            data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
            for image, row in zip(data, label, strict=True):
                rows, cols = int(row[1]), int(row[2])
                assert row[0] == 3 and 1 <= rows <= 12 and 1 <= cols <= 12
                assert (image[:, rows:] == 0).all() and (image[:, :, cols:] == 0).all()
                boxes = _boxes(row)
                assert len(boxes) >= 1 and ((boxes[:, 1:5] >= 0) & (boxes[:, 1:5] <= 1)).all()
                assert (row[4 + int(row[3]):] == -1).all()
                padded += int((image[:, :rows, :cols] == 7).all(axis=0).any())
        it.reset()
    assert padded > 0   # the fill shows on some canvas


def test_shuffle_gives_each_record_once_per_epoch():
    it = mx.io.ImageDetRecordIter(REC, (3, 8, 8), 5, shuffle=True, seed=1)
    plain = mx.io.ImageDetRecordIter(REC, (3, 8, 8), 5)
    want = sorted(map(tuple, next(plain).label[0].asnumpy()))
    orders = []
    for _ in range(3):
        labels = next(it).label[0].asnumpy()
        assert sorted(map(tuple, labels)) == want
        orders.append(labels[:, 6].tolist())
        it.reset()
    assert len({tuple(o) for o in orders}) > 1


def test_mirror_flips_boxes_about_the_centre():
    plain = next(mx.io.ImageDetRecordIter(REC, (3, 8, 8), 5))
    flipped = next(mx.io.ImageDetRecordIter(REC, (3, 8, 8), 5, rand_mirror_prob=1.0))
    np.testing.assert_array_equal(flipped.data[0].asnumpy(), plain.data[0].asnumpy()[..., ::-1])
    for a, b in zip(plain.label[0].asnumpy(), flipped.label[0].asnumpy(), strict=True):
        np.testing.assert_allclose(_boxes(b)[:, [1, 3]], 1 - _boxes(a)[:, [3, 1]], atol=1e-7)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(label_pad_width=10), ShapeError, "label_pad_width=10 is smaller than the widest"),
    (dict(label_width=7), ShapeError, "has 12 labels but label_width is 7"),
    (dict(random_hue_prob=0.5), OperatorError, "random_hue_prob not supported"),
    (dict(mean_img="mean.nd"), OperatorError, "mean_img not supported"),
    (dict(inter_method=0), OperatorError, "invalid inter_method 0"),
    (dict(resize_mode="crop"), OperatorError, "resize_mode must be one of"),
    (dict(data_shape=(2, 8, 8)), ShapeError, "1, 3 or 4 channels"),
    (dict(rand_crop_prob=1, num_crop_sampler=2, min_crop_scales=(0.1, 0.2, 0.3)),
     OperatorError, "min_crop_scales has 3 values for num_crop_sampler=2"),
    (dict(rand_crop_prob=1, min_crop_scales=(0.5,), max_crop_scales=(0.5,)), OperatorError,
     "crop sampler 0 has invalid ranges"),
    (dict(path_imglist=str(FIXTURES / "missing.lst")), DataFileError, "cannot read"),
])
def test_bad_arguments_raise(kwargs, error, message):
    kwargs = {"data_shape": (3, 8, 8), **kwargs}
    with pytest.raises(error, match=message):
        mx.io.ImageDetRecordIter(REC, batch_size=2, **kwargs)


def test_malformed_record_label_raises(tmp_path):
    path = str(tmp_path / "bad.rec")
    png = (FIXTURES / "files" / "0.png").read_bytes()
    with mx.recordio.MXRecordIO(path, "w") as rec:
        rec.write(mx.recordio.pack(mx.recordio.IRHeader(0, [2, 5, 0, 0.1, 0.1, 0.5], 0, 0), png))
    it = mx.io.ImageDetRecordIter(path, (3, 8, 8), 1)
    with pytest.raises(ShapeError, match=r"bad.rec, record 0 .*detection label"):
        next(it)
