"""The deprecated `mx.nd.imdecode` and its `_imdecode` operator against MXNet 1.9.1's legacy
decoder kernel (tests/fixtures/image, written by tools/mxnet_image_fixtures.py): values,
dtypes and layout equal MXNet's for every case, and what MXNet refuses is refused.

MXNet 1.9.1's own Python front never reaches the kernel under Python 3 (the fixtures keep
its two failures): minimx's decodes where MXNet's fails, as the kernel would."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import (
    BFLOAT16,
    DataFileError,
    DTypeError,
    MinimxError,
    OperatorError,
    ShapeError,
)

pytest.importorskip("PIL")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "image"
CASES = json.loads((FIXTURES / "cases.json").read_text())
RESULTS = np.load(FIXTURES / "results.npz")
# What minimx raises for each case MXNet's kernel refuses (its message is in the fixture).
ERRORS = {"grey_as_colour": OperatorError, "too_many_channels": OperatorError,
          "clip_outside": OperatorError, "out_2d": ShapeError, "out_shape": ShapeError,
          "out_index": OperatorError, "out_bool": DTypeError, "mean_shape": ShapeError,
          "mean_rank": ShapeError, "mean_dtype": DTypeError, "not_an_image": DataFileError}


def _array(key: str, dtype: str) -> mx.nd.NDArray:
    values = RESULTS[key]
    return mx.nd.array(values.view(BFLOAT16) if dtype == "bfloat16" else values, dtype=dtype)


def _arguments(case: str, kwargs: dict, recorded: bool = True) -> dict:
    """The case's arguments, its mean and out the NDArrays MXNet had (`recorded`), or
    zeros of the shapes and dtypes it names (an error case's)."""
    args = {k: tuple(v) if k == "clip_rect" else v for k, v in kwargs.items()}
    for name, key in (("mean", "mean"), ("out", "out_in")):
        if name in kwargs:
            shape, dtype = kwargs[name]
            args[name] = _array(f"imdecode:{case}:{key}", dtype) if recorded else \
                mx.nd.zeros(tuple(shape), dtype=dtype)
    return args


def _bits(array: mx.nd.NDArray) -> np.ndarray:
    values = array.asnumpy()
    return values.view(np.uint16) if values.dtype == BFLOAT16 else values


@pytest.mark.parametrize("case, image, kwargs", CASES["imdecodes"],
                         ids=[c[0] for c in CASES["imdecodes"]])
def test_imdecode_equals_mxnets_kernel(case, image, kwargs):
    args = _arguments(case, kwargs)
    got = mx.nd.imdecode((FIXTURES / image).read_bytes(), **args)
    if "out" in args:
        assert got is args["out"]
    want = RESULTS[f"imdecode:{case}"]
    assert got.asnumpy().dtype == (BFLOAT16 if "bfloat16" in case else want.dtype)
    np.testing.assert_array_equal(_bits(got), want)


@pytest.mark.parametrize("case, image, kwargs, message", CASES["imdecode_errors"],
                         ids=[c[0] for c in CASES["imdecode_errors"]])
def test_imdecode_refuses_what_mxnet_refuses(case, image, kwargs, message):
    assert message.startswith("MXNetError")
    with pytest.raises(ERRORS[case]):
        mx.nd.imdecode((FIXTURES / image).read_bytes(), **_arguments(case, kwargs, recorded=False))


def test_decodes_where_mxnets_front_fails():
    # MXNet 1.9.1: no mean -> "Shape is unknown"; bytes -> "OpenCV Failed to decode image".
    assert set(CASES["imdecode_front"]) == {"no_mean", "bytes"}
    png = (FIXTURES / "color.png").read_bytes()
    np.testing.assert_array_equal(mx.nd.imdecode(png).asnumpy(), RESULTS["imdecode:color"])
    got = mx.nd.imdecode(png, mean=mx.nd.zeros((3, 10, 13)))
    np.testing.assert_array_equal(got.asnumpy(), RESULTS["imdecode:color"])


def test_the_operator_takes_the_bytes_as_latin1_text():
    png = (FIXTURES / "color.png").read_bytes()
    mean = _array("imdecode:mean_float32:mean", "float32")
    got = mx.nd._imdecode(mean, 0, 0, 0, 0, 0, 3, len(png), str_img=png.decode("latin-1"))
    np.testing.assert_array_equal(got.asnumpy(), RESULTS["imdecode:mean_float32"])
    clip = mx.nd.zeros((3, 6, 7))
    got = mx.nd._imdecode(clip, index=0, x0=2, y0=1, x1=9, y1=7, c=3, size=len(png),
                          str_img=png.decode("latin-1"))
    np.testing.assert_array_equal(got.asnumpy(), RESULTS["imdecode:clip"])
    with pytest.raises(OperatorError, match="size=999"):
        mx.nd._imdecode(mean, 0, 0, 0, 0, 0, 3, 999, str_img=png.decode("latin-1"))
    with pytest.raises(OperatorError, match="latin-1"):
        mx.nd._imdecode(mean, 0, 0, 0, 0, 0, 3, 1, str_img="\u20ac")


def test_out_is_written_after_its_pending_work():
    png = (FIXTURES / "color.png").read_bytes()
    out = mx.nd.zeros((2, 3, 10, 13))
    out += 100   # pending, or done: the decoded image lands after it either way
    mx.nd.imdecode(png, out=out, index=1)
    out *= 2
    got = out.asnumpy()
    np.testing.assert_array_equal(got[0], np.full((3, 10, 13), 200.0))
    np.testing.assert_array_equal(got[1], RESULTS["imdecode:color"] * 2)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(str_img="not bytes"), MinimxError, "not str"),
    (dict(clip_rect=(0.5, 0, 3, 3)), OperatorError, "must be integers"),
    (dict(clip_rect=(0, 0, 3)), OperatorError, r"\(x0, y0, x1, y1\)"),
    (dict(clip_rect=(5, 0, 2, 3)), OperatorError, "not inside"),
    (dict(channels=-1), OperatorError, "negative"),
    (dict(mean=np.zeros((3, 10, 13), np.float32)), OperatorError, "mean must be an NDArray"),
    (dict(out=mx.nd.zeros((2, 3, 10, 13)), index=-1), OperatorError, "index=-1"),
    (dict(out=mx.nd.zeros((3, 10, 13), dtype="int16")), DTypeError, "int16"),
])
def test_bad_arguments_are_named(kwargs, error, match):
    kwargs = dict({"str_img": (FIXTURES / "color.png").read_bytes()}, **kwargs)
    with pytest.raises(error, match=match):
        mx.nd.imdecode(**kwargs)
