"""The built-in subgraph backends, registered with `minimx.subgraph` on import.

- ``default``: `DefaultSubgraphProperty`; at bind time its operator names come
  from MINIMX_SUBGRAPH_DEFAULT_OPS.
- ``DNNL`` (alias ``MKLDNN``): oneDNN runs what it supports (`backends.dnnl`).

`backends.mkldnn_ops` registers the fused operators MXNet's own oneDNN backend
writes to files (`_sg_mkldnn_conv`, `_sg_mkldnn_fully_connected`);
`backends.mkldnn_transformer` its self-attention products (`_sg_mkldnn_selfatt_*`).
"""
from ..base import settings
from ..subgraph import (
    DefaultSubgraphProperty,
    register_backend,
    register_bind_options,
    register_property,
)
from . import mkldnn_ops, mkldnn_transformer  # noqa: F401  (register MXNet's _sg_mkldnn_* operators)
from .dnnl import DnnlProperty

register_property("default", DefaultSubgraphProperty)
register_bind_options("default", lambda: {"op_names": settings().subgraph_default_ops})

register_backend("DNNL", aliases=("MKLDNN",))
register_property("DNNL", DnnlProperty)
for _name in ("DNNL", "MKLDNN"):  # the dtype of a bind's subgraphs, kept by its reshapes
    register_bind_options(_name, lambda: {"dtype": settings().dnnl_dtype})

__all__ = ["DnnlProperty"]
