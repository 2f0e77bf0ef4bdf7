"""Fusion inside a DNNL subgraph: operator chains become `_sg_dnnl_*` nodes.

Needs: the inner graph of a DNNL subgraph (every node supported by oneDNN;
weights, biases and BatchNorm parameters are variables of that Symbol).
Guarantees: a Graph computing the same outputs in which each chain a row of
`PATTERNS` matches is lifted (`subgraph.lift`) into one fused node holding
the chain as its subgraph, with MXNet's attributes (`with_bn`, `with_act`,
`with_sum`, `with_postsum_act`; `with_eltwise` for FC). The fused node takes
the chain's outside inputs in the order a depth-first walk of the chain
meets them, so the order of the Symbol's variables (and so of the DNNL
node's inputs) does not change. A lone head (a Convolution with nothing to
absorb) stays as it is: the weight cache serves it without wrapping.
`FusedChain` and `conv_chain` read a fused node's parts back for the lowering.

The patterns are data, as MXNet's backend is an ordered list of properties
and TVM's DNNL support a pattern table. A row starts a chain at its `head`
operator and walks forward: each of its steps, in order, may absorb the one
node that reads the chain's last member, if the step's test accepts it. A
link must be the only reader of its producer's only used output (and not a
graph output), so nothing outside sees the chain's inner values. Rows apply
in order, each over the whole graph, and a node belongs to the first chain
that takes it. Every step can be turned off with MINIMX_DNNL_FUSE_<NAME>=0
(`base.settings`); a fusion for another precision (an INT8 requantize, a
bf16 convolution) is a new row.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ...base import BackendError, settings
from ...graph import Graph, Node, NodeEntry
from ...subgraph.lift import lift
from ...subgraph.subgraph_op import inner_graph
from ...symbol import Symbol
from .eltwise import eltwise_of

SUM_OPS = ("elemwise_add", "add_n")


@dataclass(frozen=True)
class Step:
    """One optional link of a chain. `accepts(node, last)` says whether `node`,
    the sole reader of the chain's last member `last`, may join."""

    name: str       # the switch: MINIMX_DNNL_FUSE_<NAME upper-cased>=0 turns the step off
    flag: str       # the fused node's attribute set when the step is taken
    accepts: Callable[[Node, Node], bool]
    after: str | None = None   # a step (by name) that must have been taken before


@dataclass(frozen=True)
class Pattern:
    """A chain that starts at `head` and becomes one `fused` node."""

    name: str       # fused node names: sg_dnnl_<name>[_<flag>...]_<k>
    head: str
    fused: str
    lower: str      # the lowering of the fused node (`lower.LOWERINGS`)
    steps: tuple[Step, ...]


def _eltwise(node: Node, last: Node) -> bool:
    return eltwise_of(node) is not None


def _batch_norm(node: Node, last: Node) -> bool:
    return node.op == "BatchNorm" and node.inputs[0].node is last


def _sum(node: Node, last: Node) -> bool:
    # A sum of two, the chain one operand: oneDNN's sum post-op adds the other.
    return (node.op in SUM_OPS and len(node.inputs) == 2
            and sum(e.node is last for e in node.inputs) == 1)


PATTERNS: tuple[Pattern, ...] = (
    Pattern("conv", "Convolution", "_sg_dnnl_conv", "fused_conv", (
        Step("conv_bn", "with_bn", _batch_norm),
        Step("conv_act", "with_act", _eltwise),
        Step("conv_sum", "with_sum", _sum),
        Step("conv_postsum_act", "with_postsum_act", _eltwise, after="conv_sum"),
    )),
    Pattern("fully_connected", "FullyConnected", "_sg_dnnl_fully_connected", "fused_fc", (
        Step("fc_act", "with_eltwise", _eltwise),
    )),
    Pattern("deconv", "Deconvolution", "_sg_dnnl_deconv", "fused_conv", (
        Step("deconv_act", "with_act", _eltwise),
    )),
)
# The fused operators, whose subgraph `FusedChain` reads.
FUSED_OPS = frozenset(p.fused for p in PATTERNS)

STEP_NAMES = tuple(s.name for p in PATTERNS for s in p.steps)
# Rewrites before fusion, switched as the steps are: `strides.hoist_strides`.
REWRITES = ("stride_hoist",)


