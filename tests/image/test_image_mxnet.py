"""`mx.image` against MXNet 1.9.1's results on the same files (tests/fixtures/image,
written by tools/mxnet_image_fixtures.py): decoding and every resizing equal MXNet's."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx

pytest.importorskip("PIL")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "image"
CASES = json.loads((FIXTURES / "cases.json").read_text())
RESULTS = np.load(FIXTURES / "results.npz")


def _tolerance(interp: int) -> int:
    """Levels minimx may differ by: none, whatever the interpolation."""
    return 0


def _rgb() -> dict[str, mx.nd.NDArray]:
    return {name: mx.image.imread(str(FIXTURES / name)) for name in CASES["images"]}


def _close(got: np.ndarray, expected: np.ndarray, levels: float) -> None:
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.astype(np.float64), expected, atol=levels, rtol=1e-6)


@pytest.mark.parametrize("name, flag, to_rgb", CASES["decodes"])
def test_imdecode(name, flag, to_rgb):
    got = mx.image.imdecode((FIXTURES / name).read_bytes(), flag=flag, to_rgb=to_rgb)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got.asnumpy(), RESULTS[f"decode:{name}:{flag}:{to_rgb}"])


@pytest.mark.parametrize("case, fn, image, kwargs", CASES["calls"],
                         ids=[c[0] for c in CASES["calls"]])
def test_resize_and_crops(case, fn, image, kwargs):
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
    got = getattr(mx.image, fn)(_rgb()[image], **kwargs)
    got = got[0] if isinstance(got, tuple) else got
    _close(got.asnumpy(), RESULTS[case], _tolerance(kwargs.get("interp", 2)))


@pytest.mark.parametrize("case, mean, std", CASES["normalize"])
def test_color_normalize(case, mean, std):
    src = _rgb()["color.png"].astype("float32")
    std = None if std is None else mx.nd.array(std)
    got = mx.image.color_normalize(src, mx.nd.array(mean), std)
    np.testing.assert_allclose(got.asnumpy(), RESULTS[case], rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("case, kwargs", CASES["pipelines"], ids=[c[0] for c in CASES["pipelines"]])
def test_create_augmenter(case, kwargs):
    kwargs = dict(kwargs, data_shape=tuple(kwargs["data_shape"]))
    if isinstance(kwargs.get("mean"), list):
        kwargs["mean"] = np.array(kwargs["mean"])
    scale = 1 / 57.0 if kwargs.get("std") else 1.0   # one level, after normalisation
    for name, img in _rgb().items():
        if name == "gray.png":
            continue
        for aug in mx.image.CreateAugmenter(**kwargs):
            img = aug(img)
        _close(img.asnumpy(), RESULTS[f"{case}:{name}"],
               _tolerance(kwargs["inter_method"]) * scale + 1e-4)


@pytest.mark.parametrize("case", sorted(CASES["iters"]))
def test_image_iter(case):
    spec = CASES["iters"][case]
    it = mx.image.ImageIter(**{k: str(FIXTURES / v) if k.startswith("path_") else v
                               for k, v in spec["kwargs"].items()})
    scale = 1 / 57.0 if spec["kwargs"].get("std") else 1.0
    for e, pads in enumerate(spec["pads"]):
        batches = list(it)
        assert [b.pad for b in batches] == pads
        for b, batch in enumerate(batches):
            _close(batch.data[0].asnumpy(), RESULTS[f"{case}:{e}:{b}:data"],
                   _tolerance(spec["kwargs"]["inter_method"]) * scale)
            np.testing.assert_array_equal(batch.label[0].asnumpy(),
                                          RESULTS[f"{case}:{e}:{b}:label"])
        it.reset()
