"""DLPack: NDArrays shared with other libraries without a copy, as MXNet 1.9.1's
`to_dlpack_for_read`, `to_dlpack_for_write` and `from_dlpack`.

A capsule is DLPack's legacy (v0.x) PyCapsule named "dltensor", holding a
`DLManagedTensor`, as MXNet's are. numpy's exporter makes them here (its capsule keeps the
array's buffer alive until the consumer calls the deleter); `from_dlpack` reads one into
an array whose memory is the producer's and calls the deleter when the last view of it
goes. numpy's own importer is not used for that: it makes arrays from legacy capsules
read-only, and MXNet's `from_dlpack` gives arrays one writes to. numpy has no bfloat16
DLPack type, so bfloat16 leaves as uint16 with the capsule's type set to DLPack's
bfloat16 here, and comes back the same way; MXNet's bool (unsigned, 1 bit) is read too.

As in MXNet, the NDArray `from_dlpack` makes has an engine variable of its own: operations
on it and on the array the capsule came from are not ordered with each other, so wait
(``wait_to_read``, ``mx.nd.waitall``) between writing through one and using the other.

>>> import minimx as mx
>>> x = mx.nd.ones((2, 3))
>>> u = mx.nd.from_dlpack(x.to_dlpack_for_write())
>>> u += 1
>>> u.wait_to_read()
>>> x.asnumpy().tolist()
[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ..base import BFLOAT16, DTypeError, MinimxError
from ..context import cpu
from .ndarray import NDArray


class DLPackError(MinimxError, BufferError):
    """What DLPack cannot carry: a used or foreign capsule, memory not on the CPU, a
    stream. Also a BufferError, what the array API's consumers expect."""


# DLPack's C structures (dlpack.h): the tensor, the legacy managed tensor (v0.x, MXNet's)
# and the versioned one (v1, numpy's answer to ``__dlpack__(max_version=(1, 0))``).
class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


# The deleter is called with the GIL held, as a capsule's destructor would call it.
_Deleter = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32 * 2), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
_USED = ctypes.c_char_p(b"used_dltensor")   # a capsule keeps a pointer to its name
_CPU = 1   # kDLCPU
_BFLOAT = 4   # kDLBfloat
# (type code, bits) -> dtype: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6;
# MXNet 1.9.1 writes bool as kDLUInt of 1 bit (one byte an element all the same).
_DTYPES = {(0, 8): np.int8, (0, 16): np.int16, (0, 32): np.int32, (0, 64): np.int64,
           (1, 8): np.uint8, (1, 16): np.uint16, (1, 32): np.uint32, (1, 64): np.uint64,
           (2, 16): np.float16, (2, 32): np.float32, (2, 64): np.float64, (4, 16): BFLOAT16,
           (6, 8): np.bool_, (1, 1): np.bool_}

_capsule_api = ctypes.pythonapi
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _capsule_api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _capsule_api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _capsule_api))
_set_destructor = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetDestructor", _capsule_api))


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


def _exported(data: NDArray, **protocol: Any) -> Any:
    """The capsule numpy makes of `data`'s buffer (`protocol`: ``__dlpack__``'s keywords),
    with `data`'s device id and, for bfloat16, DLPack's bfloat16 type."""
    array = data._data
    bf16 = array.dtype == BFLOAT16
    try:
        capsule = (array.view(np.uint16) if bf16 else array).__dlpack__(**protocol)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        raise DLPackError(f"to_dlpack: an NDArray of {data.dtype}, shape {data.shape}: "
                          f"{exc}") from None
    versioned = _is_valid(capsule, _VERSIONED)
    struct = _ManagedVersioned if versioned else _Managed
    tensor = struct.from_address(_get_pointer(capsule, _VERSIONED if versioned else _LEGACY)
                                 ).dl_tensor
    tensor.device.device_id = data.context.device_id
    if bf16:
        tensor.dtype.code = _BFLOAT
    return capsule


def _wait_to_write(data: NDArray) -> None:
    """MXNet's WaitToWrite: an empty write, which waits for every pending read and write."""
    data._push(lambda: None, (), "to_dlpack_for_write")
    data.wait_to_read()


def _check(data: Any, what: str) -> None:
    if not isinstance(data, NDArray):
        raise DLPackError(f"{what}: needs an NDArray, got {type(data).__name__}")


