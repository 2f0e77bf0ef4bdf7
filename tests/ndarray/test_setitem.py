"""`a[key] = value`: values copied at the call, shapes and dtypes checked at the call."""
from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import numpy as np
import pytest

import minimx as mx
from minimx import engine


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave an operation blocked


def _held(shape: tuple[int, ...], gate: threading.Event) -> mx.nd.NDArray:
    """A zero array whose later writes wait behind a blocking operation until `gate`
    is set: a write made before that is really deferred."""
    y = mx.nd.zeros(shape)
    engine.push(lambda: gate.wait(10), [], [y._var], name="blocked")
    return y


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_a_numpy_value_is_copied_at_the_call(gate, dtype):
    y = _held((3,), gate)
    buf = np.arange(3, dtype=dtype)  # float32: no conversion, the buffer itself
    y[:] = buf
    buf[:] = 7  # the caller refills its buffer before the write has run
    assert y.version == 0  # the write is still pending
    gate.set()
    np.testing.assert_array_equal(y.asnumpy(), [0, 1, 2])


def test_a_slice_assignment_is_copied_at_the_call(gate):
    y = _held((2, 3), gate)
    buf = np.ones((3,), dtype=np.float32)
    y[1] = buf
    buf[:] = 9
    gate.set()
    np.testing.assert_array_equal(y.asnumpy(), [[0, 0, 0], [1, 1, 1]])


@pytest.mark.parametrize("value, want", [
    (5, [5, 5, 5]),
    (np.float64(2.5), [2.5, 2.5, 2.5]),
    (np.array([4.0]), [4, 4, 4]),              # (1,) into (3,)
    ([1, 2, 3], [1, 2, 3]),
    (np.array([[1, 2, 3]]), [1, 2, 3]),        # a leading length-1 axis, as numpy
    (np.array([True, False, True]), [1, 0, 1]),
    (mx.nd.array([6.0]), [6, 6, 6]),
])
def test_values_that_broadcast_are_assigned(value, want):
    y = mx.nd.zeros((3,))
    y[:] = value
    np.testing.assert_array_equal(y.asnumpy(), want)


def test_a_part_of_the_array_is_assigned_by_broadcasting():
    y = mx.nd.zeros((2, 3))
    y[:, 1:] = np.array([[1.0], [2.0]])
    y[0, 0] = 9
    np.testing.assert_array_equal(y.asnumpy(), [[9, 1, 1], [0, 2, 2]])


@pytest.mark.parametrize("value", [np.ones((2,)), np.ones((2, 3)), mx.nd.ones((4,))])
def test_values_that_cannot_broadcast_are_refused_at_the_call(gate, value):
    y = _held((3,), gate)
    with pytest.raises(mx.ShapeError,
                       match=rf"shape {re.escape(str(value.shape))}.*target of shape \(3,\)"):
        y[:] = value
    gate.set()
    np.testing.assert_array_equal(y.asnumpy(), [0, 0, 0])  # nothing was pushed


def test_the_message_names_the_slice_and_the_array_shapes():
    y = mx.nd.zeros((4, 3))
    with pytest.raises(mx.ShapeError, match=r"\(2,\) .* target of shape \(2, 3\) "
                                            r"\(array shape \(4, 3\)\)"):
        y[1:3] = np.ones(2)


@pytest.mark.parametrize("value", ["hello", "3", None, 1 + 2j, [1, [2, 3]], {"a": 1}])
def test_values_that_are_not_numbers_are_refused_at_the_call(value):
    y = mx.nd.zeros((3,))
    with pytest.raises(mx.DTypeError, match="setitem: cannot assign"):
        y[:] = value
    np.testing.assert_array_equal(y.asnumpy(), [0, 0, 0])


@pytest.mark.parametrize("key", [5, (0, 7), (Ellipsis, [0], 5)])
def test_an_index_past_the_array_is_an_index_error_naming_it(key):
    a = mx.nd.zeros((2, 3))
    for access in (lambda: a[key], lambda: a.__setitem__(key, 1)):
        with pytest.raises(mx.MinimxError, match="out of bounds") as info:
            access()
        assert isinstance(info.value, IndexError)   # ends iteration, as in MXNet
    assert len(list(a)) == 2


def test_an_element_takes_a_one_element_array():
    # MXNet 1.x sees an element as shape (1,): x[0] = nd.array([v]) is the usual form.
    x = mx.nd.zeros(3)
    x[0] = mx.nd.array([5])
    x[-1] = np.array([[7.0]])
    y = mx.nd.zeros((2, 3))
    y[0, 1] = [4]
    np.testing.assert_array_equal(x.asnumpy(), [5, 0, 7])
    np.testing.assert_array_equal(y.asnumpy(), [[0, 4, 0], [0, 0, 0]])
    with pytest.raises(mx.base.ShapeError, match=r"value of shape \(2,\)"):
        x[1] = mx.nd.array([1, 2])
