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
from ...base import BFLOAT16, BackendError
from ...graph import Graph, Node
from ...ops.params import Params
from ...ops.registry import OpContext
from .patterns import FUSED_OPS, FusedChain

FLOAT32 = np.dtype(np.float32)
Make = Callable[..., np.ndarray]
# Operators the weight cache runs itself when they compute a parameter from inputs
# only: views and joins.
FOLD_OPS = frozenset({"Reshape", "Flatten", "expand_dims", "Concat", "stack",
                      "_rnn_param_concat"})
# The inputs, by operator, that the weight cache may compute (`Folded`).
PARAMETER_READS: dict[str, tuple[str, ...]] = {"RNN": ("parameters",),
                                               "_contrib_quantized_rnn": ("parameters",),
                                               "FullyConnected": ("weight", "bias")}


class StaleConstant(BackendError):
    """A constant whose new value no longer fits the primitive it was made for (an
    INT8 LSTM's weight scales are attributes of its primitives): the plan is
    compiled again (`DnnlState`)."""


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
    """Per channel, what BatchNorm multiplies the centred data by at inference
    (inf for a zero variance with eps 0, NaN for a NaN or negative one, as on
    the numpy path)."""
    g = np.ones_like(gamma) if bn.fix_gamma else gamma
    with np.errstate(divide="ignore", invalid="ignore"):
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
    """Whether the weight cache computes `node`: views and joins of variables
    only (Gluon's packing of an RNN's weights, GluonNLP's interleaved
    query/key/value projections)."""
    return node.op in FOLD_OPS and all(e.node.is_variable or foldable(e.node)
                                       for e in node.inputs)


class Folded:
    """Entries of a DNNL graph computed by the weight cache rather than by steps:
    each parameter read (`PARAMETER_READS`) of views and joins of inputs.
    ``entries`` maps each such entry to (its source input positions, the
    function of their arrays, which runs the operators' numpy kernels); ``nodes``
    are the operators that only such reads need, which no step computes."""

    def __init__(self, graph: Graph, input_pos: Mapping[int, int]) -> None:
        self.entries: dict[int, tuple[tuple[int, ...], Make]] = {}
        self.nodes: set[int] = set()
        producer = {graph.entry_ptr[nid]: nid for nid in range(len(graph.nodes))}
        folded_reads: set[tuple[int, int]] = set()   # (reader, entry)
        for nid, node in enumerate(graph.nodes):
            if node.is_variable:
                continue
            for e in _parameter_reads(graph, nid):
                if e in input_pos:
                    continue
                found = self.entries.get(e) or _evaluation(graph, producer, e, input_pos)
                if found is not None:
                    self.entries[e] = found
                    folded_reads.add((nid, e))
        readers: list[list[int]] = [[] for _ in range(graph.num_entries)]
        for nid in range(len(graph.nodes)):
            for e in graph.input_entry_ids(nid):
                readers[e].append(nid)
        heads = set(graph.head_entry_ids())
        # A join or view that only folded reads (or skipped nodes) need is skipped.
        for nid in reversed(range(len(graph.nodes))):
            out = graph.entry_ptr[nid]
            if (graph.nodes[nid].op in FOLD_OPS and out not in heads and readers[out]
                    and all((r, out) in folded_reads or r in self.nodes for r in readers[out])):
                self.nodes.add(nid)


def _parameter_reads(graph: Graph, nid: int) -> list[int]:
    """The entries node `nid` reads as parameters the cache may compute
    (`PARAMETER_READS`): its own inputs, or those of the members of a fused chain
    (a fully connected layer fused with its activation)."""
    node = graph.nodes[nid]
    if node.op in FUSED_OPS:
        chain = FusedChain(node, graph)
        return [chain.entry[id(i.node)] for member in chain.nodes
                for name, i in zip(member.input_names(), member.inputs, strict=False)
                if name in PARAMETER_READS.get(member.op or "", ()) and id(i.node) in chain.entry]
    return [e for name, e in zip(node.input_names(), graph.input_entry_ids(nid), strict=False)
            if name in PARAMETER_READS.get(node.op or "", ())]


def _evaluation(graph: Graph, producer: Mapping[int, int], eid: int,
                input_pos: Mapping[int, int]) -> tuple[tuple[int, ...], Make] | None:
    """(input positions, function of their arrays) computing entry `eid` from
    inputs through `FOLD_OPS` only, or None if anything else is on the way."""
    order: list[int] = []
    sources: list[int] = []   # entries that are inputs
    def visit(e: int) -> bool:
        if e in input_pos:
            if e not in sources:
                sources.append(e)
            return True
        nid = producer.get(e)
        if nid is None or graph.nodes[nid].op not in FOLD_OPS:
            return False
        if nid not in order:
            if not all(visit(x) for x in graph.input_entry_ids(nid)):
                return False
            order.append(nid)
        return True

    if not visit(eid):
        return None

    def make(*arrays: np.ndarray) -> np.ndarray:
        env = dict(zip(sources, arrays, strict=True))
        for nid in order:
            opdef, p = graph.nodes[nid].operator()
            out = opdef.forward(p, OpContext(), [env[x] for x in graph.input_entry_ids(nid)])
            env[graph.entry_ptr[nid]] = out[0] if isinstance(out, list) else out
        return env[eid]

    return tuple(input_pos[e] for e in sources), make