def _flags_of(patterns: Sequence[Pattern]) -> dict[str, tuple[str, ...]]:
    """Each fused operator's flags, in the order of its rows' steps."""
    flags: dict[str, tuple[str, ...]] = {}
    for p in patterns:
        known = flags.get(p.fused, ())
        flags[p.fused] = known + tuple(s.flag for s in p.steps if s.flag not in known)
    return flags


FLAGS = _flags_of(PATTERNS)   # the fused operators (`ops` registers them) and their flags


def enabled_steps() -> frozenset[str]:
    """The step and rewrite names MINIMX_DNNL_FUSE_<NAME>=0 has not turned off."""
    off = settings().dnnl_fusions_off
    known = STEP_NAMES + REWRITES
    unknown = sorted(off - set(known))
    if unknown:
        raise BackendError(f"MINIMX_DNNL_FUSE_{unknown[0].upper()} names no DNNL fusion "
                           f"(known: {', '.join(n.upper() for n in known)})")
    return frozenset(known) - off


@dataclass
class Chain:
    """A matched chain: its row, its member node ids in order (head first) and
    the steps taken."""

    pattern: Pattern
    members: list[int]
    taken: list[Step]

    @property
    def name(self) -> str:
        """``conv_bn_act``: the row's name and the flags set, in the row's order."""
        flags = [f.removeprefix("with_") for f in FLAGS[self.pattern.fused]
                 if any(s.flag == f for s in self.taken)]
        return "_".join([self.pattern.name, *flags])


class _Matcher:
    """Matches the rows of a table against one Graph."""

    def __init__(self, g: Graph, enabled: frozenset[str]) -> None:
        self.g, self.enabled = g, enabled
        self.reads = Counter(g.entry_id(e) for n in g.nodes for e in n.inputs)
        self.reads.update(g.head_entry_ids())
        self.reader: dict[int, int] = {}
        for nid, node in enumerate(g.nodes):
            for e in node.inputs:
                self.reader[g.entry_id(e)] = nid

    def sole_reader(self, nid: int) -> int | None:
        """The one node reading `nid`'s only used output (None if shared, an
        output of the graph, or another output is used)."""
        g = self.g
        used = [e for e in g.output_entry_ids(nid) if self.reads[e]]
        if used != [g.entry_ptr[nid]] or self.reads[used[0]] != 1:
            return None
        return self.reader.get(used[0])

    def match(self, pattern: Pattern, head: int, taken: set[int]) -> Chain:
        """The chain `pattern` grows from node `head`, never entering `taken`."""
        chain = Chain(pattern, [head], [])
        nxt = self.sole_reader(head)
        for step in pattern.steps:
            if nxt is not None and nxt not in taken and self._takes(step, chain, nxt):
                chain.members.append(nxt)
                chain.taken.append(step)
                nxt = self.sole_reader(nxt)
        return chain

    def _takes(self, step: Step, chain: Chain, nid: int) -> bool:
        """Whether `step` is on, may follow the steps taken, and takes node `nid`."""
        if step.name not in self.enabled or (
                step.after is not None and all(s.name != step.after for s in chain.taken)):
            return False
        # The fused node has one output: its last member's first.
        if any(self.reads[e] for e in self.g.output_entry_ids(nid)[1:]):
            return False
        return step.accepts(self.g.nodes[nid], self.g.nodes[chain.members[-1]])


def find_chains(g: Graph, patterns: Sequence[Pattern] = PATTERNS,
                enabled: frozenset[str] | None = None) -> list[Chain]:
    """The chains of `g` the rows match, in the order of their last members.
    Rows apply in order, each over the whole graph (heads in topological
    order); a node joins the first chain that takes it. `enabled` defaults to
    the steps the settings leave on."""
    matcher = _Matcher(g, enabled_steps() if enabled is None else enabled)
    chains: list[Chain] = []
    taken: set[int] = set()
    for pattern in patterns:
        for nid, node in enumerate(g.nodes):
            if node.op == pattern.head and nid not in taken:
                chain = matcher.match(pattern, nid, taken)
                if chain.taken:
                    chains.append(chain)
                    taken.update(chain.members)
    return sorted(chains, key=lambda c: c.members[-1])


