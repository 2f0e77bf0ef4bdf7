"""The NDArray: a numpy buffer behind a dependency-engine variable.

Every operation on NDArrays is pushed to the engine with the variables it reads
and writes, and returns at once; reading values (`asnumpy`, `wait_to_read`)
waits for the writes they depend on. Views from basic slicing share their base's
variable, so the engine orders them with it.
"""
from __future__ import annotations

import math
import reprlib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .. import engine, profiler
from ..base import (
    DEFAULT_DTYPE,
    DTypeError,
    IndexRangeError,
    MinimxError,
    ShapeError,
    as_dtype,
    as_shape,
    check_array_size,
    is_numeric,
)
from ..context import Context, as_context, cpu
from ..ops.fluent import FLUENT
from ..ops.tensor import reshape_shape

_CPU0 = cpu()   # where arrays are unless made on another context


# The Python and numpy numbers an NDArray operator takes as a scalar operand.
NUMBER = (int, float, np.number, np.bool_)


class _AutogradMode(threading.local):
    """Whether `mx.autograd` records operator calls and runs them in training mode:
    per thread, as MXNet's. `invoke` reads them on every call, so they are plain
    attributes; `minimx.autograd` sets them and does the recording (`provide_autograd`)."""

    recording = False
    training = False


AUTOGRAD = _AutogradMode()
_ABOVE: dict[str, Callable[..., Any]] = {}


def provide_autograd(**entry_points: Callable[..., Any]) -> None:
    """Register the functions of `minimx.autograd` that NDArray's methods and
    `invoke` call (the autograd layer sits above this one)."""
    _ABOVE.update(entry_points)


def autograd_entry(name: str) -> Callable[..., Any]:
    if name not in _ABOVE:
        raise MinimxError(f"NDArray autograd ({name}) needs the layer that provides it: "
                          "import minimx")
    return _ABOVE[name]


def _generated() -> Any:
    # The mx.nd operator functions are made in the package's __init__, which
    # imports this module first: methods look them up when they run.
    from .. import ndarray
    return ndarray


