"""The engine, status checking, memory descriptors and memory objects.

Everything here is a thin owner of a oneDNN handle: each Python object frees
its handle when collected (``ffi.gc``), and every call that can fail goes
through ``check``, which turns a oneDNN status into a BackendError.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ..base import BFLOAT16, BackendError
from ._loader import native

FLOAT32 = np.dtype(np.float32)
# The data types of tensors the binding handles (bf16 primitives use bfloat16,
# INT8 ones the integer types), by the name of their oneDNN counterpart (enum mmx_dtype).
DTYPES: dict[np.dtype, str] = {np.dtype(np.float32): "F32", BFLOAT16: "BF16",
                              np.dtype(np.int32): "S32", np.dtype(np.int8): "S8",
                              np.dtype(np.uint8): "U8"}
_LETTERS = "abcdefghijkl"
_FORMAT_ANY, _FORMAT_BLOCKED = 1, 2

_engine = None
_engine_lock = threading.Lock()


def check(status: int, what: str) -> None:
    """Raise BackendError naming ``what`` and oneDNN's account of the failure."""
    if status:
        ffi, lib = native().ffi, native().lib
        detail = ffi.string(lib.mmx_last_error()).decode(errors="replace")
        raise BackendError(f"oneDNN {what} failed: {detail}")


def engine():
    """The process's CPU engine (a cffi pointer), created on first use.

    There is no process-wide stream: each Plan owns one, so that plans can run
    on different threads at once.
    """
    global _engine
    with _engine_lock:
        if _engine is None:
            ffi, lib = native().ffi, native().lib
            out = ffi.new("mmx_engine **")
            check(lib.mmx_engine_create(out), "engine creation")
            # Never destroyed: at exit, memories and primitives may be freed
            # after it in any order, and they refer to it.
            _engine = out[0]
        return _engine


def as_dims(shape: Sequence[int], what: str) -> tuple[int, ...]:
    """A shape as a tuple of positive ints, or a BackendError naming ``what``."""
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise BackendError(f"{what}: {shape!r} is not a shape") from None
    if not 1 <= len(dims) <= 12 or any(d < 1 for d in dims):
        raise BackendError(f"{what}: shape {tuple(shape)} is not 1 to 12 positive dims")
    return dims


def as_dtype(dtype: object, what: str) -> np.dtype:
    """``dtype`` as one of the numpy dtypes in DTYPES, or a BackendError naming ``what``."""
    value: np.dtype | None = None
    try:
        value = None if dtype is None else np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        pass
    if value is None or value not in DTYPES:
        known = ", ".join(str(d) for d in DTYPES)
        raise BackendError(f"{what}: data type {dtype!r} is not one of {known}")
    return value


def dtype_code(dtype: np.dtype) -> int:
    """The C enum value (mmx_dtype) of one of the DTYPES."""
    return getattr(native().lib, f"MMX_{DTYPES[dtype]}")


def c_order_strides(dims: Sequence[int]) -> list[int]:
    """Element strides of a C-contiguous array of these dims."""
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= d
    return strides[::-1]


