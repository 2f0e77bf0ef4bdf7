"""The Executor: a bound graph and the arrays it runs on.

`bind` / `simple_bind` prepare the graph in the order DESIGN.md gives:
attribute inference, partitioning with the backends named by
MINIMX_SUBGRAPH_BACKEND, inference again, then arrays for every argument,
auxiliary state and output. The runner adds the gradient pass and the memory
plan (see `runner`). `forward` pushes the whole graph to the engine as one
operation that reads the arguments and writes the outputs and auxiliary
states; `backward` pushes one that reads arguments, auxiliary states, outputs
and head gradients and writes the gradient arrays. Both return without
waiting. The runner's buffers need no variable of their own: every forward
writes the outputs, which every backward reads, and backwards write the same
gradient arrays, so the engine already runs them one at a time.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import engine
from ..base import DEFAULT_DTYPE, MinimxError, ShapeError, as_dtype, settings
from ..context import Context
from ..graph import Graph
from ..graph.infer import infer_dtypes, infer_shapes
from ..ndarray import NDArray, array, empty, zeros
from ..ops.infer import known
from ..symbol import Symbol
from .runner import GraphRunner

GRAD_REQS = ("write", "add", "null")


def _by_name(values: Any, names: list[str], what: str) -> dict[str, Any]:
    """A dict by name from a list in `names` order or a dict."""
    if values is None:
        values = {}
    if isinstance(values, Mapping):
        unknown = [k for k in values if k not in names]
        if unknown:
            raise MinimxError(f"bind: {what} {', '.join(map(repr, unknown))} are not inputs of "
                              f"the symbol ({what}s: {', '.join(names)})")
        return dict(values)
    values = list(values)
    if len(values) != len(names):
        raise MinimxError(f"bind: {len(values)} {what}s given for {len(names)} "
                          f"({', '.join(names)})")
    return dict(zip(names, values, strict=True))


def _users_of(sym: Symbol, name: str) -> str:
    for node in sym._topo():
        for input_name, e in zip(node.input_names(), node.inputs, strict=False):
            if e.node.name == name and e.node.is_variable:
                return f" (input {input_name} of {node.label})"
    return ""


def _grad_reqs(grad_req: Any, names: list[str]) -> dict[str, str]:
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, Mapping):
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        reqs = _by_name(grad_req, names, "grad_req")
    bad = {n: r for n, r in reqs.items() if r not in GRAD_REQS}
    if bad:
        raise MinimxError(f"bind: grad_req must be one of {GRAD_REQS}, got {bad}")
    return reqs


class Executor:
    """Runs a bound symbol; see `Symbol.bind` and `Symbol.simple_bind`."""

    def __init__(self, symbol: Symbol, args: dict[str, NDArray], grads: dict[str, NDArray],
                 grad_req: dict[str, str], aux: dict[str, NDArray]) -> None:
        self._symbol = symbol
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self.arg_arrays = [args[n] for n in self._arg_names]
        self.aux_arrays = [aux[n] for n in self._aux_names]
        self.grad_arrays = [grads.get(n) for n in self._arg_names]
        self._grad_req = grad_req
        training = any(r != "null" for r in grad_req.values())
        self._graph = Graph(self._partition(training).outputs)
        self._shapes, self._dtypes = self._infer()
        heads = self._graph.head_entry_ids()
        self.outputs = [empty(self._shapes[e], dtype=self._dtypes[e]) for e in heads]
        g = self._graph
        reqs = [grad_req.get(g.nodes[nid].name, "null") if nid in g.argument_ids else "null"
                for nid in g.input_ids]
        self._runner = GraphRunner(g, self._shapes, self._dtypes, reqs)
        arrays = {**self.arg_dict, **self.aux_dict}
        input_vars = [arrays[g.nodes[nid].name]._var for nid in g.input_ids]
        self._runner.version_of = lambda k: input_vars[k].version
        self._vars: dict[int, list] = {}

    # -- preparation ---------------------------------------------------------
    def _partition(self, training: bool) -> Symbol:
        backends = settings().subgraph_backends
        if not backends:
            return self._symbol
        from ..subgraph import partition_for_bind
        arrays = {**self.arg_dict, **self.aux_dict}
        return partition_for_bind(self._symbol, backends, training,
                                  {n: a.shape for n, a in arrays.items()},
                                  {n: a.dtype for n, a in arrays.items()})

    def _infer(self) -> tuple[list, list]:
        g = self._graph
        by_name = dict(zip(self._arg_names, self.arg_arrays, strict=True))
        by_name.update(zip(self._aux_names, self.aux_arrays, strict=True))
        shapes = {g.entry_ptr[i]: by_name[g.nodes[i].name].shape for i in g.input_ids}
        dtypes = {g.entry_ptr[i]: by_name[g.nodes[i].name].dtype for i in g.input_ids}
        shape_of, dtype_of = infer_shapes(g, shapes), infer_dtypes(g, dtypes)
        for nid, node in enumerate(g.nodes):
            for eid in g.output_entry_ids(nid):
                if not known(shape_of[eid]) or dtype_of[eid] is None:
                    raise ShapeError(f"{node.label}: output shape {shape_of[eid]} / dtype "
                                     f"{dtype_of[eid]} could not be inferred from the inputs")
        return shape_of, dtype_of

    # -- dictionaries ----------------------------------------------------------
    @property
    def arg_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._arg_names, self.arg_arrays, strict=True))

    @property
    def grad_dict(self) -> dict[str, NDArray]:
        return {n: g for n, g in zip(self._arg_names, self.grad_arrays, strict=True)
                if g is not None}

    @property
    def aux_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._aux_names, self.aux_arrays, strict=True))

    @property
    def output_dict(self) -> dict[str, NDArray]:
        return dict(zip(self._symbol.list_outputs(), self.outputs, strict=True))

    # -- running ---------------------------------------------------------------
    def forward(self, is_train: bool = False, **kwargs: Any) -> list[NDArray]:
        """Run the graph; kwargs are copied into the named arguments first."""
        args = self.arg_dict
        for name, value in kwargs.items():
            if name not in args:
                raise MinimxError(f"forward: {name!r} is not an argument "
                                  f"({', '.join(self._arg_names)})")
            if isinstance(value, NDArray):
                value.copyto(args[name])
            else:
                args[name][:] = value
        inputs = self._input_data()
        outs = [o._data for o in self.outputs]
        if settings().exec_bulk_inference and not is_train:
            # Inference reads the auxiliary states: leaving their versions alone
            # keeps the caches of stateful operators (folded BatchNorm) valid.
            engine.push(lambda: self._runner.forward(inputs, is_train, outs),
                        [a._var for a in self.arg_arrays + self.aux_arrays],
                        [o._var for o in self.outputs], name="forward", symbolic=True)
        else:
            prog, steps, finish = self._runner.forward_steps(inputs, is_train, outs)
            var_of = self._entry_vars(prog)
            for name, run, reads, writes in steps:
                engine.push(run, [var_of[e] for e in reads], [var_of[e] for e in writes],
                            name=name, symbolic=True)
            engine.push(finish, [var_of[e] for e in self._graph.head_entry_ids()],
                        [o._var for o in self.outputs], name="outputs", symbolic=True)
        return self.outputs

    def _entry_vars(self, prog) -> list:
        """The engine variable guarding each entry of a program: its array's for
        arguments, auxiliary states and outputs, its storage block's otherwise
        (entries sharing a block must not overlap in time)."""
        key = id(prog)
        if key not in self._vars:
            g = self._graph
            arrays = {**self.arg_dict, **self.aux_dict}
            var_of = [None] * g.num_entries
            for nid in g.input_ids:
                var_of[g.entry_ptr[nid]] = arrays[g.nodes[nid].name]._var
            for e, out in zip(g.head_entry_ids(), self.outputs, strict=True):
                var_of[e] = var_of[e] or out._var
            blocks = [engine.new_variable(f"block{s}") for s in range(len(prog.plan.block_bytes))]
            for e in range(g.num_entries):
                if var_of[e] is None:
                    var_of[e] = blocks[prog.plan.storage[e]]
            self._vars[key] = var_of
        return self._vars[key]

    def _input_data(self) -> list[np.ndarray]:
        arrays = {**self.arg_dict, **self.aux_dict}
        return [arrays[self._graph.nodes[nid].name]._data for nid in self._graph.input_ids]

    def backward(self, out_grads: Any = None, is_train: bool = True) -> None:
        """Gradients of the arguments into `grad_arrays` (written or added per grad_req).

        `out_grads` (an NDArray, a list in output order, or a dict by output
        name) are the gradients of the outputs; outputs of loss layers
        (SoftmaxOutput) need none. Like `forward`, returns without waiting.
        """
        if not self._runner.differentiable:
            return
        heads = self._head_grads(out_grads)
        grads = {n: g for n, g, r in zip(self._arg_names, self.grad_arrays,
                                          self._arg_reqs(), strict=True) if r != "null"}
        g = self._graph
        targets = [grads.get(g.nodes[nid].name) for nid in g.input_ids]
        head_data = [None if h is None else h._data for h in heads]
        target_data = [None if t is None else t._data for t in targets]
        engine.push(lambda: self._runner.backward(head_data, target_data, is_train),
                    [a._var for a in self.arg_arrays + self.aux_arrays + self.outputs]
                    + [h._var for h in heads if h is not None],
                    [t._var for t in grads.values()], name="backward", symbolic=True)

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
        if len(given) > len(names):
            raise MinimxError(f"backward: {len(given)} out_grads given for {len(names)} outputs")
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
                grad = array(grad, dtype=self.outputs[i].dtype)
            if grad.shape != self.outputs[i].shape:
                raise ShapeError(f"backward: out_grad for {name} has shape {grad.shape}, "
                                 f"the output has {self.outputs[i].shape}")
            heads.append(grad)
        return heads

    def set_monitor_callback(self, callback: Callable[[str, NDArray], None],
                             monitor_all: bool = False) -> None:
        """Call ``callback(output_name, array)`` for each node output during forward."""
        self._runner.monitor = lambda name, data: callback(name, NDArray(np.array(data)))
        self._runner.monitor_all = monitor_all

    # -- parameters and shapes -----------------------------------------------
    def copy_params_from(self, arg_params: Mapping[str, NDArray],
                         aux_params: Mapping[str, NDArray] | None = None,
                         allow_extra_params: bool = False) -> None:
        """Copy parameters by name into this executor's arrays."""
        for params, targets in ((arg_params, self.arg_dict), (aux_params or {}, self.aux_dict)):
            for name, value in params.items():
                if name in targets:
                    targets[name][:] = value
                elif not allow_extra_params:
                    raise MinimxError(f"copy_params_from: {name!r} is not a parameter of the "
                                      "symbol (pass allow_extra_params=True to ignore it)")

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **shapes: Sequence[int]) -> Executor:
        """A new executor for new input shapes, sharing arrays whose shape is unchanged."""
        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise ShapeError(f"reshape: shapes {shapes} do not determine every shape")
        def reuse(names, arrays, new_shapes, what):
            out = {}
            for name, arr, shape in zip(names, arrays, new_shapes, strict=True):
                if arr is None:
                    continue
                if tuple(shape) == arr.shape:
                    out[name] = arr
                elif name in shapes or partial_shaping:
                    if np.prod(shape) > arr.size and not allow_up_sizing:
                        raise ShapeError(f"reshape: {what} {name} grows from {arr.shape} to "
                                         f"{tuple(shape)}; pass allow_up_sizing=True")
                    out[name] = zeros(shape, dtype=arr.dtype)
                else:
                    raise ShapeError(f"reshape: {what} {name} changes shape from {arr.shape} to "
                                     f"{tuple(shape)}; pass partial_shaping=True")
            return out
        args = reuse(self._arg_names, self.arg_arrays, arg_shapes, "argument")
        grads = reuse(self._arg_names, self.grad_arrays, arg_shapes, "gradient")
        aux = reuse(self._aux_names, self.aux_arrays, aux_shapes, "auxiliary state")
        return Executor(self._symbol, args, grads, self._grad_req, aux)

    def debug_str(self) -> str:
        """The executed graph (after partitioning): every entry's shape, dtype and
        storage (``sN`` a planned block, ``ext`` an array of its own), then the
        backward nodes of a training bind, then the memory plan's totals."""
        g, prog = self._graph, self._runner.program(True)
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
            lines += [line for sub in node.subgraphs for line in _subgraph_lines(sub, 1)]
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


