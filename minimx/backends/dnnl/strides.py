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
  read as well (a residual block's input), reads it through a 1x1 max
  pooling of stride s (which picks every s-th pixel, exactly).

In ResNet v1 (stride on the first 1x1 convolution of a stage) this moves
the stride of a stage's first block back into the last block of the stage
before: its 3x3 convolution runs with stride 2 on a quarter of the pixels,
its last 1x1 convolution and residual sum on the pixels the next stage
reads (OpenVINO's strides optimisation does the same). Every output value
is computed by the same arithmetic as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ...graph import Graph, Node, NodeEntry
from .eltwise import eltwise_of
from .patterns import SUM_OPS

Stride = tuple[int, int]


class _Window(NamedTuple):
    stride: Stride
    pointwise: bool     # a 1x1 kernel without padding


def _conv_window(node: Node) -> _Window | None:
    """A 2-D, undilated, channel-first convolution's window, else None."""
    if node.op != "Convolution":
        return None
    _, p = node.operator()
    if len(p.kernel) != 2 or any(d != 1 for d in p.dilate) or p.layout not in (None, "NCHW"):
        return None
    stride = tuple(p.stride) or (1, 1)
    return _Window((stride[0], stride[1]), tuple(p.kernel) == (1, 1) and not any(p.pad))


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
            data = node.inputs[0]
            if window.pointwise and self.sole_reader(data):
                inner = self.subsampled(data, s)
                if inner is not None:
                    return inner
            t = window.stride
            return _Edits(strides={nid: (t[0] * s[0], t[1] * s[1])})
        if (node.op == "BatchNorm" and node.operator()[1].axis == 1) or eltwise_of(node):
            data = node.inputs[0]
            return self.subsampled(data, s) if self.sole_reader(data) else None
        if node.op in SUM_OPS and len(node.inputs) == 2:
            edits, hoisted = _Edits(), False
            for k, operand in enumerate(node.inputs):
                inner = self.subsampled(operand, s) if self.sole_reader(operand) else None
                if inner is None:
                    edits.pooled[(nid, k)] = s
                else:
                    edits.update(inner)
                    hoisted = True
            return edits if hoisted else None
        return None

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
        """The graph with the planned edits made (new nodes; variables kept)."""
        new: dict[int, Node] = {}
        for nid, node in enumerate(self.g.nodes):
            if node.is_variable:
                new[nid] = node
                continue
            inputs = [NodeEntry(new[self.g.node_id(e.node)], e.index, e.version)
                      for e in node.inputs]
            for k, e in enumerate(inputs):
                s = self.edits.pooled.get((nid, k))
                if s is not None:
                    pool = Node.create("Pooling", f"{node.name}_subsample{k}", {
                        "kernel": "(1, 1)", "stride": str(s), "pool_type": "max"}, [e])
                    inputs[k] = NodeEntry(pool, 0, 0)
            copy = node.with_inputs(inputs)
            if nid in self.edits.strides:
                copy.attrs["stride"] = str(self.edits.strides[nid])
                copy.reparse()
            new[nid] = copy
        return Graph([NodeEntry(new[self.g.node_id(e.node)], e.index, e.version)
                      for e in self.g.outputs])


def hoist_strides(g: Graph) -> tuple[Graph, int]:
    """Graph `g` with its strides hoisted (see the module docstring), and the
    number of tensors now computed subsampled (0: `g` itself is returned)."""
    hoister = _Hoister(g)
    count = hoister.hoist()
    return (hoister.rebuild(), count) if count else (g, 0)
