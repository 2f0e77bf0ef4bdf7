"""MXNet's subgraph API (`mx.subgraph`): selectors, properties, backends, partitioning.

This package is generic: it knows no backend. The built-in ones (`default`,
`DNNL`) register themselves from `minimx.backends`, ``DNNL_QUANTIZE`` from
`minimx.contrib.quantization`, where its passes live.

>>> import minimx as mx
>>> x = mx.sym.Variable('x')
>>> y = mx.sym.exp(mx.sym.relu(x))
>>> p = mx.subgraph.partition(y, 'default', op_names=['relu', 'exp'])
>>> [n.op for n in p._topo()]
[None, '_subgraph_op']
"""
from ..graph import Node
from ..symbol import symbol
from . import control_flow, subgraph_op  # noqa: F401  (register _subgraph_op, _foreach, ...)
from .backend import (
    BindBackends,
    bind_backends,
    list_backends,
    optimize_for,
    partition,
    partition_for_bind,
    partition_summary,
    register_backend,
    register_bind_options,
    register_property,
)
from .property import DefaultSubgraphProperty, GraphPassProperty, SubgraphProperty
from .report import PartitionReport
from .selector import ContainOpSelector, SelectorNode, SubgraphSelector

symbol.provide(partition=partition, optimize_for=optimize_for)

__all__ = ["BindBackends", "ContainOpSelector", "DefaultSubgraphProperty", "GraphPassProperty",
           "Node", "PartitionReport", "SelectorNode", "SubgraphProperty", "SubgraphSelector",
           "bind_backends", "list_backends", "optimize_for", "partition", "partition_for_bind",
           "partition_summary", "register_backend", "register_bind_options", "register_property"]
