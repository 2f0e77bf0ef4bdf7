"""The DNNL backend's selector and property.

The selector grows maximal connected groups of nodes that `Support` accepts
(configs/dnnl.yaml), with two edge rules: a weight, bias or BatchNorm
parameter (or a softmax length) is never computed inside a group (the weight
cache converts inputs only, and their AMP casts; of an RNN's packed parameters
it computes views and joins of variables too: `weights.foldable`),
and MXNet's quantized flatten inside a group feeds only a quantized fully
connected layer. Other views
(Flatten, Reshape, expand_dims) may feed anything: `lower` makes them views of
a plain copy, or, read only by a flattening fully connected layer, nothing.
The property rewrites each group's chains into fused nodes (`patterns`) and
wraps the group in one `_sg_dnnl` node. Nodes oneDNN
would run but for their dtype (a float16 graph) are counted, and one warning
at the end of partitioning says how many were left to numpy; the
partition summary says why each operator left out is (`why_left_out`).

INT8 nodes (int8 or uint8 data) go in only where oneDNN sums int8 products
exactly (VNNI or AMX, `onednn.exact_int8`): elsewhere its kernels round
otherwise than MXNet's arithmetic, which the numpy kernels reproduce. MXNet
1.9.1 raises no error there (it runs oneDNN's kernels as they are); minimx
leaves those nodes to the numpy kernels, with one warning per partitioning.

The `dtype` option (``optimize_for('DNNL', dtype='bfloat16')``; at bind, the
MINIMX_DNNL_DTYPE setting) makes the subgraphs of a float32 model compute in
bfloat16 (`lower`). Where oneDNN has no bf16 instructions (`onednn.bf16_native`)
they compute in float32, with one warning saying why.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import onednn
from ...base import DNNL_DTYPES, BackendError, settings, warn_user
from ...graph import Graph, Node
from ...subgraph import subgraph_op
from ...subgraph.property import SubgraphProperty
from ...subgraph.selector import SelectorNode, SubgraphSelector
from ...symbol import Symbol
from .config import Support, default_support
from .lower import CASTS, FC_READERS, IDENTITIES, VIEWS
from .patterns import enabled_steps, fuse_chains
from .strides import hoist_strides
from .weights import PARAMETER_READS, foldable

# MXNet's quantized flatten, whose INT8 data only its quantized FullyConnected reads.
FC_ONLY_VIEWS = frozenset({"_contrib_quantized_flatten"})
# Inputs a lowering reads as values computed before the plan runs (the weight cache),
# so their producers stay outside the subgraph.
PARAM_INPUTS = frozenset({"weight", "bias", "gamma", "beta", "moving_mean", "moving_var",
                          "length"})
INT8_TYPES = frozenset({np.dtype(np.int8), np.dtype(np.uint8)})
# Operators that alone leave oneDNN nothing to do: views, identities, constants.
IDLE = frozenset({*VIEWS, *IDENTITIES, *default_support().lowered_as("fill")})


def int8_refusal(node: SelectorNode) -> str | None:
    """Why an INT8 node stays out on this CPU (no VNNI), or None."""
    dtypes = {np.dtype(t) for t in (*node.input_dtypes, *node.output_dtypes) if t is not None}
    if not dtypes & INT8_TYPES or onednn.exact_int8():
        return None
    return (f"INT8 on {onednn.isa()}, without VNNI: oneDNN's int8 kernels there round "
            "otherwise than MXNet's arithmetic")


def _edge_ok(producer: SelectorNode, reader: SelectorNode) -> bool:
    """Whether the edge producer -> reader may lie inside a group."""
    names = reader.node.input_names()
    as_param = any(e.node is producer.node and (name in PARAM_INPUTS or name == "parameters")
                   and not (name in PARAMETER_READS.get(reader.op or "", ())
                            and foldable(producer.node))
                   for name, e in zip(names, reader.inputs, strict=False))
    if as_param:  # an AMP cast of a variable: the weight cache converts it anyway
        return producer.op in CASTS and all(e.node.is_variable for e in producer.node.inputs)
    return producer.op not in FC_ONLY_VIEWS or reader.op in FC_READERS


class DnnlSelector(SubgraphSelector):
    """Selects what oneDNN supports; see the module docstring for the edge rules.
    A seed refused for its dtype alone is added to `wrong_dtype` (its dtype names)."""

    def __init__(self, support: Support, wrong_dtype: list[set[str]],
                 no_vnni: Callable[[SelectorNode], bool]) -> None:
        self.support = support
        self.wrong_dtype = wrong_dtype
        self.no_vnni = no_vnni

    def _accepts(self, node: SelectorNode) -> bool:
        return self.support.accepts(node) and not self.no_vnni(node)

    def select(self, node: SelectorNode) -> bool:
        if self._accepts(node):
            return True
        foreign = self.support.foreign_dtypes(node)
        if foreign and self.support.op_refusal(node) is None:
            self.wrong_dtype.append(foreign)
        return False

    def select_input(self, cur_node: SelectorNode, new_node: SelectorNode) -> bool:
        return self._accepts(new_node) and _edge_ok(new_node, cur_node)

    def select_output(self, cur_node: SelectorNode, new_node: SelectorNode) -> bool:
        return self._accepts(new_node) and _edge_ok(cur_node, new_node)

    def filter(self, candidates: Sequence[SelectorNode]) -> list[SelectorNode]:
        # Views, identities, constants and casts alone leave oneDNN nothing to do.
        return [] if all(c.op in IDLE or c.op in CASTS for c in candidates) else list(
            candidates)


class DnnlProperty(SubgraphProperty):
    """oneDNN subgraphs (`_sg_dnnl` nodes) with fused chains inside; inference only."""

    inference_only = True
    name_prefix = "sg_dnnl_"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.support = default_support()
        self.wrong_dtype: list[set[str]] = []   # one entry per node, over the whole graph
        self.no_vnni: set[str] = set()          # INT8 nodes left out for the ISA
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
        return DnnlSelector(self.support, self.wrong_dtype, self._no_vnni)

    def _no_vnni(self, node: SelectorNode) -> bool:
        """Whether the ISA alone keeps this INT8 node out (noted for the warning)."""
        if self.support.refusal(node) is not None or int8_refusal(node) is None:
            return False
        self.no_vnni.add(node.name)
        return True

    def why_left_out(self, node: SelectorNode) -> str:
        why = self.support.refusal(node) or int8_refusal(node)
        if why is None and node.op in IDLE:
            why = f"a {node.op} alone leaves oneDNN nothing to do"
        return why or super().why_left_out(node)

    def finish(self) -> None:
        if self.no_vnni:
            warn_user(f"DNNL: oneDNN's ISA here ({onednn.isa()}) has no VNNI: "
                      f"{len(self.no_vnni)} INT8 nodes run on the numpy kernels "
                      "(MXNet's arithmetic, slower than oneDNN's float32)")
            self.no_vnni.clear()
        # Every node is offered as a seed until taken, so each is counted once.
        if not self.wrong_dtype:
            return
        names = sorted(set().union(*self.wrong_dtype))
        warn_user(f"DNNL: {', '.join(names)} {'is' if len(names) == 1 else 'are'} not "
                  f"supported (oneDNN runs {self.support.dtype_names}); "
                  f"{len(self.wrong_dtype)} nodes left to numpy")
        self.wrong_dtype.clear()

    def create_subgraph_node(self, subgraph_sym: Symbol, subgraph_id: int = 0) -> Node:
        graph, hoisted = Graph(subgraph_sym.outputs), 0
        if "stride_hoist" in enabled_steps():
            graph, hoisted = hoist_strides(graph)
        fused, patterns = fuse_chains(graph)
        if hoisted:
            patterns["stride_hoist"] = hoisted
        fusions = ",".join(f"{k}:{n}" for k, n in sorted(patterns.items()))
        attrs = {"fusions": fusions} if fusions else {}
        if self.dtype != "float32":
            attrs["dtype"] = self.dtype
        node = Node.create("_sg_dnnl", f"{self.name_prefix}{subgraph_id}", attrs,
                           subgraphs=[Symbol(fused.outputs)])
        subgraph_op.adopt_inner_graph(node.params, fused)
        return node
