"""MXNet's binary NDArray list format (``.params`` files, ``mx.nd.save``) in pure numpy.

Layout (all little-endian; /work/shared/reference/mxnet-formats.md has the details):
``u64 0x112, u64 reserved, u64 count, count x record, u64 name_count, name_count x
(u64 length, UTF-8 bytes)``. A record is V2 (``0xF993FAC9``) or V3 (``0xF993FACA``:
``i32 stype``, [storage shape], ``i32 ndim`` + ``i64`` dims, ``i32 dev_type, i32 dev_id``,
``i32 type_flag``, [aux types and shapes], data, [aux data]), V1 (``0xF993FAC8``: no
stype), or pre-V1 (no magic: the first ``u32`` is ndim, dims are ``u32``).

:func:`save_arrays` writes exactly the bytes MXNet 1.9.1's ``mx.nd.save`` writes: V2 dense
records on ``cpu(0)``. :func:`load_arrays` reads every record version. Decisions where MXNet
gives no usable answer:

- **none arrays** (V2 or legacy ``ndim == 0``, V3 with a ``-1`` dim: no data follows) raise
  :class:`GraphFormatError`; MXNet 1.9.1's ``mx.nd.load`` rejects them too ("unknown storage
  type: -1"). For legacy records this follows the writers of that era, which never wrote
  0-d arrays; MXNet 1.9.1 instead reads a legacy ``ndim == 0`` as a scalar and then
  misparses whatever follows.
- **0-d arrays** cannot be saved: MXNet 1.9.1 writes them as V2 ``ndim == 0`` followed by
  data, which its own loader then reads as a none array and fails on. ``save_arrays``
  raises :class:`ShapeError` instead; reshape to ``(1,)``. V3 scalars load as shape ``()``.
- **Sparse** (``row_sparse``, ``csr``) records load **densified**, after checking indices
  against the shape; the dense result may not exceed ``max_densified_bytes`` because its
  size is not bounded by the file's size.
- **bfloat16** (flag 12) loads as ml_dtypes' ``bfloat16`` (:data:`minimx.base.BFLOAT16`);
  ``save_arrays`` writes it, and MXNet 1.9.1's own view of it (the structured dtype
  ``[('bfloat16', '<u2')]`` that ``asnumpy`` returns there), as flag 12.
- Flags 8-11 (int16, uint16, uint32, uint64) load and save, but MXNet 1.9.1's loader
  rejects them ("Unknown type enum").
- As in MXNet: the context is ignored (everything loads to CPU), bytes after the name
  table are ignored, and a repeated name keeps the last array.

Every malformed input raises :class:`GraphFormatError` naming the source, the record (or
header / name), the field and its byte offset. Each declared size is checked against the
bytes that remain before anything is allocated, so no input causes a huge allocation.
"""
from __future__ import annotations

import math
import os
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..base import (
    BFLOAT16,
    DTYPE_TO_FLAG,
    FLAG_TO_DTYPE,
    MXNET_BFLOAT16,
    DTypeError,
    GraphFormatError,
    MinimxError,
    ShapeError,
)
from .atomic import atomic_write

LIST_MAGIC = 0x112
NDARRAY_V1_MAGIC = 0xF993FAC8
NDARRAY_V2_MAGIC = 0xF993FAC9
NDARRAY_V3_MAGIC = 0xF993FACA
MAX_DENSIFIED_BYTES = 1 << 31

# MXNet's storage types (NDArrayStorageType), as files and `__storage_type__` write them.
STORAGE_TYPE_IDS = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_ROW_SPARSE, _CSR = STORAGE_TYPE_IDS["row_sparse"], STORAGE_TYPE_IDS["csr"]
_NUM_AUX = {0: 0, _ROW_SPARSE: 1, _CSR: 2}
_STYPE_NAMES = {_ROW_SPARSE: "row_sparse", _CSR: "csr"}
_CPU_DEV_TYPE = 1
_MAX_NDIM = 64  # numpy's limit; MXNet writes nothing near it.
# The smallest record that can load: pre-V1, ndim 1, ctx, type flag, no data.
_MIN_RECORD_BYTES = 4 + 4 + 8 + 4