def bind(symbol: Symbol, ctx: Context | None, args: Any, args_grad: Any = None,
         grad_req: Any = "write", aux_states: Any = None) -> Executor:
    """Bind `symbol` to existing arrays (lists in list_* order, or dicts by name)."""
    arg_names = symbol.list_arguments()
    aux_names = symbol.list_auxiliary_states()
    args = _by_name(args, arg_names, "argument")
    aux = _by_name(aux_states, aux_names, "auxiliary state")
    for names, given, what in ((arg_names, args, "argument"), (aux_names, aux, "auxiliary state")):
        for name in names:
            if name not in given:
                raise MinimxError(f"bind: {what} {name!r}{_users_of(symbol, name)} is missing")
            if not isinstance(given[name], NDArray):
                raise MinimxError(f"bind: {what} {name!r} must be an NDArray, "
                                  f"got {type(given[name]).__name__}")
    reqs = _grad_reqs(grad_req, arg_names)
    grads = _by_name(args_grad, arg_names, "gradient") if args_grad is not None else {}
    reqs = {n: (r if n in grads else "null") for n, r in reqs.items()}
    return Executor(symbol, args, grads, reqs, aux)


def simple_bind(symbol: Symbol, ctx: Context | None, grad_req: Any = "write",
                type_dict: Mapping[str, Any] | None = None,
                shapes: Mapping[str, Sequence[int]] | None = None) -> Executor:
    """Bind `symbol` to new zero arrays whose shapes come from `shapes` by inference."""
    shapes = dict(shapes or {})
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    if arg_shapes is None:
        partial = symbol.infer_shape_partial(**shapes)
        missing = [n for n, s in zip(symbol.list_arguments(), partial[0], strict=True)
                   if not known(s)]
        raise ShapeError(f"simple_bind: cannot infer the shapes of {', '.join(missing)} "
                         f"from {shapes}")
    types = {k: as_dtype(v) for k, v in (type_dict or {}).items()}
    arg_types, _, aux_types = symbol.infer_type(**types) if types else (None, None, None)
    arg_names, aux_names = symbol.list_arguments(), symbol.list_auxiliary_states()
    arg_types = arg_types or [DEFAULT_DTYPE] * len(arg_names)
    aux_types = aux_types or [DEFAULT_DTYPE] * len(aux_names)
    args = {n: zeros(s, dtype=t) for n, s, t in zip(arg_names, arg_shapes, arg_types, strict=True)}
    aux = {n: zeros(s, dtype=t) for n, s, t in zip(aux_names, aux_shapes, aux_types, strict=True)}
    reqs = _grad_reqs(grad_req, arg_names)
    grads = {n: zeros(args[n].shape, dtype=args[n].dtype) for n in arg_names
             if reqs[n] != "null"}
    return Executor(symbol, args, grads, reqs, aux)
