"""Lifting node sets into subgraph nodes: the one rewrite behind the
partitioner and every backend fusion; and `inline`, which undoes it.

Needs: a Graph; disjoint sets of its operator nodes, none closing a cycle (no
path leaves a set and comes back into it), each with its outputs (the entries
read outside it) in the order its node is to produce them; a function making
each set's node from the set's subgraph.
Guarantees: a new, linted Graph (fresh nodes; the input graph is untouched)
in which each set is replaced by its node. The node's subgraph is the set,
copied, with one variable for each entry crossing into it, named after that
entry with its input position as suffix (``conv0_output0``, ``fc0_weight1``)
and carrying the entry's shape and dtype when they are given. The node's
inputs are those entries in its subgraph's `list_inputs` order: the
depth-first walk from its outputs, inputs in order, that orders every
Symbol's variables (the partitioner relies on it; a fused chain so keeps the
order in which a walk of the chain meets its inputs).

>>> import minimx as mx
>>> from minimx.graph import Graph, Node
>>> g = Graph(mx.sym.exp(mx.sym.relu(mx.sym.var('x'), name='r'), name='e').outputs)
>>> lifted = lift(g, [([1, 2], [(2, 0)])],
...               lambda inner, k: Node.create('_subgraph_op', f'sg{k}', subgraphs=[inner]),
...               'example')
>>> [n.label for n in lifted.nodes]
['x (Variable)', 'sg0 (_subgraph_op)']
>>> lifted.nodes[1].subgraphs[0].list_inputs()
['x0']
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Sequence

from ..base import DTYPE_TO_FLAG, BackendError
from ..graph import Graph, Node, NodeEntry
from ..graph.node import rewritten
from ..ops.params import format_value
from ..symbol import Symbol

Entry = tuple[int, int]   # (node id, output index)
NodeSet = tuple[Sequence[int], Sequence[Entry]]   # members, and their outputs in order
MakeNode = Callable[[Symbol, int], Node]          # (subgraph, index of the set) -> node


def lift(g: Graph, sets: Sequence[NodeSet], make_node: MakeNode, maker: str,
         shapes: Sequence | None = None, dtypes: Sequence | None = None) -> Graph:
    """`g` with each set replaced by the node `make_node(subgraph, k)` makes for
    the k-th set (see the module docstring). `shapes` and `dtypes` (by entry id)
    annotate the subgraph's variables; `maker` names `make_node` in errors."""
    lifted = []
    for k, (members, outputs) in enumerate(sets):
        inner, reads = _inner_symbol(g, members, outputs, shapes, dtypes)
        node = _made(make_node, inner, k, len(reads), f"{maker} for {_describe(g, members)}")
        lifted.append((node, reads, list(outputs)))
    owner = [-1] * len(g.nodes)
    for k, (members, _) in enumerate(sets):
        for nid in members:
            owner[nid] = k
    new: dict[Entry, NodeEntry] = {}

    def remap(e: NodeEntry) -> NodeEntry:
        return new[(g.node_id(e.node), e.index)]._replace(version=e.version)

    for kind, ident in _unit_order(g, owner):
        if kind == "n":
            node = g.nodes[ident]
            copy = node.with_inputs([remap(e) for e in node.inputs])
            for i in range(node.num_outputs()):
                new[(ident, i)] = NodeEntry(copy, i)
        else:
            node, reads, outputs = lifted[ident]
            node.inputs = [remap(e) for e in reads]
            for j, key in enumerate(outputs):
                new[key] = NodeEntry(node, j)
    result = Graph([remap(h) for h in g.outputs])
    result.lint()
    return result


def _describe(g: Graph, members: Sequence[int]) -> str:
    names = [g.nodes[n].name for n in sorted(members)]
    return f"({', '.join(names[:4])}{', ...' if len(names) > 4 else ''})"


