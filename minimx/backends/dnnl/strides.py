"""Stride hoisting: a strided 1x1 convolution reads every s-th pixel, so compute only those.

Needs: the inner graph of a DNNL subgraph before fusion (`patterns`).
Guarantees: a Graph with the same outputs, its inputs in the same order, in
which each tensor read only by 1x1, unpadded convolutions of stride s > 1 is
computed at those pixels only, where the ops making it allow: the readers
then have stride 1, and

- a convolution producing it takes its stride times s (any kernel and
  padding: output j of stride t*s reads what output j*s of stride t reads,
  and the output sizes agree: floor(floor(a / t) / s) = floor(a / (t * s)));
  an unpadded 1x1 convolution whose input nothing else reads passes the
  subsampling on to that input instead, which saves its producer's work too;
- a BatchNorm or an elementwise activation passes it on to its input;
- a sum of two passes it on to each operand, or, for an operand other nodes
  read as well (a residual block's input), reads it through a 1x1 pooling
  of stride s, which picks every s-th pixel exactly: an average one for float
  data (a max pooling never gives NaN and lifts -inf to the lowest float),
  a max one for quantized data (integers have neither).

MXNet's fused convolutions (`_sg_mkldnn_conv`, as `contrib.quantization`
writes them) take part as their inner Convolution does, their sum as a sum;
a quantized one only with a calibrated output range (a range measured at run
time would change with the pixels kept), and its residual operand goes
through MXNet's quantized pooling, which passes the range on.

In ResNet v1 (stride on the first 1x1 convolution of a stage) this moves
the stride of a stage's first block back into the last block of the stage
before: its 3x3 convolution runs with stride 2 on a quarter of the pixels,
its last 1x1 convolution and residual sum on the pixels the next stage
reads (OpenVINO's strides optimisation does the same). Every output value
is computed by the same arithmetic as before - in inference: a training
forward's BatchNorm takes its statistics over every pixel, so it runs the
graph as it was (`unhoisted`), which the hoist's marks (hidden attributes on
the convolutions it restrided and the poolings it added) give back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ...graph import Graph, Node, NodeEntry
from ...subgraph.subgraph_op import inner_graph
from ...symbol import Symbol
from .eltwise import eltwise_of
from .patterns import SUM_OPS

Stride = tuple[int, int]


class _Window(NamedTuple):
    stride: Stride
    pointwise: bool     # a 1x1 kernel without padding


# The marks of a hoist: the stride a convolution had before, and a pooling it added.
STRIDE_BEFORE = "__stride_before_hoist__"
ADDED_POOLING = "__added_by_hoist__"

# MXNet's fused convolution (quantized or not): a Convolution with BatchNorm,
# activations and a sum inside, as `contrib.quantization` and MXNet write it.
FUSED_CONV = "_sg_mkldnn_conv"


def _inner_conv(node: Node) -> tuple[Graph, int]:
    """The inner graph of a fused convolution and its Convolution's node id."""
    inner = inner_graph(node.operator()[1])
    return inner, next(i for i, n in enumerate(inner.nodes) if n.op == "Convolution")


def _conv_window(node: Node) -> _Window | None:
    """The window of a 2-D, undilated, channel-first convolution (plain, or
    MXNet's fused one whose output range, if quantized, is calibrated: a range
    measured at run time would change with the pixels), else None."""
    if node.op == FUSED_CONV:
        if node.attrs.get("quantized") == "true" and "min_calib_range" not in node.attrs:
            return None
        inner, conv = _inner_conv(node)
        return _conv_window(inner.nodes[conv])
    if node.op != "Convolution":
        return None
    _, p = node.operator()
    if len(p.kernel) != 2 or any(d != 1 for d in p.dilate) or p.layout not in (None, "NCHW"):
        return None
    stride = tuple(p.stride) or (1, 1)
    return _Window((stride[0], stride[1]), tuple(p.kernel) == (1, 1) and not any(p.pad))


def _sum_input(node: Node) -> int | None:
    """Which input of a fused convolution its sum adds (None: no sum)."""
    if node.op != FUSED_CONV:
        return None
    inner, _ = _inner_conv(node)
    add = next((n for n in inner.nodes if n.op in SUM_OPS), None)
    if add is None:
        return None
    operand = next(e.node for e in add.inputs if e.node.is_variable)
    return inner.input_ids.index(inner.node_id(operand))