_U32, _I32, _U64 = struct.Struct("<I"), struct.Struct("<i"), struct.Struct("<Q")
_I64_DIMS, _U32_DIMS = np.dtype("<i8"), np.dtype("<u4")

PathOrFile = str | os.PathLike | BinaryIO
ArraysIn = np.ndarray | Sequence[np.ndarray] | Mapping[str, np.ndarray]


class _Reader:
    """A bounds-checked cursor over the whole file; every error names where it stopped."""

    def __init__(self, buf: memoryview, source: str) -> None:
        self.buf = buf
        self.pos = 0
        self.source = source
        self.where = "list header"

    @property
    def left(self) -> int:
        return len(self.buf) - self.pos

    def error(self, field: str, problem: str, at: int | None = None) -> GraphFormatError:
        offset = self.pos if at is None else at
        return GraphFormatError(
            f"{self.source}: {self.where}: {field} at byte offset {offset}: {problem}")

    def need(self, nbytes: int, field: str) -> None:
        if nbytes > self.left:
            raise self.error(field, f"needs {nbytes} bytes but only {self.left} remain "
                                    f"(file is {len(self.buf)} bytes; truncated or corrupt)")

    def take(self, nbytes: int, field: str) -> memoryview:
        self.need(nbytes, field)
        view = self.buf[self.pos:self.pos + nbytes]
        self.pos += nbytes
        return view

    def scalar(self, fmt: struct.Struct, field: str) -> int:
        self.need(fmt.size, field)
        (value,) = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return value


def _read_dims(r: _Reader, ndim: int, dim_dtype: np.dtype, field: str) -> tuple[int, ...]:
    at = r.pos
    r.need(ndim * dim_dtype.itemsize, f"{field} ({ndim} dims)")
    if ndim > _MAX_NDIM:
        raise r.error(field, f"ndim {ndim} exceeds numpy's limit of {_MAX_NDIM}", at)
    raw = r.take(ndim * dim_dtype.itemsize, field)
    return tuple(int(d) for d in np.frombuffer(raw, dtype=dim_dtype))


def _read_shape(r: _Reader, field: str) -> tuple[int, ...]:
    """A V1/V2/V3 shape: ``i32 ndim`` then ``ndim x i64``."""
    at = r.pos
    ndim = r.scalar(_I32, f"{field} ndim")
    if ndim < 0:
        raise r.error(f"{field} ndim", f"negative ndim {ndim}", at)
    return _read_dims(r, ndim, _I64_DIMS, f"{field} dims")


def _check_dims(r: _Reader, shape: tuple[int, ...], field: str, at: int) -> None:
    if any(d < 0 for d in shape):
        raise r.error(field, f"negative dimension in shape {shape}", at)


def _dtype_of(r: _Reader, flag: int, field: str, at: int) -> np.dtype:
    if flag not in FLAG_TO_DTYPE:
        raise r.error(field, f"unknown type flag {flag} (MXNet knows 0-12)", at)
    return FLAG_TO_DTYPE[flag]


def _read_data(r: _Reader, shape: tuple[int, ...], dtype: np.dtype, field: str) -> np.ndarray:
    """``prod(shape)`` elements, copied out so the result owns writable, native-order memory."""
    count = math.prod(shape)
    at = r.pos
    r.need(count * dtype.itemsize, f"{field} ({count} x {dtype} for shape {shape})")
    if count == 0:
        # numpy still multiplies the non-zero dims together, so they must fit an intp.
        if math.prod(d for d in shape if d) * dtype.itemsize > np.iinfo(np.intp).max:
            raise r.error(field, f"empty shape {shape} is too large for numpy", at)
        return np.zeros(shape, dtype)
    raw = r.take(count * dtype.itemsize, field)
    if dtype == np.bool_:
        # Any non-zero byte is true; numpy's bool must hold exactly 0 or 1.
        return (np.frombuffer(raw, dtype=np.uint8) != 0).reshape(shape)
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(shape).astype(dtype)


def _none_error(r: _Reader, at: int, hint: str = "") -> GraphFormatError:
    return r.error("shape", "a 'none' array (unknown shape, no data); MXNet 1.9.1's "
                            f"mx.nd.load rejects it too{hint}", at)


