"""DLPack (`mx.nd.to_dlpack_for_read` / `to_dlpack_for_write` / `from_dlpack`, the NDArray
methods and ``__dlpack__``): MXNet 1.9.1's semantics, shown directly - a MXNet capsule
cannot be carried to another process, so there is no MXNet fixture of the memory itself.
Interop is shown with numpy's DLPack (torch is not installed here)."""
from __future__ import annotations

import ctypes
import gc
import threading
import time
import weakref

import numpy as np
import pytest

import minimx as mx
from minimx import engine
from minimx.base import BFLOAT16, DTYPE_TO_FLAG, DTypeError, MinimxError
from minimx.ndarray import dlpack
from minimx.ndarray.dlpack import DLPackError


def _name(capsule) -> str:
    return repr(capsule).split('"')[1]


def _values(dtype) -> np.ndarray:
    values = np.arange(24).reshape(2, 3, 4) % 5
    return values.astype(np.float32).astype(dtype) if dtype == BFLOAT16 else values.astype(dtype)


def test_mxnets_docstring_examples():
    x = mx.nd.ones((2, 3))
    y = mx.nd.to_dlpack_for_read(x)
    assert type(y).__name__ == "PyCapsule" and _name(y) == "dltensor"
    z = mx.nd.from_dlpack(y)
    assert isinstance(z, mx.nd.NDArray) and _name(y) == "used_dltensor"
    np.testing.assert_array_equal(z.asnumpy(), np.ones((2, 3)))
    w = mx.nd.to_dlpack_for_write(x)
    u = mx.nd.from_dlpack(w)
    u += 1
    u.wait_to_read()   # u has an engine variable of its own, as in MXNet
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), 2.0))


def test_methods_are_the_functions():
    x = mx.nd.arange(6).reshape((2, 3))
    for capsule in (x.to_dlpack_for_read(), x.to_dlpack_for_write()):
        assert _name(capsule) == "dltensor"
        np.testing.assert_array_equal(mx.nd.from_dlpack(capsule).asnumpy(), x.asnumpy())
    assert mx.nd.from_dlpack is dlpack.from_dlpack
    assert {"to_dlpack_for_read", "to_dlpack_for_write", "from_dlpack"} <= set(mx.nd.__all__)


def test_a_capsule_is_used_once():
    capsule = mx.nd.ones((2,)).to_dlpack_for_read()
    mx.nd.from_dlpack(capsule)
    with pytest.raises(DLPackError, match="consumed only once"):
        mx.nd.from_dlpack(capsule)


@pytest.mark.parametrize("dtype", list(DTYPE_TO_FLAG), ids=str)
def test_every_dtype_round_trips_sharing_memory(dtype):
    x = mx.nd.array(_values(dtype), dtype=dtype, ctx=mx.cpu(3))
    y = mx.nd.from_dlpack(x.to_dlpack_for_write())
    assert (y.dtype, y.shape, y.context) == (x.dtype, x.shape, mx.cpu(3))
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    y[0] = mx.nd.ones((3, 4), dtype=dtype)   # written through y, seen through x
    y.wait_to_read()
    assert (x.asnumpy()[0] == 1).all()


def test_bfloat16_travels_as_dlpacks_bfloat16():
    x = mx.nd.array([[1.5, -2.25]], dtype="bfloat16")
    if hasattr(np.dtypes, "register_dlpack_dtype"):
        # NumPy 2.5 and later read DLPack's bfloat16 as the type ml_dtypes registers.
        seen = np.from_dlpack(x)
        assert seen.dtype == BFLOAT16
        np.testing.assert_array_equal(seen.astype(np.float32), [[1.5, -2.25]])
    else:
        with pytest.raises((RuntimeError, BufferError)):   # not uint16: numpy has no bfloat16
            np.from_dlpack(x)
    assert mx.nd.from_dlpack(x.to_dlpack_for_read()).dtype == BFLOAT16


def test_mxnets_one_bit_bool_is_read():
    capsule = np.array([1, 0, 1], np.uint8).__dlpack__()
    tensor = dlpack._Managed.from_address(dlpack._get_pointer(capsule, b"dltensor")).dl_tensor
    tensor.dtype.code, tensor.dtype.bits = 1, 1   # kDLUInt, 1 bit: MXNet 1.9.1's bool
    np.testing.assert_array_equal(mx.nd.from_dlpack(capsule).asnumpy(), [True, False, True])


@pytest.mark.parametrize("view", ["columns", "reversed", "reshaped", "row", "scalar", "empty"])
def test_views_keep_their_strides(view):
    base = mx.nd.arange(24).reshape((4, 6))
    x = {"columns": lambda: base[:, ::2], "reversed": lambda: base[::-1],
         "reshaped": lambda: base.reshape((2, 3, 4)), "row": lambda: base[2],
         "scalar": lambda: mx.nd.array(np.float32(3)).reshape(()),
         "empty": lambda: mx.nd.zeros((0, 3))}[view]()
    y = mx.nd.from_dlpack(x.to_dlpack_for_read())
    assert y.shape == x.shape
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    seen_x, seen_y = np.from_dlpack(x), np.from_dlpack(y)
    assert seen_y.strides == seen_x.strides
    assert x.size == 0 or np.shares_memory(seen_x, seen_y)


