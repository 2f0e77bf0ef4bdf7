"""Backward through a recorded graph: MXNet's `Imperative::Backward`.

The graph the heads reach is a `graph.Graph` of `TapeNode`s; the gradient pass
(`graph.gradient.build_backward`) makes its backward steps, which run here on
the arrays the recording kept, with the operators' own backward kernels (the ones
an executor runs). The gradients are computed on the calling thread once the
arrays they read are written, then pushed into the gradient buffers (written, or
added to for grad_req ``'add'``), so that pending readers of those buffers see the
old values. Without ``retain_graph`` the graph is cleared afterwards.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from ..graph import Graph
from ..graph.gradient import BackwardGraph, BackwardNode, GradSum, build_backward
from ..graph.node import NodeEntry
from ..interpreter.runner import backward_step
from ..ndarray.ndarray import AUTOGRAD, NDArray
from ..ops.registry import OpContext
from .tape import AutogradError, TapeNode, entry_of

NOT_IN_GRAPH = (
    "Cannot differentiate node because it is not in a computational graph. You need to set "
    "is_recording to true or use autograd.record() to save computational graphs for "
    "backward. If you want to differentiate the same graph twice, you need to pass "
    "retain_graph=True to backward.")


def run_backward(heads: Sequence[NDArray], head_grads: Sequence[NDArray | None] | None,
                 variables: Sequence[NDArray] | None, retain_graph: bool,
                 train_mode: bool) -> list[NDArray] | None:
    """The gradients of `heads` into the marked variables' buffers (`variables` None),
    or, as new arrays, with respect to `variables`."""
    if head_grads is not None and len(head_grads) != len(heads):
        raise AutogradError("heads and head_grads must be lists of the same length "
                            f"({len(heads)} heads, {len(head_grads)} head_grads)")
    entries = [entry_of(h) for h in heads]
    if any(e is None for e in entries):
        raise AutogradError(NOT_IN_GRAPH)
    graph = Graph([NodeEntry(e.node, e.index) for e in entries if e is not None])
    nodes = cast(list[TapeNode], graph.nodes)
    if not all(n.live for n in nodes):
        # the heads are recorded, but an earlier backward cleared some of what they
        # were computed from (MXNet fails there, or crashes)
        raise AutogradError(NOT_IN_GRAPH)
    if variables is None:
        reqs = [n.grad_req if n.marked else "null" for n in _inputs(graph)]
        if all(r == "null" for r in reqs):
            raise AutogradError("There are no inputs in computation graph that require "
                                "gradients.")
        grads = [n.grad for n in _inputs(graph)]
    else:
        reqs, grads = _variable_reqs(graph, variables)
    bwd = build_backward(graph, reqs)
    env = _forward_values(graph, bwd)
    for k, (h, eid) in enumerate(zip(heads, bwd.head_grads, strict=True)):
        env[eid] = _head_grad(h, head_grads[k] if head_grads is not None else None)
    reads = [a for n in nodes for a in n.arrays if isinstance(a, NDArray)]
    reads += [g for g in (head_grads or ()) if g is not None]
    for a in reads:
        a.wait_to_read()
    values = _run(graph, bwd, env, train_mode)
    results = None
    if variables is not None:
        results = [NDArray(np.array(values[nid], dtype=v.dtype), ctx=v.context)
                   for v, nid in zip(variables, _variable_ids(graph, variables), strict=True)
                   if nid is not None]
    else:
        for nid, g in zip(graph.input_ids, grads, strict=True):
            if nid in values and g is not None:
                _deliver(g, values[nid], bwd.arg_grads[nid] in bwd.add_to)
    if not retain_graph:
        for n in nodes:
            n.clear()
    return results


def _inputs(graph: Graph) -> list[TapeNode]:
    return [cast(TapeNode, graph.nodes[nid]) for nid in graph.input_ids]


def _variable_ids(graph: Graph, variables: Sequence[NDArray]) -> list[int | None]:
    ids = {id(graph.nodes[nid]): nid for nid in graph.input_ids}
    return [ids.get(id(v._ag.node)) for v in variables]


def _variable_reqs(graph: Graph, variables: Sequence[NDArray]
                   ) -> tuple[list[str], list[NDArray | None]]:
    """``autograd.grad``'s grad_reqs: 'write' for each of `variables`, which must be
    marked variables the heads depend on (MXNet's messages)."""
    for k, v in enumerate(variables):
        e = entry_of(v)
        node = None if e is None else cast(TapeNode, e.node)
        if node is None or not node.marked or node.grad_req == "null":
            raise AutogradError(f"Cannot differentiate with respect to the {k + 1}-th "
                                "variable because it does not require gradient.")
    for k, nid in enumerate(_variable_ids(graph, variables)):
        if nid is None:
            raise AutogradError(f"Cannot differentiate with respect to the {k + 1}-th "
                                "variable because it is unreachable from the outputs.")
    wanted = {id(v._ag.node) for v in variables}
    return (["write" if id(graph.nodes[nid]) in wanted else "null" for nid in graph.input_ids],
            [None] * len(graph.input_ids))


def _forward_values(graph: Graph, bwd: BackwardGraph) -> list[Any]:
    """One slot per entry: the recorded arrays (or their `Unread` stand-ins) of the
    forward entries; the gradient entries are filled as backward makes them."""
    env: list[Any] = [None] * bwd.num_entries
    for nid, node in enumerate(graph.nodes):
        for k, a in enumerate(cast(TapeNode, node).arrays):
            env[graph.entry_ptr[nid] + k] = a._data if isinstance(a, NDArray) else a
    return env


def _head_grad(head: NDArray, given: NDArray | None) -> np.ndarray:
    if given is None:
        return np.ones(head.shape, head.dtype)
    if given.shape != head.shape:
        raise AutogradError(f"head gradient of shape {given.shape} for a head of shape "
                            f"{head.shape}")
    return given._data


def _run(graph: Graph, bwd: BackwardGraph, env: list[Any], train_mode: bool
         ) -> dict[int, np.ndarray]:
    """Run the backward steps; each differentiated input node's whole gradient."""
    ctx = OpContext(is_train=train_mode)
    previous = AUTOGRAD.recording, AUTOGRAD.training
    AUTOGRAD.recording, AUTOGRAD.training = False, train_mode  # as MXNet's, for Functions
    try:
        for step in bwd.nodes:
            if isinstance(step, BackwardNode):
                node = cast(TapeNode, graph.nodes[step.node])
                results = backward_step(graph, step, env, lambda e: _zeros_like(env[e]),
                                        node.state, ctx)
                for e, r in zip(step.in_grads, results, strict=True):
                    if e is not None:
                        env[e] = _zeros_like(env[bwd.forward_entry(e)]) if r is None else r
            elif isinstance(step, GradSum):
                first, *rest = (env[e] for e in step.inputs)
                env[step.out] = first + rest[0] if rest else np.array(first)
            else:
                env[step.out] = _zeros_like(env[bwd.forward_entry(step.out)])
    finally:
        AUTOGRAD.recording, AUTOGRAD.training = previous
    return {nid: env[e] for nid, e in bwd.arg_grads.items()}


def _zeros_like(a: Any) -> np.ndarray:
    return np.zeros(a.shape, a.dtype)


def _deliver(grad: NDArray, value: np.ndarray, add: bool) -> None:
    """Write (or add) `value` into a gradient buffer once its pending readers are done."""
    dst = grad._data
    value = np.array(value, dtype=dst.dtype)   # its own copy: the push runs later
    if add:
        grad._push(lambda: np.add(dst, value, out=dst, casting="unsafe"), (), "grad_add")
    else:
        grad._push(lambda: np.copyto(dst, value, casting="unsafe"), (), "grad_write")