def fuse_chains(g: Graph, patterns: Sequence[Pattern] = PATTERNS,
                enabled: frozenset[str] | None = None) -> tuple[Graph, Counter]:
    """Graph `g` with its chains lifted into fused nodes (see the module
    docstring), and a count of the fused patterns by name (``conv_bn_act`` ...)."""
    chains = find_chains(g, patterns, enabled)
    if not chains:
        return g, Counter()

    def make_node(inner: Symbol, k: int) -> Node:
        chain = chains[k]
        flags = {s.flag for s in chain.taken}
        attrs = {f: str(f in flags) for f in FLAGS[chain.pattern.fused]}
        return Node.create(chain.pattern.fused, f"sg_dnnl_{chain.name}_{k}", attrs,
                           subgraphs=[inner])

    fused = lift(g, [(c.members, [(c.members[-1], 0)]) for c in chains], make_node,
                 "DNNL fusion")
    return fused, Counter(c.name for c in chains)


def unfusable_member(node: Node) -> Node | None:
    """The first member of the fused `node`'s chain that no row making its
    operator could have taken (None if each could): a partitioned file may
    hold anything. The switches do not apply: they steer fusion, not loading."""
    rows = [p for p in PATTERNS if p.fused == node.op]
    members = [n for n in inner_graph(node.params).nodes if not n.is_variable]
    if not members or all(members[0].op != p.head for p in rows):
        return members[0] if members else None
    for last, member in zip(members, members[1:], strict=False):
        if not any(s.accepts(member, last) for p in rows for s in p.steps):
            return member
    return None


class FusedChain:
    """The parts of a fused chain, read from a `_sg_dnnl_*` node's subgraph,
    with each outside input of the chain mapped to an entry id of the DNNL graph."""

    def __init__(self, node: Node, outer: Graph) -> None:
        sub = inner_graph(node.params)
        self.nodes = [n for n in sub.nodes if not n.is_variable]
        self.entry = {id(sub.nodes[v]): outer.entry_id(e)
                      for v, e in zip(sub.input_ids, node.inputs, strict=True)}

    def first(self, *ops: str) -> Node | None:
        return next((n for n in self.nodes if n.op in ops), None)

    def acts(self) -> tuple[Node | None, Node | None]:
        """The activation before the sum (or the only one) and the one after it."""
        before, after, seen_sum = None, None, False
        for n in self.nodes:
            if n.op in SUM_OPS:
                seen_sum = True
            elif eltwise_of(n) is not None:
                before, after = (before, n) if seen_sum else (n, after)
        return before, after


class ConvChain(NamedTuple):
    """A convolution (or deconvolution) and what its chain fused with it: a
    plain node's, or a `_sg_dnnl_conv` / `_sg_dnnl_deconv` node's parts.
    `entry` maps an input of a member to an entry id of the DNNL graph; `add`
    is the entry of the sum's other addend."""

    conv: Node
    entry: Callable[[NodeEntry], int]
    bn: Node | None = None
    act: Node | None = None
    add: int | None = None
    post_act: Node | None = None


CONV_OPS = ("Convolution", "Deconvolution")
# The operators `conv_chain` reads: the heads and their fused nodes.
CONV_CHAIN_OPS = frozenset(CONV_OPS) | {p.fused for p in PATTERNS if p.head in CONV_OPS}


def conv_chain(node: Node, outer: Graph) -> ConvChain:
    """The parts of `node` (one of `CONV_CHAIN_OPS`) in DNNL graph `outer`."""
    if node.op in CONV_OPS:
        return ConvChain(node, outer.entry_id)
    f = FusedChain(node, outer)
    entry = lambda e: f.entry[id(e.node)]  # noqa: E731  (outside inputs only)
    add_node = f.first(*SUM_OPS)
    add = (None if add_node is None
           else entry(next(e for e in add_node.inputs if e.node.is_variable)))
    conv = f.first(*CONV_OPS)
    assert conv is not None, f"{node.label}: a fused convolution without one"
    act, post_act = f.acts()
    return ConvChain(conv, entry, f.first("BatchNorm"), act, add, post_act)