class NDArray:
    """An n-dimensional array on the CPU, computed asynchronously.

    Its `context` is the CPU context it was made on, as in MXNet (every one is
    the same memory here): operator results are on their first input's.

    >>> import minimx as mx
    >>> a = mx.nd.ones((2, 3), ctx=mx.cpu(1))
    >>> (a * 2 + 1).asnumpy()[0, 0]
    np.float32(3.0)
    >>> (a * 2 + 1).context
    cpu(1)
    """

    # _ag: the array's entry in the graph autograd records (None: not in one).
    __slots__ = ("_data", "_var", "_ctx", "_ag", "__weakref__")
    __array_priority__ = 1000.0  # numpy defers `ndarray op NDArray` to us

    def __init__(self, data: np.ndarray, var: engine.Var | None = None,
                 ctx: Context = _CPU0) -> None:
        self._data = data
        self._var = var if var is not None else engine.new_variable()
        self._ctx = ctx
        self._ag: Any = None
        profiler.track_allocation(data)

    # -- engine seam -------------------------------------------------------
    def _push(self, fn: Callable[[], None], reads: Sequence[NDArray] = (),
              name: str = "ndarray", *, here_if_ready: bool = False) -> None:
        """Push `fn`, which writes this array and reads `reads` (on the calling
        thread, before returning, when `here_if_ready` and nothing pending holds it back)."""
        engine.push(fn, [r._var for r in reads], [self._var], name=name,
                    here_if_ready=here_if_ready)

    def wait_to_read(self) -> None:
        """Block until every pending write to this array has finished."""
        engine.wait_for_var(self._var)

    @property
    def version(self) -> int:
        """How many writes to this array (or its base) have finished."""
        return self._var.version

    # -- properties -------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def size(self) -> int:
        return self._data.size

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def context(self) -> Context:
        return self._ctx

    ctx = context

    @property
    def T(self) -> NDArray:
        """The transpose, a copy; an array of fewer than two axes itself (as MXNet's)."""
        return self if self.ndim < 2 else _generated().transpose(self)

    # -- values ---------------------------------------------------------------
    def asnumpy(self) -> np.ndarray:
        """A numpy copy of the values (waits for pending writes)."""
        self.wait_to_read()
        return self._data.copy()

    def asscalar(self) -> Any:
        if self.size != 1:
            raise ShapeError(f"asscalar needs an array of one element, shape is {self.shape}")
        return self.asnumpy().reshape(()).item() if self.dtype.kind == "b" else \
            self.asnumpy().reshape(())[()]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = self.asnumpy()
        return out if dtype is None else out.astype(dtype)

    # -- DLPack (ndarray/dlpack.py) ------------------------------------------------
    def to_dlpack_for_read(self) -> Any:
        """``mx.nd.to_dlpack_for_read`` of this array: a DLPack capsule of its memory."""
        return _generated().to_dlpack_for_read(self)

    def to_dlpack_for_write(self) -> Any:
        """``mx.nd.to_dlpack_for_write`` of this array."""
        return _generated().to_dlpack_for_write(self)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        """The array API's export (``np.from_dlpack(a)``): this array's memory once its
        pending reads and writes have finished, as `to_dlpack_for_write`."""
        return _generated().dlpack.dlpack_export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, self._ctx.device_id)   # DLPack's kDLCPU

    def copy(self) -> NDArray:
        return self.copyto(self._ctx)

    # `copy.copy`, `copy.deepcopy` and pickle: a new buffer and a fresh engine
    # variable, made once pending writes have finished. Copying the variable
    # itself would clone the engine's record of pending work, which then
    # never completes. The copy is on cpu(0), as MXNet's (its pickled state
    # keeps no context).
    def __copy__(self) -> NDArray:
        return NDArray(self.asnumpy())

    def __deepcopy__(self, memo: dict) -> NDArray:
        return self.__copy__()

    def __reduce__(self) -> tuple[type, tuple[np.ndarray]]:
        return NDArray, (self.asnumpy(),)

    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into `other` (an NDArray of the same shape) or a new array on a context."""
        if isinstance(other, Context):
            other = empty(self.shape, other, self.dtype)
        if not isinstance(other, NDArray):
            raise MinimxError(f"copyto needs an NDArray or a Context, got {type(other).__name__}")
        if other.shape != self.shape:
            raise ShapeError(f"copyto: shape {self.shape} into shape {other.shape}")
        if other is not self:
            if AUTOGRAD.recording:
                autograd_entry("record_copy")(self, other)
            self._copy_into(other)
        return other

    def as_in_context(self, context: Context) -> NDArray:
        """This array on `context`: itself if it is there, else a copy."""
        context = as_context(context, "as_in_context")
        return self if context == self._ctx else self.copyto(context)

    def _copy_into(self, other: NDArray, here_if_ready: bool = False) -> None:
        """Push the copy of this array's values into `other`, of the same shape
        (see `_push` for `here_if_ready`)."""
        src, dst = self._data, other._data
        other._push(lambda: np.copyto(dst, src, casting="unsafe"), [self], "copyto",
                    here_if_ready=here_if_ready)

    def astype(self, dtype: Any, copy: bool = True) -> NDArray:
        dtype = as_dtype(dtype)
        if not copy and dtype == self.dtype:
            return self
        if AUTOGRAD.recording and autograd_entry("in_graph")(self):
            return _generated().Cast(self, dtype=dtype.name)
        out = empty(self.shape, self._ctx, dtype)
        src, dst = self._data, out._data
        out._push(lambda: np.copyto(dst, src, casting="unsafe"), [self], "astype")
        return out

    # MXNet's shape methods: with `inplace`, a view sharing this array's memory.
    def flatten(self, inplace: bool = False) -> NDArray:
        """The array as (first axis, the rest), as ``mx.nd.Flatten``; a view with `inplace`."""
        return self.reshape((0, -1)) if inplace else _generated().Flatten(self)

    def expand_dims(self, axis: int, inplace: bool = False) -> NDArray:
        """A new axis of length 1 at `axis`, as ``mx.nd.expand_dims``; a view with `inplace`."""
        if not inplace:
            return _generated().expand_dims(self, axis=axis)
        if not -self.ndim - 1 <= axis <= self.ndim:
            raise ShapeError(f"expand_dims: axis {axis} is out of range for an array of "
                             f"{self.ndim} axes")
        shape = list(self.shape)
        shape.insert(axis % (self.ndim + 1), 1)
        return self.reshape(shape)

    def squeeze(self, axis: int | Sequence[int] | None = None, inplace: bool = False) -> NDArray:
        """The array without its axes of length 1 (or those of `axis`), as
        ``mx.nd.squeeze``; a view with `inplace`."""
        if not inplace:
            return _generated().squeeze(self, axis=axis)
        if axis is None:
            drop = {a for a, n in enumerate(self.shape) if n == 1}
        else:
            listed = [axis] if isinstance(axis, int) else list(axis)
            drop = {a % self.ndim for a in listed if -self.ndim <= a < self.ndim}
            if len(drop) != len(listed) or any(self.shape[a] != 1 for a in drop):
                raise ShapeError(f"squeeze: axis {axis} of an array of shape {self.shape}: "
                                 "each axis once, of length 1")
        return self.reshape([n for a, n in enumerate(self.shape) if a not in drop])

    def broadcast_to(self, shape: Sequence[int]) -> NDArray:
        """The array broadcast to `shape` (any sequence of ints, a numpy array too),
        ones prepended to its own shape first, as MXNet's method does."""
        target = tuple(int(d) for d in shape)
        if len(target) < self.ndim:
            raise ShapeError(f"broadcast_to: cannot broadcast an array of shape {self.shape} "
                             f"to {target}")
        padded = (1,) * (len(target) - self.ndim) + self.shape
        source = self if padded == self.shape else self.reshape(padded)
        return _generated().broadcast_to(source, shape=target)

    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:
        """This array in a new shape, sharing its memory as MXNet's does (writes to
        either show in the other); the shape given as a tuple, as separate dimensions
        or as ``shape=`` (MXNet's special values 0, -1, -2, -3, -4 and ``reverse=`` work).

        >>> import minimx as mx
        >>> mx.nd.arange(12).reshape(shape=(3, -1)).shape
        (3, 4)
        """
        if "shape" in kwargs:
            if shape:
                raise MinimxError(f"reshape: shape given twice, as {shape} and "
                                  f"shape={kwargs['shape']!r}")
            shape = kwargs.pop("shape")
        elif len(shape) == 1:
            shape = shape[0]
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        if not self._data.flags.c_contiguous:
            # A strided view (basic slicing with steps) has no view in the new shape.
            return _generated().Reshape(self, shape=tuple(shape), **kwargs)
        unknown = set(kwargs) - {"reverse"}
        if unknown:
            raise MinimxError(f"reshape: unknown keyword arguments {sorted(unknown)}; "
                              "only shape and reverse are taken")
        target = reshape_shape(tuple(shape), self.shape, bool(kwargs.get("reverse", False)))
        if math.prod(target) != self.size:
            raise ShapeError(f"reshape: cannot reshape an array of shape {self.shape} "
                             f"({self.size} elements) to {tuple(shape)} ({target})")
        view = NDArray(self._data.reshape(target), self._var, self._ctx)
        if AUTOGRAD.recording:
            autograd_entry("record_call")("Reshape", {"shape": str(target)}, [self], [view])
        return view

    # -- indexing ---------------------------------------------------------------
    def __getitem__(self, key: Any) -> NDArray:
        """Basic indexing (ints, slices, ``...``, ``None``) as MXNet 1.x's: a view
        sharing this array's memory where the part it selects is contiguous (whole
        rows, an element), a copy otherwise (a column, a strided slice); ``a[:]``
        and ``a[()]`` are the array itself, and an element (every axis an int)
        comes as shape (1,). Lists, numpy arrays and NDArrays index as numpy's
        advanced indexing does (MXNet's too), into a copy."""
        if _returns_itself(key):
            return self
        if AUTOGRAD.recording and autograd_entry("in_graph")(self):
            return autograd_entry("getitem")(self, key)
        key, reads = self._index(key)
        with _index_errors():
            shape = np.shape(self._data[_values(key, shape_only=True)]) or (1,)
        if not reads:
            # ints as one-long slices: numpy then gives a view of an element too
            view = self._data[_int_slices(key)]
            if view.flags.c_contiguous:
                return NDArray(view.reshape(shape), self._var, self._ctx)
        out = empty(shape, self._ctx, self.dtype)
        src, dst = self._data, out._data

        def get() -> None:
            with _index_errors():
                np.copyto(dst, np.reshape(src[_values(key)], dst.shape))
        out._push(get, [self, *reads], "getitem")
        return out

    def __setitem__(self, key: Any, value: Any) -> None:
        """Assign `value` (an NDArray, a number or array-like values broadcast to the
        indexed part, as numpy does). Values not in an NDArray are copied at the call:
        the caller may refill its buffer before the write runs. The array assigned
        to the whole of itself (``x[:] = x``) writes nothing, as in MXNet."""
        key, reads = self._index(key)
        dst = self._data
        with _index_errors():
            target = np.shape(dst[_values(key, shape_only=True)])  # only its shape is used
        if value is self and not reads and _all_of(dst, dst[_int_slices(key)]):
            return
        if isinstance(value, NDArray):
            reads.append(value)
            src = value._data
        else:
            src = _numeric_copy(value, self.dtype)
        _check_assignable(src.shape, target, self.shape)
        if AUTOGRAD.recording:
            autograd_entry("record_setitem")(self, key, value)

        def put() -> None:
            with _index_errors():
                # numpy refuses an array for an element: the value's leading 1s go
                extra = src.ndim - len(target)
                dst[_values(key)] = src.reshape(src.shape[extra:]) if extra > 0 else src
        self._push(put, reads, "setitem")

    @staticmethod
    def _index(key: Any) -> tuple[Any, list[NDArray]]:
        """`key` with lists and NDArray indices as integer arrays (an NDArray's
        values are read when the operation runs: it stays in the key, and among
        the arrays returned to read), or MinimxError naming what cannot index."""
        keys = key if isinstance(key, tuple) else (key,)
        out, reads = [], []
        for k in keys:
            if isinstance(k, NDArray):
                reads.append(k)
            elif isinstance(k, (list, tuple, np.ndarray)):   # a tuple within the key: a list
                k = np.asarray(k)
                if k.dtype.kind not in "iub":
                    k = k.astype(np.int64)   # MXNet takes float indices too
            elif not isinstance(k, (int, np.integer, slice, type(Ellipsis), type(None))):
                raise MinimxError("an NDArray is indexed by ints, slices, ..., None, lists, "
                                  f"tuples, numpy arrays or NDArrays, not {type(k).__name__}")
            out.append(k)
        return (tuple(out) if isinstance(key, tuple) else out[0]), reads

    # -- arithmetic ---------------------------------------------------------
    def _arith(self, other: Any, tensor_op: str, scalar_op: str, reverse: bool = False) -> NDArray:
        if isinstance(other, NDArray):
            a, b = (other, self) if reverse else (self, other)
            return _generated().invoke_by_name(tensor_op, [a, b], {})
        if isinstance(other, NUMBER):
            return _generated().invoke_by_name(scalar_op, [self], {"scalar": float(other)})
        return NotImplemented

    def _inplace(self, other: Any, tensor_op: str, scalar_op: str) -> NDArray:
        result = self._arith(other, tensor_op, scalar_op)
        if result is NotImplemented:
            return result
        if result.shape != self.shape:
            raise ShapeError(f"in-place operation would change shape {self.shape} "
                             f"to {result.shape}")
        result.copyto(self)
        return self

    def __add__(self, o): return self._arith(o, "broadcast_add", "_plus_scalar")
    def __radd__(self, o): return self._arith(o, "broadcast_add", "_plus_scalar")
    def __sub__(self, o): return self._arith(o, "broadcast_sub", "_minus_scalar")
    def __rsub__(self, o): return self._arith(o, "broadcast_sub", "_rminus_scalar", True)
    def __mul__(self, o): return self._arith(o, "broadcast_mul", "_mul_scalar")
    def __rmul__(self, o): return self._arith(o, "broadcast_mul", "_mul_scalar")
    def __truediv__(self, o): return self._arith(o, "broadcast_div", "_div_scalar")
    def __rtruediv__(self, o): return self._arith(o, "broadcast_div", "_rdiv_scalar", True)
    def __iadd__(self, o): return self._inplace(o, "broadcast_add", "_plus_scalar")
    def __isub__(self, o): return self._inplace(o, "broadcast_sub", "_minus_scalar")
    def __imul__(self, o): return self._inplace(o, "broadcast_mul", "_mul_scalar")
    def __itruediv__(self, o): return self._inplace(o, "broadcast_div", "_div_scalar")
    def __mod__(self, o): return self._arith(o, "broadcast_mod", "_mod_scalar")
    def __rmod__(self, o): return self._arith(o, "broadcast_mod", "_rmod_scalar", True)
    def __imod__(self, o): return self._inplace(o, "broadcast_mod", "_mod_scalar")
    def __neg__(self): return self._arith(-1.0, "broadcast_mul", "_mul_scalar")
    def __abs__(self): return _generated().invoke_by_name("abs", [self], {})
    def __pow__(self, o): return self._arith(o, "broadcast_power", "_power_scalar")
    def __rpow__(self, o): return self._arith(o, "broadcast_power", "_rpower_scalar", True)
    # 1 where the comparison holds, else 0, as MXNet's; hashing stays by identity.
    def __eq__(self, o): return self._arith(o, "broadcast_equal", "_equal_scalar")
    def __ne__(self, o): return self._arith(o, "broadcast_not_equal", "_not_equal_scalar")
    __hash__ = object.__hash__
    def __gt__(self, o): return self._arith(o, "broadcast_greater", "_greater_scalar")
    def __ge__(self, o): return self._arith(o, "broadcast_greater_equal", "_greater_equal_scalar")
    def __lt__(self, o): return self._arith(o, "broadcast_lesser", "_lesser_scalar")
    def __le__(self, o): return self._arith(o, "broadcast_lesser_equal", "_lesser_equal_scalar")

    def __len__(self) -> int:
        return self.shape[0]

    # -- autograd (minimx.autograd) ----------------------------------------------------
    def attach_grad(self, grad_req: str = "write", stype: str | None = None) -> None:
        """Give this array a gradient buffer (zeros) that `backward` writes (``'write'``),
        adds to (``'add'``) or leaves alone (``'null'``), as ``mx.autograd.mark_variables``."""
        autograd_entry("attach_grad")(self, grad_req, stype)

    @property
    def grad(self) -> NDArray | None:
        """The gradient buffer `attach_grad` gave this array, or None."""
        return autograd_entry("grad_of")(self)

    def detach(self) -> NDArray:
        """This array (its memory) outside any recorded graph."""
        return NDArray(self._data.view(), self._var, self._ctx)  # a view: not counted twice

    def backward(self, out_grad: NDArray | None = None, retain_graph: bool = False,
                 train_mode: bool = True) -> None:
        """``mx.autograd.backward([self], [out_grad])``: the gradients of this array with
        respect to the variables it was recorded from, into their `grad` buffers."""
        autograd_entry("backward")([self], None if out_grad is None else [out_grad],
                                   retain_graph, train_mode)

    def __bool__(self) -> bool:
        """As MXNet's (and numpy's): the value of a one-element array, False for an
        empty one, an error for more elements (``if a == b`` must not pass quietly)."""
        if self.size > 1:   # a ValueError too, as MXNet's
            raise ShapeError(f"the truth value of an NDArray of shape {self.shape} is "
                             "ambiguous: use a.asnumpy().any() or .all()")
        return bool(self.size) and bool(self.asnumpy().reshape(-1)[0])

    def __repr__(self) -> str:
        return f"\n{self.asnumpy()}\n<NDArray {'x'.join(map(str, self.shape))} @{self._ctx}>"