def to_dlpack_for_read(data: NDArray) -> Any:
    """A DLPack capsule ("dltensor") of `data`'s memory, once every pending write to it has
    finished (pending reads may still run).

    >>> import minimx as mx
    >>> y = mx.nd.to_dlpack_for_read(mx.nd.ones((2, 3)))
    >>> type(y).__name__, mx.nd.from_dlpack(y).shape
    ('PyCapsule', (2, 3))
    """
    _check(data, "to_dlpack_for_read")
    data.wait_to_read()
    return _exported(data)


def to_dlpack_for_write(data: NDArray) -> Any:
    """A DLPack capsule ("dltensor") of `data`'s memory, once every pending read and write
    of it has finished: the consumer may write."""
    _check(data, "to_dlpack_for_write")
    _wait_to_write(data)
    return _exported(data)


def dlpack_export(data: NDArray, stream: Any, max_version: Any, dl_device: Any,
                  copy: bool | None) -> Any:
    """``NDArray.__dlpack__``: `to_dlpack_for_write`'s capsule, versioned when the consumer
    takes DLPack 1 (numpy then gives a writable array), a copy's when `copy`."""
    _wait_to_write(data)
    return _exported(data, stream=stream, max_version=max_version, dl_device=dl_device,
                     copy=copy)


class _ProducerMemory:
    """The memory of a consumed capsule, as numpy's ``__array_interface__`` describes it:
    arrays made from it keep it, and the last to go calls the producer's deleter."""

    def __init__(self, address: int, tensor: _Tensor, storage: np.dtype) -> None:
        self._address = address
        self._deleter = _Managed.from_address(address).deleter
        shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        strides = None if not tensor.strides else \
            tuple(tensor.strides[i] * storage.itemsize for i in range(tensor.ndim))
        self.__array_interface__ = {
            "version": 3, "shape": shape, "typestr": storage.str, "strides": strides,
            "data": ((tensor.data or 0) + tensor.byte_offset, False)}

    def __del__(self) -> None:
        if self._deleter:   # a NULL deleter: nothing to release
            self._deleter(self._address)


def from_dlpack(dlpack: Any) -> NDArray:
    """An NDArray of the memory a DLPack capsule ("dltensor", as `to_dlpack_for_read` /
    `to_dlpack_for_write` and other libraries make them) holds; the capsule is used up
    (renamed "used_dltensor", as MXNet does). An object with ``__dlpack__`` (a numpy
    array, a torch tensor) is asked for its capsule first.

    >>> import minimx as mx, numpy as np
    >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> b = mx.nd.from_dlpack(a)
    >>> a[0, 0] = 7
    >>> b.asnumpy()[0].tolist()
    [7.0, 1.0, 2.0]
    """
    if not _is_capsule(dlpack):
        if not hasattr(dlpack, "__dlpack__"):
            raise DLPackError(f"from_dlpack: needs a DLPack capsule or an object with "
                              f"__dlpack__, got {type(dlpack).__name__}")
        try:
            dlpack = dlpack.__dlpack__()
        except BufferError as exc:
            raise DLPackError(f"from_dlpack: {type(dlpack).__name__}.__dlpack__: {exc}") from None
    if not _is_valid(dlpack, _LEGACY):
        raise DLPackError(f"from_dlpack: {dlpack!r} is not a 'dltensor' capsule (DLPack's "
                          "legacy one, as MXNet 1.9.1 takes); a capsule is consumed only once")
    address = _get_pointer(dlpack, _LEGACY)
    tensor = _Managed.from_address(address).dl_tensor
    code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
    if (code, bits) not in _DTYPES or lanes != 1:
        raise DTypeError(f"from_dlpack: DLPack type code {code}, {bits} bits, {lanes} lanes "
                         "is not a dtype minimx has")
    if tensor.device.device_type != _CPU:
        raise DLPackError(f"from_dlpack: memory on DLPack device type "
                          f"{tensor.device.device_type}; minimx takes only the CPU's ({_CPU})")
    dtype = np.dtype(_DTYPES[code, bits])
    storage = np.dtype(np.uint16) if dtype == BFLOAT16 else dtype
    memory = _ProducerMemory(address, tensor, storage)
    # The deleter is the memory's to call now, not the capsule's.
    _set_name(dlpack, _USED)
    _set_destructor(dlpack, None)
    return NDArray(np.asarray(memory).view(dtype), ctx=cpu(tensor.device.device_id))
