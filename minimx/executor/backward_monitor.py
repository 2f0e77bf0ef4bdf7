"""What MXNet 1.9.1's monitor shows of a backward pass, from minimx's `BackwardGraph`.

MXNet's GraphExecutor calls the monitor for every node of its backward graph,
in its order: a depth-first walk from the argument gradients (in argument
order) over each node's inputs. Its gradient pass makes nodes minimx does
not: ``_head_grad_<i>_id`` for each output gradient it reads,
``<node>_backward`` (``<node>_backward_output<k>``, or ``_output`` for one
output), ``sum_grad`` where two to seven gradients meet (eight or more make a
chain of in-place adds, each adding node showing the running total, and
``sum_grad_final``), ``zeros_without_dtype`` for a gradient that nothing sends
but a backward node reads, and ``<node>_<k>_copy`` for an argument whose
gradient is the same entry as an earlier argument's. Operators whose gradient
passes the output gradient through (``CloneGradient``: elemwise_add, add_n)
make no node. `MXNET_GRADS` holds, per operator, what its backward node reads,
as probed in MXNet 1.9.1 (`tools/mxnet_monitor_fixtures.py`).

An output MXNet's backward node does not write (the gradient of an input whose
grad_req is null: MXNet's executor sets kNullOp, and the monitor shows whatever
the memory holds) is left out, as are the inputs (with ``monitor_all``) that
minimx's backward no longer holds (a forward value its own gradient does not
read, MXNet's hidden Pooling workspace).

`BackwardMonitor` records the values during the backward (`after` each step)
and reports them, in MXNet's order, at its end (`report`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

import numpy as np

from ..graph.gradient import BackwardGraph, BackwardNode, GradFill, GradSum

Report = Callable[[str, np.ndarray], None]


@dataclass(frozen=True)
class MXNetGrad:
    """How MXNet's gradient pass shows one operator's backward.

    `inputs` are its backward node's inputs in order: ``g<k>`` the gradient of
    output k (``g*``: of every output), ``i<j>`` forward input j (``i*``: every
    one), ``o<k>`` forward output k, ``z<k>`` the zero gradient of a hidden
    output minimx's operator does not have (MXNet's oneDNN Pooling workspace).
    Tokens past the node's inputs or outputs are dropped (no bias, no state
    outputs). `node` False: no node, the gradient passes through. Names: the
    backward operator's FListInputNames / FListOutputNames where it has them.
    """

    inputs: tuple[str, ...] = ("g0",)
    node: bool = True
    input_names: tuple[str, ...] | None = None
    output_names: tuple[str, ...] | None = None


_CLONE = MXNetGrad((), node=False)
_OUT = MXNetGrad(("g0", "o0"))
_IN = MXNetGrad(("g0", "i0"))
_MATH_OUT = MXNetGrad(("g0", "o0"), input_names=("lhs", "rhs"))
_MATH_IN = MXNetGrad(("g0", "i0"), input_names=("lhs", "rhs"))
_BOTH = MXNetGrad(("g0", "i0", "i1"))
_LOSS = MXNetGrad(("i1", "o0"))
_SOFTMAX = MXNetGrad(("g0", "o0"), input_names=("ograd", "output"))
_POOL = MXNetGrad(("g0", "i0", "o0"))
_POOL_MAX = MXNetGrad(("g0", "z1", "i0", "o0", "o1"))
_ACT = MXNetGrad(("g0", "o0", "i0"))
_GRAD = MXNetGrad()

# Operator -> its MXNet backward (a function of the node's params where that
# depends on them); operators not listed: a node reading the first output's
# gradient.
MXNET_GRADS: dict[str, MXNetGrad | Callable[[Any], MXNetGrad]] = {
    "FullyConnected": _BOTH,
    "Convolution": MXNetGrad(("g0", "i0", "i1", "i2")),
    "Deconvolution": MXNetGrad(("g0", "i0", "i1", "i2")),
    "BatchNorm": MXNetGrad(("g0", "o1", "o2", "i0", "i1", "i2", "i3", "i4")),
    "Activation": lambda p: _OUT if p.act_type == "relu" else _ACT,
    "LeakyReLU": MXNetGrad(("g0", "i0", "i1", "o0")),
    "Pooling": lambda p: _POOL_MAX if p.pool_type == "max" else _POOL,
    "Flatten": _GRAD, "Reshape": _GRAD, "expand_dims": _GRAD, "transpose": _GRAD,
    "slice_axis": _GRAD, "sum": _GRAD, "mean": _GRAD, "Cast": _GRAD, "UpSampling": _GRAD,
    "Concat": MXNetGrad(("g0", "i*")),
    "SliceChannel": MXNetGrad(("g*",), output_names=("data",)),
    "elemwise_add": _CLONE, "add_n": _CLONE,
    "elemwise_sub": _GRAD, "broadcast_add": _GRAD, "broadcast_sub": _GRAD,
    "elemwise_mul": _BOTH, "elemwise_div": _BOTH, "broadcast_mul": _BOTH,
    "broadcast_div": _BOTH, "dot": _BOTH,
    "_plus_scalar": _GRAD, "_minus_scalar": _GRAD, "_rminus_scalar": _GRAD,
    "_mul_scalar": _GRAD, "_div_scalar": _GRAD, "_rdiv_scalar": _MATH_IN, "negative": _GRAD,
    "identity": _GRAD, "_copy": _GRAD,
    "Dropout": MXNetGrad(("g0", "o1")),
    "Embedding": _IN,
    "SoftmaxOutput": MXNetGrad(("o0", "i1")),
    "LinearRegressionOutput": _LOSS, "LogisticRegressionOutput": _LOSS,
    "MAERegressionOutput": _LOSS,
    "softmax": _SOFTMAX, "log_softmax": _SOFTMAX, "SoftmaxActivation": _OUT,
    "RNN": MXNetGrad(("i0", "i1", "i2", "o0", "g0", "o1", "g1", "i3", "o2", "g2")),
    "relu": _MATH_OUT, "sigmoid": _MATH_OUT, "tanh": _MATH_OUT, "sqrt": _MATH_OUT,
    "exp": _MATH_OUT, "log": _MATH_IN, "square": _MATH_IN, "abs": _MATH_IN, "clip": _IN,
    "max": MXNetGrad(("g0", "i0", "o0")), "min": MXNetGrad(("g0", "i0", "o0")),
    "LRN": MXNetGrad(("g0", "i0", "o1")),
    "LayerNorm": MXNetGrad(("g0", "i0", "i1", "o1", "o2")),
}

# MXNet sums eight or more gradients of one entry as a chain of in-place adds
# (MXNET_EXEC_INPLACE_GRAD_SUM_CAP).
_SUM_CAP = 8


def mxnet_grad(op: str, params: Any) -> MXNetGrad:
    """`MXNET_GRADS`'s answer for a node of `op` with `params`."""
    found = MXNET_GRADS.get(op, _GRAD)
    return found(params) if callable(found) else found