def _values(key: Any, shape_only: bool = False) -> Any:
    """An index key with its NDArrays' values as integer arrays (when the
    operation runs), or with zeros of their shapes (`shape_only`: what the
    result's shape takes, before their values are written)."""
    def value(k: Any) -> Any:
        if not isinstance(k, NDArray):
            return k
        return np.zeros(k.shape, np.int64) if shape_only else k._data.astype(np.int64)
    return tuple(map(value, key)) if isinstance(key, tuple) else value(key)


def _returns_itself(key: Any) -> bool:
    """Whether `key` is ``:`` or ``()``, with which MXNet's indexing returns the array."""
    if isinstance(key, slice):
        return key.start is None and key.stop is None and key.step in (None, 1)
    return isinstance(key, tuple) and not key


def _all_of(data: np.ndarray, view: np.ndarray) -> bool:
    """Whether `view` is all of `data`, element for element in place."""
    return (view.shape == data.shape and view.strides == data.strides
            and view.__array_interface__["data"] == data.__array_interface__["data"])


def _int_slices(key: Any) -> Any:
    """A basic key with each int ``i`` as the slice ``i:i+1`` (numpy's view keeps the
    axis), for a key already checked against the array's shape."""
    def one(k: Any) -> Any:
        return slice(k, k + 1 or None) if isinstance(k, (int, np.integer)) else k
    return tuple(map(one, key)) if isinstance(key, tuple) else one(key)


