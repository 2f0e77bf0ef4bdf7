"""MXNet's `mx.nd.maximum`, `minimum` and `power`: the broadcasting operator for
two arrays, the scalar one when either side is a number."""
from __future__ import annotations

from typing import Any

from ..base import MinimxError
from .ndarray import NDArray


def _pick(left: Any, right: Any, tensor_op: str, scalar_op: str, rscalar_op: str,
          what: str) -> NDArray:
    result: Any = NotImplemented
    if isinstance(left, NDArray):
        result = left._arith(right, tensor_op, scalar_op)
    elif isinstance(right, NDArray):
        result = right._arith(left, tensor_op, rscalar_op, True)
    if result is NotImplemented:
        raise MinimxError(f"mx.nd.{what}: operands must be NDArrays or numbers, one an "
                          f"NDArray; got {type(left).__name__} and {type(right).__name__}")
    return result


def maximum(lhs: Any, rhs: Any) -> NDArray:
    """The elementwise maximum, broadcasting (either side may be a number)."""
    return _pick(lhs, rhs, "broadcast_maximum", "_maximum_scalar", "_maximum_scalar", "maximum")


def minimum(lhs: Any, rhs: Any) -> NDArray:
    """The elementwise minimum, broadcasting (either side may be a number)."""
    return _pick(lhs, rhs, "broadcast_minimum", "_minimum_scalar", "_minimum_scalar", "minimum")


def power(base: Any, exp: Any) -> NDArray:
    """base ** exp, broadcasting (either side may be a number)."""
    return _pick(base, exp, "broadcast_power", "_power_scalar", "_rpower_scalar", "power")


pow = power  # noqa: A001 - MXNet's name