# Where a shown value comes from: ("step", k, eid) entry eid as backward step k
# left it; ("env", eid) an entry that stays put during backward (arguments,
# auxiliary states, heads, head gradients, argument gradients); ("zeros", eid)
# zeros shaped like entry eid; None: minimx no longer holds it (not shown).
Source = tuple | None


@dataclass
class _Node:
    """A node of MXNet's backward graph: the nodes it reads (in order) and what the
    monitor shows of it: inputs as (name, value, name of the variable it is or
    None), outputs as [name, value]."""

    name: str
    reads: list[_Node] = field(default_factory=list)
    inputs: list[tuple[str, Source, str | None]] = field(default_factory=list)
    outputs: list[list] = field(default_factory=list)

    def output(self, suffix: str, source: Source) -> _Token:
        self.outputs.append([f"{self.name}_{suffix}", source])
        return _Token(self, source, len(self.outputs) - 1)


@dataclass(frozen=True, eq=False)
class _Token:
    """A gradient entry of MXNet's graph: shown output `slot` of `node` (None: not
    one of its own, a gradient passed through)."""

    node: _Node
    source: Source
    slot: int | None = None


def _zeros(eid: int) -> _Token:
    return _Node("zeros_without_dtype").output("output", ("zeros", eid))


class BackwardMonitor:
    """The monitor rows of MXNet's backward graph for `bwd` (see the module
    docstring); `variables` names the forward entries that are variables."""

    def __init__(self, bwd: BackwardGraph, variables: dict[int, str]) -> None:
        self._bwd = bwd
        self._variables = variables
        self._keep: dict[int, set[int]] = {}   # backward step -> entries to copy after it
        self._kept: dict[tuple[int, int], np.ndarray] = {}
        self._order: list[_Node] = []
        self._build()

    def after(self, k: int, env: list) -> None:
        """Backward step `k` has run: copy what it leaves that is shown later."""
        for eid in self._keep.get(k, ()):
            self._kept[k, eid] = np.array(env[eid])

    def report(self, env: list, report: Report, monitor_all: bool) -> None:
        """Hand each shown value to `report`, in MXNet's order."""
        def value(source: tuple) -> np.ndarray:
            if source[0] == "step":
                return self._kept[source[1], source[2]]
            if source[0] == "zeros":
                return np.zeros_like(env[source[1]])
            return env[source[1]]

        for node in self._order:
            if monitor_all:
                for name, source, variable in node.inputs:
                    if source is not None:
                        if variable is not None:
                            report(variable, value(source))
                        report(name, value(source))
            for name, source in node.outputs:
                report(name, value(source))
        self._kept.clear()

    # -- MXNet's graph -------------------------------------------------------------
    def _kept_after(self, k: int, eid: int) -> Source:
        self._keep.setdefault(k, set()).add(eid)
        return ("step", k, eid)

    def _build(self) -> None:
        bwd, g = self._bwd, self._bwd.forward
        parts: dict[int, list[_Token]] = {}   # forward entry -> its gradient's parts
        sums: dict[int, list[Source]] = {}   # forward entry -> minimx's running sums
        for i, (e, h) in enumerate(zip(g.head_entry_ids(), bwd.head_grads, strict=True)):
            head = _Node(f"_head_grad_{i}_id", inputs=[
                (f"_head_grad_{i}_id_lhs", ("env", h), f"_head_grad_{i}"),
                (f"_head_grad_{i}_id_rhs", ("env", e), None)])
            parts.setdefault(e, []).append(head.output("output", ("env", h)))
        totals: dict[int, _Token] = {}

        def total(e: int) -> _Token | None:
            """MXNet's gradient of forward entry `e`, once all its parts are made."""
            if e not in totals and parts.get(e):
                totals[e] = self._aggregate(parts[e], sums.get(e, []))
            return totals.get(e)

        fills: dict[int, _Token] = {}
        for k, step in enumerate(bwd.nodes):
            if isinstance(step, GradSum):
                sums.setdefault(bwd.forward_entry(step.out), []).append(
                    self._kept_after(k, step.out))
            elif isinstance(step, GradFill):
                fills[step.out] = _zeros(step.out)
            else:
                for e, token in self._backward_node(k, step, total):
                    parts.setdefault(e, []).append(token)
        roots: list[_Node] = []
        copies: dict[int, int] = {}   # token -> copies made of it
        for nid, final in bwd.arg_grads.items():
            found = fills.get(final) or total(g.entry_ptr[nid])
            if found is None:
                continue
            token = found
            if id(token) in copies:   # an earlier argument's gradient too: MXNet copies it
                copies[id(token)] += 1
                copy = _Node(f"{token.node.name}_{copies[id(token)]}_copy", [token.node],
                             [(f"{token.node.name}_{copies[id(token)]}_copy_input0",
                               token.source, None)])
                copy.output("output", ("env", final))
                roots.append(copy)
            else:
                copies[id(token)] = 0
                roots.append(token.node)
        seen: set[int] = set()
        for root in roots:
            self._walk(root, seen)

    def _walk(self, root: _Node, seen: set[int]) -> None:
        """MXNet's order: depth first, the nodes a node reads before it (with a stack
        of its own: an unrolled network's backward is deeper than Python's recursion)."""
        stack = [(root, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                if id(node) in seen:
                    continue
                seen.add(id(node))
            if i < len(node.reads):
                stack += [(node, i + 1), (node.reads[i], 0)]
            else:
                self._order.append(node)

    def _aggregate(self, parts: list[_Token], sums: list[Source]) -> _Token:
        """MXNet's gradient of an entry from its parts (in the order made) and
        minimx's running sums of them."""
        if len(parts) == 1:
            return parts[0]
        if len(parts) < _SUM_CAP:
            node = _Node("sum_grad", [t.node for t in parts],
                         [(f"sum_grad_arg{k}", t.source, None) for k, t in enumerate(parts)])
            return node.output("output", sums[-1])
        # A chain of adds, run in place (skip_plus_node): each part's node shows
        # the running total, and the adds are not run, so not shown.
        for part, running in zip(parts[1:], sums, strict=True):
            if part.slot is not None:
                part.node.outputs[part.slot][1] = running
        final = _Node("sum_grad_final", [t.node for t in parts],
                      [("sum_grad_final_input0", sums[-1], None)])
        return final.output("output", sums[-1])

    def _backward_node(self, k: int, step: BackwardNode, total: Callable[[int], _Token | None]
                       ) -> list[tuple[int, _Token]]:
        """MXNet's node for backward step `k`, and the gradient parts it makes, by
        forward entry."""
        g = self._bwd.forward
        node = g.nodes[step.node]
        opdef, params = node.operator()
        spec = mxnet_grad(node.op or "", params)
        ins, outs = g.input_entry_ids(step.node), g.output_entry_ids(step.node)
        aux = set(node.aux_indices())
        grads = [j for j in range(len(ins)) if j not in aux]
        if not spec.node:   # each input's gradient is the output's
            through = total(outs[0])
            return [(ins[j], through) for j in grads
                    if step.in_grads[j] is not None and through is not None]
        read_in, read_out = opdef.grad_reads(params, node.label)
        held = {*compress(ins, read_in), *compress(outs, read_out)}
        me = _Node(f"{node.name}_backward")
        shown: list[tuple[Source, str | None]] = []
        for kind, index in _expand(spec.inputs, len(ins), len(outs)):
            if kind in "gz":
                grad = (total(outs[index]) if kind == "g" else None) or \
                    _zeros(outs[index if kind == "g" else 0])
                me.reads.append(grad.node)
                shown.append((grad.source, None))
                continue
            eid = ins[index] if kind == "i" else outs[index] if index < len(outs) else None
            if eid in self._variables:
                shown.append((("env", eid), self._variables[eid]))
            else:
                shown.append((self._kept_after(k, eid) if eid in held else None, None))
        names = spec.input_names or [f"input{j}" for j in range(len(shown))]
        me.inputs = [(f"{me.name}_{n}", source, variable)
                     for n, (source, variable) in zip(names, shown, strict=True)]
        made = []
        for position, j in enumerate(grads):
            c = step.in_grads[j]
            if c is None:
                continue   # MXNet does not write it (kNullOp): the memory's old bytes
            suffix = (spec.output_names[position] if spec.output_names
                      else "output" if len(grads) == 1 else f"output{position}")
            made.append((ins[j], me.output(suffix, self._kept_after(k, c))))
        return made


def _expand(tokens: tuple[str, ...], n_in: int, n_out: int) -> list[tuple[str, int]]:
    """`tokens` as (kind, index), ``*`` expanded, those past the node's inputs or
    outputs dropped (a hidden output's ``z``/``o`` kept)."""
    out: list[tuple[str, int]] = []
    for token in tokens:
        kind, rest = token[0], token[1:]
        count = n_in if kind == "i" else n_out
        if rest == "*":
            out += [(kind, j) for j in range(count)]
        elif kind == "z" or int(rest) < count or (kind == "o" and any(t[0] == "z" for t in tokens)):
            out.append((kind, int(rest)))
    return out