@contextmanager
def _index_errors() -> Iterator[None]:
    """numpy's IndexError (an index past the array, found at the call or when the
    operation runs) as an IndexRangeError."""
    try:
        yield
    except IndexError as exc:
        raise IndexRangeError(f"NDArray index: {exc}") from None


def _numeric_copy(value: Any, dtype: np.dtype) -> np.ndarray:
    """`value` (numbers, array-like) as a new numpy array of `dtype`."""
    try:
        values = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise DTypeError(f"setitem: cannot assign {reprlib.repr(value)}: {exc}") from None
    if not is_numeric(values.dtype):
        raise DTypeError(f"setitem: cannot assign {reprlib.repr(value)} to an NDArray of "
                         f"{dtype}: values must be numbers, not {values.dtype}")
    return np.array(values, dtype=dtype)


def _check_assignable(value_shape: tuple[int, ...], target: tuple[int, ...],
                      array_shape: tuple[int, ...]) -> None:
    """numpy's assignment rule: leading length-1 axes of the value may be dropped,
    the rest must broadcast to the target without changing it."""
    shape = value_shape
    while len(shape) > len(target) and shape[0] == 1:
        shape = shape[1:]
    try:
        fits = np.broadcast_shapes(shape, target) == target
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"setitem: a value of shape {value_shape} cannot be assigned to a "
                         f"target of shape {target} (array shape {array_shape})")


