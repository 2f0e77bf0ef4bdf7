"""`mx.image`'s rotations, detection augmenters and `ImageDetIter` against MXNet 1.9.1's
results on the same files (tests/fixtures/imagedet, tools/mxnet_imagedet_fixtures.py).
Random choices come from Python's `random` (numpy's for `random_rotate`) in MXNet's
order, so seeded runs give MXNet's crops, pads and flips exactly."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError, ShapeError

pytest.importorskip("PIL")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imagedet"
CASES = json.loads((FIXTURES / "cases.json").read_text())
RESULTS = np.load(FIXTURES / "results.npz")
NAMES = {name: getattr(mx.image, name) for name in mx.image.__all__}


def _want(key: str) -> np.ndarray:
    """MXNet's array (pixel arrays are stored as uint8, losslessly)."""
    values = RESULTS[key]
    return values.astype(np.float32) if values.dtype == np.uint8 else values


def _image(i: int) -> mx.nd.NDArray:
    return mx.image.imdecode((FIXTURES / "files" / f"{i}.png").read_bytes())


def _path_args(kwargs: dict) -> dict:
    """The fixture's arguments: paths under the fixtures, JSON lists back to tuples
    (a list of ranges means one crop augmenter per range)."""
    return {k: str(FIXTURES / v) if k.startswith("path_") else
            tuple(v) if k in ("data_shape", "area_range") else v for k, v in kwargs.items()}


@pytest.mark.parametrize("case, angle, zoom_in, zoom_out, batched", CASES["rotations"],
                         ids=[c[0] for c in CASES["rotations"]])
