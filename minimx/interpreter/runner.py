"""GraphRunner: runs a Graph, forward and backward, synchronously on numpy arrays.

The executor pushes a runner's `forward` and `backward` to the engine; a
`_subgraph_op` node runs its inner graph with a runner of its own. A runner
knows the graph's shapes and dtypes, makes one state per stateful node when
it is made (so that what an operator refuses for these shapes, a oneDNN plan
say, is raised by bind), and keeps up to two `Program`s, each planned and
allocated once: inference (forward only, maximal reuse) and, when some
grad_req is not ``null``, training (forward and backward planned together, so
the entries backward reads survive forward). ``forward(is_train=True)`` of a
runner with gradients runs the training program; every other forward the
inference one. `prepare` makes one now (the executor's, at bind); otherwise
each is made by its first run.

Kernels return new arrays (or views); the runner copies each result into its
entry's planned buffer, so memory is reused across runs at the price of one
copy per output. A stateful operator (a compiled subgraph) is given those
buffers (`OpContext.outputs`) and may compute into them: then nothing is copied.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..base import MinimxError, as_shape, check_array_size
from ..graph import Graph
from ..graph.gradient import BackwardNode, GradSum
from ..ops.registry import GENERATOR, OpContext
from .program import Program

Monitor = Callable[[str, np.ndarray], None]
Step = tuple[str, str, Callable[[], object], list[int], list[int]]


def backward_step(graph: Graph, step: BackwardNode, env: Sequence[Any],
                  zeros: Callable[[int], np.ndarray], state: Any, ctx: OpContext) -> list:
    """The gradients node ``step.node``'s backward kernel gives, one per input (None
    where it gives none), from the entries' values in `env`; ``zeros(e)`` stands for
    the gradient of an output `e` that nothing reached."""
    node = graph.nodes[step.node]
    opdef, params = node.operator()
    assert opdef.backward is not None  # build_backward refuses operators without one
    outs = graph.output_entry_ids(step.node)
    ograds = [zeros(e) if o is None else env[o]
              for e, o in zip(outs, step.out_grads, strict=True)]
    # What backward does not declare it reads may already hold other entries.
    ins, outputs = opdef.backward_view(
        params, [env[e] for e in graph.input_entry_ids(step.node)], [env[e] for e in outs],
        node.label)
    results = list(opdef.backward(state, ctx, ins, outputs, ograds))
    if len(results) != len(step.in_grads):
        raise MinimxError(f"{node.label}: backward returned {len(results)} gradients "
                          f"for {len(step.in_grads)} inputs")
    return results


class GraphRunner:
    """Evaluates `graph` given arrays for its input variables (in `input_ids` order).

    `grad_reqs` has one entry per input variable; ``share_memory=False``
    turns memory planning off (for tests and debugging). Every entry's shape
    is checked here, before anything is allocated: an entry too big for
    memory is a ShapeError naming the node that makes it (`check_sizes`).
    The operator states are made first, so that a subgraph operator's runner
    checks its own entries first and the message names the innermost node.
    """

    def __init__(self, graph: Graph, shapes: Sequence, dtypes: Sequence,
                 grad_reqs: Sequence[str] | None = None, share_memory: bool = True) -> None:
        self.graph = graph
        self.share_memory = share_memory
        self.shapes = list(shapes)
        self.dtypes = list(dtypes)
        # One state per stateful node: the others' kernels get their params.
        self._states: dict[int, Any] = {
            nid: self._make_state(nid, create) for nid, node in enumerate(graph.nodes)
            if node.opdef is not None and (create := node.opdef.create_state) is not None}
        # Params completed from the inferred shapes, for the operators that ask.
        self._resolved: dict[int, Any] = {
            nid: resolve(node.params, [self.shapes[e] for e in graph.output_entry_ids(nid)])
            for nid, node in enumerate(graph.nodes)
            if node.opdef is not None and node.params is not None
            and (resolve := node.opdef.resolve) is not None}
        check_sizes(graph, self.shapes, self.dtypes)
        self.grad_reqs = list(grad_reqs or ["null"] * len(graph.input_ids))
        self.differentiable = any(r != "null" for r in self.grad_reqs)
        self._programs: dict[bool, Program] = {}
        self._last: tuple[Program, list[np.ndarray]] | None = None  # program, inputs
        # Of a differentiable runner's inference forwards: the generator's state before
        # each operator that draws (Dropout(mode='always'), random operators), so that a
        # backward re-running the forward for training draws the same values (MXNet's
        # backward uses the last forward's mask); _replay is set during that re-run.
        self._draws: dict[int, Mapping[str, Any]] = {}
        self._replay = False
        self.monitor: Monitor | None = None
        self.monitor_all = False
        # Shows the monitor the backward as MXNet's graph (executor.backward_monitor).
        self.backward_monitor: Any = None
        # Set by an executor: the engine versions of the graph inputs, read when a
        # stateful node runs.
        self.input_versions: Callable[[], Sequence[int]] | None = None
        self._positions: list[list[int | None]] | None = None
        # Each operator node's input and output entries, looked up once.
        self._io = [(nid, graph.input_entry_ids(nid), graph.output_entry_ids(nid))
                    for nid, node in enumerate(graph.nodes) if not node.is_variable]
        self._input_slots = [graph.entry_ptr[nid] for nid in graph.input_ids]
        self._head_entries = graph.head_entry_ids()

    def program(self, train: bool) -> Program:
        """The training (``train`` and differentiable) or inference program, made once."""
        train = train and self.differentiable
        if train not in self._programs:
            self._programs[train] = Program(self.graph, self.shapes, self.dtypes,
                                            self.grad_reqs if train else None,
                                            self.share_memory)
        return self._programs[train]

    def prepare(self, train: bool) -> None:
        """Make the program a bind for `train` runs, now rather than at its first
        run: an inference program with its buffers; a training one planned, its
        buffers allocated by the first training run (a bind with gradients may
        only ever run inference forwards, which have a program of their own)."""
        prog = self.program(train)
        if prog.backward is None:
            prog.env  # noqa: B018  (reading it allocates the buffers)

    # -- forward -----------------------------------------------------------------
    def forward(self, inputs: Sequence[np.ndarray], is_train: bool = False,
                outputs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """The graph's outputs; written into `outputs` when given."""
        return self._forward(self.program(is_train), list(inputs), is_train, outputs)

    def _forward(self, prog: Program, inputs: list[np.ndarray], is_train: bool,
                 outputs: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        self._bind(prog, inputs, outputs)
        ctx = OpContext(is_train=is_train)
        for nid, ins, outs in self._io:
            self._run_node(prog, nid, ins, outs, ctx)
        return self._finish(prog, inputs, outputs)

    def prepared_inference(self, inputs: Sequence[np.ndarray],
                           outputs: Sequence[np.ndarray]) -> Callable[[], bool] | None:
        """The inference forward on exactly these arrays as one prepared call, when
        the graph is one stateful node that offers one (`prepare_inference`, see
        `ops.registry`), reads only graph inputs and writes exactly the heads:
        each call runs the forward and says True, or runs nothing and says False
        (then `forward` runs it). None for any other graph, or a runner that
        trains or is not told the input versions; a monitor installed later
        makes the calls say False."""
        get = self.input_versions
        if self.differentiable or get is None or len(self._io) != 1:
            return None
        ((nid, ins, outs),) = self._io
        prepare = getattr(self._states.get(nid), "prepare_inference", None)
        slot = {e: k for k, e in enumerate(self._input_slots)}
        if prepare is None or outs != self._head_entries or not all(e in slot for e in ins):
            return None

        def watch(indices: Sequence[int]) -> Callable[[], tuple]:
            # itemgetter picks in C: a forward reads the versions of hundreds of weights.
            positions = [slot[ins[i]] for i in indices]
            if len(positions) < 2:
                return lambda: tuple(get()[k] for k in positions)
            pick = operator.itemgetter(*positions)
            return lambda: pick(get())

        run = prepare([inputs[slot[e]] for e in ins], list(outputs), watch)
        if run is None:
            return None
        return lambda: self.monitor is None and run()

    def forward_steps(self, inputs: Sequence[np.ndarray], is_train: bool,
                      outputs: Sequence[np.ndarray]
                      ) -> tuple[Program, list[Step], Callable[[], object]]:
        """The forward as one step per node, for the engine to run by dependency:
        each step is (name, operator, run, entries read, entries written; auxiliary
        states count as written only in training, when BatchNorm updates
        them). The returned `finish` then reads the heads and completes
        `outputs`."""
        prog = self.program(is_train)
        inputs = list(inputs)
        self._bind(prog, inputs, outputs)
        ctx = OpContext(is_train=is_train)
        g = self.graph
        steps: list[Step] = []
        for nid, ins, outs in self._io:
            node = g.nodes[nid]
            steps.append((node.name, node.op or "",
                          functools.partial(self._run_node, prog, nid, ins, outs, ctx), ins,
                          outs + ([ins[i] for i in node.aux_indices()] if is_train else [])))
        return prog, steps, functools.partial(self._finish, prog, inputs, outputs)

    def _bind(self, prog: Program, inputs: list[np.ndarray],
              outputs: Sequence[np.ndarray] | None) -> None:
        env = prog.env
        for slot, data in zip(self._input_slots, inputs, strict=True):
            env[slot] = data
        bound = set(self._input_slots)
        for i, e in enumerate(self._head_entries):
            # An operator's head is computed straight into the caller's array; a
            # variable or repeated head is copied there at the end.
            if e not in bound:
                bound.add(e)
                env[e] = outputs[i] if outputs is not None else prog.owned(e)

    def _run_node(self, prog: Program, nid: int, ins: list[int], outs: list[int],
                  ctx: OpContext) -> None:
        env, node = prog.env, self.graph.nodes[nid]
        monitor = self.monitor
        if monitor is not None and self.monitor_all:
            self._report_inputs(monitor, nid, env)
        opdef, _ = node.operator()
        if opdef.draws and self.differentiable:
            if self._replay:
                ctx = replace(ctx, rng=_generator_at(self._draws[nid]))
            elif prog.backward is None:
                self._draws[nid] = ctx.rng.bit_generator.state
        if nid in self._states:
            ctx = OpContext(ctx.is_train, ctx.rng, self._versions(nid),
                            [_bound(env, e) for e in outs])
        try:
            results = opdef.forward(self._state(nid), ctx, [env[e] for e in ins])
        except MinimxError as exc:
            raise _naming(exc, node.label) from exc
        _store(env, outs, _as_list(results), (), node.label)
        if monitor is not None:
            self._report(monitor, nid, env)

    def _finish(self, prog: Program, inputs: list[np.ndarray],
                outputs: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        self._last = (prog, inputs)
        result = [_bound(prog.env, e) for e in self.graph.head_entry_ids()]
        if outputs is not None:
            for dst, src in zip(outputs, result, strict=True):
                if dst is not src:
                    np.copyto(dst, src, casting="unsafe")
        return result

    # -- backward ------------------------------------------------------------------
    def head_grad_needed(self) -> list[bool]:
        """For each output: whether backward reads its gradient (False after a loss layer)."""
        return self.program(True).head_grad_needed

    def backward(self, head_grads: Sequence[np.ndarray | None],
                 grads: Sequence[np.ndarray | None] | None = None, is_train: bool = True,
                 inputs: Sequence[np.ndarray] | None = None) -> list[np.ndarray | None]:
        """Gradients of the inputs (None where grad_req is null), given one gradient
        per output (None where `head_grad_needed` says it is not read).

        `grads` are the arrays to write (or add) them into, one per input (None:
        the runner's own). Backward uses the values of the last forward; if that
        did not run the training program, the forward runs again on it (with
        `inputs`, default the last forward's) first.
        """
        if not self.differentiable:
            return [None] * len(self.graph.input_ids)
        prog = self.program(True)
        bwd, env, g = prog.backward, prog.env, self.graph
        assert bwd is not None  # a differentiable runner's training program has one
        if self._last is None or self._last[0] is not prog:
            if inputs is None:
                if self._last is None:
                    raise MinimxError("backward: run forward first")
                inputs = self._last[1]
            # Heads go to the program's own buffers: the caller's outputs keep the
            # values of its own forward, whose draws are drawn again.
            self._replay = True
            try:
                self._forward(prog, list(inputs), False, None)
            finally:
                self._replay = False
        for i, (h, needed) in enumerate(zip(bwd.head_grads, prog.head_grad_needed,
                                            strict=True)):
            if needed:
                if head_grads[i] is None:
                    raise MinimxError(f"backward: output {i} "
                                      f"({g.outputs[i].node.entry_name(g.outputs[i].index)}) "
                                      "needs a head gradient")
                env[h] = head_grads[i]
        for k, nid in enumerate(g.input_ids):
            if nid in bwd.arg_grads:
                e = bwd.arg_grads[nid]
                given = grads[k] if grads is not None else None
                env[e] = given if given is not None else prog.owned(e)
        ctx = OpContext(is_train=is_train)
        watch = self.backward_monitor if self.monitor is not None else None
        for k, step in enumerate(bwd.nodes):
            if isinstance(step, BackwardNode):
                self._backward_node(prog, bwd.add_to, step, ctx)
            elif isinstance(step, GradSum):
                a, *b = (_bound(env, e) for e in step.inputs)
                if step.out in bwd.add_to or not b:
                    _store(env, [step.out], [a + b[0] if b else a], bwd.add_to, "_grad_sum")
                else:
                    np.add(a, b[0], out=_bound(env, step.out), casting="unsafe")
            elif step.out not in bwd.add_to:
                _bound(env, step.out)[...] = 0
            if watch is not None:
                watch.after(k, env)
        if watch is not None:
            watch.report(env, self.monitor, self.monitor_all)
        return [env[bwd.arg_grads[nid]] if nid in bwd.arg_grads else None
                for nid in g.input_ids]

    def _backward_node(self, prog: Program, add_to: set[int], step: BackwardNode,
                       ctx: OpContext) -> None:
        node = self.graph.nodes[step.node]
        results = backward_step(self.graph, step, prog.env, prog.zeros,
                                self._state(step.node), ctx)
        targets = [(e, r) for e, r in zip(step.in_grads, results, strict=True) if e is not None]
        _store(prog.env, [e for e, _ in targets], [r for _, r in targets], add_to,
               f"_backward_{node.op} {node.name}")

    def _versions(self, nid: int) -> list[int | None] | None:
        """The engine version of each input of node `nid` that is a graph input
        (None for the others), when the executor tells them."""
        if self.input_versions is None:
            return None
        versions = self.input_versions()
        return [None if k is None else versions[k] for k in self._input_positions(nid)]

    def _input_positions(self, nid: int) -> list[int | None]:
        """For each input of node `nid`: the index of the graph input it is, or None."""
        if self._positions is None:
            g = self.graph
            index = {g.entry_ptr[n]: k for k, n in enumerate(g.input_ids)}
            self._positions = [[index.get(e) for e in g.input_entry_ids(n)]
                               for n in range(len(g.nodes))]
        return self._positions[nid]

    # -- states and monitoring -----------------------------------------------------
    def _make_state(self, nid: int, create: Callable[..., Any]) -> Any:
        """The operator state of node `nid` (`create` is its operator's
        create_state), made for its input shapes and dtypes."""
        in_ids = self.graph.input_entry_ids(nid)
        return create(self.graph.nodes[nid].params, [self.shapes[e] for e in in_ids],
                      [self.dtypes[e] for e in in_ids])

    def _state(self, nid: int) -> Any:
        """What the node's kernels get: its operator state, or its params."""
        if nid in self._states:
            return self._states[nid]
        return self._resolved.get(nid) or self.graph.nodes[nid].params

    def operator_states(self) -> dict[int, Any]:
        """The operator state of each stateful node, by node id."""
        return dict(self._states)

    def _report_inputs(self, monitor: Monitor, nid: int, env: list) -> None:
        """MXNet's names (ExecuteMonInputCallback): a variable input under its own
        name, then every input as ``<node>_<input name>`` - ``<node>_input<k>`` for
        an operator MXNet gives no input names."""
        g, node = self.graph, self.graph.nodes[nid]
        opdef, _ = node.operator()
        names = node.input_names() if opdef.named_inputs else \
            [f"input{k}" for k in range(len(node.inputs))]
        for name, entry, eid in zip(names, node.inputs, g.input_entry_ids(nid), strict=True):
            if entry.node.is_variable:
                monitor(entry.node.name, env[eid])
            monitor(f"{node.name}_{name}", env[eid])

    def _report(self, monitor: Monitor, nid: int, env: list) -> None:
        """Every output, hidden ones too (BatchNorm's mean and var), as MXNet's
        ExecuteMonOutputCallback."""
        node = self.graph.nodes[nid]
        for k, eid in enumerate(self.graph.output_entry_ids(nid)):
            monitor(node.entry_name(k), env[eid])


def check_sizes(graph: Graph, shapes: Sequence, dtypes: Sequence) -> None:
    """ShapeError for an entry of `graph` that cannot fit in memory, naming the node
    that makes it. Gradients have their entries' shapes, so this covers every
    buffer a runner allocates."""
    for nid, node in enumerate(graph.nodes):
        for k, eid in enumerate(graph.output_entry_ids(nid)):
            what = f"{node.label} output {node.entry_name(k)}"
            check_array_size(as_shape(shapes[eid], what), dtypes[eid], what)


def _bound(env: list[np.ndarray | None], eid: int) -> np.ndarray:
    """Entry `eid`'s array: a planned buffer, or the one `_bind` gave an external entry."""
    array = env[eid]
    if array is None:
        raise MinimxError(f"entry {eid} is external and was given no array")
    return array


def _as_list(results: Any) -> list[np.ndarray]:
    return [results] if isinstance(results, np.ndarray) else list(results)


def _naming(exc: MinimxError, label: str) -> MinimxError:
    """`exc` as its own class again, its message led by `label`, the node whose
    kernel raised it (a kernel does not know its node), where it does not name
    the node already or its class takes more than a message."""
    if label in str(exc) or len(exc.args) != 1:
        return exc
    try:
        return type(exc)(f"{label}: {exc}")
    except TypeError:
        return exc


def _store(env: list, eids: Sequence[int], results: list, add_to: set[int] | tuple,
           label: str) -> None:
    """Copy (or, for `add_to` entries, add) each result into its entry's buffer.

    A None result is zero: a gradient the operator does not define (a label's,
    say), as in MXNet.
    """
    if len(results) != len(eids):
        raise MinimxError(f"{label}: {len(results)} results for {len(eids)} outputs")
    for k, (eid, value) in enumerate(zip(eids, results, strict=True)):
        dst = env[eid]
        if value is None:
            if eid not in add_to:
                dst[...] = 0
            continue
        if value is dst and eid not in add_to:
            continue   # computed in place (see OpContext.outputs)
        if np.shape(value) != dst.shape:
            raise MinimxError(f"{label}: result {k} has shape {np.shape(value)}, "
                              f"expected {dst.shape}")
        # In-place sharing may make this buffer the memory a later result views:
        # keep such a result before it is overwritten.
        for j in range(k + 1, len(results)):
            if isinstance(results[j], np.ndarray) and np.may_share_memory(results[j], dst):
                results[j] = results[j].copy()
        if eid in add_to:
            np.add(dst, value, out=dst, casting="unsafe")
        else:
            np.copyto(dst, value, casting="unsafe")


def _generator_at(state: Mapping[str, Any]) -> np.random.Generator:
    """A generator of the kind GENERATOR holds, at `state`."""
    rng = np.random.Generator(type(GENERATOR.rng.bit_generator)())
    rng.bit_generator.state = state
    return rng