class MemoryDesc:
    """A oneDNN memory descriptor: dims, a data type (one of DTYPES, float32
    unless given) and a layout.

    ``layout`` uses oneDNN's notation: ``abcd`` is plain NCHW, ``aBcd16b`` is
    NCHW with channels blocked by 16, ``any`` lets a primitive choose.

    >>> MemoryDesc.plain((1, 3, 8, 8))
    MemoryDesc((1, 3, 8, 8), abcd)
    >>> MemoryDesc.plain((2, 4), np.uint8)
    MemoryDesc((2, 4), ab, uint8)
    """

    __slots__ = ("_md", "shape", "dtype", "layout", "strides", "nbytes", "_plain")

    def __init__(self, md) -> None:
        """Takes ownership of an ``mmx_md *``; use the class methods instead."""
        ffi, lib = native().ffi, native().lib
        self._md = ffi.gc(md, lib.mmx_md_destroy)
        info = ffi.new("mmx_layout *")
        check(lib.mmx_md_layout(md, info), "memory descriptor query")
        self.shape = tuple(info.dims[0:info.ndims])
        self.dtype: np.dtype = next(d for d in DTYPES if dtype_code(d) == info.dtype)
        self.nbytes = int(info.size)
        self.layout = _layout_name(info)
        # Element strides of the outer dims (each dim's, when the layout is strided).
        self.strides = tuple(info.strides[0:info.ndims]) if info.format_kind == _FORMAT_BLOCKED \
            else ()
        self._plain: bool | None = None

    @classmethod
    def plain(cls, shape: Sequence[int], dtype: object = FLOAT32) -> MemoryDesc:
        """Row-major (C-contiguous) layout: what a numpy array has."""
        dims = as_dims(shape, "plain memory descriptor")
        return cls.strided(dims, c_order_strides(dims), dtype)

    @classmethod
    def strided(cls, shape: Sequence[int], strides: Sequence[int],
                dtype: object = FLOAT32) -> MemoryDesc:
        """Any plain layout, given element strides."""
        dims = as_dims(shape, "strided memory descriptor")
        if len(strides) != len(dims):
            raise BackendError(f"strides {tuple(strides)} do not match shape {dims}")
        code = dtype_code(as_dtype(dtype, "strided memory descriptor"))
        ffi, lib = native().ffi, native().lib
        out = ffi.new("mmx_md **")
        check(lib.mmx_md_create_strided(out, len(dims), dims, list(strides), code),
              f"memory descriptor {dims} strides {tuple(strides)}")
        return cls(out[0])

    def part(self, shape: Sequence[int], offsets: Sequence[int]) -> tuple[MemoryDesc, int]:
        """The part of this strided layout of ``shape`` from ``offsets`` on (a
        slice, read in place): its descriptor, with these strides, and the byte
        offset of its first element. The offset is for the caller to add to the
        buffer's address; it is not put in the descriptor, whose offset the
        matmul of newer oneDNN (3.13) ignores."""
        dims = as_dims(shape, "memory part")
        if not self.is_strided:
            raise BackendError(f"a part of {self.brief}: only a strided layout has parts")
        if len(offsets) != len(dims) or len(dims) != len(self.shape) or any(
                o < 0 or o + d > p for o, d, p in zip(offsets, dims, self.shape, strict=True)):
            raise BackendError(f"memory part {dims} at {tuple(offsets)} is not inside "
                               f"{self.shape}")
        start = sum(o * s for o, s in zip(offsets, self.strides, strict=True))
        return MemoryDesc.strided(dims, self.strides, self.dtype), start * self.dtype.itemsize

    def permuted(self, axes: Sequence[int]) -> MemoryDesc:
        """The same bytes with the axes in the order ``axes`` (numpy's transpose:
        axis k of the result is axis ``axes[k]`` of this one)."""
        n = len(self.shape)
        if sorted(axes) != list(range(n)):
            raise BackendError(f"axes {tuple(axes)} are not a permutation of {n} dims")
        perm = [0] * n
        for k, a in enumerate(axes):
            perm[a] = k   # oneDNN's: where each axis goes
        ffi, lib = native().ffi, native().lib
        out = ffi.new("mmx_md **")
        check(lib.mmx_md_permute(out, self._md, perm), f"permuting {self} by {tuple(axes)}")
        return MemoryDesc(out[0])

    @property
    def is_strided(self) -> bool:
        """Whether the layout is plain strides, in any order (no blocking)."""
        return self.layout not in ("any", "opaque") and self.layout.isalpha() \
            and self.layout.islower()

    @classmethod
    def ordered(cls, shape: Sequence[int], order: str, dtype: object = FLOAT32) -> MemoryDesc:
        """The unblocked layout of ``shape`` whose dims run outermost first as in
        ``order`` (oneDNN's letters: ``acdb`` is NHWC).

        >>> MemoryDesc.ordered((1, 3, 8, 8), "acdb")
        MemoryDesc((1, 3, 8, 8), acdb)
        """
        dims = as_dims(shape, "ordered memory descriptor")
        if sorted(order) != list(_LETTERS[:len(dims)]):
            raise BackendError(f"layout {order!r} does not order the {len(dims)} dims of {dims}")
        strides = [0] * len(dims)
        step = 1
        for d in reversed([_LETTERS.index(ch) for ch in order]):
            strides[d] = step
            step *= dims[d]
        return cls.strided(dims, strides, dtype)

    @classmethod
    def any(cls, shape: Sequence[int], dtype: object = FLOAT32) -> MemoryDesc:
        """Layout left to the primitive that receives this descriptor."""
        dims = as_dims(shape, "memory descriptor")
        code = dtype_code(as_dtype(dtype, "memory descriptor"))
        ffi, lib = native().ffi, native().lib
        out = ffi.new("mmx_md **")
        check(lib.mmx_md_create_any(out, len(dims), dims, code), f"memory descriptor {dims}")
        return cls(out[0])

    @classmethod
    def channel_blocked(cls, shape: Sequence[int], block: int = 16,
                        dtype: object = FLOAT32) -> MemoryDesc:
        """Channels (dim 1) in blocks of `block` (8 or 16), the innermost dim:
        ``aBcd16b`` (nChw16c) for 4 dims; 3 to 5 dims.

        >>> MemoryDesc.channel_blocked((1, 32, 8, 8))
        MemoryDesc((1, 32, 8, 8), aBcd16b)
        """
        dims = as_dims(shape, "channel-blocked memory descriptor")
        if not 3 <= len(dims) <= 5 or block not in (8, 16):
            raise BackendError(f"no channel-blocked layout of {dims} in blocks of {block}")
        code = dtype_code(as_dtype(dtype, "memory descriptor"))
        ffi, lib = native().ffi, native().lib
        out = ffi.new("mmx_md **")
        check(lib.mmx_md_create_channel_blocked(out, len(dims), dims, code, block),
              f"memory descriptor {dims}")
        return cls(out[0])

    @classmethod
    def with_layout(cls, shape: Sequence[int], layout: str,
                    dtype: object = FLOAT32) -> MemoryDesc:
        """``shape`` in the named layout: an unblocked order (``acdb``, see
        `ordered`) or channels in blocks (``aBcd16b``, see `channel_blocked`).

        >>> MemoryDesc.with_layout((1, 32, 8, 8), "aBcd8b")
        MemoryDesc((1, 32, 8, 8), aBcd8b)
        """
        if layout.isalpha() and layout.islower():
            return cls.ordered(shape, layout, dtype)
        dims = as_dims(shape, "memory descriptor")
        rest = _LETTERS[2:len(dims)]
        for block in (8, 16):
            if layout == f"aB{rest}{block}b":
                return cls.channel_blocked(dims, block, dtype)
        raise BackendError(f"no layout {layout!r} of {dims}: give an order of "
                           f"{_LETTERS[:len(dims)]!r} or aB{rest}8b / aB{rest}16b")

    @classmethod
    def copy_of(cls, md) -> MemoryDesc:
        """An owned copy of a descriptor that something else owns."""
        ffi, lib = native().ffi, native().lib
        out = ffi.new("mmx_md **")
        check(lib.mmx_md_clone(out, md), "memory descriptor copy")
        return cls(out[0])

    @property
    def is_plain(self) -> bool:
        """Whether this is the layout of a C-contiguous array of ``shape``.

        Asked of oneDNN, which ignores the order of size-1 dims: a layout named
        ``acbd`` can still be plain.
        """
        if self._plain is None:
            self._plain = (self.layout != "any"
                           and self == MemoryDesc.plain(self.shape, self.dtype))
        return self._plain

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryDesc):
            return NotImplemented
        return bool(native().lib.mmx_md_equal(self._md, other._md))

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.layout))

    def __repr__(self) -> str:
        dtype = "" if self.dtype == FLOAT32 else f", {self.dtype}"
        return f"MemoryDesc({self.shape}, {self.layout}{dtype})"

    @property
    def brief(self) -> str:
        """``shape:layout`` for messages, plus ``:dtype`` unless float32 (the usual case)."""
        dtype = "" if self.dtype == FLOAT32 else f":{self.dtype}"
        return f"{self.shape}:{self.layout}{dtype}"


