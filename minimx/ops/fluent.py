"""Fluent methods: the operators MXNet's Symbol and NDArray also offer as methods
(``x.sum(1)``, ``x.clip(0, 6)``, ``x.take(indices, axis=1)``).

`FLUENT` maps each method to its operator. As in MXNet's generated functions,
positional arguments that are tensors are the operator's further inputs, and
the others its parameters in the order the operator declares them.
`Symbol` and `NDArray` attach one method per entry (`NDArray` keeps its own
`reshape` and `astype`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import MinimxError
from .registry import OpDef

FLUENT: dict[str, str] = {
    "reshape": "Reshape", "astype": "Cast", "flatten": "Flatten",
    **{name: name for name in (
        "transpose", "expand_dims", "split", "slice", "slice_axis", "clip", "swapaxes",
        "squeeze", "flip", "tile", "repeat", "broadcast_to", "broadcast_like", "one_hot",
        "take", "pick", "slice_like", "zeros_like", "ones_like", "shape_array", "size_array",
        "sum", "mean", "max", "min", "argmax", "argmin", "topk", "sort", "argsort", "softmax",
        "log_softmax", "relu", "sigmoid", "tanh", "exp", "expm1", "log", "log1p", "log2",
        "log10", "sqrt", "rsqrt", "cbrt", "rcbrt", "square", "reciprocal", "abs", "sign",
        "round", "rint", "floor", "ceil", "trunc", "fix", "sin", "cos", "tan", "arcsin",
        "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "degrees",
        "radians")},
}


def fluent_arguments(owner: str, method: str, op: OpDef, args: Sequence[Any],
                     kwargs: Mapping[str, Any], tensor_type: type
                     ) -> tuple[list[Any], dict[str, Any]]:
    """(further tensor inputs, parameters) of ``x.<method>(*args, **kwargs)`` for
    the operator `op`."""
    tensors = [a for a in args if isinstance(a, tensor_type)]
    values = [a for a in args if not isinstance(a, tensor_type)]
    names = [p.name for p in op.params]
    if len(values) > len(names):
        raise MinimxError(f"{owner}.{method}: {len(values)} positional parameters, but "
                          f"{op.name} has {len(names)} ({', '.join(names)})")
    params = dict(kwargs)
    for name, value in zip(names, values, strict=False):
        if name in params:
            raise MinimxError(f"{owner}.{method}: {name} given by position and by keyword")
        params[name] = value
    return tensors, params
