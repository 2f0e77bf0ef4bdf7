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


# -- Pad, depth_to_space and space_to_depth --------------------------------------------

@FAST
@given(data=st.data(), mode=st.sampled_from(["constant", "edge", "reflect"]))
def test_pad_is_numpys_pad_on_the_spatial_axes(data, mode):
    ndim = data.draw(st.sampled_from([4, 5]))
    shape = data.draw(hnp.array_shapes(min_dims=ndim, max_dims=ndim, min_side=2, max_side=3))
    x = np.random.default_rng(0).standard_normal(shape)
    widths = [(0, 0), (0, 0)] + [tuple(data.draw(st.integers(0, d - 1)) for _ in range(2))
                                 for d in shape[2:]]
    params = {"mode": mode, "pad_width": tuple(w for pair in widths for w in pair),
              "constant_value": 1.5}
    want = (np.pad(x, widths, mode="constant", constant_values=1.5) if mode == "constant"
            else np.pad(x, widths, mode=mode))
    check("Pad", params, [x], want)


@pytest.mark.parametrize("shape, params, match", [
    ((2, 3, 4), {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 1)}, "must be 4-D or 5-D"),
    ((1, 2, 3, 3), {"mode": "edge", "pad_width": (0, 1, 0, 0, 1, 1, 1, 1)},
     r"the first four 0 \(no padding of N and C\)"),
    ((1, 2, 3, 3), {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 1)}, "must hold 8"),
    ((1, 2, 3, 3), {"mode": "reflect", "pad_width": (0, 0, 0, 0, 3, 0, 0, 0)},
     "mode='reflect' needs each pad narrower than its axis"),
])
def test_pad_refuses_what_mxnet_refuses(shape, params, match):
    with pytest.raises(ShapeError, match=match):
        infer("Pad", params, [shape])


def test_depth_to_space_and_back_follow_mxnets_block_order():
    x = np.arange(2 * 8 * 2 * 3, dtype=np.float64).reshape(2, 8, 2, 3)
    y = run("depth_to_space", {"block_size": 2}, x)
    # MXNet's order: output pixel (h*2 + i, w*2 + j) of channel c is input
    # channel (i*2 + j) * (C / 4) + c at (h, w).
    assert y[1, 1, 3, 4] == x[1, (1 * 2 + 0) * 2 + 1, 1, 2]
    check("depth_to_space", {"block_size": 2}, [x], y)
    check("space_to_depth", {"block_size": 2}, [y], x)
    with pytest.raises(ShapeError, match="6 channels do not divide into blocks of 2x2"):
        infer("depth_to_space", {"block_size": 2}, [(1, 6, 2, 2)])
    with pytest.raises(ShapeError, match="height 3 and width 4 must be multiples of "
                                         "block_size=2"):
        infer("space_to_depth", {"block_size": 2}, [(1, 1, 3, 4)])
    with pytest.raises(OperatorError, match="block_size=0 must be at least 1"):
        infer("space_to_depth", {"block_size": 0}, [(1, 1, 4, 4)])


@pytest.mark.parametrize("shape, params", [
    ((3,), {"k": 0}), ((3,), {"k": -2}), ((3, 4), {"k": 1}), ((4, 3), {"k": -2}),
    ((2, 3, 4), {"k": 0, "axis1": 2, "axis2": 0}), ((2, 3, 4), {"k": 2, "axis1": -1, "axis2": 1}),
])
def test_diag_is_numpys(shape, params):
    x = np.random.default_rng(1).standard_normal(shape)
    want = (np.diag(x, params["k"]) if x.ndim == 1
            else np.diagonal(x, params["k"], params.get("axis1", 0), params.get("axis2", 1)))
    check("diag", params, [x], want)


def test_diag_and_argmax_channel_refuse_what_has_no_answer():
    with pytest.raises(ShapeError, match=r"diag: k=3 lies outside a 2x3 matrix"):
        infer("diag", {"k": 3}, [(2, 3)])
    with pytest.raises(ShapeError, match="the two axes must differ"):
        infer("diag", {"axis1": 1, "axis2": -1}, [(2, 3)])
    with pytest.raises(ShapeError, match=r"argmax_channel: data of shape \(3,\) has no channel"):
        infer("argmax_channel", {}, [(3,)])
    np.testing.assert_array_equal(run("argmax_channel", {}, np.array([[[0, 5], [3, 1]]])),
                                  [[1, 0]])
