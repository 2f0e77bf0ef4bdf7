"""Graph IR (nodes, entries, the indexed Graph) and the passes over it."""
from .indexed import Graph
from .node import Node, NodeEntry, topo_order

__all__ = ["Graph", "Node", "NodeEntry", "topo_order"]