def _pointwise_stride(node: Node) -> Stride | None:
    """The stride of an unpadded 1x1 convolution, else None."""
    window = _conv_window(node)
    return window.stride if window is not None and window.pointwise else None


@dataclass
class _Edits:
    """What one hoist changes: new strides by node id, and the (node id, input
    index) pairs to read through a strided pooling."""

    strides: dict[int, Stride] = field(default_factory=dict)
    pooled: dict[tuple[int, int], Stride] = field(default_factory=dict)

    def update(self, other: _Edits) -> None:
        self.strides.update(other.strides)
        self.pooled.update(other.pooled)


class _Hoister:
    """Plans the hoists of one graph (`hoist`), then makes them (`rebuild`)."""

    def __init__(self, g: Graph) -> None:
        self.g = g
        self.readers: dict[int, list[tuple[int, int]]] = {}
        for nid, node in enumerate(g.nodes):
            for k, e in enumerate(node.inputs):
                self.readers.setdefault(g.entry_id(e), []).append((nid, k))
        self.heads = set(g.head_entry_ids())
        self.edits = _Edits()

    def sole_reader(self, entry: NodeEntry) -> bool:
        """Whether one input of one node reads `entry`, and no graph output is it."""
        eid = self.g.entry_id(entry)
        return eid not in self.heads and len(self.readers.get(eid, ())) == 1

    def subsampled(self, entry: NodeEntry, s: Stride) -> _Edits | None:
        """The edits making `entry`'s producer compute only every s-th pixel
        (its readers must all be rewritten to match), or None if it cannot."""
        node = entry.node
        nid = self.g.node_id(node)
        if entry.index != 0 or nid in self.edits.strides:
            return None
        window = _conv_window(node)
        if window is not None:
            k = _sum_input(node)
            edits = _Edits() if k is None else self.operand_subsampled(nid, k, s)
            data = node.inputs[0]
            inner = (self.subsampled(data, s) if window.pointwise and self.sole_reader(data)
                     else None)
            if inner is None:
                t = window.stride
                inner = _Edits(strides={nid: (t[0] * s[0], t[1] * s[1])})
            edits.update(inner)
            return edits
        if (node.op == "BatchNorm" and node.operator()[1].axis == 1) or eltwise_of(node):
            data = node.inputs[0]
            return self.subsampled(data, s) if self.sole_reader(data) else None
        if node.op in SUM_OPS and len(node.inputs) == 2:
            first, second = (self.operand_subsampled(nid, k, s) for k in range(2))
            if first.pooled and second.pooled and not (first.strides or second.strides):
                return None     # two poolings: nothing saved
            first.update(second)
            return first
        return None

    def operand_subsampled(self, nid: int, k: int, s: Stride) -> _Edits:
        """Edits giving node `nid` its input `k` subsampled: made so by its
        producer if nothing else reads it, else read through a pooling."""
        operand = self.g.nodes[nid].inputs[k]
        edits = self.subsampled(operand, s) if self.sole_reader(operand) else None
        return _Edits(pooled={(nid, k): s}) if edits is None else edits

    def hoist(self) -> int:
        """Plan every hoist the graph allows; how many tensors are subsampled."""
        done = 0
        for nid, node in enumerate(self.g.nodes):
            s = _pointwise_stride(node)
            if s is None or s == (1, 1) or nid in self.edits.strides:
                continue
            data = node.inputs[0]
            eid = self.g.entry_id(data)
            readers = [r for r, _ in self.readers[eid]]
            if eid in self.heads or any(_pointwise_stride(self.g.nodes[r]) != s
                                        for r in readers):
                continue
            edits = self.subsampled(data, s)
            if edits is None:
                continue
            self.edits.update(edits)
            self.edits.strides.update({r: (1, 1) for r in readers})
            done += 1
        return done

    def rebuild(self) -> Graph:
        """The graph with the planned edits made."""
        return Graph(_rebuilt(self.g, self.edits))


