"""Making NDArrays: from data, filled, ranges and random values."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import DEFAULT_DTYPE, as_dtype
from ..context import Context
from .ndarray import NDArray, empty

Shape = int | Sequence[int]


def array(source: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """A new array holding a copy of `source`: float32 unless `dtype` is given or
    `source` is an NDArray (whose dtype is kept), as in MXNet 1.x."""
    if isinstance(source, NDArray):
        dtype = dtype or source.dtype
        source = source.asnumpy()
    return NDArray(np.array(source, dtype=as_dtype(dtype or DEFAULT_DTYPE), order="C"))


def full(shape: Shape, val: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    out = empty(shape, dtype=dtype)
    out._data.fill(val)
    return out


def zeros(shape: Shape, ctx: Context | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    return full(shape, 0, dtype=dtype)


def ones(shape: Shape, ctx: Context | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    return full(shape, 1, dtype=dtype)


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           ctx: Context | None = None, dtype: Any = None) -> NDArray:
    values = np.arange(start, stop, step) if stop is not None else np.arange(start)
    return array(np.repeat(values, repeat), dtype=dtype or DEFAULT_DTYPE)


class _Random:
    """`mx.nd.random`: seeded by `mx.random.seed`."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def uniform(self, low: float = 0.0, high: float = 1.0, shape: Shape = (1,),
                ctx: Context | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
        return array(self.rng.uniform(low, high, shape), dtype=dtype or DEFAULT_DTYPE)

    def normal(self, loc: float = 0.0, scale: float = 1.0, shape: Shape = (1,),
               ctx: Context | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
        return array(self.rng.normal(loc, scale, shape), dtype=dtype or DEFAULT_DTYPE)


random = _Random()
