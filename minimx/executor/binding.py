"""`bind` and `simple_bind`: checking what the caller gives, then making an Executor.

`bind` takes the caller's arrays (lists in list_* order, or dicts by name whose
extra names are ignored, as in MXNet). `simple_bind` makes zero arrays whose
dtypes come from `type_dict`, the variables' declared dtypes and type
inference (float32 where nothing decides), and whose shapes come from the
given shapes by shape inference. Every shape is checked before anything is
allocated: a float dimension or a size beyond the machine's memory is a
`ShapeError` naming the argument. Both index the symbol's graph once and hand
it to the Executor, with what `simple_bind` inferred about it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base import (
    DEFAULT_DTYPE,
    DTypeError,
    MinimxError,
    ShapeError,
    as_dtype,
    as_shape,
    check_array_size,
)
from ..context import Context, as_context
from ..graph import Graph
from ..ndarray import NDArray, zeros
from ..ops.infer import known
from ..symbol import Symbol
from ..symbol.symbol import attr_dtype
from .executor import Executor

GRAD_REQS = ("write", "add", "null")


def _by_name(values: Any, names: list[str], what: str) -> dict[str, Any]:
    """A dict by name from a list in `names` order, or from a dict (whose
    names that are not in `names` are ignored, as MXNet ignores them)."""
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return {n: values[n] for n in names if n in values}
    values = list(values)
    if len(values) != len(names):
        raise MinimxError(f"bind: {len(values)} {what}s given for {len(names)} "
                          f"({', '.join(names)})")
    return dict(zip(names, values, strict=True))


def _users_of(sym: Symbol, name: str) -> str:
    for node in sym._topo():
        for input_name, e in zip(node.input_names(), node.inputs, strict=False):
            if e.node.name == name and e.node.is_variable:
                return f" (input {input_name} of {node.label})"
    return ""


def _grad_reqs(grad_req: Any, names: list[str]) -> dict[str, str]:
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, Mapping):
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        reqs = _by_name(grad_req, names, "grad_req")
    bad = {n: r for n, r in reqs.items() if r not in GRAD_REQS}
    if bad:
        raise MinimxError(f"bind: grad_req must be one of {GRAD_REQS}, got {bad}")
    return reqs


def bind(symbol: Symbol, ctx: Context | None, args: Any, args_grad: Any = None,
         grad_req: Any = "write", aux_states: Any = None) -> Executor:
    """Bind `symbol` to existing arrays (lists in list_* order, or dicts by name);
    its outputs are made on `ctx`. Arrays on another context are taken as they
    are (MXNet refuses them; every context is the same memory here)."""
    ctx = as_context(ctx, "bind: ctx")
    graph = Graph(symbol.outputs)
    arg_names, aux_names = _input_names(graph)
    args = _by_name(args, arg_names, "argument")
    aux = _by_name(aux_states, aux_names, "auxiliary state")
    for names, given, what in ((arg_names, args, "argument"), (aux_names, aux, "auxiliary state")):
        for name in names:
            if name not in given:
                raise MinimxError(f"bind: {what} {name!r}{_users_of(symbol, name)} is missing")
            if not isinstance(given[name], NDArray):
                raise MinimxError(f"bind: {what} {name!r} must be an NDArray, "
                                  f"got {type(given[name]).__name__}")
    reqs = _grad_reqs(grad_req, arg_names)
    grads = _by_name(args_grad, arg_names, "gradient")
    reqs = {n: (r if n in grads else "null") for n, r in reqs.items()}
    return Executor(symbol, args, grads, reqs, aux, graph, ctx=ctx)


def simple_bind(symbol: Symbol, ctx: Context | None, grad_req: Any = "write",
                type_dict: Mapping[str, Any] | None = None,
                shapes: Mapping[str, Sequence[int]] | None = None) -> Executor:
    """Bind `symbol` to new zero arrays on `ctx` whose shapes come from `shapes` by
    inference."""
    ctx = as_context(ctx, "simple_bind: ctx")
    given = {n: as_shape(s, f"simple_bind: shape of {n}") for n, s in (shapes or {}).items()}
    graph = Graph(symbol.outputs)
    arg_names, aux_names = _input_names(graph)
    dtype_of = _entry_dtypes(symbol, graph, type_dict)
    dtypes = {graph.nodes[i].name: dtype_of[graph.entry_ptr[i]] for i in graph.input_ids}
    # A given shape is refused before inference computes with its dimensions.
    _check_sizes(given, dtypes)
    arg_shapes, out_shapes, aux_shapes, shape_of = symbol._infer("shape", (), given, graph)
    if not all(known(s) for s in (*arg_shapes, *out_shapes, *aux_shapes)):
        raise ShapeError(f"simple_bind: cannot infer the shapes of {_uninferred(symbol, given)} "
                         f"from the shapes given ({given})")
    inferred = {graph.nodes[i].name: shape_of[graph.entry_ptr[i]] for i in graph.input_ids}
    _check_sizes(inferred, dtypes)
    arrays = {n: zeros(inferred[n], ctx, dtypes[n]) for n in arg_names + aux_names}
    reqs = _grad_reqs(grad_req, arg_names)
    grads = {n: zeros(arrays[n].shape, ctx, arrays[n].dtype) for n, r in reqs.items()
             if r != "null"}
    return Executor(symbol, {n: arrays[n] for n in arg_names}, grads, reqs,
                    {n: arrays[n] for n in aux_names}, graph, (shape_of, dtype_of), ctx)


def _input_names(graph: Graph) -> tuple[list[str], list[str]]:
    """The names of the arguments and of the auxiliary states, in order."""
    return ([graph.nodes[i].name for i in graph.argument_ids],
            [graph.nodes[i].name for i in graph.aux_ids])


def _entry_dtypes(symbol: Symbol, graph: Graph, type_dict: Mapping[str, Any] | None
                  ) -> list:
    """The dtype of every entry of `symbol`'s `graph`: `type_dict` first, then the
    variables' declared dtypes and what type inference derives from both;
    float32 for the inputs left unknown. One inference gives every undeclared
    input float32 at once; only if that contradicts the graph are the inputs
    that inference leaves unknown found first, and given float32 in a second."""
    types = {k: as_dtype(v) for k, v in (type_dict or {}).items()}
    undeclared = [graph.nodes[i].name for i in graph.input_ids
                  if graph.nodes[i].name not in types and attr_dtype(graph.nodes[i]) is None]
    try:
        return symbol._infer("type", (), {**dict.fromkeys(undeclared, DEFAULT_DTYPE), **types},
                             graph)[3]
    except DTypeError:
        values = symbol._infer("type", (), types, graph)[3]
        unknown = [graph.nodes[i].name for i in graph.input_ids
                   if values[graph.entry_ptr[i]] is None]
        return symbol._infer("type", (), {**types, **dict.fromkeys(unknown, DEFAULT_DTYPE)},
                             graph)[3]


def _check_sizes(shapes: Mapping[str, tuple[int, ...]], dtypes: Mapping[str, np.dtype]) -> None:
    for name, shape in shapes.items():
        # A name that is not an input is refused by shape inference.
        check_array_size(shape, dtypes.get(name, DEFAULT_DTYPE), f"simple_bind: {name}")


def _uninferred(symbol: Symbol, shapes: Mapping[str, tuple[int, ...]]) -> str:
    """What shape inference leaves unknown: the inputs (with what is known of them),
    or, when every input is known, the first operator output."""
    args, _, aux, _ = symbol._infer("shape", (), shapes)
    groups = [(what, [_shown(n, s) for n, s in zip(names, found, strict=True) if not known(s)])
              for what, names, found in (("arguments", symbol.list_arguments(), args),
                                         ("auxiliary states", symbol.list_auxiliary_states(), aux))]
    missing = [f"{what} {', '.join(names)}" for what, names in groups if names]
    if missing:
        return "; ".join(missing)
    internals = symbol.get_internals()
    _, outs, _, _ = internals._infer("shape", (), shapes)
    return next(f"{e.node.label} output {_shown(e.node.entry_name(e.index), s)}"
                for e, s in zip(internals.outputs, outs, strict=True) if not known(s))


def _shown(name: str, shape: tuple[int, ...] | None) -> str:
    """`name`, with the part of its shape that is known (0: an unknown dimension)."""
    return name if shape is None else f"{name} {shape}"
