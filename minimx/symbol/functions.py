"""MXNet's Python-level symbol functions (python/mxnet/symbol/symbol.py, contrib.py):
`zeros`, `ones`, `full`, `arange`, `eye` and `linspace` make array nodes (`_zeros`,
`_ones`, `_full`, `_arange`, `_eye`, `_linspace`); `maximum`, `minimum`, `power` and
`hypot` pick the two-symbol or the scalar operator by their arguments, as
``mx.sym.maximum(x, 0)`` does in MXNet 1.x, and give a plain Python result for two
numbers; `split_v2` and `histogram` are MXNet's Python fronts of `_split_v2` and
`_histogram`; `rand_zipfian`, `adamw_update` and `mp_adamw_update` are
`mx.sym.contrib`'s.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any

import numpy as np

from ..base import OperatorError
from ..ndarray.functions import zipfian
from ..ops import get_op
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


def eye(N: int, M: int = 0, k: int = 0, dtype: Any = None,  # noqa: N803  (MXNet's names)
        **kwargs: Any) -> Symbol:
    """A node giving the N x M (N x N when M is 0) matrix with ones on diagonal `k`."""
    return _make("_eye", N=N, M=M, k=k, dtype=_dtype(dtype), **kwargs)


def linspace(start: float, stop: float, num: int, endpoint: bool = True,
             name: str | None = None, dtype: Any = None) -> Symbol:
    """A node giving `num` evenly spaced values from start to stop (stop left out unless
    `endpoint`)."""
    return _make("_linspace", start=start, stop=stop, num=num, endpoint=endpoint, name=name,
                 dtype=_dtype(dtype))


def _choosing(what: str, sym_op: str, scalar_op: str, rscalar_op: str,
              on_numbers: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``mx.sym.<what>(left, right)``: `sym_op` for two symbols, a scalar operator when
    one side is a number (`rscalar_op` when the number is on the left), `on_numbers` (a
    Python result) for two numbers."""
    def fn(left: Any, right: Any) -> Any:
        if isinstance(left, Number) and isinstance(right, Number):
            return on_numbers(left, right)
        if isinstance(left, Symbol):
            result = arith(left, right, sym_op, scalar_op, False)
        elif isinstance(right, Symbol) and isinstance(left, Number):
            result = arith(right, left, sym_op, rscalar_op, True)
        else:
            result = NotImplemented
        if result is NotImplemented:
            raise OperatorError(f"mx.sym.{what}: types ({type(left)}, {type(right)}) not "
                                "supported (each operand must be a Symbol or a number)")
        return result
    fn.__name__ = fn.__qualname__ = what
    fn.__doc__ = (f"Elementwise {what} of two symbols of one shape, or of a symbol and a "
                  "number (on either side), or of two numbers (a Python result).")
    return fn


maximum = _choosing("maximum", "_Maximum", "_MaximumScalar", "_MaximumScalar",
                    lambda x, y: x if x > y else y)
minimum = _choosing("minimum", "_Minimum", "_MinimumScalar", "_MinimumScalar",
                    lambda x, y: x if x < y else y)
power = pow = _choosing("power", "_Power", "_PowerScalar",  # noqa: A001
                        "_RPowerScalar", lambda x, y: x ** y)
hypot = _choosing("hypot", "_Hypot", "_HypotScalar", "_HypotScalar", np.hypot)


def rand_zipfian(true_classes: Symbol, num_sampled: int,
                 range_max: int) -> tuple[Symbol, Symbol, Symbol]:
    """MXNet's rand_zipfian (see `minimx.ndarray.functions.zipfian`) as graph nodes."""
    if not isinstance(true_classes, Symbol):
        raise OperatorError(f"mx.sym.contrib.rand_zipfian: unexpected type "
                            f"{type(true_classes)} (true_classes must be a Symbol)")

    def uniform(high: float, shape: tuple[int]) -> Symbol:
        return _make("_random_uniform", low=0, high=high, shape=shape, dtype="float64")
    return zipfian(true_classes, num_sampled, range_max, uniform)


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


def adamw_update(weight: Symbol, grad: Symbol, mean: Symbol, var: Symbol, rescale_grad: Any,
                 lr: float, eta: float, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, wd: float = 0, clip_gradient: float = -1,
                 name: str | None = None, **kwargs: Any) -> Symbol:
    """An ``_adamw_update`` node; a number for `rescale_grad` becomes a `full` node."""
    return _make("_adamw_update", weight=weight, grad=grad, mean=mean, var=var,
                 rescale_grad=_one_element(rescale_grad), lr=lr, eta=eta, beta1=beta1,
                 beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
                 name=name, **kwargs)


def mp_adamw_update(weight: Symbol, grad: Symbol, mean: Symbol, var: Symbol, weight32: Symbol,
                    rescale_grad: Any, lr: float, eta: float, beta1: float = 0.9,
                    beta2: float = 0.999, epsilon: float = 1e-8, wd: float = 0,
                    clip_gradient: float = -1, name: str | None = None,
                    **kwargs: Any) -> Symbol:
    """An ``_mp_adamw_update`` node (a float16 weight on its float32 master copy)."""
    return _make("_mp_adamw_update", weight=weight, grad=grad, mean=mean, var=var,
                 weight32=weight32, rescale_grad=_one_element(rescale_grad), lr=lr, eta=eta,
                 beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                 clip_gradient=clip_gradient, name=name, **kwargs)


def _one_element(value: Any) -> Symbol:
    return value if isinstance(value, Symbol) else full((1,), value)
