"""The gradient pass: the backward graph of a (partitioned) forward Graph.

Needs: a `Graph` whose nodes' operators define `backward` (see
`ops.registry`), and one grad_req (``write``, ``add`` or ``null``) per input
variable, in `graph.input_ids` order (auxiliary states are always ``null``).

Guarantees: a `BackwardGraph` over an entry space that extends the forward
one (gradient entries get ids from ``graph.num_entries`` on), holding, in
run order:
- one `BackwardNode` (``_backward_<op>``) per forward node that some
  gradient flows through, reading its output gradients and those of the
  node's inputs and outputs that its operator's ``backward_reads`` names
  (all of them if it names none), and writing one gradient contribution per
  input that needs one; so forward entries that no backward reads die in
  forward, and the planner can reuse their storage;
- a `GradSum` wherever an entry is read more than once, adding each new
  contribution to the running total as soon as it exists, so at most two
  contributions per entry are ever live;
- a `GradFill` (zeros) for a ``write`` argument that no gradient reaches.
Each head gets a head-gradient entry, read only if some backward node needs
it: loss layers (the operators whose `backward_reads` says
``out_grads=False``: SoftmaxOutput without ``out_grad``, the regression
outputs, MakeLoss...) ignore their output gradient, as MXNet's loss layers
do, so a graph ending in them needs no head gradients. Every
``write``/``add`` argument's gradient ends in one entry (`arg_grads`); for
``add`` the runner adds into the gradient array instead of overwriting it.

Run after partitioning and inference; `plan_memory` plans `forward steps +
BackwardGraph.steps()` together.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from itertools import compress

from ..base import MinimxError
from .indexed import Graph
from .plan_memory import Step


@dataclass(frozen=True)
class BackwardNode:
    """``_backward_<op>`` of forward node `node`."""

    node: int
    out_grads: tuple[int | None, ...]  # gradient entry per forward output (None: zeros)
    in_grads: tuple[int | None, ...]   # entry receiving each input's gradient (None: unused)


@dataclass(frozen=True)
class GradSum:
    """``out = sum(inputs)``: one or two gradient contributions."""

    inputs: tuple[int, ...]
    out: int


@dataclass(frozen=True)
class GradFill:
    """``out = 0``: an argument's gradient that nothing reaches."""

    out: int


BackwardStep = BackwardNode | GradSum | GradFill


@dataclass
class BackwardGraph:
    """The backward pass of `forward`; see the module docstring."""

    forward: Graph
    grad_of: list[int] = field(default_factory=list)  # forward entry of each gradient entry
    head_grads: list[int] = field(default_factory=list)
    arg_grads: dict[int, int] = field(default_factory=dict)  # input node id -> entry
    add_to: set[int] = field(default_factory=set)  # entries accumulated into their array
    nodes: list[BackwardStep] = field(default_factory=list)

    @property
    def num_entries(self) -> int:
        return self.forward.num_entries + len(self.grad_of)

    def new_entry(self, forward_entry: int) -> int:
        self.grad_of.append(forward_entry)
        return self.num_entries - 1

    def forward_entry(self, eid: int) -> int:
        """The forward entry that gradient entry `eid` is the gradient of."""
        return self.grad_of[eid - self.forward.num_entries]

    def head_grad_needed(self) -> list[bool]:
        """For each head: whether some backward node reads its gradient."""
        read = {e for step in self.steps() for e in step.reads}
        return [h in read for h in self.head_grads]

    def external(self) -> set[int]:
        """Gradient entries that own their storage: head and argument gradients."""
        return {*self.head_grads, *self.arg_grads.values()}

    def steps(self) -> list[Step]:
        """The backward schedule, for `plan_memory`."""
        g = self.forward
        out: list[Step] = []
        for b in self.nodes:
            if isinstance(b, GradSum):
                out.append(Step("_grad_sum", b.inputs, (b.out,),
                                tuple((i, 0) for i in range(len(b.inputs)))))
            elif isinstance(b, GradFill):
                out.append(Step("_grad_zeros", (), (b.out,)))
            else:
                node = g.nodes[b.node]
                opdef, params = node.operator()
                ograds = [e for e in b.out_grads if e is not None]
                read_in, read_out = opdef.grad_reads(params, node.label)
                reads = (*compress(g.input_entry_ids(b.node), read_in),
                         *compress(g.output_entry_ids(b.node), read_out), *ograds)
                writes = tuple(e for e in b.in_grads if e is not None)
                out.append(Step(f"_backward_{node.op} {node.name}", reads, writes,
                                _backward_inplace(opdef.inplace, b, len(reads) - len(ograds))))
        # The forward values backward reads outlive it: a second backward after one
        # forward (MXNet's executors allow it) reads them again. Backward's peak is
        # at its start, when they are all alive anyway.
        kept = sorted({e for s in out for e in s.reads if e < g.num_entries})
        return out + [Step("_keep_forward_values", tuple(kept), ())]

    def entry_name(self, eid: int) -> str:
        """``%3.0`` for output 0 of node 3; ``d%3.0#28`` for gradient entry 28 of it."""
        g = self.forward
        if eid >= g.num_entries:
            return f"d{self.entry_name(self.forward_entry(eid))}#{eid}"
        nid = bisect.bisect_right(g.entry_ptr, eid) - 1
        return f"%{nid}.{eid - g.entry_ptr[nid]}"

    def __str__(self) -> str:
        g, name = self.forward, self.entry_name
        lines = []
        for b in self.nodes:
            if isinstance(b, BackwardNode):
                node = g.nodes[b.node]
                ograds = ", ".join("0" if e is None else name(e) for e in b.out_grads)
                igrads = ", ".join("_" if e is None else name(e) for e in b.in_grads)
                lines.append(f"{igrads} = _backward_{node.op} {node.name}({ograds})")
            elif isinstance(b, GradSum):
                lines.append(f"{name(b.out)} = _grad_sum({', '.join(map(name, b.inputs))})")
            else:
                lines.append(f"{name(b.out)} = _grad_zeros()")
        lines.append("head gradients: " + ", ".join(map(name, self.head_grads)))
        lines.append("argument gradients: " + ", ".join(
            f"{g.nodes[n].name}={name(e)}{' (add)' if e in self.add_to else ''}"
            for n, e in self.arg_grads.items()))
        return "\n".join(lines)


