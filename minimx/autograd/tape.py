"""The recorded graph: what `invoke` hands to autograd while it records.

Each recorded call becomes a `TapeNode` of the graph IR (`graph.node`), named as
MXNet's (``node_0``, ``node_1``, ...), keeping the arrays its gradient reads, the
state its kernel ran with and its training mode. An array's `_ag` is its entry in
that graph: a variable for an array `mark_variables` marked (``var<k>``), a
variable with no gradient for an input that needed none (``null<k>``), or an output
of a recorded node. A call is recorded when one of its inputs is in a graph, as
MXNet's `RecordOp`; writing into an array that is in a graph while recording is
refused with MXNet's message. A backward without ``retain_graph`` clears the graph
it ran (`TapeNode.clear`): its arrays are then in no graph, but for marked
variables.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from ..base import MinimxError
from ..graph.node import Node, NodeEntry
from ..ndarray.ndarray import NDArray
from ..ops.params import Params
from ..ops.registry import OpDef, Unread, get_op

GRAD_REQS = ("null", "write", "add")
ASSIGN_MESSAGE = (
    "Assigning to NDArrays that are already in a computational graph will cause undefined "
    "behavior when evaluating gradients. Please call backward first to clear the graph or do "
    "this out side of a record section. Also note that you cannot use inplace operations like "
    "+=, *=, relu(x, out=x), y[idx]=x, etc inside a record section.")


class AutogradError(MinimxError):
    """What MXNet's autograd refuses: differentiating what was not recorded, writing
    into a recorded array while recording, a variable that needs no gradient..."""


# MXNet's Imperative counters: process-wide, never reset.
_NODE_COUNT = itertools.count()
_VARIABLE_COUNT = itertools.count()


class TapeNode(Node):
    """A node of a recorded graph. An operator node keeps, per output, the array its
    gradient reads (an `Unread` stand-in for one nothing reads), its kernel's state
    (its params for a stateless operator) and whether it ran in training mode. A
    variable keeps its array, and for a marked one its gradient buffer and grad_req."""

    __slots__ = ("arrays", "state", "is_train", "grad", "grad_req", "live")
    arrays: list[Any]
    state: Any
    is_train: bool
    grad: NDArray | None
    grad_req: str
    live: bool

    @classmethod
    def of_call(cls, op: OpDef, p: Params, attrs: Mapping[str, str],
                inputs: list[NodeEntry], arrays: list[Any], state: Any,
                is_train: bool) -> TapeNode:
        node = cls.__new__(cls)
        node.opdef, node.params, node.subgraphs = op, p, ()
        node.name = f"node_{next(_NODE_COUNT)}"
        node.attrs = {k: str(v) for k, v in attrs.items()}
        node.inputs = inputs
        node.arrays, node.state, node.is_train = arrays, state, is_train
        node.grad, node.grad_req, node.live = None, "null", True
        return node

    @classmethod
    def variable(cls, prefix: str, array: Any, grad: NDArray | None = None,
                 grad_req: str = "null") -> TapeNode:
        node = cls.__new__(cls)
        Node.__init__(node, None, f"{prefix}{next(_VARIABLE_COUNT)}")
        node.arrays, node.state, node.is_train = [array], None, False
        node.grad, node.grad_req, node.live = grad, grad_req, True
        return node

    @property
    def marked(self) -> bool:
        """A variable `mark_variables` made (it has a gradient buffer)."""
        return self.grad is not None

    def clear(self) -> None:
        """MXNet's AGInfo::Clear after a backward: the node leaves the graph (but a
        marked variable whose gradient is computed) and lets its arrays go."""
        if self.marked and self.grad_req != "null":
            return
        self.live = False
        self.arrays = []
        self.inputs = []


def entry_of(a: NDArray) -> NodeEntry | None:
    """`a`'s entry in a live recorded graph, or None."""
    e = a._ag
    return e if e is not None and e.node.live else None


def in_graph(a: NDArray) -> bool:
    return entry_of(a) is not None


