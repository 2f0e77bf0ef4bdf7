"""MXNet's `mx.nd.maximum`, `minimum` and `power`: the broadcasting operator for
two arrays, the scalar one when either side is a number."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base import OperatorError
from ..ops.calling import tensor_first
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
