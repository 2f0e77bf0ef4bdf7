"""`NDArray.reshape` gives a view, as MXNet 1.9.1's does: writes through either
array show in the other."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx


def test_writes_to_the_reshaped_array_show_in_the_original():
    a = mx.nd.arange(24).reshape((2, 3, 4))
    b = a.reshape((6, -1, 1))
    b[:] = 5
    # MXNet 1.9.1: a is all 5.
    np.testing.assert_array_equal(a.asnumpy(), np.full((2, 3, 4), 5, np.float32))
    a[0] = 1
    assert b.asnumpy()[:3].ravel().tolist() == [1] * 12


def test_special_codes_and_the_empty_shape():
    a = mx.nd.zeros((2, 3, 4))
    assert a.reshape((-4, 1, 2, -2)).shape == (1, 2, 3, 4)
    assert a.reshape((0, -1), reverse=True).shape == (3, 8)
    assert mx.nd.ones((1, 1)).reshape(()).shape == ()   # MXNet 1.9.1: a scalar array


def test_a_strided_slice_reshapes_to_a_copy():
    a = mx.nd.arange(12).reshape((3, 4))
    np.testing.assert_array_equal(a[:, ::2].reshape(-1).asnumpy(), [0, 2, 4, 6, 8, 10])


@pytest.mark.parametrize("args, kwargs, error", [
    (((7,),), {}, mx.base.ShapeError),
    (((24,),), {"foo": 1}, mx.MinimxError),
])
def test_bad_reshapes_are_refused(args, kwargs, error):
    with pytest.raises(error, match=r"reshape"):
        mx.nd.zeros((2, 3, 4)).reshape(*args, **kwargs)


def test_inplace_shape_methods_give_views_as_mxnets():
    t = (mx.nd.arange(6) + 1).reshape(2, 3)
    flat, wide = t.flatten(inplace=True), t.expand_dims(axis=-1, inplace=True)
    t[0] = -1
    assert flat.asnumpy().tolist() == [[-1, -1, -1], [4, 5, 6]] and wide.shape == (2, 3, 1)
    assert wide.squeeze(axis=2, inplace=True).asnumpy()[0].tolist() == [-1, -1, -1]
    assert mx.nd.ones((1, 3, 1)).squeeze(inplace=True).shape == (3,)
    copied = t.flatten()
    t[1] = 0
    assert copied.asnumpy()[1].tolist() == [4, 5, 6]
    with pytest.raises(mx.ShapeError, match="each axis once, of length 1"):
        t.squeeze(axis=0, inplace=True)
    with pytest.raises(mx.ShapeError, match="axis 4 is out of range"):
        t.expand_dims(axis=4, inplace=True)


def test_broadcast_to_takes_any_sequence_and_prepends_axes_as_mxnets_method():
    assert mx.nd.ones((1, 3)).broadcast_to(np.array([2, 3])).shape == (2, 3)
    assert mx.nd.arange(3).broadcast_to((2, 3)).asnumpy().tolist() == [[0, 1, 2]] * 2
    with pytest.raises(mx.ShapeError, match="cannot broadcast"):
        mx.nd.ones((2, 3)).broadcast_to((3,))
