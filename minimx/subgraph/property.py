"""Subgraph properties: a selector factory plus the node that replaces a subgraph."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from ..base import BackendError
from ..graph import Node
from ..symbol import Symbol
from .selector import ContainOpSelector, SelectorNode, SubgraphSelector


class SubgraphProperty(ABC):
    """What one partitioning step selects and what it puts in place of a subgraph.

    Options given at registration or to `partition` are in `self.options`. A
    property with ``inference_only`` set is skipped when a graph is bound for
    training.
    """

    inference_only: bool = False
    name_prefix: str = "sg_"

    def __init__(self, **options: Any) -> None:
        self.options = dict(options)
        if "inference_only" in options:
            self.inference_only = bool(options["inference_only"])

    @abstractmethod
    def create_subgraph_selector(self) -> SubgraphSelector:
        """A fresh selector; the partitioner asks for one per seed node."""

    def create_subgraph_node(self, subgraph_sym: Symbol, subgraph_id: int = 0) -> Node:
        """The node replacing `subgraph_sym` (its inputs are connected by the partitioner).

        The default is a `_subgraph_op` node, which runs the subgraph with an
        executor of its own.
        """
        return Node.create("_subgraph_op", f"{self.name_prefix}{subgraph_id}",
                           subgraphs=[subgraph_sym])

    def why_left_out(self, node: SelectorNode) -> str:
        """Why the operator `node` is in no subgraph of this property, for the
        partition summary and the logs (the reason, not naming the node)."""
        return f"not selected by {type(self).__name__}"

    def finish(self) -> None:  # noqa: B027  (an optional hook, not an abstract method)
        """Called when partitioning a graph with this property is done: the place
        to warn about what the selectors left out, and why (default: nothing)."""


class GraphPassProperty(SubgraphProperty):
    """A step that rewrites the whole graph at once instead of growing subgraphs
    from seeds: MXNet's properties whose node folds into the node before it
    (``MKLDNN_QUANTIZE``'s requantize fusion, its scale alignment) are such
    passes. The partitioner hands `rewrite` the graph and checks the result
    keeps the arguments, auxiliary states and outputs, as for any property."""

    def create_subgraph_selector(self) -> SubgraphSelector:
        raise BackendError(f"{type(self).__name__} rewrites the whole graph; it has no "
                           "selector")

    @abstractmethod
    def rewrite(self, sym: Symbol) -> Symbol:
        """`sym` rewritten, without modifying `sym` (shared nodes are copied before
        they change)."""


class DefaultSubgraphProperty(SubgraphProperty):
    """Groups the operators named in `op_names` into `_subgraph_op` nodes."""

    name_prefix = "sg_default_"

    def __init__(self, op_names: Iterable[str] = (), **options: Any) -> None:
        super().__init__(op_names=list(op_names), **options)
        self.op_names = frozenset(op_names)

    def create_subgraph_selector(self) -> SubgraphSelector:
        return ContainOpSelector(self.op_names)

    def why_left_out(self, node: SelectorNode) -> str:
        if node.op not in self.op_names:
            return f"{node.op} is not in op_names"
        return super().why_left_out(node)
