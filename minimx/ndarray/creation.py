"""Making NDArrays: from data, filled, ranges and the identity (random values:
`random_namespace`)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import (
    DEFAULT_DTYPE,
    DTypeError,
    MinimxError,
    OperatorError,
    ShapeError,
    as_dtype,
    as_shape,
    check_array_size,
)
from ..context import Context, as_context
from ..ops.creation import ranged
from .ndarray import NDArray, allocate

Shape = int | Sequence[int]


def array(source: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """A new array on `ctx` (None: the current context, also for an NDArray `source`)
    holding a copy of `source`: float32 unless `dtype` is given or `source` is an
    NDArray (whose dtype is kept), as in MXNet 1.x."""
    ctx = as_context(ctx, "mx.nd.array: ctx")
    if isinstance(source, NDArray):
        dtype = dtype or source.dtype
        source = source.asnumpy()
    dtype = as_dtype(dtype or DEFAULT_DTYPE)
    try:
        try:
            values = np.array(source, dtype=dtype, order="C")
        except OverflowError:
            # numbers outside an integer type wrap, as under the numpy MXNet 1.9.1 needs
            values = np.array(source, order="C").astype(dtype)
        return NDArray(values, ctx=ctx)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DTypeError(f"mx.nd.array: cannot make an array of {dtype} from "
                         f"{type(source).__name__}: {exc}") from None


def full(shape: Shape, val: Any, ctx: Context | None = None, dtype: Any = None,
         out: NDArray | None = None) -> NDArray:
    return _filled(shape, val, ctx, dtype, "mx.nd.full", out)


def zeros(shape: Shape, ctx: Context | None = None, dtype: Any = None, stype: str | None = None,
          out: NDArray | None = None) -> NDArray:
    _dense(stype, "mx.nd.zeros")
    return _filled(shape, 0, ctx, dtype, "mx.nd.zeros", out)


def ones(shape: Shape, ctx: Context | None = None, dtype: Any = None, stype: str | None = None,
         out: NDArray | None = None) -> NDArray:
    _dense(stype, "mx.nd.ones")
    return _filled(shape, 1, ctx, dtype, "mx.nd.ones", out)


def _dense(stype: str | None, what: str) -> None:
    if stype not in (None, "default"):
        raise MinimxError(f"{what}: stype={stype!r}: minimx has dense arrays only ('default')")


def _filled(shape: Shape, val: Any, ctx: Any, dtype: Any, what: str,
            out: NDArray | None = None) -> NDArray:
    if out is not None:   # written in place, after what is pending on it (MXNet's out=)
        if not isinstance(out, NDArray):
            raise MinimxError(f"{what}: out must be an NDArray, got {type(out).__name__}")
        if as_shape(shape, f"{what}: shape") != out.shape:
            raise ShapeError(f"{what}: shape {shape} does not match out's {out.shape}")
        if dtype is not None and as_dtype(dtype) != out.dtype:
            raise DTypeError(f"{what}: dtype {as_dtype(dtype)} does not match out's {out.dtype}")
        out[:] = val
        return out
    out = allocate(shape, dtype, what, ctx)
    try:
        out._data.fill(val)
    except (TypeError, ValueError) as exc:
        raise DTypeError(f"{what}: cannot fill an array of {out.dtype} with {val!r}: "
                         f"{exc}") from None
    return out


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           ctx: Context | None = None, dtype: Any = None) -> NDArray:
    what = "mx.nd.arange"
    as_context(ctx, f"{what}: ctx")
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_real(start, "start", what), _real(stop, "stop", what),
                         _real(step, "step", what))
    if not step:
        raise OperatorError(f"{what}: step must not be zero")
    if isinstance(repeat, bool) or not isinstance(repeat, (int, np.integer)) or repeat < 1:
        raise OperatorError(f"{what}: repeat={repeat!r} must be a positive integer")
    count = max(0, math.ceil((stop - start) / step))
    dtype = as_dtype(dtype or DEFAULT_DTYPE)
    check_array_size((count, int(repeat)), dtype, what)
    # In the dtype, as MXNet's kernel: int32 takes start 1.3 and step 1.3 as 1 and 1.
    return array(ranged(count * int(repeat), start, step, int(repeat), dtype), ctx, dtype)


def linspace(start: float, stop: float, num: int, endpoint: bool = True,
             ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """`num` evenly spaced values from `start` to `stop` (included when `endpoint`)."""
    what = "mx.nd.linspace"
    as_context(ctx, f"{what}: ctx")
    start, stop = _real(start, "start", what), _real(stop, "stop", what)
    count = _count(num, "num", what)
    check_array_size((count,), as_dtype(dtype or DEFAULT_DTYPE), what)
    return array(np.linspace(start, stop, count, endpoint=bool(endpoint)), ctx,
                 dtype or DEFAULT_DTYPE)


def eye(N: int, M: int = 0, k: int = 0, ctx: Context | None = None,
        dtype: Any = None) -> NDArray:
    """An N x M array (M=0: N x N) of ones on the k-th diagonal, zeros elsewhere."""
    what = "mx.nd.eye"
    as_context(ctx, f"{what}: ctx")
    rows, cols = _count(N, "N", what), _count(M, "M", what) or _count(N, "N", what)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise OperatorError(f"{what}: k={k!r} must be an integer")
    check_array_size((rows, cols), as_dtype(dtype or DEFAULT_DTYPE), what)
    return array(np.eye(rows, cols, int(k)), ctx, dtype or DEFAULT_DTYPE)


def _count(value: Any, name: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise OperatorError(f"{what}: {name}={value!r} must be a non-negative integer")
    return int(value)


def _real(value: Any, name: str, what: str) -> float:
    """A finite real distribution parameter."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise OperatorError(f"{what}: {name}={value!r} must be a finite number")
    return number

