"""The indexed graph: nodes in topological order, with dense entry ids.

Passes and executors work on a `Graph` rather than on Symbols: node ids are
positions in topological order, and entry ``(node_id, k)`` has the id
``entry_ptr[node_id] + k`` (MXNet's ``node_row_ptr``).
"""
from __future__ import annotations

from collections.abc import Sequence

from ..base import MinimxError
from .node import Node, NodeEntry, topo_order


class Graph:
    """A topologically ordered view of the nodes that `outputs` reach."""

    def __init__(self, outputs: Sequence[NodeEntry]) -> None:
        self.outputs: list[NodeEntry] = list(outputs)
        self.nodes: list[Node] = topo_order(self.outputs)
        self._ids = {id(n): i for i, n in enumerate(self.nodes)}
        self.entry_ptr: list[int] = [0]
        for node in self.nodes:
            self.entry_ptr.append(self.entry_ptr[-1] + node.num_outputs())
        aux_ids = {self.node_id(n.inputs[i].node)
                   for n in self.nodes for i in n.aux_indices()}
        variables = [i for i, n in enumerate(self.nodes) if n.is_variable]
        self.input_ids: list[int] = variables
        self.argument_ids: list[int] = [i for i in variables if i not in aux_ids]
        self.aux_ids: list[int] = [i for i in variables if i in aux_ids]

    @property
    def num_entries(self) -> int:
        return self.entry_ptr[-1]

    def node_id(self, node: Node) -> int:
        return self._ids[id(node)]

    def entry_id(self, entry: NodeEntry) -> int:
        return self.entry_ptr[self._ids[id(entry.node)]] + entry.index

    def input_entry_ids(self, nid: int) -> list[int]:
        return [self.entry_id(e) for e in self.nodes[nid].inputs]

    def output_entry_ids(self, nid: int) -> list[int]:
        return list(range(self.entry_ptr[nid], self.entry_ptr[nid + 1]))

    def head_entry_ids(self) -> list[int]:
        return [self.entry_id(e) for e in self.outputs]

    def users(self) -> list[list[int]]:
        """For each node, the ids of the nodes that read one of its outputs."""
        result: list[list[int]] = [[] for _ in self.nodes]
        for nid, node in enumerate(self.nodes):
            for e in node.inputs:
                src = self._ids[id(e.node)]
                if not result[src] or result[src][-1] != nid:
                    result[src].append(nid)
        return result

    def lint(self) -> None:
        """Check well-formedness after a rewrite: every input refers to an earlier
        node's existing output, and every operator has the inputs it declares.
        Raises MinimxError naming the first node that breaks a rule."""
        for nid, node in enumerate(self.nodes):
            for e in node.inputs:
                src = self._ids.get(id(e.node))
                if src is None or src >= nid:
                    raise MinimxError(f"{node.label}: input {e.node.label} is not an earlier "
                                      "node of the graph (a cycle or a dangling input)")
                if not 0 <= e.index < e.node.num_outputs():
                    raise MinimxError(f"{node.label}: reads output {e.index} of "
                                      f"{e.node.label}, which has {e.node.num_outputs()}")
            if not node.is_variable and len(node.inputs) != len(node.input_names()):
                raise MinimxError(f"{node.label}: {len(node.inputs)} inputs, the operator "
                                  f"takes {len(node.input_names())}")

    def __str__(self) -> str:
        lines = []
        for nid, node in enumerate(self.nodes):
            ins = ", ".join(f"%{self.node_id(e.node)}.{e.index}" for e in node.inputs)
            lines.append(f"%{nid} = {node.op or 'var'} {node.name}({ins})")
        lines.append("outputs: " + ", ".join(f"%{self.node_id(e.node)}.{e.index}"
                                            for e in self.outputs))
        return "\n".join(lines)