def _fluent(name: str, op_name: str) -> Callable[..., NDArray]:
    def method(self: NDArray, *args: Any, **kwargs: Any) -> Any:
        return getattr(_generated(), op_name)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``mx.nd.{op_name}`` of this array."
    return method


# Fluent methods (ops.fluent), but for the ones the class defines itself.
for _name, _op in FLUENT.items():
    if _name not in vars(NDArray):
        setattr(NDArray, _name, _fluent(_name, _op))


def allocate(shape: Any, dtype: Any, what: str, ctx: Any = None) -> NDArray:
    """An uninitialised array on `ctx` (None: the current context), its shape,
    dtype and `ctx` checked first; errors start with `what` (the function or node asking)."""
    ctx = as_context(ctx, f"{what}: ctx")
    shape = as_shape(shape, what)
    dtype = as_dtype(DEFAULT_DTYPE if dtype is None else dtype)
    check_array_size(shape, dtype, what)
    return NDArray(np.empty(shape, dtype=dtype), ctx=ctx)


def empty(shape: int | Sequence[int], ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """An uninitialised array."""
    return allocate(shape, dtype, "mx.nd.empty", ctx)


def waitall() -> None:
    """Block until every pushed operation has finished (and raise any pending error)."""
    engine.wait_for_all()