def _inner_symbol(g: Graph, members: Sequence[int], outputs: Sequence[Entry],
                  shapes: Sequence | None, dtypes: Sequence | None
                  ) -> tuple[Symbol, list[NodeEntry]]:
    """The set as a Symbol, and the outer entry behind each of its inputs, in order."""
    member_set = set(members)
    copies: dict[int, Node] = {}
    variables: dict[tuple[int, int], NodeEntry] = {}   # outer entry key -> inner variable
    outer_of: dict[int, NodeEntry] = {}                # id(inner variable) -> outer entry
    for nid in sorted(members):                        # topological: inputs copied first
        inputs = []
        for e in g.nodes[nid].inputs:
            src = g.node_id(e.node)
            if src in member_set:
                inputs.append(NodeEntry(copies[src], e.index, e.version))
                continue
            if e.key() not in variables:
                var = Node(None, e.node.entry_name(e.index), _annotations(g, e, shapes, dtypes))
                variables[e.key()] = NodeEntry(var, 0)
                outer_of[id(var)] = NodeEntry(e.node, e.index)
            inputs.append(variables[e.key()]._replace(version=e.version))
        copies[nid] = g.nodes[nid].with_inputs(inputs)
    inner = Symbol([NodeEntry(copies[n], i) for n, i in outputs])
    order = [n for n in inner._topo() if n.is_variable]
    for k, var in enumerate(order):   # numbered once the walk has ordered them
        var.name = f"{var.name}{k}"
    return inner, [outer_of[id(v)] for v in order]


def _annotations(g: Graph, e: NodeEntry, shapes: Sequence | None,
                 dtypes: Sequence | None) -> dict[str, str]:
    eid = g.entry_id(e)
    attrs = {}
    if shapes is not None and shapes[eid] is not None:
        attrs["__shape__"] = format_value(shapes[eid])
    if dtypes is not None and dtypes[eid] is not None:
        attrs["__dtype__"] = str(DTYPE_TO_FLAG[dtypes[eid]])
    return attrs


def _made(make_node: MakeNode, inner: Symbol, k: int, n_inputs: int, where: str) -> Node:
    """`make_node`'s node for the k-th set, checked to fit the set's subgraph."""
    try:
        node = make_node(inner, k)
    except Exception as exc:
        raise BackendError(f"{where} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(node, Node):
        raise BackendError(f"{where}: returned a {type(node).__name__}, not a Node")
    if node.num_outputs() != len(inner.outputs):
        raise BackendError(f"{where}: the node {node.label} has {node.num_outputs()} "
                           f"outputs, the subgraph has {len(inner.outputs)}")
    if len(node.input_names()) != n_inputs:
        raise BackendError(f"{where}: the node {node.label} takes "
                           f"{len(node.input_names())} inputs, the subgraph has {n_inputs}")
    return node


def _unit_order(g: Graph, owner: list[int]) -> list[tuple[str, int]]:
    """Single nodes ("n", node id) and whole sets ("s", set index) in an order
    that respects every dependency (Kahn's algorithm, ties broken by the lowest
    topological index)."""
    unit = lambda nid: ("s", owner[nid]) if owner[nid] >= 0 else ("n", nid)  # noqa: E731
    first: dict[tuple[str, int], int] = {}
    deps: dict[tuple[str, int], set] = {}
    for nid, node in enumerate(g.nodes):
        u = unit(nid)
        first.setdefault(u, nid)
        deps.setdefault(u, set()).update(
            unit(g.node_id(e.node)) for e in node.inputs if unit(g.node_id(e.node)) != u)
    waiting = {u: len(d) for u, d in deps.items()}
    dependants: dict[tuple[str, int], list] = {u: [] for u in deps}
    for u, d in deps.items():
        for v in d:
            dependants[v].append(u)
    ready = [(first[u], u) for u, c in waiting.items() if c == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(u)
        for v in dependants[u]:
            waiting[v] -= 1
            if waiting[v] == 0:
                heapq.heappush(ready, (first[v], v))
    if len(order) != len(deps):  # callers' sets close no cycle: a bug if so
        raise BackendError("lifting node sets would create a cycle")
    return order


def inline(sym: Symbol, ops: Collection[str]) -> Symbol:
    """`sym` with each node whose operator is in `ops` replaced by its subgraph, and
    so on inside it: `lift` undone for those nodes (a subgraph's variables, in its
    `list_inputs` order, stand for the node's inputs). The other nodes are copied."""
    return Symbol(_inlined(sym, {}, frozenset(ops)))


def _inlined(sym: Symbol, given: dict[str, NodeEntry], ops: frozenset[str]) -> list[NodeEntry]:
    """The heads of `sym` inlined, its variables named in `given` read as those entries."""
    def replace(node: Node, inputs: list[NodeEntry]) -> list[NodeEntry] | None:
        if node.is_variable:
            return [given[node.name]] if node.name in given else None
        if node.op not in ops:
            return None
        inner = node.subgraphs[0]
        return _inlined(inner, dict(zip(inner.list_inputs(), inputs, strict=True)), ops)
    return rewritten(sym.outputs, replace)
