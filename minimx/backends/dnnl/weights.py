"""The weight cache: plan constants derived from subgraph inputs, kept until
one of those inputs changes.

A `Constant` is one argument of one primitive (weights, bias, BatchNorm
statistics...) computed from some inputs of the DNNL node (folding a
BatchNorm into convolution weights, or just taking the array) and converted
into the layout the primitive chose (an INT8 primitive's weights and bias
come quantized from `make`, as int8 and int32, and keep their type; float
values, bfloat16 ones too, are made float32 first and the primitive's own type
when laid out: bf16 weights for a bf16 primitive). It is
computed when the plan compiles
(or, compiled at bind, allocated then and computed by the first run) and
again on a later run only when one of its source inputs moved.

"Moved" is decided by engine versions: the executor passes, for each input
of the node, the version of the array it came from (`OpContext.input_versions`,
None for an entry computed during the run). A source is unchanged only if it
is the same array object with the same version as last time; an input
without a version always counts as changed. Nothing compares array contents:
equal fingerprints would not prove equal weights.

The memory behind a constant is refilled in place, so the compiled plan,
which binds it, stays valid.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ... import onednn
from ...base import BFLOAT16
from ...graph import Graph, Node
from ...ops.params import Params

FLOAT32 = np.dtype(np.float32)
Make = Callable[..., np.ndarray]
# Views a folded weight may pass through on its way from an input.
FOLDED_VIEWS = frozenset({"Reshape", "Flatten", "expand_dims"})


class Constant:
    """Argument `arg` of `op` computed by `make(*inputs[sources])`; `op=None`
    means a plain float32 array of the value's shape."""

    __slots__ = ("sources", "make", "op", "arg", "memory", "_seen")

    def __init__(self, sources: Sequence[int], make: Make,
                 op: onednn.Primitive | None = None, arg: str = "") -> None:
        self.sources = tuple(sources)
        self.make = make
        self.op = op
        self.arg = arg
        self.memory: onednn.Memory | None = None
        self._seen: tuple | None = None

    def allocate(self, shape: tuple[int, ...]) -> onednn.Memory:
        """The constant's memory, in its layout but not filled yet (the next
        `refresh` fills it); `shape`, the float32 value's, matters only when `op`
        is None."""
        desc = onednn.MemoryDesc.plain(shape) if self.op is None else self.op.desc(self.arg)
        self.memory = onednn.Memory.allocate(desc)
        return self.memory

    def refresh(self, inputs: Sequence[np.ndarray],
                versions: Sequence[int | None] | None) -> onednn.Memory:
        """The constant's memory, recomputed (into the same buffer) if a source moved."""
        seen = tuple((inputs[i], None if versions is None else versions[i])
                     for i in self.sources)
        fresh = self._seen is not None and all(
            v is not None and a is old_a and v == old_v
            for (a, v), (old_a, old_v) in zip(seen, self._seen, strict=True))
        if fresh and self.memory is not None:
            return self.memory
        value = np.ascontiguousarray(self.make(*(inputs[i] for i in self.sources)))
        if value.dtype.kind == "f" or value.dtype == BFLOAT16:  # integers are INT8
            value = value.astype(FLOAT32, copy=False)       # weights and biases, quantized
        if self.op is None:
            self.memory = onednn.to_layout(value, onednn.MemoryDesc.plain(value.shape), self.memory)
        else:
            self.memory = onednn.constant(self.op, self.arg, value, into=self.memory)
        self._seen = seen
        return self.memory


