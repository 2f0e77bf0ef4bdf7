"""The DNNL backend's selector and property.

The selector grows maximal connected groups of nodes that `Support` accepts
(configs/dnnl.yaml), with two edge rules: a weight, bias or BatchNorm
parameter is never computed inside a group (the weight cache converts
inputs only, and their AMP casts), and a Flatten / Reshape (or quantized
flatten) inside a group feeds only a fully connected layer, maybe through
AMP casts (blocked layouts have no cheap reshape; FullyConnected reads the
unflattened tensor). The property rewrites each group's chains into fused
nodes (`patterns`) and wraps the group in one `_sg_dnnl` node. Nodes oneDNN
would run but for their dtype (a float16 graph) are counted, and one warning
at the end of partitioning says how many were left to numpy; the
partition summary says why each operator left out is (`why_left_out`).

The `dtype` option (``optimize_for('DNNL', dtype='bfloat16')``; at bind, the
MINIMX_DNNL_DTYPE setting) makes the subgraphs of a float32 model compute in
bfloat16 (`lower`). Where oneDNN has no bf16 instructions (`onednn.bf16_native`)
they compute in float32, with one warning saying why.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import onednn
from ...base import DNNL_DTYPES, BackendError, settings, warn_user
from ...graph import Node
from ...subgraph import subgraph_op
from ...subgraph.property import SubgraphProperty
from ...subgraph.selector import SelectorNode, SubgraphSelector
from ...symbol import Symbol
from .config import Support, default_support
from .lower import CASTS, VIEWS
from .patterns import fuse_chains

# The operators that may read a view inside a group (they flatten anyway).
VIEW_READERS = frozenset({"FullyConnected", "_sg_mkldnn_fully_connected"})
PARAM_INPUTS = frozenset({"weight", "bias", "gamma", "beta", "moving_mean", "moving_var"})


def _edge_ok(producer: SelectorNode, reader: SelectorNode) -> bool:
    """Whether the edge producer -> reader may lie inside a group."""
    names = reader.node.input_names()
    as_param = any(e.node is producer.node and name in PARAM_INPUTS
                   for name, e in zip(names, reader.inputs, strict=False))
    if as_param:  # an AMP cast of a variable: the weight cache converts it anyway
        return producer.op in CASTS and all(e.node.is_variable for e in producer.node.inputs)
    return not _is_view(producer.node) or reader.op in VIEW_READERS or reader.op in CASTS


def _is_view(node: Node) -> bool:
    """Whether `node` is a view, or an AMP cast of one (which keeps its layout)."""
    return node.op in VIEWS or node.op in CASTS and any(_is_view(e.node) for e in node.inputs)


class DnnlSelector(SubgraphSelector):
    """Selects what oneDNN supports; see the module docstring for the edge rules.
    A seed refused for its dtype alone is added to `wrong_dtype` (its dtype names)."""

    def __init__(self, support: Support, wrong_dtype: list[set[str]]) -> None:
        self.support = support
        self.wrong_dtype = wrong_dtype

    def select(self, node: SelectorNode) -> bool:
        if self.support.accepts(node):
            return True
        foreign = self.support.foreign_dtypes(node)
        if foreign and self.support.op_refusal(node) is None:
            self.wrong_dtype.append(foreign)
        return False

    def select_input(self, cur_node: SelectorNode, new_node: SelectorNode) -> bool:
        return self.support.accepts(new_node) and _edge_ok(new_node, cur_node)

    def select_output(self, cur_node: SelectorNode, new_node: SelectorNode) -> bool:
        return self.support.accepts(new_node) and _edge_ok(cur_node, new_node)

    def filter(self, candidates: Sequence[SelectorNode]) -> list[SelectorNode]:
        # Views and casts alone leave oneDNN nothing to do.
        return [] if all(c.op in VIEWS or c.op in CASTS for c in candidates) else list(candidates)


class DnnlProperty(SubgraphProperty):
    """oneDNN subgraphs (`_sg_dnnl` nodes) with fused chains inside; inference only."""

    inference_only = True
    name_prefix = "sg_dnnl_"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.support = default_support()
        self.wrong_dtype: list[set[str]] = []   # one entry per node, over the whole graph
        dtype = str(options.get("dtype") or settings().dnnl_dtype)
        if dtype not in DNNL_DTYPES:
            raise BackendError(f"subgraph backend DNNL: dtype {dtype!r} is not one of "
                               f"{', '.join(DNNL_DTYPES)}")
        self.dtype = dtype

    def create_subgraph_selector(self) -> SubgraphSelector:
        if not onednn.available():
            raise BackendError(f"subgraph backend DNNL: {onednn.unavailable_reason()}")
        if self.dtype == "bfloat16" and not onednn.bf16_native():
            warn_user(f"DNNL: bfloat16 was asked for, but oneDNN's instruction set here "
                      f"({onednn.isa()}) has no bfloat16 dot products (it needs one of "
                      f"{', '.join(onednn.BF16_ISAS)}); the subgraphs run in float32")
            self.dtype = "float32"
        return DnnlSelector(self.support, self.wrong_dtype)

    def why_left_out(self, node: SelectorNode) -> str:
        why = self.support.refusal(node)
        if why is None and node.op in VIEWS:
            why = f"a {node.op} alone leaves oneDNN nothing to do"
        return why or super().why_left_out(node)

    def finish(self) -> None:
        # Every node is offered as a seed until taken, so each is counted once.
        if not self.wrong_dtype:
            return
        names = sorted(set().union(*self.wrong_dtype))
        warn_user(f"DNNL: {', '.join(names)} {'is' if len(names) == 1 else 'are'} not "
                  f"supported (oneDNN runs {self.support.dtype_names}); "
                  f"{len(self.wrong_dtype)} nodes left to numpy")
        self.wrong_dtype.clear()

    def create_subgraph_node(self, subgraph_sym: Symbol, subgraph_id: int = 0) -> Node:
        fused, patterns = fuse_chains(subgraph_sym)
        fusions = ",".join(f"{k}:{n}" for k, n in sorted(patterns.items()))
        attrs = {"fusions": fusions} if fusions else {}
        if self.dtype != "float32":
            attrs["dtype"] = self.dtype
        node = Node.create("_sg_dnnl", f"{self.name_prefix}{subgraph_id}", attrs,
                           subgraphs=[Symbol(fused.outputs)])
        subgraph_op.adopt_inner_graph(node.params, fused)
        return node