def _backward_inplace(forward_pairs: tuple[tuple[int, int], ...], b: BackwardNode,
                      first_ograd: int) -> tuple[tuple[int, int], ...]:
    """Forward (input i, output k) in-place becomes (out_grad k -> in_grad i): same sizes."""
    read_pos: dict[int, int] = {}  # out_grad k -> its position among the step's reads
    for k, e in enumerate(b.out_grads):
        if e is not None:
            read_pos[k] = first_ograd + len(read_pos)
    write_pos: dict[int, int] = {}  # in_grad i -> its position among the step's writes
    for i, e in enumerate(b.in_grads):
        if e is not None:
            write_pos[i] = len(write_pos)
    return tuple((read_pos[k], write_pos[i]) for i, k in forward_pairs
                 if k in read_pos and i in write_pos)


def build_backward(graph: Graph, grad_reqs: list[str]) -> BackwardGraph:
    """The backward graph of `graph` for one grad_req per input variable."""
    bwd = BackwardGraph(graph)
    needs = [False] * graph.num_entries  # forward entries some gradient must reach
    for nid, req in zip(graph.input_ids, grad_reqs, strict=True):
        needs[graph.entry_ptr[nid]] = req != "null" and nid not in graph.aux_ids
    for nid, node in enumerate(graph.nodes):
        if not node.is_variable:
            aux = set(node.aux_indices())
            # Nothing flows back through a zero-gradient operator (BlockGrad, argmax...):
            # its outputs need no gradient, and what feeds only them gets zeros.
            flows = not node.operator()[0].zero_gradient and any(
                needs[e] for j, e in enumerate(graph.input_entry_ids(nid)) if j not in aux)
            for e in graph.output_entry_ids(nid):
                needs[e] = flows
    total: dict[int, int] = {}  # forward entry -> entry holding its gradient so far

    def contribute(e: int, c: int) -> None:
        if e in total:
            s = bwd.new_entry(e)
            bwd.nodes.append(GradSum((total[e], c), s))
            c = s
        total[e] = c

    for e in graph.head_entry_ids():
        h = bwd.new_entry(e)
        bwd.head_grads.append(h)
        if needs[e]:
            contribute(e, h)
    for nid in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[nid]
        outs = graph.output_entry_ids(nid)
        if node.is_variable or not any(e in total for e in outs):
            continue
        if node.operator()[0].backward is None:
            raise MinimxError(f"{node.label}: the operator has no gradient, but a gradient "
                              "must flow through it (set grad_req='null' for its inputs)")
        aux = set(node.aux_indices())
        ins = graph.input_entry_ids(nid)
        in_grads = tuple(bwd.new_entry(e) if needs[e] and j not in aux else None
                         for j, e in enumerate(ins))
        opdef, params = node.operator()
        loss = not opdef.reads_out_grads(params)
        bwd.nodes.append(BackwardNode(nid, tuple(None if loss else total.get(e) for e in outs),
                                      in_grads))
        for e, c in zip(ins, in_grads, strict=True):
            if c is not None:
                contribute(e, c)
    _finish_arguments(bwd, grad_reqs, total)
    return bwd


def _finish_arguments(bwd: BackwardGraph, grad_reqs: list[str], total: dict[int, int]) -> None:
    """Give each write/add argument one entry holding its whole gradient."""
    graph = bwd.forward
    for nid, req in zip(graph.input_ids, grad_reqs, strict=True):
        e = graph.entry_ptr[nid]
        if req == "null" or nid in graph.aux_ids:
            continue
        final = total.get(e)
        if final is None:
            if req == "add":
                continue  # adding zero
            final = bwd.new_entry(e)
            bwd.nodes.append(GradFill(final))
        elif final in bwd.head_grads:
            # A head that is the argument itself: the head gradient is read-only.
            copy = bwd.new_entry(e)
            bwd.nodes.append(GradSum((final,), copy))
            final = copy
        bwd.arg_grads[nid] = final
        if req == "add":
            bwd.add_to.add(final)