def _layout_name(info) -> str:
    if info.format_kind == _FORMAT_ANY:
        return "any"
    if info.format_kind != _FORMAT_BLOCKED:
        return "opaque"
    n = info.ndims
    blocked = {int(info.inner_idxs[i]) for i in range(info.inner_nblks)}
    # Outer dims from the largest stride to the smallest; dims split into
    # inner blocks are upper-cased and their blocks appended, as oneDNN does.
    order = sorted(range(n), key=lambda d: -info.strides[d])
    name = "".join(_LETTERS[d].upper() if d in blocked else _LETTERS[d] for d in order)
    return name + "".join(f"{info.inner_blks[i]}{_LETTERS[info.inner_idxs[i]]}"
                          for i in range(info.inner_nblks))


def check_array(array: object, shape: tuple[int, ...], what: str, writable: bool,
                dtype: np.dtype = FLOAT32) -> np.ndarray:
    """``array`` if it is a C-contiguous ndarray of ``shape`` and ``dtype``, else BackendError."""
    if not isinstance(array, np.ndarray):
        raise BackendError(f"{what}: expected a numpy.ndarray, got {type(array).__name__}")
    if array.dtype != dtype:
        raise BackendError(f"{what}: expected {dtype}, got {array.dtype}")
    if array.shape != shape:
        raise BackendError(f"{what}: expected shape {shape}, got {array.shape}")
    if not array.flags.c_contiguous:
        raise BackendError(f"{what}: the array is not C-contiguous "
                           "(use numpy.ascontiguousarray)")
    if writable and not array.flags.writeable:
        raise BackendError(f"{what}: the array is read-only")
    return array


