"""Selectors: how a subgraph property says which nodes belong together.

The partitioner hands selectors `SelectorNode` views: the node's op name
(None for a variable), name, string attributes and inputs, plus the shapes and
dtypes that inference found for its inputs and outputs.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..graph import Node, NodeEntry


@dataclass(frozen=True, eq=False)
class SelectorNode:
    """What a selector sees of one node."""

    node: Node
    input_shapes: tuple
    output_shapes: tuple
    input_dtypes: tuple[np.dtype | None, ...]
    output_dtypes: tuple[np.dtype | None, ...]

    @property
    def op(self) -> str | None:
        return self.node.op

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def attrs(self) -> dict[str, str]:
        return self.node.attrs

    @property
    def params(self):
        """The parsed parameters (None for a variable)."""
        return self.node.params

    @property
    def inputs(self) -> list[NodeEntry]:
        return self.node.inputs

    def __repr__(self) -> str:
        return f"<SelectorNode {self.node.label}>"


class SubgraphSelector:
    """Grows one candidate subgraph from a seed node.

    `select` chooses seeds; `select_input` / `select_output` decide whether to
    follow an edge from a node already taken to a new one; `filter` may prune
    the grown candidate set; `reset` is called before each new seed.
    """

    def select(self, node: SelectorNode) -> bool:
        return False

    def select_input(self, cur_node: SelectorNode, new_node: SelectorNode) -> bool:
        return False

    def select_output(self, cur_node: SelectorNode, new_node: SelectorNode) -> bool:
        return False

    def filter(self, candidates: Sequence[SelectorNode]) -> list[SelectorNode]:
        return list(candidates)

    def reset(self) -> None:
        """Forget what this selector learned while growing the previous candidate."""


class ContainOpSelector(SubgraphSelector):
    """Selects every operator whose name is in `op_names`, following all edges."""

    def __init__(self, op_names: Iterable[str]) -> None:
        self.op_names = frozenset(op_names)

    def select(self, node: SelectorNode) -> bool:
        return node.op in self.op_names

    def select_input(self, cur_node: SelectorNode, new_node: SelectorNode) -> bool:
        return new_node.op in self.op_names

    def select_output(self, cur_node: SelectorNode, new_node: SelectorNode) -> bool:
        return new_node.op in self.op_names