def bn_scale(bn: Params, gamma: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Per channel, what BatchNorm multiplies the centred data by at inference."""
    g = np.ones_like(gamma) if bn.fix_gamma else gamma
    return g.astype(np.float64) / np.sqrt(var.astype(np.float64) + bn.eps)


def fold_weight(bn: Params, w: np.ndarray, gamma: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Convolution weights with the BatchNorm after them folded in (MXNet's rule)."""
    alpha = bn_scale(bn, gamma, var)
    return (w * alpha.reshape((-1,) + (1,) * (w.ndim - 1))).astype(FLOAT32)


def fold_bias(bn: Params, bias: np.ndarray | None, gamma: np.ndarray, beta: np.ndarray,
              mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """The bias of a convolution with the BatchNorm after it folded in."""
    alpha = bn_scale(bn, gamma, var)
    b = 0.0 if bias is None else bias.astype(np.float64)
    return (beta.astype(np.float64) + alpha * (b - mean.astype(np.float64))).astype(FLOAT32)


def foldable(node: Node) -> bool:
    """Whether the weight cache computes `node`: a ``_rnn_param_concat`` (Gluon's
    packing of an RNN's weights) of variables or of views of variables."""
    def from_variable(entry) -> bool:
        n = entry.node
        while n.op in FOLDED_VIEWS:
            n = n.inputs[0].node
        return n.is_variable
    return node.op == "_rnn_param_concat" and all(from_variable(e) for e in node.inputs)


class Folded:
    """Entries of a DNNL graph computed by the weight cache rather than by steps:
    each ``_rnn_param_concat`` of inputs or of views of inputs. ``entries`` maps
    each such output entry to (its source input positions, the function of
    their arrays); ``nodes`` are the concatenations and the views that nothing
    else reads, which no step computes."""

    def __init__(self, graph: Graph, input_pos: Mapping[int, int],
                 shapes: Sequence[tuple[int, ...] | None]) -> None:
        self.entries: dict[int, tuple[tuple[int, ...], Make]] = {}
        self.nodes: set[int] = set()
        readers: list[list[int]] = [[] for _ in range(graph.num_entries)]
        for nid in range(len(graph.nodes)):
            for e in graph.input_entry_ids(nid):
                readers[e].append(nid)
        heads = set(graph.head_entry_ids())
        producer = {graph.entry_ptr[nid]: nid for nid in range(len(graph.nodes))}
        for nid, node in enumerate(graph.nodes):
            if node.op != "_rnn_param_concat":
                continue
            found = [_part(graph, producer, e, input_pos, shapes)
                     for e in graph.input_entry_ids(nid)]
            parts = [part for part in found if part is not None]
            if len(parts) < len(found):
                continue
            self.entries[graph.entry_ptr[nid]] = _joined(parts, node.operator()[1].dim)
            if graph.entry_ptr[nid] not in heads and all(
                    graph.nodes[r].op == "RNN" for r in readers[graph.entry_ptr[nid]]):
                self.nodes.add(nid)
        # Views read only by skipped nodes are skipped too (up the chains).
        for nid in reversed(range(len(graph.nodes))):
            out = graph.entry_ptr[nid]
            if (graph.nodes[nid].op in FOLDED_VIEWS and out not in heads and readers[out]
                    and all(r in self.nodes for r in readers[out])):
                self.nodes.add(nid)


def _part(graph: Graph, producer: Mapping[int, int], eid: int, input_pos: Mapping[int, int],
          shapes: Sequence[tuple[int, ...] | None]) -> tuple[int, tuple[int, ...]] | None:
    """(input position, shape) of one concatenated entry: an input, or a chain of
    views of one (`producer`: each entry's node); None for anything else."""
    shape = shapes[eid]
    while eid not in input_pos:
        nid = producer.get(eid)
        if nid is None or graph.nodes[nid].op not in FOLDED_VIEWS:
            return None
        eid = graph.input_entry_ids(nid)[0]
    return None if shape is None else (input_pos[eid], tuple(shape))


def _joined(parts: list[tuple[int, tuple[int, ...]]], dim: int
            ) -> tuple[tuple[int, ...], Make]:
    """The concatenation of the parts along `dim`, as a function of their inputs."""
    shapes = [shape for _, shape in parts]
    return (tuple(pos for pos, _ in parts), lambda *arrays: np.concatenate(
        [a.reshape(s) for a, s in zip(arrays, shapes, strict=True)], axis=dim))
