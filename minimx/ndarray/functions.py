"""MXNet's `mx.nd.maximum`, `minimum` and `power`: the broadcasting operator for
two arrays, the scalar one when either side is a number; `split_v2` and
`histogram`, MXNet's Python fronts of `_split_v2` and `_histogram`."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import OperatorError, warn_user
from ..ops.calling import tensor_first
from ..ops.split_v2 import split_v2_params
from .creation import array
from .imperative import invoke_by_name
from .ndarray import NDArray


def _choosing(what: str, tensor_op: str, scalar_op: str,
              rscalar_op: str) -> Callable[[Any, Any], NDArray]:
    """``mx.nd.<what>(lhs, rhs)``: `tensor_op` (broadcasting) for two arrays, a scalar
    operator when one side is a number (`rscalar_op` when the number is on the left)."""
    def fn(lhs: Any, rhs: Any) -> NDArray:
        array, other, swapped = tensor_first(f"mx.nd.{what}", lhs, rhs, NDArray)
        result = array._arith(other, tensor_op, rscalar_op if swapped else scalar_op, swapped)
        if result is NotImplemented:
            raise OperatorError(f"mx.nd.{what}: {type(other).__name__} is no NDArray or number")
        return result
    fn.__name__ = fn.__qualname__ = what
    fn.__doc__ = f"Elementwise {what}, broadcasting (either side may be a number)."
    return fn


maximum = _choosing("maximum", "broadcast_maximum", "_maximum_scalar", "_maximum_scalar")
minimum = _choosing("minimum", "broadcast_minimum", "_minimum_scalar", "_minimum_scalar")
power = pow = _choosing("power", "broadcast_power", "_power_scalar", "_rpower_scalar")  # noqa: A001


def split_v2(ary: NDArray, indices_or_sections: int | tuple[int, ...], axis: int = 0,
             squeeze_axis: bool = False) -> NDArray | list[NDArray]:
    """`ary` split along `axis` into `indices_or_sections` equal pieces, or before each
    index of the tuple (``(2, 3)``: ``ary[:2]``, ``ary[2:3]``, ``ary[3:]``)."""
    return invoke_by_name("_split_v2", [ary], {**split_v2_params(indices_or_sections),
                                               "axis": axis, "squeeze_axis": squeeze_axis})


def histogram(a: NDArray, bins: int | NDArray = 10,
              range: tuple[float, float] | None = None  # noqa: A002  (MXNet's name)
              ) -> NDArray | list[NDArray]:
    """(counts, bin edges) of `a`: `bins` equal bins over `range`, or the bins whose edges
    the NDArray `bins` gives. Without a range, numpy's histogram (as MXNet, which warns)."""
    if isinstance(bins, NDArray):
        return invoke_by_name("_histogram", [a, bins], {})
    if not isinstance(bins, (int, np.integer)) or isinstance(bins, bool):
        raise OperatorError(f"histogram: bins must be an int or an NDArray, got {bins!r}")
    if range is None:
        warn_user("histogram: range is not specified, using numpy's result to ensure "
                  "consistency with numpy")
        counts, edges = np.histogram(a.asnumpy(), bins=int(bins))
        return [array(counts), array(edges)]
    return invoke_by_name("_histogram", [a], {"bin_cnt": int(bins), "range": tuple(range)})