def test_imrotate(case, angle, zoom_in, zoom_out, batched):
    src = mx.nd.array(RESULTS["rot:batch" if batched else "rot:image"])
    angles = mx.nd.array(angle) if isinstance(angle, list) else angle
    got = mx.image.imrotate(src, angles, zoom_in, zoom_out).asnumpy()
    np.testing.assert_allclose(got, RESULTS[case], rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("seed, batched", [(4, False), (5, True)])
def test_random_rotate_draws_as_mxnet(seed, batched):
    np.random.seed(seed)
    src = mx.nd.array(RESULTS["rot:batch" if batched else "rot:image"])
    got = mx.image.random_rotate(src, (-50, 70), zoom_in=batched).asnumpy()
    np.testing.assert_allclose(got, RESULTS[f"random_rotate:{seed}"], rtol=1e-5, atol=1e-3)


def test_imrotate_refuses_bad_input():
    img = mx.nd.zeros((3, 4, 5))
    # MXNet's classes (ValueError, TypeError), which scripts catch, and minimx's
    with pytest.raises(ValueError, match="zoom_in and zoom_out"):
        mx.image.imrotate(img, 10, zoom_in=True, zoom_out=True)
    with pytest.raises(MinimxError, match="float32"):
        mx.image.imrotate(img.astype("uint8"), 10)
    with pytest.raises(TypeError, match="scalar angle") as refused:
        mx.image.imrotate(img, mx.nd.array([10.0]))
    assert isinstance(refused.value, MinimxError)
    with pytest.raises(ShapeError, match="2 images but 3 rotation angles"):
        mx.image.imrotate(mx.nd.zeros((2, 3, 4, 5)), mx.nd.array([1.0, 2.0, 3.0]))
    with pytest.raises(ShapeError, match="CHW image or an NCHW batch"):
        mx.image.imrotate(mx.nd.zeros((4, 5)), 10)


@pytest.mark.parametrize("case, expression", CASES["augmenters"],
                         ids=[c[0] for c in CASES["augmenters"]])
def test_det_augmenters_seeded(case, expression):
    aug = eval(expression, dict(NAMES))  # noqa: S307 - the fixture's fixed expressions
    label = np.array(CASES["samples"][1][2], np.float32)
    for seed in CASES["aug_seeds"]:
        random.seed(seed)
        data, got = aug(_image(1), label.copy())
        np.testing.assert_array_equal(data.asnumpy(), _want(f"{case}:{seed}:data"))
        np.testing.assert_allclose(got, RESULTS[f"{case}:{seed}:label"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case, kwargs", CASES["pipelines"], ids=[c[0] for c in CASES["pipelines"]])
def test_create_det_augmenter_seeded(case, kwargs):
    augs = mx.image.CreateDetAugmenter(**_path_args(kwargs))
    for i, (_, _, objects) in enumerate(CASES["samples"]):
        for seed in CASES["pipe_seeds"]:
            random.seed(seed)
            data, label = _image(i), np.array(objects, np.float32)
            for aug in augs:
                data, label = aug(data, label)
            np.testing.assert_allclose(data.asnumpy(), _want(f"{case}:{i}:{seed}:data"),
                                       rtol=1e-6, atol=1e-5)
            np.testing.assert_allclose(label, RESULTS[f"{case}:{i}:{seed}:label"],
                                       rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", sorted(CASES["det_iters"]))
def test_image_det_iter(case):
    spec = CASES["det_iters"][case]
    random.seed(spec["seed"])
    it = mx.image.ImageDetIter(**_path_args(spec["kwargs"]))
    assert it.label_shape == tuple(spec["label_shape"])
    batches = []
    for pads in spec["pads"]:
        epoch = list(it)
        assert [b.pad for b in epoch] == pads
        batches += epoch
        it.reset()
    data = np.stack([b.data[0].asnumpy() for b in batches])
    np.testing.assert_allclose(data, _want(f"{case}:data"), rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(np.stack([b.label[0].asnumpy() for b in batches]),
                               RESULTS[f"{case}:label"], rtol=1e-6, atol=1e-7)


def _det_iter(**kwargs) -> mx.image.ImageDetIter:
    return mx.image.ImageDetIter(2, (3, 8, 8), path_imgrec=str(FIXTURES / "det.rec"), **kwargs)


def test_reshape_and_sync_label_shape():
    train, val = _det_iter(), _det_iter()
    val.reshape(label_shape=(4, 5))
    assert train.sync_label_shape(val) is val
    assert train.label_shape == val.label_shape == (4, 5)
    assert train.provide_label[0].shape == (2, 4, 5)
    labels = next(train).label[0].asnumpy()
    assert labels.shape == (2, 4, 5) and (labels[:, 2:] == -1).all()
    train.reshape(data_shape=(3, 6, 7))
    assert train.provide_data[0].shape == (2, 3, 6, 7)
    with pytest.raises(ShapeError, match="reduce the object count from 4 to 3"):
        train.reshape(label_shape=(3, 5))
    with pytest.raises(ShapeError, match="object width inconsistent: 5 vs 6"):
        train.reshape(label_shape=(4, 6))
    with pytest.raises(ShapeError, match="data_shape must be"):
        train.reshape(data_shape=(1, 6, 7))


@pytest.mark.parametrize("label, message", [
    ([2, 5, 0, 0.1, 0.1], "at least 7 numbers"),
    ([2, 4, 0, 0.1, 0.1, 0.5, 0.5], r"objects of 4 \(>= 5\)"),
    ([2, 5, 0, 0.1, 0.1, 0.5, 0.5, 1], "label of 8 numbers"),
    ([2, 5, 0, 0.5, 0.1, 0.5, 0.5], "without a valid box"),
])
def test_bad_labels_raise(label, message):
    with pytest.raises(ShapeError, match=message):
        mx.image.ImageDetIter(1, (3, 8, 8), imglist=[[label, "files/0.png"]],
                              path_root=str(FIXTURES))


def test_bad_augmenter_arguments_raise():
    with pytest.raises(MinimxError, match="expected an mx.image.Augmenter"):
        mx.image.DetBorrowAug(mx.image.DetHorizontalFlipAug(0.5))
    with pytest.raises(MinimxError, match="not a DetAugmenter"):
        mx.image.DetRandomSelectAug([mx.image.CastAug()])
    with pytest.raises(MinimxError, match=r"one value or 3, got \[0.1, 0.2\]"):
        mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.2],
                                              max_attempts=[1, 2, 3])
    with pytest.warns(UserWarning, match="invalid area_range"):
        assert not mx.image.DetRandomCropAug(area_range=(0.5, 0.2)).enabled


def test_dumps_as_mxnet():
    aug = mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5])
    assert aug.dumps()[0] == "detrandomselectaug"
    assert json.loads(aug.dumps()[1][1]) == [
        "detrandomcropaug", {"min_object_covered": 0.5, "aspect_ratio_range": [0.75, 1.33],
                             "area_range": [0.05, 1.0], "min_eject_coverage": 0.3,
                             "max_attempts": 50}]
