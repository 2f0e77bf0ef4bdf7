"""How a call ``Op(*inputs, *params, name=..., **kwargs)`` maps onto an operator.

Shared by the generated `mx.sym.X` and `mx.nd.X` functions: tensors (Symbols
or NDArrays) are inputs, by position or by input name; everything else is a
parameter, written in MXNet's string form. As in MXNet's generated functions,
parameters may follow the inputs by position, in the operator's order
(``one_hot(labels, 10)``, ``clip(x, 0, 6)``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base import OperatorError
from .params import format_value
from .registry import OpDef


def _accepts_none(op: OpDef, name: str) -> bool:
    spec = op.param(name)
    return spec is not None and spec.accepts_none


def _param_text(value: Any) -> str:
    """A parameter in MXNet's string form; numpy scalars inside a tuple (``axes=(np.int64(1),
    np.int64(0))``) are written as the Python numbers they are."""
    if isinstance(value, (tuple, list)):
        value = tuple(v.item() if isinstance(v, np.generic) else v for v in value)
    return format_value(value)


def _positional_params(op: OpDef, args: Sequence[Any], kwargs: Mapping[str, Any],
                       tensor_type: type | tuple[type, ...], label: str
                       ) -> tuple[Sequence[Any], Mapping[str, Any]]:
    """(inputs, keyword arguments) of a call whose positional arguments may end in
    parameters: from the first one that is neither a tensor nor None (an input
    not given), they are the operator's parameters in its order. A variadic
    operator takes inputs only."""
    start = next((i for i, a in enumerate(args)
                  if a is not None and not isinstance(a, tensor_type)), len(args))
    values = args[start:]
    if not values or op.variadic is not None:
        return args, kwargs
    names = [p.name for p in op.params]
    if len(values) > len(names):
        raise OperatorError(f"{label}: {len(values)} parameters given by position, the "
                            f"operator has {len(names)} ({', '.join(names) or 'none'})")
    merged = dict(kwargs)
    for param, value in zip(names, values, strict=False):
        if isinstance(value, tensor_type):
            raise OperatorError(f"{label}: a tensor given by position after the parameters "
                                f"began, as {param!r}")
        if param in merged:
            raise OperatorError(f"{label}: parameter {param!r} given by position and by "
                                "keyword")
        merged[param] = value
    return args[:start], merged


def split_call(op: OpDef, args: Sequence[Any], kwargs: Mapping[str, Any],
               tensor_type: type | tuple[type, ...],
               name: str | None = None) -> tuple[list[str], dict[str, Any], dict[str, str]]:
    """(input names, tensors by input name, string attributes) of one call."""
    label = f"{name or '?'} ({op.name})"
    args, kwargs = _positional_params(op, args, kwargs, tensor_type, label)
    # None is written as "None" where the parameter takes it (MXNet's generated
    # functions pass it on); elsewhere it means "the default".
    attrs = {k: _param_text(v) for k, v in kwargs.items()
             if not isinstance(v, tensor_type)
             and (v is not None or _accepts_none(op, k))}
    named = {k: v for k, v in kwargs.items() if isinstance(v, tensor_type)}
    for i, a in enumerate(args):
        # A positional None is an input not given, as in MXNet's generated functions
        # (``Convolution(x, w, None, no_bias=True)``); variadic inputs must all be there.
        if not isinstance(a, tensor_type) and (a is not None or op.variadic is not None):
            raise OperatorError(f"{label}: positional argument {i} is a {type(a).__name__}; "
                                "inputs must be given as tensors, parameters by keyword")
    if op.variadic is not None:
        attrs.setdefault(op.variadic, str(len(args) + len(named)))
    p = op.parse_params(attrs, name or "")
    if op.variadic is not None and op.counts_inputs(p):
        if named:
            raise OperatorError(f"{label}: inputs of a variadic operator are given by position, "
                                f"not as {', '.join(named)}")
        # Compared before the names are listed: num_args=10**8 must not build them.
        if p[op.variadic] != len(args):
            raise OperatorError(f"{label}: {op.variadic}={attrs[op.variadic]} but "
                                f"{len(args)} inputs were given")
        names = op.input_names(p)
        return names, dict(zip(names, args, strict=True)), attrs
    names = op.input_names(p)
    if any(a is not None for a in args[len(names):]):
        raise OperatorError(f"{label}: {len(args)} inputs given, the operator takes "
                            f"{len(names)} ({', '.join(names)})")
    tensors = {n: a for n, a in zip(names, args, strict=False) if a is not None}
    for key, value in named.items():
        if key not in names:
            raise OperatorError(f"{label}: unknown input {key!r} (inputs: {', '.join(names)})")
        if key in tensors:
            raise OperatorError(f"{label}: input {key!r} given twice")
        tensors[key] = value
    return names, tensors, attrs
