"""Graph IR (nodes, entries, the indexed Graph) and the passes over it."""
from .indexed import Graph
from .node import Node, NodeEntry, read_through, topo_order

__all__ = ["Graph", "Node", "NodeEntry", "read_through", "topo_order"]