def _read_legacy(r: _Reader, magic: int, at: int) -> np.ndarray:
    if magic == NDARRAY_V1_MAGIC:
        shape = _read_shape(r, "V1 shape")
        _check_dims(r, shape, "V1 shape", at)
    else:
        shape = _read_dims(r, magic, _U32_DIMS, f"pre-V1 shape dims (first u32 {magic:#x} "
                                                 "is no known magic, so it is read as ndim)")
    if not shape:
        raise _none_error(r, at)
    r.take(8, "context")
    flag_at = r.pos
    dtype = _dtype_of(r, r.scalar(_I32, "type flag"), "type flag", flag_at)
    return _read_data(r, shape, dtype, "data")


def _read_record(r: _Reader, max_densified_bytes: int) -> np.ndarray:
    at = r.pos
    magic = r.scalar(_U32, "magic")
    if magic not in (NDARRAY_V2_MAGIC, NDARRAY_V3_MAGIC):
        return _read_legacy(r, magic, at)
    version = "V3" if magic == NDARRAY_V3_MAGIC else "V2"
    stype_at = r.pos
    stype = r.scalar(_I32, "stype")
    if stype not in _NUM_AUX:
        raise r.error("stype", f"unknown storage type {stype} (0 dense, 1 row_sparse, 2 csr)",
                      stype_at)
    if version == "V3" and stype:
        raise r.error("stype", f"V3 (numpy-semantics) records are dense only, got stype {stype}",
                      stype_at)
    num_aux = _NUM_AUX[stype]
    sshape_at = r.pos
    sshape = _read_shape(r, "storage shape") if num_aux else ()
    shape_at = r.pos
    shape = _read_shape(r, "shape")
    if version == "V2" and not shape:
        raise _none_error(r, shape_at, " (or a 0-d array, which MXNet 1.9.1 writes so but "
                                       "cannot read back)")
    if version == "V3" and -1 in shape:
        raise _none_error(r, shape_at)
    _check_dims(r, shape, "shape", shape_at)
    _check_dims(r, sshape, "storage shape", sshape_at)
    r.take(8, "context")
    flag_at = r.pos
    dtype = _dtype_of(r, r.scalar(_I32, "type flag"), "type flag", flag_at)
    if not num_aux:
        return _read_data(r, shape, dtype, "data")
    aux_dtypes, aux_shapes = [], []
    for i in range(num_aux):
        aux_at = r.pos
        aux_dtype = _dtype_of(r, r.scalar(_I32, f"aux {i} type flag"), f"aux {i} type flag",
                              aux_at)
        if aux_dtype.kind not in "iu":
            raise r.error(f"aux {i} type flag", f"sparse indices must be integers, got {aux_dtype}",
                          aux_at)
        aux_dtypes.append(aux_dtype)
        aux_shapes.append(_read_shape(r, f"aux {i} shape"))
    _check_sparse_layout(r, stype, shape, sshape, aux_shapes, dtype, max_densified_bytes, at)
    data = _read_data(r, sshape, dtype, "sparse data")
    aux = [_read_data(r, aux_shape, aux_dtype, f"aux {i} data")
           for i, (aux_dtype, aux_shape) in enumerate(zip(aux_dtypes, aux_shapes, strict=True))]
    return _densify(r, stype, shape, dtype, data, aux, at)


def _check_sparse_layout(r: _Reader, stype: int, shape: tuple[int, ...],
                         sshape: tuple[int, ...], aux_shapes: list[tuple[int, ...]],
                         dtype: np.dtype, max_densified_bytes: int, at: int) -> None:
    """Shapes must agree with each other before any data is read or the dense array made."""
    name = _STYPE_NAMES[stype]
    dense_bytes = math.prod(shape) * dtype.itemsize
    if dense_bytes > max_densified_bytes:
        raise r.error("shape", f"{name} array of shape {shape} would densify to {dense_bytes} "
                               f"bytes, over the limit of {max_densified_bytes}", at)
    if stype == _ROW_SPARSE:
        # Stored rows keep the trailing dims; one row index per stored row.
        ok = (len(shape) >= 1 and len(sshape) == len(shape) and sshape[1:] == shape[1:]
              and aux_shapes == [sshape[:1]])
    else:
        # aux 0 is indptr (rows + 1), aux 1 the column index of each stored value.
        ok = len(shape) == 2 and len(sshape) == 1 and aux_shapes == [(shape[0] + 1,), sshape]
    if not ok:
        raise r.error("storage/aux shapes", f"inconsistent {name} layout: shape {shape}, "
                                            f"storage shape {sshape}, aux shapes {aux_shapes}", at)


