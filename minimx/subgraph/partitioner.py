"""The partitioner: cuts a graph into the subgraphs a property selects.

Needs: a Symbol and a `SubgraphProperty`; shapes and dtypes of some inputs
(optional, for selectors that look at them).
Guarantees (checked by property tests; well-formedness and the interface are
also checked on every result): a node is in at most one subgraph, and every
node of a proposed set is in one (sets are split, never dropped); each
subgraph is weakly connected and made only of candidate nodes; the result is
acyclic; it has the same arguments and auxiliary states in the same order,
and the same number of outputs in the same order; the user's Symbol is not
modified.

Three phases, as in FX: *propose* grows a candidate set from each seed through
the selector and shrinks it until it is connected and cannot close a cycle;
*order* (`ordering`) keeps the order of the variables: `list_arguments()`
follows a depth-first walk from the heads through each node's inputs in
order, and a subgraph node takes its inputs in its subgraph's own walk from
its outputs, so each subgraph lists its outputs in the order the outer walk
first asks for them, and a set that would still move a variable (the walk
leaves it between two of its outputs and meets a new variable on the way) is
split into the parts the walk visits in one go, merged back into the largest
connected pieces that keep the order; *lift* (`lift`) replaces each set by the
node the property makes and rebuilds the graph in an order that respects
every dependency.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..base import DEFAULT_DTYPE, BackendError, DTypeError
from ..graph import Graph, Node
from ..graph.infer import infer_dtypes, infer_shapes
from ..symbol import Symbol
from ..symbol.symbol import attr_dtype, attr_shape
from .lift import lift
from .ordering import order_keeping_units
from .property import GraphPassProperty, SubgraphProperty
from .report import PartitionReport
from .selector import SelectorNode


class _Reach:
    """Ancestor and descendant sets of every node, as integer bitsets, aware of
    the subgraphs formed so far: a path that enters a formed subgraph may leave
    it from any of its members once the subgraph is one node."""

    def __init__(self, g: Graph, users: list[list[int]]) -> None:
        n = len(g.nodes)
        self.anc = [0] * n
        for nid, node in enumerate(g.nodes):
            bits = 0
            for e in node.inputs:
                j = g.node_id(e.node)
                bits |= self.anc[j] | (1 << j)
            self.anc[nid] = bits
        self.desc = [0] * n
        for nid in range(n - 1, -1, -1):
            bits = 0
            for j in users[nid]:
                bits |= self.desc[j] | (1 << j)
            self.desc[nid] = bits
        self.taken = 0
        self.owner: dict[int, int] = {}  # node id -> index into the lists below
        self.masks: list[int] = []
        self.set_anc: list[int] = []
        self.set_desc: list[int] = []

    def add_set(self, members: Sequence[int]) -> None:
        mask = anc = desc = 0
        for i in members:
            mask |= 1 << i
            anc |= self.anc[i]
            desc |= self.desc[i]
            self.owner[i] = len(self.masks)
        self.masks.append(mask)
        self.set_anc.append(anc | mask)
        self.set_desc.append(desc | mask)
        self.taken |= mask

    def _close(self, reach: int, set_reach: list[int], within: int) -> int:
        """`reach` grown through every formed subgraph in `within` that it touches."""
        seen = 0
        hit = reach & within
        while hit:
            k = self.owner[(hit & -hit).bit_length() - 1]
            reach |= set_reach[k]
            seen |= self.masks[k]
            hit = reach & within & ~seen
        return reach

    def downstream(self, members: int) -> int:
        desc = 0
        for i in _bits(members):
            desc |= self.desc[i]
        return self._close(desc, self.set_desc, self.taken)

    def outside_paths(self, members: int) -> int:
        """Nodes outside `members` on a path that leaves the set and comes back."""
        desc = self.downstream(members)
        anc = 0
        for i in _bits(members):
            anc |= self.anc[i]
        # Only formed subgraphs downstream of the set can carry a path back into it.
        anc = self._close(anc, self.set_anc, desc & self.taken)
        return anc & desc & ~members


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class _Proposer:
    """Grows and validates candidate sets for one property on one graph."""

    def __init__(self, g: Graph, views: list[SelectorNode], prop: SubgraphProperty,
                 label: str) -> None:
        self.g, self.views, self.prop, self.label = g, views, prop, label
        self.users = g.users()
        self.reach = _Reach(g, self.users)
        self.owner = [-1] * len(g.nodes)

    def free(self, nid: int, members: set[int]) -> bool:
        return (not self.g.nodes[nid].is_variable and self.owner[nid] < 0
                and nid not in members)

    def propose(self) -> list[list[int]]:
        subgraphs: list[list[int]] = []
        for seed in range(len(self.g.nodes)):
            if not self.free(seed, set()):
                continue
            selector = self.prop.create_subgraph_selector()
            selector.reset()
            if not selector.select(self.views[seed]):
                continue
            members = self._valid(self._filtered(selector, self._grow(selector, seed)), seed)
            if members:
                for nid in members:
                    self.owner[nid] = len(subgraphs)
                self.reach.add_set(members)
                subgraphs.append(members)
        return subgraphs

    def _grow(self, selector, seed: int) -> list[int]:
        members, queue, order = {seed}, [seed], [seed]
        while queue:
            cur = queue.pop(0)
            neighbours = [(self.g.node_id(e.node), selector.select_input)
                          for e in self.g.nodes[cur].inputs]
            neighbours += [(u, selector.select_output) for u in self.users[cur]]
            for nid, follow in neighbours:
                if self.free(nid, members) and follow(self.views[cur], self.views[nid]):
                    members.add(nid)
                    queue.append(nid)
                    order.append(nid)
        return order

    def _filtered(self, selector, grown: list[int]) -> list[int]:
        index = {id(self.views[i]): i for i in grown}
        kept = selector.filter([self.views[i] for i in grown])
        stray = [v for v in kept if id(v) not in index]
        if stray:
            raise BackendError(f"{self.label}: filter returned nodes that were not candidates: "
                               f"{', '.join(str(v) for v in stray)}")
        return [index[id(v)] for v in kept]

    def _valid(self, candidates: Sequence[int], seed: int) -> list[int]:
        """The largest set the shrinking rules leave: connected, closing no cycle."""
        members = set(candidates)
        while members:
            members = self._component(members, seed if seed in members else min(members))
            mask = sum(1 << i for i in members)
            bad = self.reach.outside_paths(mask)
            if not bad:
                return sorted(members)
            # MXNet's rule: drop the offending member (one a path comes back
            # into) with the highest topological index.
            offending = self.reach.downstream(bad) & mask
            members.discard(max(_bits(offending or mask)))
        return []

    def _component(self, members: set[int], start: int) -> set[int]:
        seen, stack = {start}, [start]
        while stack:
            cur = stack.pop()
            near = [self.g.node_id(e.node) for e in self.g.nodes[cur].inputs] + self.users[cur]
            for nid in near:
                if nid in members and nid not in seen:
                    seen.add(nid)
                    stack.append(nid)
        return seen


def infer_graph(g: Graph, shapes: Mapping[str, tuple], dtypes: Mapping[str, np.dtype]
                ) -> tuple[list, list]:
    """Every entry's shape and dtype, from the shapes and dtypes of `g`'s inputs
    given by name (or declared by the variables)."""
    known_shapes, known_dtypes = {}, {}
    for nid in g.input_ids:
        node, eid = g.nodes[nid], g.entry_ptr[nid]
        shape = shapes.get(node.name) or attr_shape(node)
        dtype = dtypes.get(node.name) or attr_dtype(node)
        if shape is not None:
            known_shapes[eid] = tuple(shape)
        if dtype is not None:
            known_dtypes[eid] = np.dtype(dtype)
    # Inputs whose dtype nothing tells are float32, MXNet's default dtype; if
    # that contradicts the graph, only the inputs still unknown after
    # inference get the default.
    defaults = {g.entry_ptr[n]: DEFAULT_DTYPE for n in g.input_ids}
    try:
        dtype_of = infer_dtypes(g, {**defaults, **known_dtypes})
    except DTypeError:
        dtype_of = infer_dtypes(g, known_dtypes)
        still = {e: t for e, t in defaults.items() if dtype_of[e] is None}
        dtype_of = infer_dtypes(g, {**known_dtypes, **still})
    return infer_shapes(g, known_shapes), dtype_of


def _views(g: Graph, shapes: list, dtypes: list) -> list[SelectorNode]:
    views = []
    for nid, node in enumerate(g.nodes):
        ins, outs = g.input_entry_ids(nid), g.output_entry_ids(nid)
        views.append(SelectorNode(node, tuple(shapes[e] for e in ins),
                                  tuple(shapes[e] for e in outs),
                                  tuple(dtypes[e] for e in ins), tuple(dtypes[e] for e in outs)))
    return views


def _interface(g: Graph) -> tuple[list[str], list[str]]:
    """The argument and auxiliary-state names, in order."""
    return [g.nodes[i].name for i in g.argument_ids], [g.nodes[i].name for i in g.aux_ids]


def _sorted(interface: tuple[list[str], list[str]]) -> tuple[list[str], list[str]]:
    return sorted(interface[0]), sorted(interface[1])


def partition_with_property(sym: Symbol, prop: SubgraphProperty, label: str, first_id: int,
                            report: PartitionReport,
                            shapes: Mapping[str, tuple] | None = None,
                            dtypes: Mapping[str, np.dtype] | None = None) -> tuple[Symbol, int]:
    """`sym` with every subgraph `prop` selects replaced by `prop`'s node, and the
    next free subgraph id (the nodes made are numbered from `first_id` on).
    What was made and left out is added to `report`."""
    g = Graph(sym.outputs)
    shape_of, dtype_of = infer_graph(g, shapes or {}, dtypes or {})
    result, next_id = partition_graph(g, shape_of, dtype_of, prop, label, first_id, report)
    return (sym if result is g else Symbol(result.outputs)), next_id


def partition_graph(g: Graph, shape_of: list, dtype_of: list, prop: SubgraphProperty,
                    label: str, first_id: int, report: PartitionReport) -> tuple[Graph, int]:
    """`partition_with_property` on an indexed graph whose entries' shapes and
    dtypes are known as far as `shape_of` and `dtype_of` tell: a new graph, or
    `g` itself if `prop` selects nothing."""
    if isinstance(prop, GraphPassProperty):
        result = Graph(prop.rewrite(Symbol(g.outputs)).outputs)
        report.add_step(label, [], [])
        _check_interface(g, result, label, ordered=False)
        return result, first_id
    views = _views(g, shape_of, dtype_of)
    sets = _Proposer(g, views, prop, label).propose()
    units = order_keeping_units(g, sets) if sets else []
    made: list[tuple[Node, int]] = []

    def make(inner: Symbol, k: int) -> Node:
        node = prop.create_subgraph_node(inner, first_id + k)
        made.append((node, len(units[k].members)))
        return node
    result = lift(g, [(u.members, u.outputs) for u in units], make,
                  f"{label}: create_subgraph_node", shape_of, dtype_of) if units else g
    taken = {nid for members in sets for nid in members}
    # Operators left out, and why; subgraph nodes (of an earlier property, or
    # read from a file) are partitioned already.
    report.add_step(label, made, [(v.node, prop.why_left_out(v)) for nid, v in enumerate(views)
                                  if nid not in taken and v.op and not v.node.subgraphs])
    _check_interface(g, result, label)
    return result, first_id + len(units)


def _check_interface(g: Graph, result: Graph, label: str, ordered: bool = True) -> None:
    """`ordering` replays the walk, and a partition must keep it: a bug if either did
    not. A whole-graph pass keeps the names only: MXNet's ``MKLDNN_QUANTIZE`` moves
    a fused sum's operand last, and with it the variables that operand reads (the
    executor binds arrays by name)."""
    before, after = _interface(g), _interface(result)
    if not ordered:
        before, after = _sorted(before), _sorted(after)
    if after != before or len(result.outputs) != len(g.outputs):
        raise BackendError(f"{label}: partitioning changed the arguments, auxiliary states "
                           "or outputs (a bug in the partitioner or the property)")
