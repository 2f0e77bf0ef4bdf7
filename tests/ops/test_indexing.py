"""take, pick, one_hot and where against numpy references (float indices truncated,
then clipped or wrapped), with gradients and shape inference."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minimx.base import OperatorError, ShapeError

from gradcheck import check_gradient
from ops_support import floats, infer, run

FAST = settings(max_examples=40, deadline=None, database=None)
SMALL = hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)


def indices(shape, low=-6, high=6):
    return hnp.arrays(np.float32, shape, elements=st.integers(low, high).map(float)) | \
        hnp.arrays(np.float32, shape, elements=st.floats(0, 3.875, width=32))


def off_integers(idx):
    """The same indices, half-way between integers, where finite differences do not
    move them."""
    return np.trunc(idx) + np.copysign(0.5, idx)


def brought_in(idx, size, mode):
    i = np.trunc(idx).astype(np.int64)
    return np.mod(i, size) if mode == "wrap" else np.clip(i, 0, size - 1)


@FAST
@given(x=floats(shape=SMALL), data=st.data())
def test_take(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    mode = data.draw(st.sampled_from(["clip", "wrap"]))
    idx = data.draw(indices(hnp.array_shapes(min_dims=1, max_dims=2, max_side=3)))
    params = {"axis": axis, "mode": mode}
    want = np.take(x, brought_in(idx, x.shape[axis], mode), axis=axis)
    np.testing.assert_array_equal(run("take", params, x, idx), want)
    assert infer("take", params, [x.shape, idx.shape])[1] == [want.shape]
    check_gradient("take", params, [x, off_integers(idx)])  # repeated indices add up


def test_take_raise_mode():
    with pytest.raises(OperatorError, match=r"outside \[0, 3\)"):
        run("take", {"mode": "raise"}, np.zeros(3), np.array([0.0, 3.0]))
    assert run("take", {"mode": "raise"}, np.arange(3.0), np.array([2.0, 0.0])).tolist() == [2, 0]


@FAST
@given(x=floats(shape=SMALL), data=st.data())
def test_pick(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    mode = data.draw(st.sampled_from(["clip", "wrap"]))
    keepdims = data.draw(st.booleans())
    rest = x.shape[:axis % x.ndim] + x.shape[axis % x.ndim + 1:]
    idx = data.draw(indices(st.just(rest)))
    want = np.take_along_axis(x, np.expand_dims(brought_in(idx, x.shape[axis], mode), axis),
                              axis)
    want = want if keepdims else want.reshape(rest)
    params = {"axis": axis, "mode": mode, "keepdims": keepdims}
    np.testing.assert_array_equal(run("pick", params, x, idx), want)
    assert infer("pick", params, [x.shape, None]) == ([x.shape, rest], [want.shape])
    check_gradient("pick", params, [x, off_integers(idx)])


def test_pick_needs_an_axis():
    with pytest.raises(OperatorError, match="axis=None"):
        run("pick", {"axis": None}, np.zeros((2, 3)), np.zeros(2))


@FAST
@given(idx=indices(SMALL, -2, 6), depth=st.integers(1, 5),
       dtype=st.sampled_from(["float32", "int32", "uint8"]))
def test_one_hot(idx, depth, dtype):
    params = {"depth": depth, "on_value": 3, "off_value": 1, "dtype": dtype}
    out = run("one_hot", params, idx)
    want = np.where(np.trunc(idx)[..., None] == np.arange(depth), 3, 1)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, want)
    assert infer("one_hot", params, [idx.shape])[1] == [idx.shape + (depth,)]


@FAST
@given(x=floats(shape=SMALL), data=st.data())
def test_where(x, data):
    y = data.draw(floats(shape=st.just(x.shape)))
    cond = data.draw(hnp.arrays(np.float32, data.draw(st.sampled_from([x.shape, x.shape[:1]])),
                                elements=st.sampled_from([0.0, 1.0, -2.5])))
    mask = (cond != 0).reshape(cond.shape + (1,) * (x.ndim - cond.ndim))
    np.testing.assert_array_equal(run("where", {}, cond, x, y), np.where(mask, x, y))
    assert infer("where", {}, [cond.shape, x.shape, None]) == \
        ([cond.shape, x.shape, x.shape], [x.shape])
    grads = check_gradient("where", {}, [cond, x, y])
    assert not grads[0].any()


def test_where_shape_errors():
    with pytest.raises(ShapeError, match="condition"):
        run("where", {}, np.ones(3), np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ShapeError, match="one shape"):
        run("where", {}, np.ones(2), np.ones((2, 3)), np.ones((2, 1)))
