"""slice and slice_like against numpy slicing, their gradients and shape inference."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minimx.base import ShapeError

from gradcheck import check_gradient
from ops_support import floats, infer, run

FAST = settings(max_examples=40, deadline=None, database=None)
SMALL = hnp.array_shapes(min_dims=1, max_dims=3, max_side=5)
BOUND = st.none() | st.integers(-7, 7)


@FAST
@given(x=floats(shape=SMALL), data=st.data())
def test_slice_as_python_slicing(x, data):
    n = data.draw(st.integers(1, x.ndim))
    begin = tuple(data.draw(BOUND) for _ in range(n))
    end = tuple(data.draw(BOUND) for _ in range(n))
    step = data.draw(st.just(()) | st.tuples(*[st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3])
                                              for _ in range(n)]))
    # MXNet clamps out-of-range bounds as Python does; an empty axis is an error here.
    want = x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, step or (None,) * n,
                                                      strict=True))]
    params = {"begin": begin, "end": end, "step": step}
    if want.size == 0:
        with pytest.raises(ShapeError, match="empty"):
            run("slice", params, x)
        return
    np.testing.assert_array_equal(run("slice", params, x), want)
    assert infer("slice", params, [x.shape]) == ([x.shape], [want.shape])
    if x.size <= 24:
        check_gradient("slice", params, [x])


def test_slice_errors_and_unknown_dims():
    x = np.zeros((4, 5))
    with pytest.raises(ShapeError, match="0 step"):
        run("slice", {"begin": (0,), "end": (2,), "step": (0,)}, x)
    with pytest.raises(ShapeError, match="one length"):
        run("slice", {"begin": (0, 1), "end": (2,)}, x)
    with pytest.raises(ShapeError, match="more axes"):
        run("slice", {"begin": (0, 0, 0), "end": (1, 1, 1)}, x)
    # an unknown dim stays unknown; the others are sliced
    assert infer("slice", {"begin": (1, 1), "end": (3, None)}, [(0, 5)])[1] == [(0, 4)]


@FAST
@given(x=floats(shape=SMALL), data=st.data())
def test_slice_like(x, data):
    like = tuple(data.draw(st.integers(1, d)) for d in x.shape)
    axes = data.draw(st.just(()) | st.lists(st.integers(-x.ndim, x.ndim - 1), min_size=1,
                                            max_size=x.ndim, unique_by=lambda a: a % x.ndim)
                     .map(tuple))
    chosen = {a % x.ndim for a in axes} if axes else set(range(x.ndim))
    want = x[tuple(slice(0, like[i]) if i in chosen else slice(None) for i in range(x.ndim))]
    other = np.zeros(like, np.float32)
    np.testing.assert_array_equal(run("slice_like", {"axes": axes}, x, other), want)
    assert infer("slice_like", {"axes": axes}, [x.shape, like])[1] == [want.shape]
    if x.size <= 24:
        grads = check_gradient("slice_like", {"axes": axes}, [x, other.astype(np.float64)])
        assert not grads[1].any()


def test_slice_like_errors():
    with pytest.raises(ShapeError, match="longer"):
        run("slice_like", {}, np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ShapeError, match="one ndim"):
        run("slice_like", {}, np.zeros((2, 3)), np.zeros((2,)))
    with pytest.raises(ShapeError, match="beyond"):
        run("slice_like", {"axes": (1,)}, np.zeros((2, 3)), np.zeros((2,)))
