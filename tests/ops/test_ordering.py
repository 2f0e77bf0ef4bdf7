"""topk, sort, argsort, argmax and argmin against numpy's stable sorts (on axes this
short MXNet's std::sort is an insertion sort, so ties keep the lower index first in both
directions), with gradients and the hidden outputs MXNet's graphs count. Longer axes with
ties: tests/ops/test_model_ops_mxnet.py (MXNet's own orders)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minimx as mx
from minimx.base import ShapeError
from minimx.ops import get_op
from minimx.ops.ordering import mxnet_order

from gradcheck import check_gradient
from ops_support import infer, run

FAST = settings(max_examples=40, deadline=None, database=None)
SMALL = hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)
# small integers: many ties
TIED = hnp.arrays(np.float64, SMALL, elements=st.integers(-2, 2).map(float))


def reference_order(x, axis, ascend):
    """Stable descending order as -x's stable ascending one (exact for these values)."""
    return np.argsort(x if ascend else -x, axis=axis, kind="stable")


@FAST
@given(x=TIED, ascend=st.booleans(), data=st.data())
def test_sort_argsort_stable_order(x, ascend, data):
    axes = st.integers(-x.ndim, x.ndim - 1)
    # flattened only while at most 16 long: longer, MXNet's ties are not in index order
    axis = data.draw(st.none() | axes if x.size <= 16 else axes)
    flat, ax = (x.reshape(-1), 0) if axis is None else (x, axis)
    order = reference_order(flat, ax, ascend)
    np.testing.assert_array_equal(mxnet_order(flat, ax, ascend, flat.shape[ax]), order)
    params = {"axis": axis, "is_ascend": ascend}
    np.testing.assert_array_equal(run("sort", params, x)[0], np.take_along_axis(flat, order, ax))
    np.testing.assert_array_equal(run("argsort", params, x), order)
    assert run("argsort", params, x).dtype == np.float32


@FAST
@given(x=TIED, ascend=st.booleans(), data=st.data())
def test_topk(x, ascend, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    k = data.draw(st.integers(0, x.shape[axis]))
    order = np.take(reference_order(x, axis, ascend), np.arange(k or x.shape[axis]), axis=axis)
    values = np.take_along_axis(x, order, axis)
    params = {"axis": axis, "k": k, "is_ascend": ascend}
    np.testing.assert_array_equal(run("topk", {**params, "ret_typ": "indices"}, x)[0], order)
    got_values, got_indices = run("topk", {**params, "ret_typ": "both", "dtype": "int32"}, x)
    np.testing.assert_array_equal(got_values, values)
    assert got_indices.dtype == np.int32
    mask = np.zeros(x.shape)
    np.put_along_axis(mask, order, 1, axis)
    np.testing.assert_array_equal(run("topk", {**params, "ret_typ": "mask"}, x)[0], mask)
    assert infer("topk", {**params, "ret_typ": "value"}, [x.shape], [None, None])[1] == \
        [values.shape] * 2


@FAST
@given(data=st.data())
def test_topk_and_sort_gradients(data):
    shape = data.draw(SMALL)
    # distinct values: finite differences must not reorder them
    x = data.draw(hnp.arrays(np.float64, shape, elements=st.integers(-50, 50), unique=True)) / 7
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    check_gradient("topk", {"axis": axis, "k": 1, "ret_typ": "value"}, [x])
    check_gradient("topk", {"axis": axis, "k": 0, "ret_typ": "both"}, [x])
    check_gradient("sort", {"axis": axis, "is_ascend": False}, [x])


@FAST
@given(x=TIED, keepdims=st.booleans(), data=st.data())
def test_argmax_argmin(x, keepdims, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    for name, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        out = run(name, {"axis": axis, "keepdims": keepdims}, x)
        if axis is None:
            want = np.full((1,) * x.ndim if keepdims else (1,), fn(x))
        else:
            want = fn(x, axis=axis, keepdims=keepdims)
            want = want.reshape(want.shape or (1,))
        np.testing.assert_array_equal(out, want)
        assert out.dtype == x.dtype
        assert infer(name, {"axis": axis, "keepdims": keepdims}, [x.shape])[1] == [want.shape]


def test_hidden_outputs_as_mxnet():
    d = mx.sym.var("d")
    for ret_typ, outputs, visible in (("value", 2, ["t_output0"]), ("indices", 1, ["t_output"]),
                                      ("mask", 1, ["t_output"]),
                                      ("both", 2, ["t_output0", "t_output1"])):
        op = get_op("topk")
        p = op.parse_params({"ret_typ": ret_typ})
        assert op.num_outputs(p) == outputs
        assert mx.sym.topk(d, ret_typ=ret_typ, name="t").list_outputs() == visible
    assert mx.sym.sort(d, name="s").list_outputs() == ["s_output0"]


def test_topk_k_beyond_the_axis():
    with pytest.raises(ShapeError, match="k=5"):
        run("topk", {"k": 5}, np.zeros((2, 4)))
