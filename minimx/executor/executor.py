"""The Executor: a bound graph and the arrays it runs on.

`bind` / `simple_bind` (in `binding`) prepare the graph in the order DESIGN.md gives:
attribute inference, partitioning with the backends named by
MINIMX_SUBGRAPH_BACKEND (each graph a backend makes is inferred once), then
arrays for every argument, auxiliary state and output. The runner makes the
operator states (compiling DNNL plans) and the program the bind runs:
inference binds get their memory plan and buffers, training binds their
gradient pass and memory plan (see `runner`), so that what these refuse is
raised by bind, naming the node. `forward` pushes the whole graph to the engine as one
operation that reads the arguments and writes the outputs and auxiliary
states; `backward` pushes one that reads arguments, auxiliary states, outputs
and head gradients and writes the gradient arrays. Both return without
waiting. The runner's buffers need no variable of their own: every forward
writes the outputs, which every backward reads, and backwards write the same
gradient arrays, so the engine already runs them one at a time.

Values the caller passes (`forward(data=...)`, `copy_params_from`) must have
the shape of the array they go to (nothing is broadcast) and be numbers; a
numpy array or a list is copied at the call, since the caller may refill its
buffer before the engine runs the write.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from operator import is_
from typing import Any

import numpy as np

from .. import engine, profiler
from ..base import (
    ArgumentError,
    DTypeError,
    MinimxError,
    ShapeError,
    as_shape,
    check_array_size,
    is_numeric,
    settings,
)
from ..context import Context, as_context
from ..graph import Graph
from ..graph.infer import infer_dtypes, infer_shapes
from ..interpreter.runner import GraphRunner
from ..ndarray import NDArray, empty, zeros
from ..ops.infer import known
from ..subgraph import BindBackends, PartitionReport, bind_backends, partition_for_bind
from ..symbol import Symbol
from .backward_monitor import BackwardMonitor


def _numbers(value: Any, what: str) -> np.ndarray:
    """`value` (a numpy array, nested lists, a scalar) as a numpy array, not copied
    where it is one; DTypeError if it is not numbers."""
    try:
        data = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise DTypeError(f"{what}: cannot make an array of the {type(value).__name__} "
                         f"given: {exc}") from None
    if not is_numeric(data.dtype):
        raise DTypeError(f"{what} must be numbers, got {type(value).__name__} of "
                         f"{data.dtype}: {value!r:.60}")
    return data


def _own_copy(value: Any, dtype: np.dtype, what: str) -> NDArray:
    """`value` (see `_numbers`) as a new array of `dtype`, copied now."""
    return NDArray(np.array(_numbers(value, what), dtype=dtype))


def _copy_in(target: NDArray, value: Any, where: str, what: str) -> None:
    """Copy `value` into `target` (after pending work on it), refusing any other
    shape: `what` (``Argument data``) names the target in the messages. With
    nothing pending anywhere the copy runs now, straight from `value`, as no
    engine operation (`engine.run_if_idle`: at batch 1 a MobileNet forward with
    its input costs 30-50 us less than with a copy of it pushed).
    Otherwise `value` is copied now and that copy pushed, on the calling thread
    when nothing is pending on either array (a hop to a worker cost a MobileNet
    v2 forward at batch 1 31 us)."""
    data = value._data if isinstance(value, NDArray) else _numbers(value, f"{where}: {what}")
    if data.shape != target.shape:
        # MXNet's words.
        raise ShapeError(f"{where}: Shape not match! {what}, need: {target.shape}, "
                         f"received: {data.shape}")
    dst = target._data

    def copy() -> bool:
        np.copyto(dst, data, casting="unsafe")
        return True

    if engine.run_if_idle(copy, (target._var,)):
        return
    source = value if isinstance(value, NDArray) else NDArray(np.array(data, dtype=dst.dtype))
    source._copy_into(target, here_if_ready=True)


def _resized(arr: NDArray, shape: tuple[int, ...], allow_up_sizing: bool, what: str) -> NDArray:
    """`arr` itself, a view of its first values in `shape` (sharing memory and engine
    variable, as MXNet's smaller reshape), or, growing, a new zero array."""
    if shape == arr.shape:
        return arr
    if math.prod(shape) > arr.size:
        if not allow_up_sizing:
            raise ShapeError(f"{what} grows from {arr.shape} to {shape}; "
                             "pass allow_up_sizing=True")
        check_array_size(shape, arr.dtype, what)
        return zeros(shape, arr.context, arr.dtype)
    # Arrays from bind may be strided slices: those are copied (by the engine) first.
    base = arr if arr._data.flags.c_contiguous else arr.copy()
    return NDArray(base._data.reshape(-1)[:math.prod(shape)].reshape(shape), base._var,
                   base.context)


class Executor:
    """Runs a bound symbol; see `Symbol.bind` and `Symbol.simple_bind`.

    `graph` is `symbol`'s indexed graph when the caller has made it, and
    `inferred` the shapes and dtypes of its entries for these arrays (inferred
    here when not given). The outputs (and the arrays the monitor callback is
    given) are on `ctx` (None: the current context).
    """

    def __init__(self, symbol: Symbol, args: dict[str, NDArray], grads: dict[str, NDArray],
                 grad_req: dict[str, str], aux: dict[str, NDArray], graph: Graph | None = None,
                 inferred: tuple[list, list] | None = None, ctx: Context | None = None,
                 backends: BindBackends | None = None) -> None:
        self._symbol = symbol
        # What the bind partitions with (the environment's now, or a reshaped executor's)
        self._backends = bind_backends() if backends is None else backends
        self._ctx = ctx = as_context(ctx, "bind: ctx")
        self._source = graph or Graph(symbol.outputs)
        src = self._source
        self._arg_names = [src.nodes[i].name for i in src.argument_ids]
        self._aux_names = [src.nodes[i].name for i in src.aux_ids]
        self.arg_arrays = [args[n] for n in self._arg_names]
        self.aux_arrays = [aux[n] for n in self._aux_names]
        self.grad_arrays = [grads.get(n) for n in self._arg_names]
        self._grad_req = grad_req
        training = any(r != "null" for r in grad_req.values())
        shape_of, self._source_dtypes = inferred or self._infer_source()
        self._graph, self._shapes, self._dtypes, self._partition_report = self._partition(
            training, shape_of, self._source_dtypes)
        self._check_inferred()
        g = self._graph
        reqs = [grad_req.get(g.nodes[nid].name, "null") if nid in g.argument_ids else "null"
                for nid in g.input_ids]
        # Entries too big for memory are refused (innermost node first) before
        # anything is allocated; then the operator states and the program.
        self._runner = GraphRunner(g, self._shapes, self._dtypes, reqs)
        self._runner.prepare(training)
        if self._partition_report.steps:
            self._partition_report.add_kernels(self._kernels())
            self._partition_report.log()
        self.outputs = [empty(self._shapes[e], ctx, self._dtypes[e])
                        for e in g.head_entry_ids()]
        # The graph's inputs, by position in arg_arrays + aux_arrays.
        position = {n: k for k, n in enumerate(self._arg_names + self._aux_names)}
        self._input_order = [position[g.nodes[nid].name] for nid in g.input_ids]
        # Each program's storage blocks, one variable each, made once: pending
        # work on them must stay ordered whatever arrays are bound later.
        self._blocks: dict[int, list[engine.Var]] = {}
        self._arrays_seen: tuple[list, ...] = ()
        self._monitor_callback: tuple[Callable[[str, NDArray], None], bool] | None = None
        # Refused at the call, not in the engine (where the failure would pass to the
        # gradients and from them to the next update's weights): a backward before
        # any forward, and one after an inference forward whose inputs have been
        # written since (backward re-runs that forward for training, on the arrays
        # as they are then; MXNet differentiates the values that forward stored).
        self._forwarded = False
        self._inference_writes: list[int] | None = None   # inputs' pushed writes then
        self._sync_arrays()
        # Read at bind, as MXNet does (and reading the environment costs more
        # than the rest of a small forward).
        self._bulk_inference = settings().exec_bulk_inference

    # -- preparation ---------------------------------------------------------
    def _infer_source(self) -> tuple[list, list]:
        """The shapes and dtypes of the symbol's entries, from the bound arrays."""
        g = self._source
        arrays = {**self.arg_dict, **self.aux_dict}
        shapes = {g.entry_ptr[i]: arrays[g.nodes[i].name].shape for i in g.input_ids}
        dtypes = {g.entry_ptr[i]: arrays[g.nodes[i].name].dtype for i in g.input_ids}
        return infer_shapes(g, shapes), infer_dtypes(g, dtypes)

    def _partition(self, training: bool, shape_of: list, dtype_of: list
                   ) -> tuple[Graph, list, list, PartitionReport]:
        if not self._backends:
            return self._source, shape_of, dtype_of, PartitionReport()
        return partition_for_bind(self._source, shape_of, dtype_of, self._backends, training)

    def _kernels(self) -> list:
        """How the compiled subgraph nodes run their operators (their states'
        `kernels`: which convolutions a DNNL plan runs as Winograd)."""
        states = self._runner.operator_states().values()
        return [s.kernels for s in states if getattr(s, "kernels", None) is not None]

    def _check_inferred(self) -> None:
        g = self._graph
        for nid, node in enumerate(g.nodes):
            for eid in g.output_entry_ids(nid):
                if not known(self._shapes[eid]) or self._dtypes[eid] is None:
                    raise ShapeError(f"{node.label}: output shape {self._shapes[eid]} / dtype "
                                     f"{self._dtypes[eid]} could not be inferred from the inputs")

    # -- dictionaries ----------------------------------------------------------
    @property
    def arg_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._arg_names, self.arg_arrays, strict=True))

    @property
    def grad_dict(self) -> dict[str, NDArray | None]:
        """Every argument's gradient array; None where its grad_req is 'null' (as MXNet)."""
        return dict(zip(self._arg_names, self.grad_arrays, strict=True))

    @property
    def aux_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._aux_names, self.aux_arrays, strict=True))

    @property
    def output_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._symbol.list_outputs(), self.outputs, strict=True))

    # -- the arrays a run reads and writes ---------------------------------------
    def _sync_arrays(self) -> None:
        """Follow the arrays now in `arg_arrays`, `aux_arrays` and `outputs`. The
        lists are the user's to change (``ex.arg_arrays[i] = new``): the engine
        variables a run is ordered by, the versions the weight cache checks and
        the prepared forward are those of the arrays the run reads, made again
        when one was replaced. Checked by identity, in C: a forward reads
        hundreds of arrays."""
        arrays = (self.arg_arrays, self.aux_arrays, self.outputs)
        seen = self._arrays_seen
        if seen and all(len(a) == len(b) and all(map(is_, a, b))
                                    for a, b in zip(arrays, seen, strict=True)):
            return
        self._arrays_seen = tuple(map(list, arrays))
        inputs = self.arg_arrays + self.aux_arrays
        input_vars = [inputs[k]._var for k in self._input_order]
        # What a bulk inference forward reads and writes, listed once.
        self._array_vars = engine.VarSet(a._var for a in inputs)
        self._output_vars = engine.VarSet(o._var for o in self.outputs)
        self._runner.input_versions = lambda: engine.versions(input_vars)
        self._input_vars = input_vars
        self._vars: dict[int, list[engine.Var]] = {}
        # (The runner's prepared inference forward, or None when it has none),
        # made by the first bulk forward on these arrays.
        self._prepared: tuple[Callable[[], bool] | None] | None = None

    # -- running ---------------------------------------------------------------
    def forward(self, is_train: bool = False, **kwargs: Any) -> list[NDArray]:
        """Run the graph; kwargs (NDArrays, numpy arrays or nested lists of each
        argument's shape) are copied into the named arguments first."""
        if kwargs:
            args = self.arg_dict
            for name, value in kwargs.items():
                if name not in args:
                    raise MinimxError(f"forward: {name!r} is not an argument "
                                      f"({', '.join(self._arg_names)})")
                _copy_in(args[name], value, "forward", f"Argument {name}")
        self._sync_arrays()
        self._forwarded = True
        self._inference_writes = (engine.pushed_writes(self._input_vars)
                                  if not is_train and self._runner.differentiable else None)
        # A profile shows each layer: bulk inference switches itself off for it.
        bulk = self._bulk_inference and not is_train and not profiler.recording_layers()
        if bulk and self._run_prepared():
            return self.outputs
        inputs = self._input_data()
        outs = [o._data for o in self.outputs]
        if bulk:
            # Inference reads the auxiliary states: leaving their versions alone
            # keeps the caches of stateful operators (folded BatchNorm) valid.
            # With nothing pending on its arrays it runs here, without a hop to a
            # worker thread and back: a forward of a small network costs less.
            engine.push(lambda: self._runner.forward(inputs, is_train, outs),
                        self._array_vars, self._output_vars, name="forward", symbolic=True,
                        here_if_ready=True)
        else:
            prog, steps, finish = self._runner.forward_steps(inputs, is_train, outs)
            var_of = self._program_vars(prog)
            for name, kind, run, reads, writes in steps:
                engine.push(run, [var_of[e] for e in reads], [var_of[e] for e in writes],
                            name=name, symbolic=True, kind=kind)
            engine.push(finish, [var_of[e] for e in self._graph.head_entry_ids()],
                        [o._var for o in self.outputs], name="outputs", symbolic=True)
        return self.outputs

    def _run_prepared(self) -> bool:
        """Run the inference forward as the runner's prepared call, if it has one
        and the engine is idle (`engine.run_if_idle`): no engine operation, and
        for a graph that is one DNNL subgraph, no Python beyond this (MobileNets
        at batch 1: 5-9% faster). False when it did not run."""
        if self._prepared is None:
            self._prepared = (self._runner.prepared_inference(
                self._input_data(), [o._data for o in self.outputs]),)
        run = self._prepared[0]
        return run is not None and engine.run_if_idle(run, self._output_vars)

    def _program_vars(self, prog) -> list[engine.Var]:
        """The engine variable guarding each entry of a program: its array's for
        arguments, auxiliary states and outputs, its storage block's otherwise
        (entries sharing a block must not overlap in time)."""
        key = id(prog)
        if key not in self._vars:
            g = self._graph
            arrays = {**self.arg_dict, **self.aux_dict}
            var_of: list[engine.Var | None] = [None] * g.num_entries
            for nid in g.input_ids:
                var_of[g.entry_ptr[nid]] = arrays[g.nodes[nid].name]._var
            for e, out in zip(g.head_entry_ids(), self.outputs, strict=True):
                var_of[e] = var_of[e] or out._var
            blocks = self._program_blocks(prog)
            self._vars[key] = [v or blocks[prog.plan.storage[e]] for e, v in enumerate(var_of)]
        return self._vars[key]

    def _program_blocks(self, prog) -> list[engine.Var]:
        """One engine variable per storage block of `prog`."""
        key = id(prog)
        if key not in self._blocks:
            self._blocks[key] = [engine.new_variable(f"block{s}")
                                 for s in range(len(prog.plan.block_bytes))]
        return self._blocks[key]

    def _input_data(self) -> list[np.ndarray]:
        arrays = self.arg_arrays + self.aux_arrays
        return [arrays[k]._data for k in self._input_order]

    def backward(self, out_grads: Any = None, is_train: bool = True) -> None:
        """Gradients of the arguments into `grad_arrays` (written or added per grad_req).

        `out_grads` (an NDArray, a list in output order, or a dict by output
        name) are the gradients of the outputs; outputs of loss layers
        (SoftmaxOutput) need none. Like `forward`, returns without waiting.
        """
        if not self._runner.differentiable:
            return
        if not self._forwarded:
            raise MinimxError("backward: run forward first (MXNet computes from whatever "
                              "the arrays hold)")
        self._check_unwritten_since_inference()
        heads = self._head_grads(out_grads)
        grads = {n: g for n, g in self.grad_dict.items()
                 if g is not None and self._grad_req.get(n, "null") != "null"}
        g = self._graph
        targets = [grads.get(g.nodes[nid].name) for nid in g.input_ids]
        head_data = [None if h is None else h._data for h in heads]
        target_data = [None if t is None else t._data for t in targets]
        # Backward reads the training forward's stored values and writes its own
        # entries, all in the training program's blocks: the next forward's steps,
        # which write those blocks, must wait for it. It may write auxiliary states
        # too (IdentityAttachKLSparseReg's moving average), so reads of them wait.
        blocks = self._program_blocks(self._runner.program(True))
        engine.push(lambda: self._runner.backward(head_data, target_data, is_train),
                    [a._var for a in self.arg_arrays + self.outputs]
                    + [h._var for h in heads if h is not None],
                    [t._var for t in grads.values()] + [a._var for a in self.aux_arrays]
                    + blocks, name="backward", symbolic=True)

    def _check_unwritten_since_inference(self) -> None:
        """Refuse a backward after `forward(is_train=False)` when a write to an
        argument or auxiliary state has been pushed since (an optimizer's update,
        `copy_params_from`, ``arr[:] = ...``)."""
        if self._inference_writes is None:
            return
        g = self._graph
        changed = [g.nodes[nid].name for nid, was, now in
                   zip(g.input_ids, self._inference_writes,
                       engine.pushed_writes(self._input_vars), strict=True) if was != now]
        if changed:
            raise MinimxError(f"backward after forward(is_train=False): {', '.join(changed)} "
                              "written since that forward, whose values backward "
                              "differentiates; run forward again first")

    def _arg_reqs(self) -> list[str]:
        return [self._grad_req.get(n, "null") for n in self._arg_names]

    def _head_grads(self, out_grads: Any) -> list[NDArray | None]:
        """One NDArray (or None where not needed) per output, checked against the outputs."""
        names = self._symbol.list_outputs()
        if out_grads is None:
            given: list = []
        elif isinstance(out_grads, NDArray):
            given = [out_grads]
        elif isinstance(out_grads, Mapping):
            given = [out_grads.get(n) for n in names]
        else:
            given = list(out_grads)
        # Gradients beyond the outputs are ignored, as in MXNet.
        heads: list[NDArray | None] = []
        for i, (name, needed) in enumerate(zip(names, self._runner.head_grad_needed(),
                                               strict=True)):
            grad = given[i] if i < len(given) else None
            if not needed:
                heads.append(None)
                continue
            if grad is None:
                # MXNet's words: only loss layers make their own head gradient.
                raise MinimxError(f"backward: output {name} needs a gradient: because the "
                                  "last operator is not a loss function, head gradient is "
                                  "required when calling backward (pass out_grads, or end "
                                  "the network in a loss layer such as SoftmaxOutput)")
            if not isinstance(grad, NDArray):
                grad = _own_copy(grad, self.outputs[i].dtype, f"backward: out_grad for {name}")
            elif grad.dtype != self.outputs[i].dtype:
                # MXNet copies it into the output's dtype (an int32 output truncates it).
                grad = grad.astype(self.outputs[i].dtype)
            if grad.shape != self.outputs[i].shape:
                raise ShapeError(f"backward: out_grad for {name} has shape {grad.shape}, "
                                 f"the output has {self.outputs[i].shape}")
            heads.append(grad)
        return heads

    def set_monitor_callback(self, callback: Callable[[str, NDArray], None],
                             monitor_all: bool = False) -> None:
        """Call ``callback(name, array)`` for each operator output during forward,
        hidden ones too, as MXNet (``fc_output``, ``bn_output``, ``bn_mean``,
        ``bn_var``); with `monitor_all`, before each operator its inputs, under
        MXNet's names: a variable's own name, then every input as
        ``<node>_<input>`` (``fc_data``, ``fc_weight``; ``relu0_input0`` for an
        operator MXNet gives no input names). Backward reports MXNet's backward
        nodes (``fc_backward_output1``, ``sum_grad_output``, ...), in its order,
        after the last of them has run (see `backward_monitor`)."""
        def report(name: str, data: np.ndarray) -> None:
            # This runs inside the forward's engine operation: the callback's own
            # NDArray calls (reading the array it is given, a statistic of it) run
            # at once on this thread, as in MXNet, where it runs outside the engine.
            with engine.synchronous():
                callback(name, NDArray(np.array(data), ctx=self._ctx))
        self._runner.monitor = report
        self._runner.monitor_all = monitor_all
        self._monitor_callback = (callback, monitor_all)   # for the executors reshape makes
        if self._runner.differentiable and self._runner.backward_monitor is None:
            g = self._graph
            variables = {g.entry_ptr[nid]: g.nodes[nid].name for nid in g.input_ids}
            backward = self._runner.program(True).backward
            assert backward is not None  # a differentiable runner's training program has one
            self._runner.backward_monitor = BackwardMonitor(backward, variables)

    # -- parameters and shapes -----------------------------------------------
    def copy_params_from(self, arg_params: Mapping[str, NDArray],
                         aux_params: Mapping[str, NDArray] | None = None,
                         allow_extra_params: bool = False) -> None:
        """Copy parameters by name into this executor's arrays (each of its array's shape)."""
        for params, targets, what in ((arg_params, self.arg_dict, "Argument"),
                                      (aux_params or {}, self.aux_dict, "Auxiliary state")):
            for name, value in params.items():
                if name in targets:
                    _copy_in(targets[name], value, "copy_params_from", f"{what} {name}")
                elif not allow_extra_params:
                    raise ArgumentError(f"copy_params_from: {name!r} is not a parameter of the "
                                        "symbol (pass allow_extra_params=True to ignore it)")

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **shapes: Sequence[int]) -> Executor:
        """A new executor for new input shapes. As in MXNet, an array whose shape is
        unchanged is shared, one that shrinks becomes a view of the old one (its
        first values, same memory), and one that grows is new (zeros), only with
        `allow_up_sizing`; arrays not named in `shapes` may change shape only with
        `partial_shaping`. Outputs are shared or views the same way (growing ones
        are new)."""
        shapes = {n: as_shape(s, f"reshape: shape of {n}") for n, s in shapes.items()}
        arg_shapes, out_shapes, aux_shapes, shape_of = self._symbol._infer(
            "shape", (), shapes, self._source)
        if not all(known(s) for s in (*arg_shapes, *out_shapes, *aux_shapes)):
            raise ShapeError(f"reshape: shapes {shapes} do not determine every shape")

        def resized(names, arrays, new_shapes, what):
            out = {}
            for name, arr, shape in zip(names, arrays, new_shapes, strict=True):
                if arr is None:
                    continue
                if tuple(shape) != arr.shape and not (name in shapes or partial_shaping):
                    raise ShapeError(f"reshape: {what} {name} changes shape from {arr.shape} to "
                                     f"{tuple(shape)}; pass partial_shaping=True")
                out[name] = _resized(arr, tuple(shape), allow_up_sizing, f"reshape: {what} {name}")
            return out
        args = resized(self._arg_names, self.arg_arrays, arg_shapes, "argument")
        grads = resized(self._arg_names, self.grad_arrays, arg_shapes, "gradient")
        aux = resized(self._aux_names, self.aux_arrays, aux_shapes, "auxiliary state")
        new = Executor(self._symbol, args, grads, self._grad_req, aux, self._source,
                       (shape_of, self._source_dtypes), self._ctx, self._backends)
        # Outputs that fit in the old ones share their memory too, as in MXNet.
        new.outputs = [_resized(old, out.shape, False, "reshape: output")
                       if out.size <= old.size and out.dtype == old.dtype else out
                       for old, out in zip(self.outputs, new.outputs, strict=True)]
        if self._monitor_callback is not None:   # the monitor goes along, as in MXNet
            new.set_monitor_callback(*self._monitor_callback)
        return new

    def debug_str(self) -> str:
        """The executed graph (after partitioning): every entry's shape, dtype and
        storage (``sN`` a planned block, ``ext`` an array of its own), under a
        DNNL subgraph node the memory line of its oneDNN plan, then the backward
        nodes of a training bind, then the memory plan's totals; with subgraph
        backends, under each operator they left out the reason, and at the end
        the partition summary (`mx.subgraph.partition_summary`), with how the
        compiled subgraphs run (which convolutions run as Winograd)."""
        g, prog = self._graph, self._runner.program(True)
        states = self._runner.operator_states()
        report = self._partition_report
        left_out = report.left_out_reasons()
        storage = prog.plan.storage
        where = lambda e: f"s{storage[e]}" if storage[e] >= 0 else "ext"  # noqa: E731
        lines = [f"Symbol outputs: {', '.join(self._symbol.list_outputs())}"]
        for nid, node in enumerate(g.nodes):
            outs = ", ".join(f"{self._shapes[e]} {self._dtypes[e]} @{where(e)}"
                             for e in g.output_entry_ids(nid))
            if node.is_variable:
                lines.append(f"Variable: {node.name} -> {outs}")
                continue
            ins = ", ".join(g.nodes[g.node_id(e.node)].entry_name(e.index) for e in node.inputs)
            attrs = " ".join(f"{k}={v}" for k, v in sorted(node.attrs.items()))
            lines.append(f"Op: {node.op} {node.name}({ins}) {attrs} -> {outs}")
            if node.name in left_out:
                lines.append(f"  ! left out by {left_out[node.name]}")
            lines += [line for sub in node.subgraphs for line in _subgraph_lines(sub, 1)]
            # A node running its own plan (a DNNL subgraph's oneDNN plan) says where it lives.
            inner = getattr(states.get(nid), "memory_plan", None)
            if inner is not None:
                lines.append(f"  | Memory: {inner.summary()}")
        if prog.backward is not None:
            lines.append("Backward:")
            for step in prog.backward.steps():
                outs = ", ".join(f"{prog.shapes[e]} @{where(e)}" for e in step.writes)
                lines.append(f"  {step.name} -> {outs}")
        plan = prog.plan
        lines.append(f"Memory: {plan.summary()}")
        lines.append(f"Total {plan.planned_bytes + plan.external_bytes} bytes allocated "
                     f"({plan.planned_bytes} planned in {len(plan.block_bytes)} blocks, "
                     f"{plan.naive_bytes} without sharing, lower bound {plan.lower_bound}; "
                     f"{plan.external_bytes} in arrays of their own)")
        if report.steps:
            report.add_kernels(self._kernels())   # a plan compiled since bind may differ
            lines.append("Partition:")
            lines += [f"  {line}" for line in str(report).splitlines()]
        return "\n".join(lines)


def _subgraph_lines(sym: Symbol, depth: int) -> list[str]:
    """The operators of a node's subgraph, indented, nested subgraphs included."""
    g, pad = Graph(sym.outputs), "  " * depth + "| "
    lines = []
    for node in g.nodes:
        if node.is_variable:
            continue
        ins = ", ".join(e.node.entry_name(e.index) for e in node.inputs)
        attrs = " ".join(f"{k}={v}" for k, v in sorted(node.attrs.items()))
        lines.append(f"{pad}{node.op} {node.name}({ins}) {attrs}".rstrip())
        lines += [line for sub in node.subgraphs for line in _subgraph_lines(sub, depth + 1)]
    return lines