def test_the_capsule_keeps_the_memory_alive():
    x = mx.nd.arange(5)
    capsule = x.to_dlpack_for_read()
    del x
    gc.collect()
    y = mx.nd.from_dlpack(capsule)
    del capsule
    gc.collect()
    np.testing.assert_array_equal(y.asnumpy(), np.arange(5))


def test_the_producer_is_released_when_the_last_view_goes():
    a = np.arange(5.0)
    alive = weakref.ref(a)
    y = mx.nd.from_dlpack(a)
    view = y[1:3]
    del a, y
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(view.asnumpy(), [1.0, 2.0])
    del view
    gc.collect()
    assert alive() is None   # the deleter ran


def test_writes_show_both_ways_with_numpy():
    a = np.zeros((2, 3), np.float32)
    y = mx.nd.from_dlpack(a)
    a[0, 0] = 3
    assert y.asnumpy()[0, 0] == 3
    y += 1
    y.wait_to_read()
    np.testing.assert_array_equal(a, [[4, 1, 1], [1, 1, 1]])
    x = mx.nd.zeros((2, 3))
    v = np.from_dlpack(x)   # a DLPack 1 capsule: numpy's array is writable
    v[1, 2] = 9
    assert x.asnumpy()[1, 2] == 9
    x[:] = x + 1
    x.wait_to_read()
    np.testing.assert_array_equal(v, [[1, 1, 1], [1, 1, 10]])


def test_dunder_protocol():
    x = mx.nd.arange(4, ctx=mx.cpu(2))
    assert x.__dlpack_device__() == (1, 2)
    copied = np.from_dlpack(x, copy=True)
    assert not np.shares_memory(copied, np.from_dlpack(x))
    np.testing.assert_array_equal(copied, [0, 1, 2, 3])
    with pytest.raises(DLPackError):
        x.__dlpack__(stream=1)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))   # CUDA


@pytest.fixture
def gate():
    event = threading.Event()
    yield event
    event.set()


def test_for_read_waits_for_pending_writes(gate):
    x = mx.nd.zeros((3,))
    data = np.from_dlpack(x)

    def write() -> None:
        gate.wait(10)
        data[:] = 5   # numpy's view of x's memory: what the pending write writes
    threading.Timer(0.05, gate.set).start()   # before the push: NaiveEngine runs it here
    engine.push(write, [], [x._var], name="pending write")
    y = mx.nd.from_dlpack(x.to_dlpack_for_read())
    np.testing.assert_array_equal(y.asnumpy(), [5, 5, 5])


def test_for_write_waits_for_pending_reads(gate):
    x = mx.nd.zeros((3,))
    done = []

    def read() -> None:
        gate.wait(10)
        time.sleep(0.01)
        done.append(True)
    threading.Timer(0.05, gate.set).start()
    engine.push(read, [x._var], [], name="pending read")
    x.to_dlpack_for_write()
    assert done == [True]


@pytest.mark.parametrize("given, error, match", [
    (np.arange(3.0), None, None),
    ([1, 2, 3], DLPackError, "got list"),
    (np.zeros(2, np.complex64), DTypeError, "type code 5"),
    (np.zeros(2).__dlpack__(max_version=(1, 0)), DLPackError, "not a 'dltensor' capsule"),
])
def test_from_dlpack_refuses_what_it_cannot_take(given, error, match):
    if error is None:
        assert mx.nd.from_dlpack(given).shape == (3,)
        return
    with pytest.raises(error, match=match):
        mx.nd.from_dlpack(given)


@pytest.mark.parametrize("fn", [mx.nd.to_dlpack_for_read, mx.nd.to_dlpack_for_write])
def test_export_needs_an_ndarray(fn):
    with pytest.raises(DLPackError, match="needs an NDArray, got ndarray"):
        fn(np.zeros(2))


def test_a_refused_capsule_is_left_to_its_owner():
    capsule = np.zeros(2, np.complex128).__dlpack__()
    with pytest.raises(DTypeError):
        mx.nd.from_dlpack(capsule)
    assert _name(capsule) == "dltensor"   # not consumed: its destructor frees it


def test_a_read_only_producer_is_refused():
    a = np.zeros(3)
    a.flags.writeable = False
    with pytest.raises(DLPackError, match="ndarray.__dlpack__"):
        mx.nd.from_dlpack(a)
    assert issubclass(DLPackError, MinimxError) and issubclass(DLPackError, BufferError)


def test_the_capsule_layout_is_dlpacks():
    # DLManagedTensor (v0.x): DLTensor is 48 bytes on 64-bit platforms, as in dlpack.h.
    assert ctypes.sizeof(dlpack._Tensor) == 48
    assert ctypes.sizeof(dlpack._Managed) == 64
