"""_zeros / _ones / _full, _arange, _contrib_arange_like, shape_array and size_array
against numpy references, with their shape and dtype inference."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.base import OperatorError, ShapeError
from minimx.ops import get_op

from ops_support import SHAPES, floats, infer, run

FAST = settings(max_examples=30, deadline=None, database=None)


@FAST
@given(shape=SHAPES, dtype=st.sampled_from(["float32", "float64", "int32", "uint8", "bool"]),
       value=st.sampled_from([0.0, 1.0, 2.5, -3.0]))
def test_filled_arrays(shape, dtype, value):
    for name, params, fill in (("_zeros", {}, 0), ("_ones", {}, 1),
                               ("_full", {"value": value}, value)):
        out = run(name, {"shape": shape, "dtype": dtype, **params})
        np.testing.assert_array_equal(out, np.full(shape, fill, dtype))
        assert out.dtype == dtype
        op = get_op(name)
        p = op.parse_params({"shape": str(shape), "dtype": dtype, **params})
        assert op.infer_shape(p, [], [None]) == ([], [shape])
        assert op.infer_type(p, [], [None]) == ([], [np.dtype(dtype)])


def test_filled_shape_may_come_from_the_output():
    assert infer("_zeros", {"shape": (2, 0)}, [], [(2, 5)]) == ([], [(2, 5)])
    with pytest.raises(ShapeError, match=r"unknown"):
        run("_ones", {"shape": (2, 0)})


def test_filled_shape_from_the_graph_runs_bound():
    # GluonNLP's begin states: zeros of (layers, 0, hidden), the batch known from the data.
    x = mx.sym.var("x")
    y = mx.sym.elemwise_add(mx.sym.ones(shape=(0, 3)), x)
    ex = y.bind(mx.cpu(), {"x": mx.nd.array(np.arange(6).reshape(2, 3))}, grad_req="null")
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), np.arange(6).reshape(2, 3) + 1)


def test_minus_one_dimensions_are_unknown_as_zero_ones_are():
    # MXNet's test_transpose_infer_shape_back: (-1, -1) ones take (3, 2) from the graph
    s = mx.sym.ones(shape=[2, 3]) + mx.sym.transpose(mx.sym.ones(shape=[-1, -1]))
    np.testing.assert_array_equal(s.bind(mx.cpu(), args={}).forward()[0].asnumpy(),
                                  np.full((2, 3), 2.0))
    assert infer("_zeros", {"shape": (-1, 4)}, [], [(3, 4)]) == ([], [(3, 4)])
    with pytest.raises(ShapeError, match=r"unknown \(0 or -1\)"):
        run("_ones", {"shape": (-1, 2)})


@FAST
@given(start=st.integers(-5, 5), length=st.integers(1, 6), repeat=st.integers(1, 3),
       step=st.sampled_from([0.5, 1.0, 2.0, -1.5]))
def test_arange(start, length, repeat, step):
    stop = start + step * length - step / 4  # just short of length + 1 values
    out = run("_arange", {"start": start, "stop": stop, "step": step, "repeat": repeat})
    want = np.repeat([start + i * step for i in range(math.ceil((stop - start) / step))], repeat)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert out.dtype == np.float32 and infer("_arange", {"start": start, "stop": stop,
                                                         "step": step, "repeat": repeat},
                                             [])[1] == [out.shape]


def test_arange_one_bound_dtype_and_errors():
    out = run("_arange", {"start": 4, "dtype": "int64"})
    assert out.dtype == np.int64 and out.tolist() == [0, 1, 2, 3]
    with pytest.raises(ShapeError, match="empty"):
        run("_arange", {"start": 3, "stop": 1})
    with pytest.raises(OperatorError, match="step"):
        run("_arange", {"start": 0, "stop": 3, "step": 0})
    with pytest.raises(OperatorError, match="infer_range"):
        run("_arange", {"start": 0, "infer_range": True})



def test_nd_arange_computes_in_its_dtype_as_mxnets_kernel():
    # MXNet 1.9.1: an integer dtype takes start and step as integers; float32 sums in float32.
    assert mx.nd.arange(1.3, 10.6, 1.3, dtype="int32").asnumpy().tolist() == list(range(1, 9))
    assert mx.nd.arange(-2.7, 3, 1.5, dtype="int8").asnumpy().tolist() == [-2, -1, 0, 1]
    assert mx.nd.arange(0.1, 1, 0.1).asnumpy()[-1] == np.float32(0.9000000357627869)
    assert mx.nd.arange(0, 3, repeat=2, dtype="int64").asnumpy().tolist() == [0, 0, 1, 1, 2, 2]


@FAST
@given(x=floats(dtype=np.float32), data=st.data())
def test_arange_like(x, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    start, step, repeat = data.draw(st.sampled_from([(0.0, 1.0, 1), (1.0, 0.5, 2),
                                                     (-2.0, 3.0, 3)]))
    params = {"start": start, "step": step, "repeat": repeat, "axis": axis}
    out = run("_contrib_arange_like", params, x)
    shape = x.shape if axis is None else (x.shape[axis],)
    n = math.prod(shape)
    want = np.array([start + (i // repeat) * step for i in range(n)]).reshape(shape)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert out.dtype == x.dtype
    assert infer("_contrib_arange_like", params, [x.shape])[1] == [shape]


@FAST
@given(x=floats())
def test_shape_and_size_arrays(x):
    assert run("shape_array", {}, x).tolist() == list(x.shape)
    assert run("size_array", {}, x).tolist() == [x.size]
    assert run("shape_array", {}, x).dtype == np.int64
    assert infer("shape_array", {}, [(0, 3)]) == ([(0, 3)], [(2,)])
