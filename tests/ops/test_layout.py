"""SwapAxis, reverse, squeeze, stack, repeat and tile against numpy, with gradients
and shape inference."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minimx.base import OperatorError, ShapeError
from minimx.ops import get_op

from gradcheck import check_gradient
from ops_support import floats, infer, run

FAST = settings(max_examples=30, deadline=None, database=None)
SMALL = hnp.array_shapes(min_dims=1, max_dims=3, max_side=3)


def axis_of(data, x, extra=0):
    return data.draw(st.integers(-x.ndim - extra, x.ndim - 1 + extra))


def check(name, params, inputs, want):
    out = run(name, params, *inputs)
    np.testing.assert_array_equal(out, want)
    assert infer(name, params, [a.shape for a in inputs])[1] == [want.shape]
    check_gradient(name, params, inputs)


@FAST
@given(x=floats(shape=SMALL), data=st.data())
def test_swapaxis_and_reverse(x, data):
    a, b = axis_of(data, x), axis_of(data, x)
    check("SwapAxis", {"dim1": a, "dim2": b}, [x], np.swapaxes(x, a, b))
    axes = tuple(data.draw(st.sets(st.integers(0, x.ndim - 1), min_size=1)))
    check("reverse", {"axis": axes}, [x], np.flip(x, axes))


def test_swapaxis_infers_backwards():
    assert infer("swapaxes", {"dim1": 0, "dim2": 2}, [None], [(2, 3, 4)]) == \
        ([(4, 3, 2)], [(2, 3, 4)])


@FAST
@given(shape=SMALL, data=st.data())
def test_squeeze(shape, data):
    x = data.draw(floats(shape=st.just(shape + (1,))))
    ones = tuple(i for i, d in enumerate(x.shape) if d == 1)
    axis = data.draw(st.none() | st.sets(st.sampled_from(ones), min_size=1).map(tuple))
    dropped = ones if axis is None else axis
    want = x.reshape(tuple(d for i, d in enumerate(x.shape) if i not in dropped) or (1,))
    check("squeeze", {"axis": axis}, [x], want)


def test_squeeze_errors_on_a_longer_axis():
    with pytest.raises(ShapeError, match="size 1"):
        run("squeeze", {"axis": (0,)}, np.zeros((2, 1)))
    assert run("squeeze", {}, np.zeros((1, 1))).shape == (1,)


@FAST
@given(x=floats(shape=SMALL), n=st.integers(1, 3), data=st.data())
def test_stack(x, n, data):
    axis = axis_of(data, x, extra=1)
    arrays = [x * (i + 1) for i in range(n)]
    check("stack", {"axis": axis, "num_args": n}, arrays, np.stack(arrays, axis))


def test_stack_inference_both_ways_and_errors():
    op = get_op("stack")
    p = op.parse_params({"num_args": "2", "axis": "1"})
    assert op.infer_shape(p, [None, None], [(4, 2, 3)]) == ([(4, 3)] * 2, [(4, 2, 3)])
    assert op.infer_shape(p, [(4, 0), (0, 3)], [None]) == ([(4, 3)] * 2, [(4, 2, 3)])
    with pytest.raises(ShapeError, match="one shape"):
        op.infer_shape(p, [(4, 3), (4, 2)], [None])


@FAST
@given(x=floats(shape=SMALL), repeats=st.integers(1, 3), data=st.data())
def test_repeat(x, repeats, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    check("repeat", {"repeats": repeats, "axis": axis}, [x], np.repeat(x, repeats, axis))


@FAST
@given(x=floats(shape=SMALL), reps=st.lists(st.integers(1, 3), min_size=1, max_size=4))
def test_tile(x, reps):
    check("tile", {"reps": tuple(reps)}, [x], np.tile(x, reps))


@pytest.mark.parametrize("name, params", [("repeat", {"repeats": 0}),
                                          ("tile", {"reps": (2, 0)})])
def test_counts_must_be_positive(name, params):
    with pytest.raises(OperatorError, match="at least 1"):
        run(name, params, np.zeros((2, 2)))
