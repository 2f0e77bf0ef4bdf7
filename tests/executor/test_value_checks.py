"""What forward(**kwargs) and copy_params_from accept:
a value of exactly its array's shape (nothing is broadcast) made of numbers,
as an NDArray, a numpy array or nested lists; anything else is refused at the
call, naming the argument and both shapes, and leaves the arrays unchanged."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx


def _conv():
    conv = mx.sym.Convolution(mx.sym.Variable("data"), kernel=(3, 3), num_filter=16, name="c")
    return conv.simple_bind(mx.cpu(), grad_req="null", data=(1, 3, 224, 224))


@pytest.mark.parametrize("name, shape, need", [
    ("c_bias", (1,), (16,)),
    ("c_weight", (16, 1, 1, 1), (16, 3, 3, 3)),
])
def test_copy_params_from_refuses_broadcastable_shapes(name, shape, need):
    ex = _conv()
    with pytest.raises(mx.ShapeError) as err:
        ex.copy_params_from({name: mx.nd.ones(shape)})
    assert str(err.value) == (f"copy_params_from: Shape not match! Argument {name}, "
                              f"need: {need}, received: {shape}")
    assert not ex.arg_dict[name].asnumpy().any()


def test_copy_params_from_names_auxiliary_states():
    bn = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn")
    ex = bn.simple_bind(mx.cpu(), grad_req="null", data=(2, 4, 3, 3))
    with pytest.raises(mx.ShapeError, match=r"Auxiliary state bn_moving_mean, need: \(4,\), "
                                            r"received: \(1,\)"):
        ex.copy_params_from({}, {"bn_moving_mean": np.zeros(1)})


def test_a_parameter_the_symbol_lacks_is_a_value_error_as_in_mxnet():
    # Module.set_params(..., allow_missing=True, allow_extra=False) reaches it (without
    # allow_missing, extras are ignored, in MXNet too); MXNet raises ValueError there
    ex = _conv()
    with pytest.raises(ValueError, match="'fc_weight' is not a parameter of the symbol") as err:
        ex.copy_params_from({"fc_weight": mx.nd.ones((2,))})
    assert isinstance(err.value, mx.MinimxError)
    mod = mx.mod.Module(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc"),
                        label_names=None)
    mod.bind(data_shapes=[("data", (1, 3))])
    mod.init_params()
    args, auxs = mod.get_params()
    with pytest.raises(ValueError, match="'extra' is not a parameter"):
        mod.set_params({**args, "extra": mx.nd.ones((1,))}, auxs, allow_missing=True)


@pytest.mark.parametrize("value", [np.ones((1, 1, 224, 224)), mx.nd.ones((1, 1, 224, 224)),
                                   np.ones((1, 3, 224, 225))])
def test_forward_refuses_another_shape(value):
    ex = _conv()
    with pytest.raises(mx.ShapeError) as err:
        ex.forward(data=value)
    assert str(err.value) == ("forward: Shape not match! Argument data, need: (1, 3, 224, 224), "
                              f"received: {value.shape}")
    assert not ex.arg_dict["data"].asnumpy().any()


@pytest.mark.parametrize("value, shown", [
    ("hello", "str of <U5"),
    (None, "NoneType of object"),
    (np.ones((2, 3), np.complex64), "ndarray of complex64"),
])
def test_forward_refuses_what_is_not_numbers(value, shown):
    ex = (mx.sym.Variable("data") + 1).simple_bind(mx.cpu(), grad_req="null", data=(2, 3))
    with pytest.raises(mx.DTypeError, match=f"forward: Argument data must be numbers, got {shown}"):
        ex.forward(data=value)


def test_forward_refuses_ragged_lists_naming_the_argument():
    ex = (mx.sym.Variable("data") + 1).simple_bind(mx.cpu(), grad_req="null", data=(2, 2))
    with pytest.raises(mx.DTypeError, match="forward: Argument data: cannot make an array"):
        ex.forward(data=[[1, 2], [3]])


def test_nested_lists_and_other_dtypes_are_converted():
    ex = (mx.sym.Variable("data") + 1).simple_bind(mx.cpu(), grad_req="null", data=(2, 3))
    out = ex.forward(data=[[1, 2, 3], [4, 5, 6]])[0].asnumpy()
    np.testing.assert_array_equal(out, [[2, 3, 4], [5, 6, 7]])
    out = ex.forward(data=mx.nd.array(np.full((2, 3), 7), dtype="int32"))[0].asnumpy()
    np.testing.assert_array_equal(out, np.full((2, 3), 8.0))
    assert out.dtype == np.float32


def test_backward_refuses_an_out_grad_that_is_not_numbers():
    ex = mx.sym.relu(mx.sym.Variable("x"), name="r").simple_bind(mx.cpu(), x=(2,))
    ex.forward(is_train=True)
    with pytest.raises(mx.DTypeError, match="backward: out_grad for r_output must be numbers, "
                                            "got str of <U2"):
        ex.backward(["ab"])
