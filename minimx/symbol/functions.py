"""MXNet's Python-level symbol functions: `zeros`, `ones`, `full` and `arange`
make array nodes (`_zeros`, `_ones`, `_full`, `_arange`); `maximum`, `minimum`
and `power` pick the two-symbol or the scalar operator by their arguments, as
``mx.sym.maximum(x, 0)`` does in MXNet 1.x; `split_v2` and `histogram` are
MXNet's Python fronts of `_split_v2` and `_histogram`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..base import OperatorError
from ..ops import get_op
from ..ops.calling import tensor_first
from ..ops.split_v2 import split_v2_params
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


def split_v2(ary: Symbol, indices_or_sections: int | tuple[int, ...], axis: int = 0,
             squeeze_axis: bool = False) -> Symbol:
    """`ary` split along `axis` into `indices_or_sections` equal pieces, or before each
    index of the tuple."""
    return create(get_op("_split_v2"), [ary], {**split_v2_params(indices_or_sections),
                                               "axis": axis, "squeeze_axis": squeeze_axis},
                  hint="_split_v2")


def histogram(a: Symbol, bins: int | Symbol = 10,
              range: tuple[float, float] | None = None,  # noqa: A002  (MXNet's name)
              **kwargs: Any) -> Symbol:
    """(counts, bin edges) of `a`: `bins` equal bins over `range` (required here), or
    the bins whose edges the Symbol `bins` gives."""
    if isinstance(bins, Symbol):
        return create(get_op("_histogram"), [a, bins], kwargs, hint="_histogram")
    if range is None:
        raise OperatorError("histogram: a symbol's histogram needs range (MXNet: null range "
                            "is not supported in symbol mode)")
    return create(get_op("_histogram"), [a], {"bin_cnt": bins, "range": tuple(range),
                                              **kwargs}, hint="_histogram")
