"""MXNet's subgraph API (`mx.subgraph`): selectors, properties, backends, partitioning.

>>> import minimx as mx
>>> x = mx.sym.Variable('x')
>>> y = mx.sym.exp(mx.sym.relu(x))
>>> p = mx.subgraph.partition(y, 'default', op_names=['relu', 'exp'])
>>> [n.op for n in p._topo()]
[None, '_subgraph_op']
"""
from typing import Any

from ..base import settings
from ..graph import Node
from . import default_op  # noqa: F401  (registers _subgraph_op)
from . import dnnl  # noqa: F401  (registers the DNNL backend)
from .backend import (list_backends, optimize_for, partition, partition_for_bind as _for_bind,
                      register_backend, register_property)
from .property import DefaultSubgraphProperty, SubgraphProperty
from .selector import ContainOpSelector, SelectorNode, SubgraphSelector

register_property("default", DefaultSubgraphProperty)


def _bind_options(backend: str) -> dict[str, Any]:
    """Options a backend takes from the environment at bind time."""
    if backend == "default":
        return {"op_names": settings().subgraph_default_ops}
    return {}


def partition_for_bind(sym, backends, training, shapes, dtypes):
    """The forward graph `bind` runs (see `backend.partition_for_bind`)."""
    return _for_bind(sym, backends, training, shapes, dtypes, _bind_options)


__all__ = ["ContainOpSelector", "DefaultSubgraphProperty", "Node", "SelectorNode",
           "SubgraphProperty", "SubgraphSelector", "list_backends", "optimize_for",
           "partition", "partition_for_bind", "register_backend", "register_property"]