def _densify(r: _Reader, stype: int, shape: tuple[int, ...], dtype: np.dtype,
             data: np.ndarray, aux: list[np.ndarray], at: int) -> np.ndarray:
    dense = np.zeros(shape, dtype)
    if stype == _ROW_SPARSE:
        (rows,) = aux
        if rows.size and (rows.min() < 0 or rows.max() >= shape[0]):
            raise r.error("aux 0 data", f"row_sparse row index out of range [0, {shape[0]})", at)
        dense[rows.astype(np.intp)] = data
        return dense
    indptr, cols = aux
    # Compare neighbours rather than np.diff(...) < 0, which wraps for unsigned indices.
    if indptr[0] != 0 or indptr[-1] != data.size or np.any(indptr[1:] < indptr[:-1]):
        raise r.error("aux 0 data", "csr indptr must start at 0, never decrease and end at "
                                    f"nnz={data.size}", at)
    if cols.size and (cols.min() < 0 or cols.max() >= shape[1]):
        raise r.error("aux 1 data", f"csr column index out of range [0, {shape[1]})", at)
    # Every index is now known to be in range, so the casts to intp are exact.
    row_of_value = np.repeat(np.arange(shape[0]), np.diff(indptr).astype(np.intp))
    dense[row_of_value, cols.astype(np.intp)] = data
    return dense


def _source_bytes(src: str | os.PathLike | bytes | bytearray | memoryview | BinaryIO
                  ) -> tuple[memoryview, str]:
    if isinstance(src, (bytes, bytearray, memoryview)):
        return memoryview(src).cast("B"), "<bytes>"
    if isinstance(src, (str, os.PathLike)):
        return memoryview(Path(src).read_bytes()), os.fspath(src)
    if hasattr(src, "read"):
        data = src.read()
        if not isinstance(data, (bytes, bytearray)):
            raise MinimxError(f"load_arrays needs a binary file object, read() gave {type(data)}")
        return memoryview(data), getattr(src, "name", "<file object>")
    raise MinimxError(f"load_arrays takes a path, bytes or a binary file object, not {type(src)}")


def load_arrays(fname_or_bytes: str | os.PathLike | bytes | bytearray | memoryview | BinaryIO,
                *, max_densified_bytes: int = MAX_DENSIFIED_BYTES
                ) -> list[np.ndarray] | dict[str, np.ndarray]:
    """Read an MXNet NDArray list file: a list if it was saved without names, else a dict.

    >>> save_arrays("w.params", {"arg:fc_weight": np.ones((2, 3), np.float32)})
    >>> load_arrays("w.params")["arg:fc_weight"].shape
    (2, 3)
    """
    buf, source = _source_bytes(fname_or_bytes)
    r = _Reader(buf, source)
    header = r.scalar(_U64, "header")
    if header != LIST_MAGIC:
        raise r.error("header", f"{header:#x} is not the NDArray list magic {LIST_MAGIC:#x}", 0)
    r.scalar(_U64, "reserved")
    count_at = r.pos
    count = r.scalar(_U64, "array count")
    if count * _MIN_RECORD_BYTES + _U64.size > r.left:
        raise r.error("array count", f"{count} arrays cannot fit in the {r.left} bytes that "
                                     f"follow ({_MIN_RECORD_BYTES} bytes is the smallest record)",
                      count_at)
    arrays = []
    for i in range(count):
        r.where = f"record {i} of {count}"
        arrays.append(_read_record(r, max_densified_bytes))
    r.where = "name table"
    names_at = r.pos
    name_count = r.scalar(_U64, "name count")
    if name_count not in (0, count):
        raise r.error("name count", f"{name_count} names for {count} arrays (must be 0 or equal)",
                      names_at)
    names = []
    for j in range(name_count):
        r.where = f"name {j} of {name_count}"
        length = r.scalar(_U64, "name length")
        name_at = r.pos
        raw = r.take(length, "name bytes")
        try:
            names.append(str(raw, "utf-8"))
        except UnicodeDecodeError as exc:
            raise r.error("name bytes", f"not UTF-8 ({exc.reason} at byte {exc.start})",
                          name_at) from None
    if not names:
        return arrays
    return dict(zip(names, arrays, strict=True))


