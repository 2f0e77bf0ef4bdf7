"""Lowering a DNNL subgraph to one `onednn.Plan` for given input shapes.

Needs: the inner Graph of a `_sg_dnnl` node (every node supported per
`configs/dnnl.yaml`, chains fused by `patterns`), inputs of the given
shapes, float32 (or int8/uint8 in MXNet's quantized graphs, whose operators
`quantized` lowers onto oneDNN's INT8 primitives). Guarantees: a `Compiled`
whose `run` computes the graph's outputs with one C call. Data enters in the
plain layout and is reordered once into the layout the first primitive
chose; between primitives tensors stay in
whatever layout oneDNN picked (`format_tag any` for convolution, inner
product and deconvolution, the producer's layout elsewhere; for float
convolutions, `conv_layout` makes two exceptions: the network's layout where
oneDNN would pick another, 16-channel blocks in depthwise networks); outputs
leave in the plain layout. A 3x3, stride-1 convolution with enough output tiles runs
as Winograd F(4x4, 3x3), or F(2x2, 3x3) on few tiles (`onednn.wino_conv`, NHWC in
and out; see `winograd.winograd_tile`). Weights, biases and BatchNorm parameters become
`Constant`s (the weight cache; a Winograd convolution's weights in the
Winograd domain). Flatten / Reshape are views: they keep their producer's
slot, and only FullyConnected reads them inside a subgraph (the selector sees
to that), which flattens anyway.

In bfloat16 (`compute`, the `_sg_dnnl` node's `dtype`): convolution, inner
product, deconvolution and RNN (its hidden states bf16, an LSTM's cell states
float32) take bf16 src, weights and dst with a float32 bias (bf16
for a depthwise convolution where only that gets oneDNN's fast kernel, see `onednn.conv`)
(BatchNorm folded in float32 first, then the weights rounded to bf16 once, in
the weight cache), and pooling, eltwise, sum, concat... run on the bf16 tensors
they are given; float32 inputs become bf16 once, and outputs leave in the
dtype the graph gives them (float32 for an fp32 model). No Winograd in bf16.
A graph that says bfloat16 itself (AMP's `amp_cast` and `amp_multicast`
nodes, bf16 weights) runs its bf16 nodes so whatever `compute` is: a cast
becomes a conversion where data reads it, and where a weight does, part of
the weight cache.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import is_

import numpy as np

from ... import onednn, profiler
from ...base import BackendError, settings
from ...graph import Graph, Node
from ...graph.infer import infer_shapes
from ...graph.plan_memory import MemoryPlan, Step, last_reads, plan_memory
from ...ops.activation import length_mask
from ...ops.attention import attention_scale
from ...ops.layout import swapped_axes
from ...ops.quantization import scalar as q_scalar
from ...ops.resampling import SEPARABLE_WEIGHTS
from ...ops.tensor import slice_axis_range
from ...subgraph.selector import SelectorNode
from ...subgraph.subgraph_op import inner_graph
from .batch_parts import BatchParts, batch_parts, input_cast
from .config import (
    COMPILED_FOR_WEIGHTS,
    Support,
    default_support,
    pool_include_pad,
    range_inputs,
)
from .conv_layout import blocked_types, float_conv
from .eltwise import Eltwise, eltwise_of
from .eltwise import check_config as check_eltwise_config
from .patterns import PATTERNS, ConvChain, FusedChain, conv_chain, unfusable_member
from .pointwise_depthwise import POINTWISE_DEPTHWISE, pointwise_depthwise
from .quantized import (
    OWN_DEPTHWISE,
    OWN_FIRST_CONV,
    OWN_POINTWISE,
    dequantize,
    quantize,
    quantize_asym,
    quantized_add,
    quantized_batch_norm,
    quantized_concat,
    quantized_conv,
    quantized_fc,
    quantized_first_conv,
    requantize,
)
from .recurrent import rnn
from .weights import FLOAT32, Constant, Folded, fold_bias, fold_weight
from .winograd import LABELS as WINOGRAD_LABELS
from .winograd import WINOGRAD, WINOGRAD_2, winograd_tile

VIEWS = default_support().lowered_as("view")
# Operators that pass their input on unchanged at inference (Dropout): they keep
# their producer's slot.
IDENTITIES = default_support().lowered_as("identity")


# The fully connected layers (float, and MXNet's quantized fused one).
FC_READERS = frozenset({"FullyConnected", "_sg_mkldnn_fully_connected"})


def _flattens(node: Node) -> bool:
    """Whether `node` flattens its data input anyway (so it may read a view's
    producer in whatever layout and shape it has)."""
    return node.op in FC_READERS and bool(
        node.params is not None and node.params.get("flatten", True))
CASTS = default_support().lowered_as("cast")
# Quantized operators whose min/max outputs are their min/max inputs.
RANGE_PASSING = ("_contrib_quantized_pooling", "_contrib_quantized_flatten",
                 "_contrib_quantized_act")
FUSED_LOWERING = {p.fused: p.lower for p in PATTERNS}


def _refused(node: Node) -> str | None:
    """Why oneDNN cannot run `node` as the DNNL config describes it (its
    parameters only: shapes are not known here), naming it, or None if it can."""
    why = default_support().refusal(SelectorNode(node, (None,) * len(node.inputs),
                                                 (None,) * node.num_outputs(), (), ()))
    return None if why is None else f"{node.label}: {why}"


def _eltwise(node: Node) -> Eltwise:
    """The eltwise algorithm of `node`, which the selector took as one."""
    found = eltwise_of(node)
    if found is None:
        raise BackendError(f"DNNL lowering: {node.label} is not an eltwise operator")
    return found


def _chain_refused(chain: Node) -> str | None:
    """Why a fused chain (`_sg_dnnl_conv` ...) cannot be lowered, or None: each
    member must be one a row of `patterns.PATTERNS` making the chain's operator
    could have taken, and each must pass `_refused`."""
    odd = unfusable_member(chain)
    if odd is not None:
        return f"{chain.label} fuses {_refused(odd) or odd.label}"
    for n in inner_graph(chain.params).nodes:
        why = None if n.is_variable else _refused(n)
        if why is not None:
            return f"{chain.label} fuses {why}"
    return None


def check_lowerable(graph: Graph) -> None:
    """Raise BackendError naming the first node of a DNNL subgraph that oneDNN
    cannot run. The partitioner never puts one there, but a partitioned file
    may hold anything, and lowering would drop or fail on it mid-forward."""
    for node in graph.nodes:
        if node.is_variable:
            continue
        why = _chain_refused(node) if node.op in FUSED_LOWERING else _refused(node)
        if why is not None:
            raise BackendError(f"DNNL subgraph: {why} (oneDNN cannot run it; "
                               "see minimx/configs/dnnl.yaml)")


def compile_planned(plan: onednn.Plan) -> MemoryPlan:
    """Compile `plan` with its temporaries placed by minimx's one memory planner
    (in-place where oneDNN allows it, unless MINIMX_EXEC_ENABLE_INPLACE=0)."""
    sizes, steps, external = plan.schedule()
    memory = plan_memory(sizes, [Step(*s) for s in steps], external,
                         settings().exec_enable_inplace)
    plan.compile(memory.storage, memory.block_bytes)
    return memory


class Compiled:
    """A compiled subgraph: the plan, its constants, and where inputs go."""

    def __init__(self, plan: onednn.Plan, in_shapes: tuple, in_dtypes: tuple,
                 ranges: dict[int, float], data_inputs: list[int],
                 constants: list[Constant], out_shapes: list[tuple[int, ...]],
                 memory: MemoryPlan, kernels: dict[str, list[str]], per_part: list[str]) -> None:
        self.plan = plan
        self.memory = memory  # where the plan's temporaries live
        # The operators run by a kernel other than oneDNN's usual, by name, under
        # what the partition summary calls it (Winograd, minimx's own kernels).
        self.kernels = kernels
        self.per_part = per_part  # the operators run once per part of the batch, by name
        self.in_shapes = in_shapes
        self.in_dtypes = in_dtypes
        self.ranges = ranges  # range inputs (by position): the values it was compiled for
        self.data_inputs = data_inputs
        self.constants = constants
        self.out_shapes = out_shapes
        # Allocated once: runs the caller gives no arrays to write into use these.
        self.out_buffers = [np.empty(s.desc.shape, s.desc.dtype) for s in plan.outputs]
        self.sources = sorted({i for c in constants for i in c.sources})
        self._stamp: tuple[tuple, list] | None = None   # source versions and arrays
        self._fitted: list[np.ndarray] = []   # the inputs `fits` last accepted

    def fits(self, inputs: Sequence[np.ndarray]) -> bool:
        """Whether the plan was compiled for these inputs' shapes, dtypes and ranges."""
        # An executor passes the same arrays every run, and an array's shape
        # and dtype do not change: those that fitted last time still do.
        if not (len(inputs) == len(self._fitted) and all(map(is_, inputs, self._fitted))):
            if (tuple(a.shape for a in inputs) != self.in_shapes
                    or tuple(a.dtype for a in inputs) != self.in_dtypes):
                return False
            self._fitted = list(inputs)
        return all(q_scalar(inputs[i]) == v for i, v in self.ranges.items())

    def refresh(self, inputs: Sequence[np.ndarray],
                versions: Sequence[int | None] | None) -> None:
        """Let every constant check its sources, unless none of them moved since the
        last run (the common case, checked in one pass over the sources)."""
        stamp = None
        if versions is not None:
            moved = tuple([versions[i] for i in self.sources])
            stamp = None if None in moved else (moved, [inputs[i] for i in self.sources])
        if stamp is not None and self.unchanged(*stamp):
            return
        for c in self.constants:
            c.refresh(inputs, versions)
        self._stamp = stamp

    def unchanged(self, versions: tuple, arrays: Sequence[np.ndarray]) -> bool:
        """Whether the constants were made from these arrays at these versions (of
        the inputs at `sources`), so that `refresh` would do nothing."""
        # `==` and map(is_) loop in C: a forward checks hundreds of weights.
        stamp = self._stamp
        return stamp is not None and versions == stamp[0] and all(map(is_, arrays, stamp[1]))

    def run(self, inputs: Sequence[np.ndarray], versions: Sequence[int | None] | None,
            outputs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """The outputs, computed into `outputs` (returned) when those fit the plan,
        else into buffers of its own (the caller copies them out)."""
        self.refresh(inputs, versions)
        data = [np.ascontiguousarray(inputs[i]) for i in self.data_inputs]
        direct = outputs is not None and self.takes(outputs)
        targets = ([o.reshape(b.shape) for o, b in zip(outputs, self.out_buffers, strict=True)]
                   if direct and outputs is not None else self.out_buffers)
        if profiler.recording_layers():   # one event per oneDNN step, timed in C
            times = np.empty(2 * self.plan.step_runs, np.int64)
            outs = self.plan.run(data, targets, times)
            profiler.record_steps(self.plan.run_names(), times)
        else:
            outs = self.plan.run(data, targets)
        if direct and outputs is not None:
            return list(outputs)
        return [o.reshape(s) for o, s in zip(outs, self.out_shapes, strict=True)]

    def takes(self, outputs: Sequence[np.ndarray]) -> bool:
        """Whether the plan can write `outputs` directly: C-contiguous arrays of its
        outputs' shapes (up to a reshape) and dtypes."""
        return all(o.shape == s and o.dtype == b.dtype and o.flags.c_contiguous
                   for o, s, b in zip(outputs, self.out_shapes, self.out_buffers, strict=True))


class Lowering:
    """Builds the plan of `graph` for `in_shapes` (one shape per input variable);
    `shapes` and `dtypes`, every entry's, when the caller has inferred them
    (dtypes default to float32 throughout); `compute`, what float operators
    compute in (float32, or onednn's BFLOAT16)."""

    def __init__(self, graph: Graph, in_shapes: Sequence[tuple[int, ...]], name: str,
                 shapes: Sequence[tuple[int, ...] | None] | None = None,
                 dtypes: Sequence[np.dtype | None] | None = None,
                 compute: np.dtype = FLOAT32, split_batch: bool = True) -> None:
        g = self.g = graph
        self.compute = compute
        # (root entry, float dtype) -> its slot converted to that dtype
        self.converted: dict[tuple[int, np.dtype], onednn.Slot] = {}
        # A cast's output entry -> (its input's entry, the dtype it casts to).
        self.casts: dict[int, tuple[int, np.dtype]] = {}
        self.in_shapes = tuple(tuple(s) for s in in_shapes)
        self.shapes = list(shapes) if shapes is not None else infer_shapes(
            g, {g.entry_ptr[n]: s for n, s in zip(g.input_ids, self.in_shapes, strict=True)})
        self.dtypes = list(dtypes) if dtypes is not None else [None] * g.num_entries
        # The min/max range entries of quantized nodes, known when the plan compiles.
        self.ranges: dict[int, np.ndarray] = {}
        self.inputs: Sequence[np.ndarray] | None = None
        self.input_pos = {g.entry_ptr[nid]: k for k, nid in enumerate(g.input_ids)}
        self.plan = onednn.Plan(name, own_kernels=settings().dnnl_nhwc_input)
        self.slots: dict[int, onednn.Slot] = {}
        self.data_inputs: list[int] = []
        self.constants: list[Constant] = []
        self.kernels: dict[str, list[str]] = {
            label: [] for label in (WINOGRAD, WINOGRAD_2, OWN_DEPTHWISE, OWN_POINTWISE,
                                    OWN_FIRST_CONV, POINTWISE_DEPTHWISE)}
        self.per_part: list[str] = []
        heads = (FusedChain(n, g).first("Convolution") if n.op in FUSED_LOWERING else n
                 for n in g.nodes)
        # The float types whose convolutions run in 16-channel blocks (conv_layout).
        self.blocked_types = blocked_types(
            [n for n in heads if n is not None and n.op == "Convolution"])
        readers: list[list[Node]] = [[] for _ in range(g.num_entries)]
        for nid, node in enumerate(g.nodes):
            for e in g.input_entry_ids(nid):
                readers[e].append(node)
        self.readers = readers
        # Nodes lowered with the node they read, skipped after.
        self.lowered_ahead: set[int] = set()
        # Views that keep the batch axis and are read only by flattening operators
        # (or by no one: the output is reshaped by `Compiled.run`) keep their
        # producer's slot; the others are lowered as views of a plain copy (`reshape`).
        self.passed_on = {nid for nid, node in enumerate(g.nodes) if node.op in IDENTITIES or (
            node.op in VIEWS and all(_flattens(r) for r in readers[g.entry_ptr[nid]])
            and self._keeps_batch(nid))}
        self.folded = Folded(g, self.input_pos)
        self.root = list(range(g.num_entries))      # a view's entry -> the viewed entry
        for nid, node in enumerate(g.nodes):
            ins = g.input_entry_ids(nid)
            if nid in self.passed_on:
                self.root[g.entry_ptr[nid]] = self.root[ins[0]]
            if node.op in CASTS:  # each output: its input in the output's dtype
                for k, e in enumerate(ins):
                    self.casts[g.entry_ptr[nid] + k] = (e, self.dtype(g.entry_ptr[nid] + k))
            if node.op in RANGE_PASSING:
                for k in (1, 2):
                    self.root[g.entry_ptr[nid] + k] = self.root[ins[k]]
        # The last node reading each root entry (outputs: never freed), as the planner sees it.
        self.last_use = last_reads(g.num_entries, [
            Step(n.name, tuple(self.root[e] for e in g.input_entry_ids(nid)), ())
            for nid, n in enumerate(g.nodes)])
        for e in g.head_entry_ids():
            self.last_use[self.root[e]] = len(g.nodes)
        # The inputs holding ranges that scale a quantized node: the plan is
        # compiled for their values (a calibrated producer's, made elsewhere).
        self.range_inputs = sorted({
            self.input_pos[self.root[ins[i]]]
            for nid, node in enumerate(g.nodes) if not node.is_variable
            for ins in [g.input_entry_ids(nid)] for i in range_inputs(node)
            if self.root[ins[i]] in self.input_pos})
        # Whether the plan needs the inputs' values to compile (ranges, or weights).
        self.needs_values = bool(self.range_inputs) or any(
            n.op in COMPILED_FOR_WEIGHTS for n in g.nodes)
        # The leading nodes run once per part of the batch (`batch_parts`), and
        # while they are lowered, the parts of the inputs they read.
        self.parts = batch_parts(g, self.shapes, self._nbytes) if split_batch else None
        self.input_parts: dict[int, onednn.Slot] = {}
        self.whole_shapes: dict[int, tuple[int, ...]] = {}

    def _nbytes(self, eid: int) -> int:
        """Bytes of entry `eid` as the plan holds it (floats in `compute`)."""
        dtype = self.dtype(eid)
        size = self.compute.itemsize if dtype in onednn.FLOATS else dtype.itemsize
        return math.prod(self.shape(eid)) * size

    def _keeps_batch(self, nid: int) -> bool:
        data, out = self.shapes[self.g.input_entry_ids(nid)[0]], self.shapes[self.g.entry_ptr[nid]]
        return data is not None and out is not None and data[:1] == out[:1]

    # -- building blocks -----------------------------------------------------------
    def shape(self, eid: int) -> tuple[int, ...]:
        """The shape of entry `eid`, which inference from the input shapes found
        (`compile`'s message names the node that needed it)."""
        shape = self.shapes[eid]
        if shape is None:
            raise BackendError(f"the shape of entry {eid} is not known")
        return shape

    def dtype(self, eid: int) -> np.dtype:
        """The dtype of entry `eid` (float32 where not inferred)."""
        return np.dtype(self.dtypes[eid] or np.float32)

    def value(self, eid: int) -> onednn.Slot:
        """The slot holding entry `eid` (a graph input becomes a plan input on first
        use, a known range a constant)."""
        eid = self.root[eid]
        if eid in self.casts:
            return self.data(*self.casts[eid])
        if eid not in self.slots:
            if eid in self.ranges:
                self.slots[eid] = self.plan.constant(self.ranges[eid])
                return self.slots[eid]
            if eid not in self.input_pos:
                raise BackendError(f"DNNL lowering: entry {eid} is read before it is computed")
            self.slots[eid] = self.plan.input(self.shape(eid), dtype=self.dtype(eid))
            self.data_inputs.append(self.input_pos[eid])
        parts = self.parts
        if self.whole_shapes and parts is not None and eid in self.input_pos and \
                self.shape(eid)[:1] == (parts.count * parts.images,):   # read in the loop
            if eid not in self.input_parts:
                self.input_parts[eid] = self.plan.batch_part(self.slots[eid], parts.count)
            return self.input_parts[eid]
        return self.slots[eid]

    def float_type(self, nid: int) -> np.dtype:
        """What float operator `nid` computes in: bfloat16 where the graph says
        its output is, else `compute`."""
        out = self.g.entry_ptr[nid]
        return onednn.BFLOAT16 if self.dtype(out) == onednn.BFLOAT16 else self.compute

    def data(self, eid: int, dtype: np.dtype) -> onednn.Slot:
        """`value(eid)`, a float one in `dtype` (converted once, plain, for the
        operators that keep their source's type)."""
        slot = self.value(eid)
        if slot.desc.dtype == dtype or slot.desc.dtype not in onednn.FLOATS:
            return slot
        key = (self.root[eid], dtype)
        if key not in self.converted:
            self.converted[key] = self.plan.reorder(
                slot, onednn.MemoryDesc.plain(slot.shape, dtype))
        return self.converted[key]

    def set_range(self, out: int, lo: np.ndarray, hi: np.ndarray) -> None:
        """Record the range outputs (entries `out` + 1 and + 2) of a quantized node."""
        self.ranges[out + 1], self.ranges[out + 2] = lo, hi

    def range_of(self, eids: Sequence[int]) -> tuple[float, float]:
        """The (min, max) that range entries `eids` hold, which must be known now."""
        lo, hi = (self._range_value(self.root[e]) for e in eids)
        return lo, hi

    def _range_value(self, root: int) -> float:
        if root in self.ranges:
            return float(self.ranges[root][0])
        if self.inputs is None:  # `range_inputs` lists it: the caller gives the values
            raise BackendError("DNNL lowering: a min/max range is an input, whose value "
                               "the plan is compiled for; compile with the inputs")
        return q_scalar(self.inputs[self.input_pos[root]])

    def source(self, eid: int, what: str) -> int:
        """The input position of a parameter entry (weights etc. must be inputs,
        or their amp_casts: the weight cache converts them anyway)."""
        while eid in self.casts:
            eid = self.casts[eid][0]
        if eid not in self.input_pos:
            raise BackendError(f"DNNL lowering: {what} is computed inside the subgraph; "
                               "only inputs can be weights")
        return self.input_pos[eid]

    def weight(self, eid: int) -> tuple[tuple[int, ...], Callable]:
        """The input positions and the function of their arrays that give the
        parameter entry `eid`: an input itself, or one the weight cache folds."""
        if eid in self.folded.entries:
            return self.folded.entries[eid]
        return (self.source(eid, f"entry {eid}"),), lambda a: a

    def constant(self, inputs: Sequence[np.ndarray] | None, sources: Sequence[int], make,
                 op: onednn.Primitive | None = None, arg: str = "",
                 shape: tuple[int, ...] | None = None) -> onednn.Slot:
        """A constant's slot: computed from `inputs`, or (None) allocated and left
        for the first run to fill; `shape`, a plain float32 value's when not its
        first source's."""
        c = Constant(sources, make, op, arg)
        self.constants.append(c)
        if inputs is None:
            return self.plan.constant(c.allocate(shape or self.in_shapes[sources[0]]))
        return self.plan.constant(c.refresh(inputs, self.versions))

    def viewable(self, eid: int) -> onednn.Slot:
        """Entry `eid` in a plain temporary, which views may read (a copy of an input;
        float data in float32: the operators that view run in float32)."""
        x = self.plan.reorder(self.data(eid, FLOAT32))
        return x if x.kind == "temp" and x.base is None else self.plan.reorder(x, copy=True)

    def permuted(self, eid: int, axes: Sequence[int]) -> onednn.Slot:
        """A view of entry `eid` with its axes in the order `axes` (no copy)."""
        return self.plan.permute(self.viewable(eid), axes)

    def heads(self, eid: int, heads: int, part: int, parts: int) -> onednn.Slot:
        """Part `part` of `parts` of each head of MXNet's interleaved projections
        (T, B, heads * parts * D), as a (B, heads, T, D) view."""
        t, b, width = self.shape(eid)
        d = width // (heads * parts)
        split = self.plan.view(self.viewable(eid), onednn.MemoryDesc.plain(
            (t, b, heads, parts * d)))
        batched = self.plan.permute(split, (1, 2, 0, 3))
        return self.plan.part(batched, (b, heads, t, d), (0, 0, 0, part * d))

    def sole_reader(self, nid: int) -> Node | None:
        """The one node reading node `nid`'s (first) output, where it is the only
        reader and the output is no output of the graph."""
        out = self.g.entry_ptr[nid]
        readers = self.readers[out]
        return readers[0] if len(readers) == 1 and out not in self.g.head_entry_ids() else None

    def eltwise_post(self, node: Node | None) -> list[onednn.PostOp]:
        return [] if node is None else [onednn.PostOp.eltwise(*_eltwise(node))]

    def addend(self, eid: int, desc: onednn.MemoryDesc, nid: int, reads: Sequence[int]
               ) -> onednn.Slot:
        """The slot a sum post-op accumulates into: the addend's own, when nothing
        reads it later and the step does not read it otherwise; else a copy."""
        slot = self.value(eid)
        root = self.root[eid]
        in_place = slot.kind == "temp" or (slot.kind == "view" and slot.whole)
        if (in_place and slot.desc == desc and self.last_use[root] <= nid
                and root not in self.casts and root not in {self.root[r] for r in reads}):
            return slot
        return self.plan.reorder(slot, desc, copy=True)

    def images_as_row(self, x: onednn.Slot, weight_shape: Sequence[int], pad: Sequence[int],
                      dtype: np.dtype) -> onednn.Slot | None:
        """For an unpadded 1x1 convolution of a batch of 1x1 images (a classifier
        written as one, as MobileNet v2's): the batch as one image's row of
        pixels, data `x` as a (1, C, 1, N) NHWC view in `dtype` (converted first
        where it is in another layout or type, or is no temporary, which views
        read). oneDNN's 1x1 kernels multiply an image's pixels by the weights at
        a time, here one pixel per pass over all the weights; as a row, one
        product of N rows (MobileNet v2's classifier at batch 16: INT8 626
        against 57 us, float32 1454 against 258; Intel Xeon with AMX, oneDNN
        3.2). The convolution's output, (1, O, 1, N) NHWC, is the batch's
        (`row_as_images`). None where this does not apply."""
        n, c, *size = x.shape
        if n == 1 or size != [1, 1] or tuple(weight_shape[2:]) != (1, 1) or any(pad or ()):
            return None
        nhwc = onednn.MemoryDesc.ordered(x.shape, "acdb", dtype)
        x = self.plan.reorder(x, nhwc)
        if (x.base or x).kind != "temp":
            x = self.plan.reorder(x, nhwc, copy=True)
        return self.plan.view(x, onednn.MemoryDesc.ordered((1, c, 1, n), "acdb", dtype))

    def row_as_images(self, y: onednn.Slot, batch: int) -> onednn.Slot:
        """A convolution's (1, O, 1, N) NHWC output of `images_as_row` data as
        the batch's (N, O, 1, 1)."""
        return self.plan.view(y, onednn.MemoryDesc.ordered((batch, y.shape[1], 1, 1), "acdb",
                                                           y.desc.dtype))

    # -- the walk ------------------------------------------------------------------
    def compile(self, inputs: Sequence[np.ndarray] | None,
                versions: Sequence[int | None] | None) -> Compiled:
        """Lower every node; `inputs` give the constants their first values
        (None: a bind compiles before the values are set; the first run fills them)."""
        self.versions = versions
        self.inputs = inputs
        g = self.g
        if self.parts is not None:
            self._open_loop(self.parts)
        for nid, node in enumerate(g.nodes):
            if self.parts is not None and nid == self.parts.end:
                self._close_loop()
            op = node.op
            # A variable, its producer's slot (views, identities), the weight cache's,
            # or a cast (made where it is read).
            if (op is None or nid in self.passed_on or nid in self.folded.nodes or op in CASTS
                    or nid in self.lowered_ahead):
                continue
            ins = g.input_entry_ids(nid)
            out = g.entry_ptr[nid]
            kind = FUSED_LOWERING.get(op) or default_support().lowering(op)
            kind = "reshape" if kind == "view" else kind
            lower = None if kind is None else LOWERINGS.get(kind)
            if lower is None:
                raise BackendError(f"DNNL lowering: {node.label} is not supported")
            self.plan.owner = node.name   # the steps it adds are this node's
            try:
                self.slots[out] = lower(self, node, nid, ins, inputs)
            except BackendError as exc:  # oneDNN's refusals do not know the node
                if str(exc).startswith("DNNL lowering: "):  # ours name it already
                    raise
                raise BackendError(f"DNNL lowering: {node.label}: {exc}") from exc
        if self.whole_shapes:   # every node ran in the loop
            self._close_loop()
        heads = g.head_entry_ids()
        self.plan.owner = "outputs"
        for e in heads:  # each in the dtype the graph gives it
            y = self.value(e)
            if y.desc.dtype != self.dtype(e):
                y = self.plan.reorder(y, onednn.MemoryDesc.plain(y.shape, self.dtype(e)))
            self.plan.output(y)
        in_dtypes = tuple(self.dtype(g.entry_ptr[n]) for n in g.input_ids)
        ranges = {i: q_scalar(inputs[i]) for i in self.range_inputs} if inputs else {}
        return Compiled(self.plan, self.in_shapes, in_dtypes, ranges,
                        self.data_inputs, self.constants,
                        [self.shape(e) for e in heads], compile_planned(self.plan),
                        self.kernels, self.per_part)

    # -- the loop over parts of the batch ----------------------------------------------
    def _open_loop(self, parts: BatchParts) -> None:
        """Give the nodes before `parts.end` the shapes of one part's: they are
        lowered for one part, and run once per part."""
        g = self.g
        for nid in range(parts.end):
            node = g.nodes[nid]
            if node.is_variable or input_cast(node):   # keeps its shapes: see input_cast
                continue
            for e in g.output_entry_ids(nid):
                shape = self.shapes[e]
                if shape is not None and len(shape) >= 2 and shape[0] == parts.count * parts.images:
                    self.whole_shapes[e] = shape
                    self.shapes[e] = (parts.images, *shape[1:])
        self.per_part = [g.nodes[nid].name for nid in range(parts.end)
                         if not g.nodes[nid].is_variable]

    def _close_loop(self) -> None:
        """End the loop: the steps so far run once per part, and the entries the
        later nodes (or the outputs) read become whole-batch temporaries."""
        g, parts = self.g, self.parts
        assert parts is not None
        later = [e for nid in range(parts.end, len(g.nodes)) for e in g.input_entry_ids(nid)]
        results = sorted({self._uncast(self.root[e]) for e in later + g.head_entry_ids()}
                         & set(self.whole_shapes))
        if any(op.kind not in PER_IMAGE_STEPS for op, _ in self.plan.steps):
            raise SplitRefused("a step of the loop mixes the images of the batch")
        if any(e not in self.slots for e in results):   # made where it is read (a cast)
            raise SplitRefused("a result of the loop has no slot of its own")
        try:
            wholes = self.plan.batch_loop(parts.count, [self.slots[e] for e in results])
        except BackendError as exc:   # a result is not a temporary of the batch's layout
            raise SplitRefused(str(exc)) from exc
        self.slots.update(zip(results, wholes, strict=True))
        self.shapes[:] = [self.whole_shapes.get(e, s) for e, s in enumerate(self.shapes)]
        self.whole_shapes.clear()
        self.input_parts.clear()
        self.converted.clear()   # conversions made in the loop hold one part

    def _uncast(self, eid: int) -> int:
        """The entry a cast entry converts (through casts of casts): what a later
        reader of the cast reads, converted where it is read."""
        while eid in self.casts:
            eid = self.root[self.casts[eid][0]]
        return eid

    # -- operators -----------------------------------------------------------------
    def _conv_like(self, c: ConvChain, nid: int, inputs) -> onednn.Slot:
        """Convolution / Deconvolution with optional folded BN, act, sum, act."""
        conv = c.conv
        _, p = conv.operator()
        data, weight = (c.entry(e) for e in conv.inputs[:2])
        post = self.eltwise_post(c.act)
        if c.add is not None:
            post += [onednn.PostOp.sum()] + self.eltwise_post(c.post_act)
        x = self.value(data)
        kw = dict(stride=p.stride or None, pad=p.pad or None, dilate=p.dilate or None,
                  num_group=p.num_group, bias=not p.no_bias or c.bn is not None,
                  post_ops=post)
        weight_shape = self.shape(weight)
        dtype = self.float_type(nid)
        ahead = None        # the output entry of a node lowered with this one
        readers: list[tuple[ConvChain, str]] = []  # chains lowered with it, their prefixes
        # a classifier's 1x1 convolution of 1x1 images runs on the batch as a row
        row = (self.images_as_row(x, weight_shape, kw["pad"], dtype)
               if conv.op == "Convolution" and c.add is None else None)
        if conv.op == "Deconvolution":
            op = onednn.deconv(x.shape, weight_shape, adj=p.adj or None, dtype=dtype, **kw)
        elif row is not None:
            op = onednn.conv(row.desc, weight_shape, dtype=dtype, dst_layout="acdb",
                             **{**kw, "stride": None})
            x = row
        elif dtype == FLOAT32 and (tile := winograd_tile(x.shape, weight_shape, kw)):
            self.kernels[WINOGRAD_LABELS[tile]].append(conv.name)
            op = onednn.wino_conv(x.shape, weight_shape, pad=kw["pad"],
                                  bias=kw["bias"], post_ops=post, tile=tile)
        elif dtype == FLOAT32 and c.add is None and kw["bias"] and (
                quantizing := quantized_first_conv(self, nid, x, weight_shape, kw)):
            op, ahead = quantizing
            self.kernels[OWN_FIRST_CONV].append(conv.name)
        elif dtype == FLOAT32 and c.add is None and (
                fused := pointwise_depthwise(self, nid, x, data, weight_shape, kw)):
            op, readers, ahead = fused
            self.kernels[POINTWISE_DEPTHWISE].append(conv.name)
        else:
            r = self.sole_reader(nid)
            pooled = r is not None and r.op == "Pooling" and r.operator()[1].pool_type == "max"
            op = float_conv(x.shape, weight_shape, kw, dtype, dtype in self.blocked_types,
                            pooled)
        args = {"src": self.plan.reorder(x, op.desc("src")), **self._conv_constants(c, op, inputs)}
        for chain, prefix in readers:
            args.update(self._conv_constants(chain, op, inputs, prefix))
        dst = None if c.add is None else self.addend(c.add, op.desc("dst"), nid, [data])
        y = self.plan.add(op, dst=dst, **args)
        if ahead is not None:   # the node lowered with it: its output is ours
            self.slots[ahead] = y
        return y if row is None else self.row_as_images(y, self.shape(data)[0])

    def _conv_constants(self, c: ConvChain, op: onednn.Primitive, inputs,
                        prefix: str = "") -> dict[str, onednn.Slot]:
        """The weights and bias of convolution chain `c` as arguments
        `<prefix>weights` and `<prefix>bias` of `op`, BatchNorm folded in; a
        zero bias where `op` takes one and the chain has none."""
        conv = c.conv
        _, p = conv.operator()
        weights, bias = f"{prefix}weights", f"{prefix}bias"
        channels = self.shape(c.entry(conv.inputs[1]))[0]
        w = self.source(c.entry(conv.inputs[1]), f"{conv.label} weight")
        b = None if p.no_bias else self.source(c.entry(conv.inputs[2]), f"{conv.label} bias")
        if c.bn is None:
            args = {weights: self.constant(inputs, [w], lambda a: a, op, weights)}
            if b is not None:
                args[bias] = self.constant(inputs, [b], lambda a: a, op, bias)
            elif bias in op.descs:
                args[bias] = self.constant(inputs, [w], lambda a: np.zeros(channels, FLOAT32),
                                           op, bias, shape=(channels,))
            return args
        g_, be, m, v = (self.source(c.entry(e), f"{c.bn.label} parameters")
                        for e in c.bn.inputs[1:5])
        _, bp = c.bn.operator()
        args = {weights: self.constant(inputs, [w, g_, v],
                                       lambda a, gm, vr: fold_weight(bp, a, gm, vr), op, weights)}
        if b is None:
            args[bias] = self.constant(
                inputs, [g_, be, m, v],
                lambda gm, bt, mn, vr: fold_bias(bp, None, gm, bt, mn, vr), op, bias)
        else:
            args[bias] = self.constant(
                inputs, [b, g_, be, m, v],
                lambda bb, gm, bt, mn, vr: fold_bias(bp, bb, gm, bt, mn, vr), op, bias)
        return args

    def convolution(self, node, nid, ins, inputs):
        return self._conv_like(conv_chain(node, self.g), nid, inputs)

    fused_conv = convolution

    def fully_connected(self, node, nid, ins, inputs, act: Node | None = None,
                        entry=None):
        entry = entry or self.g.entry_id
        p = node.params
        x, lead = self.rows(entry(node.inputs[0]), p.flatten)
        op = onednn.inner_product(x.shape, p.num_hidden, bias=not p.no_bias,
                                  post_ops=self.eltwise_post(act), dtype=self.float_type(nid))
        args = {"src": self.plan.reorder(x, op.desc("src"))}
        for arg, k in (("weights", 1), ("bias", 2))[:1 if p.no_bias else 2]:
            sources, make = self.weight(entry(node.inputs[k]))   # an input, or folded
            args[arg] = self.constant(inputs, sources, make, op, arg)
        return self.unrows(self.plan.add(op, **args), lead, p.num_hidden)

    def rows(self, eid: int, flatten: bool) -> tuple[onednn.Slot, tuple[int, ...]]:
        """A fully connected layer's data (entry `eid`) as its inner product reads
        it, and the leading axes to give back (`unrows`): with flatten=False, over
        the last axis, the rows of all leading axes viewed as (rows, k), so that
        one inner product computes them all."""
        x = self.value(eid)
        if flatten or len(x.shape) == 2:
            return x, ()
        lead = tuple(x.shape[:-1])
        v = self.viewable(eid)
        return self.plan.view(v, onednn.MemoryDesc.plain((math.prod(lead), x.shape[-1]),
                                                         v.desc.dtype)), lead

    def unrows(self, y: onednn.Slot, lead: tuple[int, ...], num_hidden: int) -> onednn.Slot:
        """An inner product's (rows, num_hidden) output viewed back as
        (*lead, num_hidden) (no leading axes: as it is)."""
        if not lead:
            return y
        y = self.plan.reorder(y)   # plain, to be viewed
        return self.plan.view(y, onednn.MemoryDesc.plain((*lead, num_hidden), y.desc.dtype))

    def fused_fc(self, node, nid, ins, inputs):
        f = FusedChain(node, self.g)
        fc = f.first("FullyConnected")
        return self.fully_connected(fc, nid, ins, inputs, f.acts()[0],
                                    lambda e: f.entry[id(e.node)])

    def batch_norm(self, node, nid, ins, inputs):
        p = node.params
        x = self.data(ins[0], self.float_type(nid))
        op = onednn.batch_norm(x.desc, eps=p.eps)
        gamma, beta, mean, var = (self.source(e, node.label) for e in ins[1:5])
        return self.plan.add(
            op, src=x,
            mean=self.constant(inputs, [mean], lambda a: a),
            variance=self.constant(inputs, [var], lambda a: a),
            scale=self.constant(inputs, [gamma],
                                lambda a: np.ones_like(a) if p.fix_gamma else a),
            shift=self.constant(inputs, [beta], lambda a: a))

    def eltwise(self, node, nid, ins, inputs):
        x = self.data(ins[0], self.float_type(nid))
        alg = _eltwise(node)
        op = onednn.eltwise(x.desc, *alg)
        if alg.alg == "logistic" and op.impl.startswith("ref"):
            # oneDNN's reference logistic gives 0 for NaN (its vector kernels, which
            # a blocked layout padded past the channels does not get, keep it; see
            # `onednn.primitives._keeping_nan` for the post-ops).
            x = self.plan.reorder(x)
            op = onednn.eltwise(x.desc, *alg)
        return self.plan.add(op, src=x)

    def pooling(self, node, nid, ins, inputs):
        p = node.params
        x = self.data(ins[0], self.float_type(nid))
        # count_include_pad means nothing to max pooling.
        include = True if p.pool_type == "max" else pool_include_pad(p, x.shape[2:])
        if include is None:
            raise BackendError(f"DNNL lowering: {node.label}: oneDNN cannot average like "
                               "MXNet over these windows")
        op = onednn.pooling(x.desc, p.kernel or None, pool_type=p.pool_type,
                          stride=p.stride or None, pad=p.pad or None,
                          global_pool=p.global_pool, convention=p.pooling_convention,
                          count_include_pad=include)
        return self.plan.add(op, src=x)

    def softmax(self, node, nid, ins, inputs):
        p = node.params
        # In float32 always: probabilities rounded to bf16 would differ by 0.4%.
        x = self.data(ins[0], FLOAT32)
        op = onednn.softmax(x.desc, axis=p.axis, log=node.op == "log_softmax")
        if not p.use_length:
            return self.plan.add(op, src=x)
        # Outside its row's length an element gives 0 (ops/activation.py): it is pushed
        # to -FLT_MAX before the softmax (a row wholly outside stays finite) and zeroed
        # after. Both masks come from the length input, as the weight cache computes.
        shape, axis = x.shape, p.axis % len(x.shape)
        length = self.source(ins[1], f"{node.label} length")
        like = np.broadcast_to(np.False_, shape)   # the shape alone, nothing allocated
        keep = lambda n: length_mask(like, axis, n)  # noqa: E731
        lowest = np.finfo(np.float32).min
        bias = self.constant(inputs, [length], lambda n: np.where(keep(n), 0, lowest),
                             shape=shape)
        kept = self.constant(inputs, [length], lambda n: keep(n).astype(np.float32),
                             shape=shape)
        x = self.plan.reorder(x)
        masked = self.plan.add(onednn.binary(x.desc, bias.desc, "add"), src=x, src1=bias)
        out = self.plan.add(onednn.softmax(masked.desc, axis=axis), src=masked)
        return self.plan.add(onednn.binary(out.desc, kept.desc, "mul"), src=out, src1=kept)

    def softmax_output(self, node, nid, ins, inputs):
        # The config admits 2-d data: classes on axis 1 in every mode.
        x = self.data(ins[0], FLOAT32)
        return self.plan.add(onednn.softmax(x.desc, axis=1), src=x)

    def lrn(self, node, nid, ins, inputs):
        p = node.params
        x = self.data(ins[0], self.float_type(nid))
        return self.plan.add(onednn.lrn(x.desc, p.nsize, alpha=p.alpha, beta=p.beta,
                                      knorm=p.knorm), src=x)

    def concat(self, node, nid, ins, inputs):
        xs = [self.data(e, self.float_type(nid)) for e in ins]
        op = onednn.concat([x.desc for x in xs], axis=node.params.dim)
        return self.plan.add(op, **{f"src{i}": x for i, x in enumerate(xs)})

    def reshape(self, node, nid, ins, inputs):
        # A view of a plain copy; `Compiled.run` gives the outputs their shapes.
        x = self.viewable(ins[0])
        return self.plan.view(x, onednn.MemoryDesc.plain(self.shape(self.g.entry_ptr[nid]),
                                                         x.desc.dtype))

    def transpose(self, node, nid, ins, inputs):
        ndim = len(self.shape(ins[0]))
        if node.op == "SwapAxis":
            axes = list(range(ndim))
            a, b = swapped_axes(node.params, ndim)
            axes[a], axes[b] = b, a
        else:
            axes = [a % ndim for a in node.params.axes] or list(reversed(range(ndim)))
        return self.plan.reorder(self.permuted(ins[0], axes))

    def slice_axis(self, node, nid, ins, inputs):
        # The part read in place, then copied out plain.
        x = self.viewable(ins[0])
        axis, begin, _ = slice_axis_range(node.params, x.shape)
        offsets = [begin if a == axis else 0 for a in range(len(x.shape))]
        return self.plan.reorder(self.plan.part(x, self.shape(self.g.entry_ptr[nid]), offsets))

    def separable(self, node, nid, ins, inputs):
        # rows @ x @ cols.T per (n, c) map, as two matmuls over the maps: x @ cols.T,
        # then rows (broadcast over the maps) @ that.
        n, c, h, w = self.shape(ins[0])
        out_shape = self.shape(self.g.entry_ptr[nid])
        rows, cols = SEPARABLE_WEIGHTS[node.op](node.params, (n, c, h, w), out_shape)
        maps = self.plan.view(self.viewable(ins[0]), onednn.MemoryDesc.plain((n * c, h, w)))
        cols_t = self.plan.constant(np.ascontiguousarray(cols.T[None]))
        across = self.plan.add(onednn.matmul(maps.desc, cols_t.desc), src=maps, weights=cols_t)
        rows_c = self.plan.constant(np.ascontiguousarray(rows[None]))
        down = self.plan.add(onednn.matmul(rows_c.desc, across.desc), src=rows_c, weights=across)
        return self.plan.view(down, onednn.MemoryDesc.plain(out_shape))

    def selfatt_qk(self, node, nid, ins, inputs):
        # (B, heads, T, D) @ (B, heads, D, T), scaled by 1/sqrt(D) as the numpy kernel
        # scales the products; the (B * heads, T, T) output is a view.
        heads = node.params.heads
        q, k = (self.heads(ins[0], heads, i, 3) for i in (0, 1))
        k_t = self.plan.permute(k, (0, 1, 3, 2))
        scale = attention_scale(q.shape[-1], np.float32)
        scores = self.plan.add(onednn.matmul(q.desc, k_t.desc, post_ops=[
            onednn.PostOp.eltwise("linear", float(scale))]), src=q, weights=k_t)
        return self.plan.view(scores, onednn.MemoryDesc.plain(self.shape(self.g.entry_ptr[nid])))

    def selfatt_valatt(self, node, nid, ins, inputs):
        # (B, heads, T, T) @ (B, heads, T, D), written as (T, B, heads, D): the output.
        heads = node.params.heads
        v = self.heads(ins[0], heads, 2, 3)
        b, _, t, d = v.shape
        att = self.plan.view(self.viewable(ins[1]), onednn.MemoryDesc.plain((b, heads, t, t)))
        out = self.plan.add(onednn.matmul(att.desc, v.desc, dst_strides=(
            heads * d, d, b * heads * d, 1)), src=att, weights=v)
        return self.plan.view(out, onednn.MemoryDesc.plain(self.shape(self.g.entry_ptr[nid])))

    def stack(self, node, nid, ins, inputs):
        # Each input viewed with the new axis, then concatenated along it.
        axis = node.params.axis % (len(self.shape(ins[0])) + 1)
        parts = [self.plan.view(x, onednn.MemoryDesc.plain(
            (*x.shape[:axis], 1, *x.shape[axis:]), x.desc.dtype))
            for x in (self.viewable(e) for e in ins)]
        op = onednn.concat([x.desc for x in parts], axis=axis)
        return self.plan.add(op, **{f"src{i}": x for i, x in enumerate(parts)})

    def batch_dot(self, node, nid, ins, inputs):
        p = node.params
        a, b = (self.permuted(e, _last_two_swapped(len(self.shape(e)))) if t
                else self.plan.reorder(self.data(e, FLOAT32))
                for e, t in zip(ins, (p.transpose_a, p.transpose_b), strict=True))
        return self.plan.add(onednn.matmul(a.desc, b.desc), src=a, weights=b)

    def layer_norm(self, node, nid, ins, inputs):
        x = self.plan.reorder(self.data(ins[0], FLOAT32))
        gamma, beta = (self.source(e, node.label) for e in ins[1:3])
        return self.plan.add(onednn.layer_norm(x.desc, eps=node.params.eps), src=x,
                             scale=self.constant(inputs, [gamma], lambda a: a),
                             shift=self.constant(inputs, [beta], lambda a: a))

    def fill(self, node, nid, ins, inputs):
        # _zeros, _ones, _full: a constant of the shape inference gave.
        value = node.params.value if node.op == "_full" else float(node.op == "_ones")
        out = self.g.entry_ptr[nid]
        return self.plan.constant(np.full(self.shape(out), value, self.dtype(out)))

    def binary(self, node, nid, ins, inputs):
        # add_n folds its inputs left to right, as the numpy kernel adds them.
        alg = BINARY_ALGS[node.op]
        if alg in COMMUTATIVE and self.shape(ins[0]) != self.shape(self.g.entry_ptr[nid]):
            ins = ins[::-1]   # oneDNN broadcasts the second operand only
        dtype = self.float_type(nid)
        acc = self._binary_operand(ins[0], dtype)
        for e in ins[1:]:
            other = self._binary_operand(e, dtype)
            same = other.shape == acc.shape
            other = self.plan.reorder(other, acc.desc if same else None)
            acc = self.plan.add(onednn.binary(acc.desc, other.desc, alg), src=acc, src1=other)
        return acc

    def _binary_operand(self, eid: int, dtype: np.dtype) -> onednn.Slot:
        """Entry `eid` in `dtype` as a binary step reads it: plain where it holds
        bfloat16 channels in blocks of 4 (a grouped deconvolution's output), on
        which oneDNN 3.2's binary kernel (``jit:uni``, ``avx512_core_fp16``) gave
        wrong sums, in place and not."""
        x = self.data(eid, dtype)
        if x.desc.dtype == onednn.BFLOAT16 and x.desc.layout.endswith("4b"):
            return self.plan.reorder(x, onednn.MemoryDesc.plain(x.shape, dtype))
        return x


# The oneDNN primitives whose output image k reads input image k alone (what a
# step of the batch loop may be; run-time INT8 ranges, say, reduce the batch).
PER_IMAGE_STEPS = frozenset({"conv", "wino_conv", "dw8_conv", "pw8_conv", "first_conv", "pwdw_conv",
                             "deconv", "pooling", "eltwise", "batch_norm", "lrn", "binary",
                             "concat", "reorder", "resampling"})


class SplitRefused(BackendError):
    """The batch loop `batch_parts` chose cannot run this graph: lower it whole."""


def _last_two_swapped(ndim: int) -> list[int]:
    return [*range(ndim - 2), ndim - 1, ndim - 2]


COMMUTATIVE = frozenset({"add", "mul"})
# The oneDNN algorithm of each operator configs/dnnl.yaml lowers as `binary`.
BINARY_ALGS = {"elemwise_add": "add", "add_n": "add", "broadcast_add": "add",
               "elemwise_sub": "sub", "broadcast_sub": "sub",
               "elemwise_mul": "mul", "broadcast_mul": "mul",
               "elemwise_div": "div", "broadcast_div": "div"}

# How each kind of node is lowered. The operators are listed once, in
# configs/dnnl.yaml (`lower:`), the fused ones in `patterns.PATTERNS`.
LOWERINGS = {
    "conv": Lowering.convolution, "fused_conv": Lowering.fused_conv,
    "fully_connected": Lowering.fully_connected, "fused_fc": Lowering.fused_fc,
    "batch_norm": Lowering.batch_norm, "pooling": Lowering.pooling,
    "softmax": Lowering.softmax, "softmax_output": Lowering.softmax_output,
    "lrn": Lowering.lrn, "concat": Lowering.concat,
    "binary": Lowering.binary, "eltwise": Lowering.eltwise, "reshape": Lowering.reshape,
    "transpose": Lowering.transpose, "batch_dot": Lowering.batch_dot,
    "slice_axis": Lowering.slice_axis, "separable": Lowering.separable,
    "selfatt_qk": Lowering.selfatt_qk, "selfatt_valatt": Lowering.selfatt_valatt,
    "stack": Lowering.stack,
    "layer_norm": Lowering.layer_norm, "fill": Lowering.fill,
    "quantize": quantize, "quantize_asym": quantize_asym, "dequantize": dequantize,
    "quantized_conv": quantized_conv,
    "quantized_fc": quantized_fc, "quantized_add": quantized_add,
    "quantized_concat": quantized_concat, "quantized_batch_norm": quantized_batch_norm,
    "requantize": requantize,
    "rnn": rnn,
}


def check_config(support: Support) -> None:
    """Raise BackendError unless every operator `support` accepts and every
    fused operator has a lowering, every lowering serves one, and the eltwise
    table matches the config (run at import, for the packaged config)."""
    wanted = {rule["lower"] for rule in support.ops.values()} | set(FUSED_LOWERING.values())
    wanted.discard("identity")   # keeps its producer's slot
    wanted.discard("cast")       # made where it is read
    wanted = {"reshape" if kind == "view" else kind for kind in wanted}
    if wanted != set(LOWERINGS):
        raise BackendError(f"DNNL config: lowerings {sorted(wanted - set(LOWERINGS))} are "
                           f"missing, {sorted(set(LOWERINGS) - wanted)} serve no operator")
    if set(support.lowered_as("binary")) != set(BINARY_ALGS):
        raise BackendError(f"DNNL config: binary operators {sorted(support.lowered_as('binary'))} "
                           f"differ from lower.BINARY_ALGS {sorted(BINARY_ALGS)}")
    heads = {p.head for p in PATTERNS} - set(support.ops)
    if heads:
        raise BackendError(f"DNNL config: fusion heads {sorted(heads)} are not in it")
    check_eltwise_config(support)


check_config(default_support())
