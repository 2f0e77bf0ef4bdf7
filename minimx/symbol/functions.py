"""MXNet's Python-level symbol functions: `zeros`, `ones`, `full` and `arange`
make array nodes (`_zeros`, `_ones`, `_full`, `_arange`); `maximum`, `minimum`
and `power` pick the two-symbol or the scalar operator by their arguments, as
``mx.sym.maximum(x, 0)`` does in MXNet 1.x.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..ops import get_op
from ..ops.calling import tensor_first
from .register import arith, create
from .symbol import Symbol

Shape = int | Sequence[int]


def _make(op: str, **kwargs: Any) -> Symbol:
    return create(get_op(op), [], {k: v for k, v in kwargs.items() if v is not None}, hint=op)


def _dtype(dtype: Any) -> Any:
    return "float32" if dtype is None else dtype


# As MXNet's functions, these write dtype (float32 when not given) among the node's
# attributes, full's value as a float and arange's stop even when None.
def zeros(shape: Shape, dtype: Any = None, **kwargs: Any) -> Symbol:
    """A node giving zeros of `shape` (float32 unless `dtype`)."""
    return _make("_zeros", shape=shape, dtype=_dtype(dtype), **kwargs)


def ones(shape: Shape, dtype: Any = None, **kwargs: Any) -> Symbol:
    """A node giving ones of `shape` (float32 unless `dtype`)."""
    return _make("_ones", shape=shape, dtype=_dtype(dtype), **kwargs)


def full(shape: Shape, val: float, dtype: Any = None, **kwargs: Any) -> Symbol:
    """A node giving `val` everywhere in `shape`."""
    return _make("_full", shape=shape, value=float(val), dtype=_dtype(dtype),
                 **kwargs)


def arange(start: float, stop: float | None = None, step: float = 1.0, repeat: int = 1,
           infer_range: bool = False, name: str | None = None, dtype: Any = None) -> Symbol:
    """A node giving start, start + step, ... below stop (one bound: 0 to start)."""
    return create(get_op("_arange"), [], {"start": start, "stop": stop, "step": step,
                                           "repeat": repeat, "infer_range": infer_range,
                                           "name": name, "dtype": _dtype(dtype)},
                  hint="_arange")


def _choosing(what: str, sym_op: str, scalar_op: str,
              rscalar_op: str) -> Callable[[Any, Any], Symbol]:
    """``mx.sym.<what>(left, right)``: `sym_op` for two symbols, a scalar operator when
    one side is a number (`rscalar_op` when the number is on the left)."""
    def fn(left: Any, right: Any) -> Symbol:
        sym, other, swapped = tensor_first(f"mx.sym.{what}", left, right, Symbol)
        return arith(sym, other, sym_op, rscalar_op if swapped else scalar_op, swapped)
    fn.__name__ = fn.__qualname__ = what
    fn.__doc__ = f"Elementwise {what} of two symbols of one shape, or of a symbol and a number."
    return fn


maximum = _choosing("maximum", "_Maximum", "_MaximumScalar", "_MaximumScalar")
minimum = _choosing("minimum", "_Minimum", "_MinimumScalar", "_MinimumScalar")
power = pow = _choosing("power", "_Power", "_PowerScalar", "_RPowerScalar")  # noqa: A001
