"""The NDArray: a numpy buffer behind a dependency-engine variable.

Every operation on NDArrays is pushed to the engine with the variables it reads
and writes, and returns at once; reading values (`asnumpy`, `wait_to_read`)
waits for the writes they depend on. Views from basic slicing share their base's
variable, so the engine orders them with it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import engine
from ..base import DEFAULT_DTYPE, MinimxError, ShapeError, as_dtype
from ..context import Context, cpu


class NDArray:
    """An n-dimensional array on the CPU, computed asynchronously.

    >>> import minimx as mx
    >>> a = mx.nd.ones((2, 3))
    >>> (a * 2 + 1).asnumpy()[0, 0]
    np.float32(3.0)
    """

    __slots__ = ("_data", "_var", "__weakref__")
    __array_priority__ = 1000.0  # numpy defers `ndarray op NDArray` to us

    def __init__(self, data: np.ndarray, var: engine.Var | None = None) -> None:
        self._data = data
        self._var = var if var is not None else engine.new_variable()

    # -- engine seam -------------------------------------------------------
    def _push(self, fn: Callable[[], None], reads: Sequence[NDArray] = (),
              name: str = "ndarray") -> None:
        """Push `fn`, which writes this array and reads `reads`."""
        engine.push(fn, [r._var for r in reads], [self._var], name=name)

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
        return cpu()

    ctx = context

    @property
    def T(self) -> NDArray:
        from . import transpose
        return transpose(self)

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

    def copy(self) -> NDArray:
        return self.copyto(cpu())

    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into `other` (an NDArray of the same shape) or a new array on a context."""
        if isinstance(other, Context):
            other = empty(self.shape, dtype=self.dtype)
        if not isinstance(other, NDArray):
            raise MinimxError(f"copyto needs an NDArray or a Context, got {type(other).__name__}")
        if other.shape != self.shape:
            raise ShapeError(f"copyto: shape {self.shape} into shape {other.shape}")
        if other is not self:
            src, dst = self._data, other._data
            other._push(lambda: np.copyto(dst, src, casting="unsafe"), [self], "copyto")
        return other

    def astype(self, dtype: Any, copy: bool = True) -> NDArray:
        dtype = as_dtype(dtype)
        if not copy and dtype == self.dtype:
            return self
        out = empty(self.shape, dtype=dtype)
        src, dst = self._data, out._data
        out._push(lambda: np.copyto(dst, src, casting="unsafe"), [self], "astype")
        return out

    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:
        from . import Reshape
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return Reshape(self, shape=shape, **kwargs)

    # -- indexing ---------------------------------------------------------------
    def __getitem__(self, key: Any) -> NDArray:
        self._check_basic(key)
        view = self._data[key]
        if isinstance(view, np.ndarray) and np.shares_memory(view, self._data):
            return NDArray(view, self._var)  # a view: same engine variable
        out = empty(np.shape(view), dtype=self.dtype)
        src, dst = self._data, out._data
        out._push(lambda: np.copyto(dst, src[key]), [self], "getitem")
        return out

    def __setitem__(self, key: Any, value: Any) -> None:
        self._check_basic(key)
        dst = self._data
        if isinstance(value, NDArray):
            src = value._data
            self._push(lambda: dst.__setitem__(key, src), [value], "setitem")
        else:
            src = np.asarray(value, dtype=self.dtype)
            self._push(lambda: dst.__setitem__(key, src), [], "setitem")

    @staticmethod
    def _check_basic(key: Any) -> None:
        keys = key if isinstance(key, tuple) else (key,)
        for k in keys:
            if not isinstance(k, (int, np.integer, slice, type(Ellipsis), type(None))):
                raise MinimxError(f"only basic indexing (ints, slices, ...) is supported, "
                                  f"got {type(k).__name__}")

    # -- arithmetic ---------------------------------------------------------
    def _arith(self, other: Any, tensor_op: str, scalar_op: str, reverse: bool = False) -> NDArray:
        from . import invoke_by_name
        if isinstance(other, NDArray):
            a, b = (other, self) if reverse else (self, other)
            return invoke_by_name(tensor_op, [a, b], {})
        if isinstance(other, (int, float, np.number, bool)):
            return invoke_by_name(scalar_op, [self], {"scalar": float(other)})
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
    def __neg__(self): return self._arith(-1.0, "broadcast_mul", "_mul_scalar")

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"\n{self.asnumpy()}\n<NDArray {'x'.join(map(str, self.shape))} @cpu(0)>"


def empty(shape: int | Sequence[int], ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """An uninitialised array."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return NDArray(np.empty(shape, dtype=as_dtype(dtype or DEFAULT_DTYPE)))


def waitall() -> None:
    """Block until every pushed operation has finished (and raise any pending error)."""
    engine.wait_for_all()