class Memory:
    """A oneDNN memory object: a MemoryDesc plus a buffer.

    The buffer is a numpy array's (zero copy: ``from_numpy``), the library's
    (``allocate``, for blocked layouts), or none yet (``unbound``: a Plan
    binds one on each run).
    """

    __slots__ = ("desc", "_mem", "array", "owned")

    def __init__(self, desc: MemoryDesc, handle, allocate: bool) -> None:
        """Use the class methods instead."""
        ffi, lib = native().ffi, native().lib
        out = ffi.new("mmx_memory **")
        check(lib.mmx_memory_create(out, engine(), desc._md, handle, int(allocate)),
              f"memory creation for {desc}")
        self.desc = desc
        self._mem = ffi.gc(out[0], lib.mmx_memory_destroy)
        self.array: np.ndarray | None = None
        self.owned = allocate

    @classmethod
    def from_numpy(cls, array: np.ndarray, desc: MemoryDesc | None = None) -> Memory:
        """A memory over ``array``'s buffer (no copy; the array is kept alive).

        ``desc`` defaults to the array's plain layout (and data type) and must
        be plain too.
        """
        if desc is None:
            is_array = isinstance(array, np.ndarray)
            dtype = as_dtype(array.dtype, "from_numpy") if is_array else FLOAT32
            desc = MemoryDesc.plain(np.shape(array), dtype)
        if not desc.is_plain:
            raise BackendError(f"from_numpy needs a plain layout, got {desc}")
        check_array(array, desc.shape, "from_numpy", writable=False, dtype=desc.dtype)
        memory = cls(desc, native().ffi.NULL, allocate=False)
        memory.rebind(array)
        return memory

    @classmethod
    def allocate(cls, desc: MemoryDesc) -> Memory:
        """A memory with a buffer of its own, in any layout."""
        if desc.layout == "any":
            raise BackendError("cannot allocate memory for a layout that is still 'any'")
        return cls(desc, native().ffi.NULL, allocate=True)

    @classmethod
    def unbound(cls, desc: MemoryDesc) -> Memory:
        """A memory without a buffer yet."""
        return cls(desc, native().ffi.NULL, allocate=False)

    def rebind(self, array: np.ndarray) -> None:
        """Point a numpy-backed memory at another array of the same shape (no copy)."""
        if self.owned:
            raise BackendError("rebind: this memory owns its buffer")
        check_array(array, self.desc.shape, "rebind", writable=False, dtype=self.desc.dtype)
        ffi, lib = native().ffi, native().lib
        check(lib.mmx_memory_set_handle(self._mem, ffi.from_buffer(array)), "set data handle")
        self.array = array

    def __repr__(self) -> str:
        kind = "owned" if self.owned else "numpy" if self.array is not None else "unbound"
        return f"Memory({self.desc.brief}, {kind})"