def _rebuilt(g: Graph, edits: _Edits) -> list[NodeEntry]:
    """The outputs of a copy of `g` with `edits` made (new nodes; variables kept)."""
    new: dict[int, Node] = {}
    for nid, node in enumerate(g.nodes):
        if node.is_variable:
            new[nid] = node
            continue
        inputs = [NodeEntry(new[g.node_id(e.node)], e.index, e.version) for e in node.inputs]
        for k in range(len(inputs)):
            s = edits.pooled.get((nid, k))
            if s is not None:
                inputs[k] = _pooled(node, k, inputs, s)
        stride = edits.strides.get(nid)
        new[nid] = node.with_inputs(inputs) if stride is None else _restrided(node, inputs,
                                                                              stride)
    return [NodeEntry(new[g.node_id(e.node)], e.index, e.version) for e in g.outputs]


def _pooled(node: Node, k: int, inputs: list[NodeEntry], s: Stride) -> NodeEntry:
    """Input `k` of `node` read through a 1x1 pooling of stride s (see the module
    notes): MXNet's quantized max pooling (which passes the range on) where
    `node` is quantized, else an average pooling."""
    quantized = node.attrs.get("quantized") == "true"
    attrs = {"kernel": "(1, 1)", "stride": str(s), "pool_type": "max" if quantized else "avg",
             ADDED_POOLING: "True"}
    name = f"{node.name}_subsample{k}"
    e = inputs[k]
    if quantized:
        ranges = [NodeEntry(e.node, 1, e.version), NodeEntry(e.node, 2, e.version)]
        return NodeEntry(Node.create("_contrib_quantized_pooling", name, attrs, [e, *ranges]))
    return NodeEntry(Node.create("Pooling", name, attrs, [e]))


def _restrided(node: Node, inputs: list[NodeEntry], stride: Stride) -> Node:
    """A copy of convolution `node` reading `inputs`, with `stride`."""
    if node.op == FUSED_CONV:
        inner, conv = _inner_conv(node)
        outputs = _rebuilt(inner, _Edits(strides={conv: stride}))
        return Node.create(node.op, node.name, node.attrs, inputs, [Symbol(outputs)])
    _, p = node.operator()
    copy = node.with_inputs(inputs)
    copy.attrs.setdefault(STRIDE_BEFORE, str(tuple(p.stride) or (1, 1)))
    copy.attrs["stride"] = str(stride)
    copy.reparse()
    return copy


def hoist_strides(g: Graph) -> tuple[Graph, int]:
    """Graph `g` with its strides hoisted (see the module docstring), and the
    number of tensors now computed subsampled (0: `g` itself is returned)."""
    hoister = _Hoister(g)
    count = hoister.hoist()
    return (hoister.rebuild(), count) if count else (g, 0)


def unhoisted(g: Graph) -> Graph:
    """Graph `g` as it was before `hoist_strides` (`g` itself if no hoist marks it):
    the strides of the convolutions it restrided (fused ones included) put back,
    the poolings it added bypassed."""
    outputs = _unhoisted_outputs(g)
    return g if outputs is None else Graph(outputs)


def _unhoisted_outputs(g: Graph) -> list[NodeEntry] | None:
    """The outputs of `g` with the hoist undone, or None if nothing marks one."""
    new: dict[int, Node] = {}
    changed = False

    def entry(e: NodeEntry) -> NodeEntry:
        node = e.node
        if node.attrs.get(ADDED_POOLING):
            # output i of an added pooling is its input i (the data, or a range)
            return entry(node.inputs[e.index])
        return NodeEntry(new[g.node_id(node)], e.index, e.version)

    for nid, node in enumerate(g.nodes):
        if node.is_variable or node.attrs.get(ADDED_POOLING):
            new[nid] = node
            changed |= not node.is_variable
            continue
        copy = node.with_inputs(entry(e) for e in node.inputs)
        inner = _unhoisted_outputs(inner_graph(node.params)) if node.subgraphs else None
        if inner is not None:
            copy = Node.create(node.op, node.name, node.attrs, copy.inputs, [Symbol(inner)])
        elif STRIDE_BEFORE in node.attrs:
            copy.attrs["stride"] = copy.attrs.pop(STRIDE_BEFORE)
            copy.reparse()
        changed |= inner is not None or STRIDE_BEFORE in node.attrs
        new[nid] = copy
    return [entry(e) for e in g.outputs] if changed else None
