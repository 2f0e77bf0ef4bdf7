"""The per-node state of a `_sg_dnnl` node: its compiled plan, or the numpy path.

Needs: the node's parsed params (holding the inner graph). Guarantees:
`forward` returns the inner graph's outputs, computed in the node's `dtype`
(float32, or bfloat16: see `lower`). Inference on float32 inputs
runs one compiled `dnnl.Plan`, compiled when the state is made (at bind, for
the bound shapes, so that what oneDNN refuses is raised by bind) and again
whenever the input shapes differ from the last compile, all on the one
oneDNN thread (see `thread`); a training forward (BatchNorm would use batch
statistics) or inputs of other dtypes than the bound ones (float32, or the
int8/uint8 of a quantized graph) run the inner graph with the numpy kernels,
as `_subgraph_op` does (a training forward the graph as it was before stride
hoisting, which is exact for inference only). `prepare_inference` binds the plan to an executor's
arrays once, so that its inference forwards are one C job each.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property

import numpy as np

from ... import onednn
from ...graph import Graph
from ...graph.infer import infer_dtypes, infer_shapes
from ...graph.plan_memory import MemoryPlan
from ...interpreter.runner import GraphRunner
from ...ops.params import Params
from ...ops.registry import OpContext
from ...subgraph import subgraph_op
from .batch_parts import BATCH_PARTS
from .lower import Compiled, Lowering, SplitRefused
from .strides import unhoisted
from .thread import on_onednn_thread, run_bound
from .weights import StaleConstant
from .winograd import WINOGRAD

# What a plan takes: float32 and bfloat16, int8/uint8 (quantized data and weights),
# int32 (what a quantized operator outside gives a requantize inside; softmax
# lengths), int64 (softmax lengths, which only the weight cache reads).
PLAN_DTYPES = frozenset(np.dtype(t) for t in (np.float32, onednn.BFLOAT16, np.int8, np.uint8,
                                              np.int32, np.int64))


class DnnlState:
    """Made once per node by the executor (`create_state`), when it binds."""

    def __init__(self, p: Params, in_shapes: Sequence, in_dtypes: Sequence) -> None:
        self.params = p
        self.graph = subgraph_op.inner_graph(p)
        self.compiled: Compiled | None = None
        self._numpy: dict[tuple, GraphRunner] = {}
        # The inner entries' sizes are checked before oneDNN allocates them.
        shapes, dtypes = subgraph_op.check_inner_sizes(p, in_shapes, in_dtypes)
        if all(t is not None and np.dtype(t) in PLAN_DTYPES for t in in_dtypes):
            # The weights are set after bind: the first run computes the constants
            # (and compiles, if the plan needs the values of range inputs).
            self.compiled = on_onednn_thread(self._compile, in_shapes, in_dtypes, None, None,
                                             shapes, dtypes)

    def forward(self, ctx: OpContext, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        c = self.compiled
        # The usual case first: the bound shapes and dtypes, checked once.
        fitted = c if c is not None and c.fits(inputs) else None
        if ctx.is_train:
            return self._training_runner(inputs).forward(list(inputs), True)
        if fitted is None and any(a.dtype not in PLAN_DTYPES for a in inputs):
            return self._numpy_runner(inputs).forward(list(inputs), False)
        # One version per input when the executor tracks them (see weights.py).
        return on_onednn_thread(self._infer, inputs, ctx.input_versions, ctx.outputs, fitted)

    def prepare_inference(self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray],
                          watch: Callable[[Sequence[int]], Callable[[], tuple]]
                          ) -> Callable[[], bool] | None:
        """The inference run on exactly these arrays, prepared once (see
        `ops.registry`): each call runs the plan as a C job on the oneDNN thread
        and says True, or runs nothing and says False when the weight cache must
        first be refreshed (a weight moved: `forward` does that). None when the
        plan cannot take the arrays as they are (or has range inputs, whose
        values it was compiled for)."""
        c = self.compiled
        if c is None or c.ranges or not c.fits(inputs) or not c.takes(outputs) \
                or not all(inputs[i].flags.c_contiguous for i in c.data_inputs):
            return None
        bound = c.plan.bind([inputs[i] for i in c.data_inputs],
                            [o.reshape(b.shape) for o, b in zip(outputs, c.out_buffers,
                                                                strict=True)])
        versions, arrays = watch(c.sources), [inputs[i] for i in c.sources]

        def run() -> bool:
            return self.compiled is c and c.unchanged(versions(), arrays) and run_bound(bound)
        return run

    def _infer(self, inputs: Sequence[np.ndarray], versions: Sequence[int | None] | None,
               outputs: Sequence[np.ndarray] | None, fitted: Compiled | None
               ) -> list[np.ndarray]:
        """Run the plan (`fitted`: the one `forward` found fitting the inputs)."""
        c = self.compiled
        if c is None or c is not fitted and not c.fits(inputs):
            self.compiled = c = None  # frees the old plan's buffers before the new one's
            self.compiled = c = self._compile([a.shape for a in inputs],
                                              [a.dtype for a in inputs], inputs, versions)
        assert c is not None  # compiled with the inputs
        try:
            return c.run(inputs, versions, outputs)
        except StaleConstant:   # a weight moved that the primitives were made for
            self.compiled = c = None
            self.compiled = c = self._compile([a.shape for a in inputs],
                                              [a.dtype for a in inputs], inputs, versions)
            assert c is not None
            return c.run(inputs, versions, outputs)

    def _compile(self, in_shapes: Sequence, in_dtypes: Sequence,
                 inputs: Sequence[np.ndarray] | None, versions: Sequence[int | None] | None,
                 shapes: Sequence | None = None, dtypes: Sequence | None = None
                 ) -> Compiled | None:
        """The plan for `in_shapes` and `in_dtypes`, its constants computed from
        `inputs` (None: by the first run); `shapes` and `dtypes`, every inner
        entry's, when known. None when it needs the values of range inputs (or of
        weights: `COMPILED_FOR_WEIGHTS`) and `inputs` is None."""
        if dtypes is None:
            dtypes = subgraph_op.inner_values(self.params, infer_dtypes, in_dtypes)
        lowering = Lowering(self.graph, in_shapes, self.name, shapes, dtypes,
                            np.dtype(self.params.dtype))
        if inputs is None and lowering.needs_values:
            return None
        try:
            return lowering.compile(inputs, versions)
        except SplitRefused:   # the batch whole, then
            return Lowering(self.graph, in_shapes, self.name, shapes, dtypes,
                            np.dtype(self.params.dtype), split_batch=False
                            ).compile(inputs, versions)

    @property
    def name(self) -> str:
        return f"_sg_dnnl {len(self.graph.nodes)} nodes"

    @property
    def memory_plan(self) -> MemoryPlan | None:
        """Where the compiled plan's temporaries live (None until one is compiled)."""
        return None if self.compiled is None else self.compiled.memory

    @property
    def kernels(self) -> dict[str, list[str]] | None:
        """How the compiled plan runs its operators, for the partition summary:
        the convolutions it runs as Winograd (always listed), those it runs with
        minimx's kernels and the operators it runs once per part of the batch,
        if any (None until a plan is compiled)."""
        c = self.compiled
        if c is None:
            return None
        found = {WINOGRAD: list(c.kernels[WINOGRAD])}
        found.update((label, list(names)) for label, names in c.kernels.items() if names)
        if c.per_part:
            found[BATCH_PARTS] = list(c.per_part)
        return found

    @cached_property
    def training_graph(self) -> Graph:
        """The inner graph as it was before stride hoisting: what training runs."""
        return unhoisted(self.graph)

    def _training_runner(self, inputs: Sequence[np.ndarray]) -> GraphRunner:
        """The numpy runner of the graph before stride hoisting (the runner of the
        graph itself when nothing was hoisted)."""
        g = self.training_graph
        if g is self.graph:
            return self._numpy_runner(inputs)
        key = ("train", *((a.shape, a.dtype) for a in inputs))
        if key not in self._numpy:
            self._numpy[key] = _runner(g, inputs)
        return self._numpy[key]

    def _numpy_runner(self, inputs: Sequence[np.ndarray]) -> GraphRunner:
        key = tuple((a.shape, a.dtype) for a in inputs)
        if key not in self._numpy:
            self._numpy[key] = subgraph_op.create_runner(
                self.params, [a.shape for a in inputs], [a.dtype for a in inputs])
        return self._numpy[key]


def _runner(g: Graph, inputs: Sequence[np.ndarray]) -> GraphRunner:
    """A numpy runner of `g` for these inputs."""
    entries = [g.entry_ptr[nid] for nid in g.input_ids]
    return subgraph_op.graph_runner(
        g, infer_shapes(g, {e: a.shape for e, a in zip(entries, inputs, strict=True)}),
        infer_dtypes(g, {e: a.dtype for e, a in zip(entries, inputs, strict=True)}))