def record(op: OpDef, p: Params, attrs: Mapping[str, str], inputs: Sequence[NDArray],
           outputs: Sequence[NDArray], state: Any, is_train: bool) -> None:
    """Record one call (every output, hidden ones too) if an input is in a graph."""
    for o in outputs:
        if in_graph(o):
            raise AutogradError(f"{op.name}: {ASSIGN_MESSAGE}")
    entries = [entry_of(a) for a in inputs]
    if all(e is None for e in entries):
        return
    read_in, read_out = op.grad_reads(p, op.name)
    for a, e, read in zip(inputs, entries, read_in, strict=True):
        if e is None:   # an input needing no gradient: a variable of its own, as MXNet's
            a._ag = NodeEntry(TapeNode.variable("null", _saved(a, read)))
        elif read:      # the producer keeps what this gradient reads
            cast(TapeNode, e.node).arrays[e.index] = a.detach()
    node = TapeNode.of_call(op, p, attrs, [a._ag for a in inputs],
                            [_saved(o, r) for o, r in zip(outputs, read_out, strict=True)],
                            state, is_train)
    for k, o in enumerate(outputs):
        o._ag = NodeEntry(node, k)


def _saved(a: NDArray, read: bool) -> NDArray | Unread:
    """What a node keeps of array `a`: its memory outside the graph (MXNet's Detach, so
    that array and node do not hold each other), or only its shape and dtype."""
    if read:
        return a.detach()
    return Unread(a.shape, a.dtype, "a recorded array its gradient does not read")


def record_call(op_name: str, attrs: Mapping[str, str], inputs: Sequence[NDArray],
                outputs: Sequence[NDArray]) -> None:
    """Record a call NDArray made without `invoke` (a reshaped view, a copy)."""
    op = get_op(op_name)
    p = op.parse_params(attrs, "_imperative")
    record(op, p, attrs, inputs, outputs, p, False)


def record_copy(src: NDArray, dst: NDArray) -> None:
    """``src.copyto(dst)`` while recording: MXNet's ``_copyto``, recorded as ``_copy``
    (or ``Cast`` into another dtype), refused into an array in a graph."""
    if src.dtype == dst.dtype:
        record_call("_copy", {}, [src], [dst])
    else:
        record_call("Cast", {"dtype": dst.dtype.name}, [src], [dst])


def record_setitem(dst: NDArray, key: Any, value: Any) -> None:
    """``dst[key] = value`` while recording: refused into an array in a graph (MXNet's
    message); a recorded value assigned to all of `dst` is a recorded copy."""
    if in_graph(dst):
        raise AutogradError(f"setitem: {ASSIGN_MESSAGE}")
    if isinstance(value, NDArray) and in_graph(value):
        whole = isinstance(key, slice) and key == slice(None)   # an array key has no ==
        if not whole or value.shape != dst.shape:
            raise AutogradError("setitem: assigning a recorded array into part of another "
                                "is not recorded by minimx's autograd; build the result with "
                                "operators (concat, where, ...) instead")
        record_copy(value, dst)


def mark_variables(variables: NDArray | Sequence[NDArray],
                   gradients: NDArray | Sequence[NDArray],
                   grad_reqs: str | Sequence[str] = "write") -> None:
    """Make each array a variable of the graphs recorded from now on, its gradient
    going to the matching buffer as its grad_req says."""
    if isinstance(variables, NDArray):
        variables = [variables]
    if isinstance(gradients, NDArray):
        gradients = [gradients]
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if not len(variables) == len(gradients) == len(reqs):
        raise AutogradError(f"mark_variables: {len(variables)} variables, {len(gradients)} "
                            f"gradients and {len(reqs)} grad_reqs")
    for k, (v, g, req) in enumerate(zip(variables, gradients, reqs, strict=True)):
        if req not in GRAD_REQS:
            raise AutogradError(f"mark_variables: grad_req {req!r} of variable {k} is not "
                                f"one of {', '.join(GRAD_REQS)}")
        if not isinstance(v, NDArray) or not isinstance(g, NDArray):
            raise AutogradError(f"mark_variables: variable {k} and its gradient must be "
                                f"NDArrays, got {type(v).__name__} and {type(g).__name__}")
        if g.shape != v.shape:
            raise AutogradError(f"mark_variables: variable {k} has shape {v.shape}, its "
                                f"gradient {g.shape}")
        v._ag = NodeEntry(TapeNode.variable("var", v.detach(), g, req))


def attach_grad(a: NDArray, grad_req: str = "write", stype: str | None = None) -> None:
    if stype not in (None, "default"):
        raise AutogradError(f"attach_grad: stype={stype!r}: minimx arrays are dense "
                            "(stype 'default' only)")
    grad = NDArray(np.zeros(a.shape, a.dtype), ctx=a.context)
    mark_variables([a], [grad], grad_req)


def grad_of(a: NDArray) -> NDArray | None:
    """The gradient buffer of a marked variable (None for any other array)."""
    e = entry_of(a)
    node = None if e is None else cast(TapeNode, e.node)
    return node.grad if node is not None and node.marked else None