def _entries(data: ArraysIn) -> tuple[list[str], list[tuple[str, np.ndarray]]]:
    """``(names, [(label, array)])``; labels only serve error messages."""
    if isinstance(data, np.ndarray):
        pairs, names = [("array 0", data)], []
    elif isinstance(data, Mapping):
        names = list(data)
        bad = [k for k in names if not isinstance(k, str)]
        if bad:
            raise MinimxError(f"save_arrays: dict keys must be str, got {bad[0]!r}")
        pairs = [(repr(k), v) for k, v in data.items()]
    elif isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        pairs, names = [(f"array {i}", v) for i, v in enumerate(data)], []
    else:
        raise MinimxError(f"save_arrays takes an array, a list of arrays or a dict of them, "
                        f"not {type(data)}")
    for label, value in pairs:
        if not isinstance(value, np.ndarray):
            raise MinimxError(f"save_arrays: {label} is a {type(value)}, not a numpy array")
    return names, pairs


def _record(label: str, array: np.ndarray) -> tuple[bytes, np.ndarray]:
    """A V2 dense record header and its little-endian data, as MXNet 1.9.1 writes them."""
    if array.dtype == MXNET_BFLOAT16:
        array = array.view(BFLOAT16)
    native = array.dtype.newbyteorder("=")
    if native not in DTYPE_TO_FLAG:
        raise DTypeError(f"save_arrays: {label} has dtype {array.dtype}, which MXNet's format "
                         f"cannot hold (supported: {', '.join(map(str, DTYPE_TO_FLAG))})")
    flag, wire = DTYPE_TO_FLAG[native], native.newbyteorder("<")
    if array.ndim == 0:
        raise ShapeError(f"save_arrays: {label} is 0-d; V2 records cannot hold a scalar "
                         "(MXNet cannot load the one it writes), reshape it to (1,)")
    header = struct.pack(f"<IiI{array.ndim}qiii", NDARRAY_V2_MAGIC, 0, array.ndim,
                         *array.shape, _CPU_DEV_TYPE, 0, flag)
    return header, np.ascontiguousarray(array, dtype=wire).reshape(-1).view(np.uint8)


def save_arrays(fname_or_fileobj: PathOrFile, data: ArraysIn) -> None:
    """Write arrays in MXNet's NDArray list format, byte for byte as MXNet 1.9.1 does.

    ``data`` is a list (saved without names), a dict of str to array (names saved in
    insertion order), or one array (saved as a one-element list, like ``mx.nd.save``).
    Every entry is checked before the file is opened, so a bad entry leaves no file;
    a path is replaced whole or not at all (`atomic_write`), so a failed save
    keeps the file that was there.

    >>> save_arrays("net-0000.params", {"arg:w": np.zeros((4, 2), np.float32)})
    """
    names, pairs = _entries(data)
    records = [_record(label, array) for label, array in pairs]
    chunks: list[bytes | memoryview] = [struct.pack("<QQQ", LIST_MAGIC, 0, len(records))]
    for header, payload in records:
        chunks += [header, payload.data]
    chunks.append(_U64.pack(len(names)))
    for name in names:
        encoded = name.encode("utf-8")
        chunks += [_U64.pack(len(encoded)), encoded]
    if hasattr(fname_or_fileobj, "write"):
        for chunk in chunks:
            fname_or_fileobj.write(chunk)
        return
    with atomic_write(fname_or_fileobj) as f:
        for chunk in chunks:
            f.write(chunk)
