"""Executor.reshape: new input shapes, parameters shared, growth checked."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx


def test_reshape_shares_unchanged_arrays_and_checks_growth():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    ex = fc.simple_bind(mx.cpu(), grad_req="null", data=(2, 4))
    ex.arg_dict["fc_weight"][:] = np.arange(12).reshape(3, 4) / 10
    ex.arg_dict["fc_bias"][:] = 1.0
    with pytest.raises(mx.ShapeError, match="allow_up_sizing"):
        ex.reshape(data=(5, 4))
    bigger = ex.reshape(allow_up_sizing=True, data=(5, 4))
    assert bigger.arg_dict["fc_weight"] is ex.arg_dict["fc_weight"]
    x = np.ones((5, 4), np.float32)
    out = bigger.forward(data=x)[0].asnumpy()
    np.testing.assert_allclose(out, x @ (np.arange(12).reshape(3, 4) / 10).T + 1, rtol=1e-6)
    smaller = ex.reshape(data=(1, 4))
    assert smaller.outputs[0].shape == (1, 3)


def test_shrinking_gives_views_of_the_old_arrays():
    # MXNet's reshape to a smaller size: the first values of the old array, same memory.
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    ex = fc.simple_bind(mx.cpu(), grad_req="write", data=(4, 5))
    ex.arg_dict["data"][:] = np.arange(20).reshape(4, 5)
    ex.grad_dict["data"][:] = -np.arange(20).reshape(4, 5)
    small = ex.reshape(data=(2, 5))
    np.testing.assert_array_equal(small.arg_dict["data"].asnumpy(), np.arange(10).reshape(2, 5))
    np.testing.assert_array_equal(small.grad_dict["data"].asnumpy(),
                                  -np.arange(10).reshape(2, 5))
    small.arg_dict["data"][:] = 100
    np.testing.assert_array_equal(ex.arg_dict["data"].asnumpy()[:2], np.full((2, 5), 100))
    np.testing.assert_array_equal(ex.arg_dict["data"].asnumpy()[2:],
                                  np.arange(10, 20).reshape(2, 5))
    small.forward()   # the outputs are views too (MXNet's test_executor test_reshape)
    np.testing.assert_array_equal(ex.outputs[0].asnumpy()[:2], small.outputs[0].asnumpy())
    ex.arg_dict["fc_weight"][:] = np.arange(15).reshape(3, 5)
    other = ex.reshape(partial_shaping=True, data=(3, 2))
    np.testing.assert_array_equal(other.arg_dict["fc_weight"].asnumpy(),
                                  np.arange(6).reshape(3, 2))


def test_growing_gives_new_arrays():
    x = mx.sym.Variable("x")
    ex = (x * 2).simple_bind(mx.cpu(), grad_req="null", x=(2,))
    ex.arg_dict["x"][:] = 7
    big = ex.reshape(allow_up_sizing=True, x=(3,))
    np.testing.assert_array_equal(big.arg_dict["x"].asnumpy(), [0, 0, 0])
    np.testing.assert_array_equal(ex.arg_dict["x"].asnumpy(), [7, 7])


def test_the_monitor_callback_goes_along():
    conv = mx.sym.Convolution(mx.sym.var("data"), num_filter=2, kernel=(3, 3), name="conv")
    ex = conv.simple_bind(mx.cpu(), data=(1, 3, 8, 8), grad_req="null")
    seen: list[str] = []
    ex.set_monitor_callback(lambda name, array: seen.append(name))
    ex.reshape(allow_up_sizing=True, data=(1, 3, 10, 14)).forward()
    assert seen == ["conv_output"]   # MXNet 1.9.1's
