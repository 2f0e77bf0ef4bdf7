"""`mx.nd.contrib.foreach`, `while_loop` and `cond`: MXNet 1.9.1's eager forms, which run
the user's functions in Python, step by step, on NDArrays.

>>> import minimx as mx
>>> step = lambda x, states: (x + states[0], [states[0] * 2])
>>> outs, states = mx.nd.contrib.foreach(step, mx.nd.ones((3, 2)), [mx.nd.ones(2)])
>>> states[0].asnumpy()
array([8., 8.], dtype=float32)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from ..base import MinimxError
from .creation import zeros
from .imperative import invoke_by_name
from .ndarray import NDArray


class ControlFlowError(MinimxError, ValueError):
    """A control-flow function that returns what the loop cannot take."""


def flatten(args: Any, what: str, leaf: type | tuple[type, ...] = NDArray,
            width: Callable[[Any], int] = lambda x: 0, *, allow_none: bool = False,
            refuse: Callable[[Any], MinimxError] | None = None) -> tuple[list, Any]:
    """The leaves of a nested list, and its format for `regroup` (MXNet's _flatten);
    `width` is how many items a leaf stands for (0: itself). With `allow_none`, None is
    a leaf too (format -1, as gluon's blocks take it). Anything else raises `refuse(it)`,
    or by default a ControlFlowError naming `what`."""
    if isinstance(args, leaf):
        return [args], width(args)
    if allow_none and args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        if refuse is not None:
            raise refuse(args)
        kind = leaf.__name__ if isinstance(leaf, type) else " or ".join(t.__name__ for t in leaf)
        raise ControlFlowError(f"{what} must be (nested) list of {kind}, but got "
                               f"{args!r} of type {type(args).__name__}")
    flat, fmts = [], []
    for item in args:
        arg, fmt = flatten(item, what, leaf, width, allow_none=allow_none, refuse=refuse)
        flat.extend(arg)
        fmts.append(fmt)
    return flat, fmts


def regroup(args: Sequence, fmt: Any) -> tuple[Any, Sequence]:
    """The nested list `flatten` flattened, and the items left (MXNet's _regroup)."""
    if isinstance(fmt, int):
        if fmt == -1:
            return None, args[1:]
        return (args[0], args[1:]) if fmt == 0 else (args[:fmt], args[fmt:])
    result = []
    for f in fmt:
        item, args = regroup(args, f)
        result.append(item)
    return result, args


def _scalar(value: Any, kind: type, what: str) -> Any:
    """`value` (an NDArray of one element, or a number) as a Python `kind`."""
    try:
        return kind(value.asscalar() if isinstance(value, NDArray) else value)
    except (TypeError, ValueError, MinimxError):
        raise ControlFlowError(f"Cannot convert {what} ({value!r}) to python "
                               f"{kind.__name__}") from None


def _join(op: str, items: Sequence[NDArray], axis: str) -> NDArray:
    """`items` stacked (``stack``) or concatenated (``Concat``) along axis 0."""
    return cast(NDArray, invoke_by_name(op, list(items), {axis: 0, "num_args": len(items)}))


def foreach(body: Callable, data: Any, init_states: Any) -> tuple[Any, Any]:
    """Run ``out, states = body(data[i], states)`` over axis 0 of `data`; returns the
    stacked outputs and the last states (MXNet's nd.contrib.foreach)."""
    flat, _ = flatten(data, "foreach input")
    flatten(init_states, "foreach states")
    states = init_states
    steps = []
    out_fmt = None
    for i in range(flat[0].shape[0]):
        outs, states = body(data[i] if isinstance(data, NDArray) else [d[i] for d in data],
                            states)
        outs, out_fmt = flatten(outs, "foreach output")
        steps.append(outs)
    stacked = [_join("stack", items, "axis") for items in zip(*steps, strict=True)]
    return (regroup(stacked, out_fmt)[0] if out_fmt is not None else stacked), states


def while_loop(cond: Callable, func: Callable, loop_vars: Any,
               max_iterations: Any = None) -> tuple[Any, Any]:
    """Run ``outs, loop_vars = func(*loop_vars)`` while ``cond(*loop_vars)``, at most
    `max_iterations` times; the stacked outputs have `max_iterations` rows, those past
    the last step zeros (MXNet leaves them unset) (MXNet's nd.contrib.while_loop)."""
    if max_iterations is None:
        raise ControlFlowError("max_iterations should be specified")
    max_iterations = _scalar(max_iterations, int, "max_iteration")
    single = isinstance(loop_vars, NDArray)
    values = [loop_vars] if single else list(loop_vars)
    if not values:
        raise ControlFlowError("loop_vars should contain at least one element")
    steps: list[list[NDArray]] = []
    out_fmt = None
    while len(steps) < max_iterations and _scalar(cond(*values), bool,
                                                  "Return value of cond"):
        step, new_values = func(*values)
        step, out_fmt = flatten([] if step is None else list(step)
                                 if isinstance(step, tuple) else step, "while output")
        new_values = [new_values] if isinstance(new_values, NDArray) else list(new_values or [])
        if len(new_values) != len(values):
            raise ControlFlowError("The length of loop_vars should be consistent during the "
                                   f"loop: {len(values)} given, func returns {len(new_values)}")
        if steps and len(step) != len(steps[0]):
            raise ControlFlowError("Number of elements in step_output should be the same in "
                                   f"each step: {len(steps[0])}, then {len(step)}")
        steps.append(step)
        values = new_values
    stacked = []
    for items in zip(*steps, strict=True):
        rows = list(items)
        if len(rows) < max_iterations:
            pad = zeros((max_iterations - len(rows), *rows[0].shape), dtype=rows[0].dtype)
            rows = [*(r.expand_dims(0) for r in rows), pad]
            stacked.append(_join("Concat", rows, "dim"))
        else:
            stacked.append(_join("stack", rows, "axis"))
    outputs = regroup(stacked, out_fmt)[0] if out_fmt is not None else stacked
    return outputs, values[0] if single else values


def cond(pred: Any, then_func: Callable, else_func: Callable) -> Any:
    """``then_func()`` if the scalar `pred` is true, else ``else_func()`` (MXNet's
    nd.contrib.cond)."""
    return then_func() if _scalar(pred, bool, "pred") else else_func()
