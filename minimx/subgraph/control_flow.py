"""MXNet's control-flow operators: `_foreach`, `_while_loop` and `_cond`.

Each node holds its bodies as subgraphs (MXNet's order: `_foreach` its body;
`_while_loop` the condition, then the body; `_cond` the condition, then the
then-branch, then the else-branch) and takes its inputs in one flat list; the
``*_locs`` parameters say where each body's inputs sit in it (MXNet's
``control_flow.cc``). ``num_args`` counts the subgraphs too, as MXNet's
Python passes them as the first positional arguments.

Each body runs with a `GraphRunner` of its own (`subgraph_op.graph_runner`),
once per step. Backward runs the steps again, last first: each step's forward
is recomputed from the inputs kept by a replay of the loop, then
differentiated, the gradients of the loop states flowing from one step to the
step before. `_while_loop`'s stacked outputs have ``max_iterations`` rows, as
MXNet's; the rows past the last step are zeros (MXNet leaves them unset).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from ..graph import Graph
from ..graph.infer import infer_dtypes, infer_shapes
from ..interpreter.runner import GraphRunner
from ..ops.infer import merge, merge_dtype
from ..ops.params import Params
from ..ops.registry import OpDef, Param, register
from .subgraph_op import graph_runner

_LOCS = "shape"  # MXNet's Tuple<dim_t>, written "[0, 2]"
# The subgraphs each operator holds, in order.
_BODIES = {"_foreach": ("body",), "_while_loop": ("cond", "func"),
           "_cond": ("cond", "then_branch", "else_branch")}


# -- the bodies -------------------------------------------------------------------------
def body_graph(p: Params, k: int) -> Graph:
    """The indexed graph of subgraph `k`; cached on the params."""
    key = f"graph{k}"
    if key not in p.cache:
        p.cache[key] = Graph(p.subgraphs[k].outputs)
    return p.cache[key]


def _check_locs(p: Params, k: int, what: str, locs: Sequence[int], bound: int) -> None:
    """Body `k` takes one input per entry of `locs`, each below `bound`."""
    g = body_graph(p, k)
    if len(locs) != len(g.input_ids):
        raise OperatorError(f"{p.label}: {what} lists {len(locs)} inputs, but its subgraph "
                            f"has {len(g.input_ids)}")
    bad = [loc for loc in locs if not 0 <= loc < bound]
    if bad:
        raise OperatorError(f"{p.label}: {what} has locations {bad} outside 0..{bound - 1}")


def _check_outputs(p: Params, k: int, what: str, count: int) -> None:
    got = len(body_graph(p, k).outputs)
    if got != count:
        raise OperatorError(f"{p.label}: {what} must have {count} outputs, its subgraph "
                            f"has {got}")


def _check_layout(p: Params, op: str) -> int:
    """Check the node's subgraphs against its parameters; the number of its inputs."""
    bodies = _BODIES[op]
    if len(p.subgraphs) != len(bodies):
        raise OperatorError(f"{p.label}: needs {len(bodies)} subgraphs ({', '.join(bodies)}), "
                            f"has {len(p.subgraphs)}")
    count = p.num_args - len(bodies)
    if count < 0:
        raise OperatorError(f"{p.label}: num_args={p.num_args} is less than its "
                            f"{len(bodies)} subgraphs")
    if op == "_foreach":
        locs = (*p.in_data_locs, *p.in_state_locs, *p.remain_locs)
        _check_locs(p, 0, "the body", range(len(locs)), count)
        if sorted(locs) != list(range(count)):
            raise OperatorError(f"{p.label}: in_data_locs, in_state_locs and remain_locs "
                                f"must list each of the {count} body inputs once, got "
                                f"{list(locs)}")
        _check_outputs(p, 0, "the body", p.num_outputs)
        if p.num_outputs - p.num_out_data != len(p.in_state_locs):
            raise OperatorError(f"{p.label}: the body returns {p.num_outputs - p.num_out_data}"
                                f" states, but takes {len(p.in_state_locs)}")
    elif op == "_while_loop":
        _check_locs(p, 0, "the condition", p.cond_input_locs, count)
        _check_locs(p, 1, "the body", p.func_input_locs, count)
        _check_outputs(p, 0, "the condition", 1)
        _check_outputs(p, 1, "the body", p.num_outputs)
        bad = [v for v in p.func_var_locs if not 0 <= v < len(p.func_input_locs)]
        if bad or p.num_outputs - p.num_out_data != len(p.func_var_locs):
            raise OperatorError(f"{p.label}: func_var_locs {list(p.func_var_locs)} must name "
                                f"{p.num_outputs - p.num_out_data} of the body's "
                                f"{len(p.func_input_locs)} inputs")
    else:
        _check_locs(p, 0, "the condition", p.cond_input_locs, count)
        _check_outputs(p, 0, "the condition", 1)
        for k, branch in ((1, "then"), (2, "else")):
            _check_locs(p, k, f"the {branch}-branch", p[f"{branch}_input_locs"], count)
            _check_outputs(p, k, f"the {branch}-branch", p.num_outputs)
    return count


def _input_names(op: str) -> Callable[[Params], list[str]]:
    def names(p: Params) -> list[str]:
        return [f"data{i}" for i in range(_check_layout(p, op))]
    return names


def _output_names(p: Params) -> list[str]:
    return ["output"] if p.num_outputs == 1 else [f"output{i}" for i in range(p.num_outputs)]


def _run_inference(p: Params, k: int, infer: Callable, ins: Sequence,
                   outs: Sequence = ()) -> list:
    """Every entry's value in body `k`, given its inputs' and outputs' (None: unknown)."""
    g = body_graph(p, k)
    known = {g.entry_ptr[nid]: v for nid, v in zip(g.input_ids, ins, strict=True)
             if v is not None}
    known.update({e: v for e, v in zip(g.head_entry_ids(), outs or [None] * len(g.outputs),
                                       strict=True) if v is not None})
    return infer(g, known)


def _inner(p: Params, k: int, infer: Callable, ins: Sequence,
           outs: Sequence = ()) -> tuple[list, list]:
    """Body `k`'s inputs and outputs as inference completes them."""
    g = body_graph(p, k)
    values = _run_inference(p, k, infer, ins, outs)
    return [values[g.entry_ptr[nid]] for nid in g.input_ids], [values[e] for e in
                                                              g.head_entry_ids()]


# -- inference --------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """How one inference (shapes or dtypes) meets the loops' stacking."""

    infer: Callable
    merge: Callable
    step: Callable[[Any], Any]          # a stacked value -> one step's
    stack: Callable[[Any, int], Any]    # one step's value, the count -> the stacked

    def merged(self, p: Params, what: str, a: Any, b: Any) -> Any:
        try:
            return self.merge(a, b)
        except (ShapeError, DTypeError) as exc:
            raise type(exc)(f"{p.label}: {what}: {a} and {b} differ") from None


# A step of a 1-D input is (1,), as MXNet 1.x has no 0-d arrays (`step_of`).
SHAPES = Kind(infer_shapes, merge, lambda s: None if s is None else (tuple(s[1:]) or (1,)),
              lambda s, n: None if s is None else (n, *s))
DTYPES = Kind(infer_dtypes, merge_dtype, lambda t: t, lambda t, n: t)


def _one_axis(kind: Kind, value: Any) -> bool:
    return kind is SHAPES and value is not None and len(value) == 1


def _foreach_infer(kind: Kind) -> Callable:
    def rule(p: Params, ins: list, outs: list) -> tuple[list, list]:
        nd, ns, nod = len(p.in_data_locs), len(p.in_state_locs), p.num_out_data
        locs = (*p.in_data_locs, *p.in_state_locs, *p.remain_locs)
        length = next((s[0] for s in [*ins[:nd], *outs[:nod]] if s is not None and
                       kind is SHAPES and s[0] > 0), 0)
        body_in: list = [None] * len(locs)
        for j, loc in enumerate(locs):
            body_in[loc] = kind.step(ins[j]) if j < nd else ins[j]
        for i in range(ns):  # a state's shape is what the last step returns
            loc = p.in_state_locs[i]
            body_in[loc] = kind.merged(p, f"loop state {i}", body_in[loc], outs[nod + i])
        body_out = [kind.step(v) for v in outs[:nod]] + list(outs[nod:])
        got_in, got_out = _inner(p, 0, kind.infer, body_in, body_out)
        states = [kind.merged(p, f"loop state {i} (enters the body as, the body returns)",
                              got_in[p.in_state_locs[i]], got_out[nod + i]) for i in range(ns)]
        # 1-D data steps as (1,) (`step_of`): its shape stays as given.
        new_ins = [got_in[loc] if j >= nd else ins[j] if _one_axis(kind, ins[j])
                   else kind.stack(got_in[loc], length) for j, loc in enumerate(locs)]
        new_ins[nd:nd + ns] = states
        return new_ins, [kind.stack(v, length) for v in got_out[:nod]] + states
    return rule


def _loop_var_inputs(p: Params) -> list[int]:
    """The outer input of each loop variable of a `_while_loop`."""
    return [p.func_input_locs[v] for v in p.func_var_locs]


def _while_infer(kind: Kind) -> Callable:
    def rule(p: Params, ins: list, outs: list) -> tuple[list, list]:
        nod, var_ins = p.num_out_data, _loop_var_inputs(p)
        ins = list(ins)
        for i, loc in enumerate(var_ins):
            ins[loc] = kind.merged(p, f"loop variable {i}", ins[loc], outs[nod + i])
        cond_in, cond_out = _inner(p, 0, kind.infer, [ins[loc] for loc in p.cond_input_locs])
        if kind is SHAPES:
            _check_scalar(p, cond_out[0])
        body_out = [kind.step(v) for v in outs[:nod]] + [ins[loc] for loc in var_ins]
        func_in, func_out = _inner(p, 1, kind.infer, [ins[loc] for loc in p.func_input_locs],
                                   body_out)
        for values, locs in ((cond_in, p.cond_input_locs), (func_in, p.func_input_locs)):
            for v, loc in zip(values, locs, strict=True):
                ins[loc] = kind.merged(p, f"input {loc}", ins[loc], v)
        for i, loc in enumerate(var_ins):
            ins[loc] = kind.merged(p, f"loop variable {i} (enters the body as, the body "
                                   "returns)", ins[loc], func_out[nod + i])
        return ins, ([kind.stack(v, p.max_iterations) for v in func_out[:nod]]
                     + [ins[loc] for loc in var_ins])
    return rule


def _cond_infer(kind: Kind) -> Callable:
    def rule(p: Params, ins: list, outs: list) -> tuple[list, list]:
        ins, outs = list(ins), list(outs)
        cond_in, cond_out = _inner(p, 0, kind.infer, [ins[loc] for loc in p.cond_input_locs])
        if kind is SHAPES:
            _check_scalar(p, cond_out[0])
        found = [(cond_in, p.cond_input_locs)]
        for k, branch in ((1, "then"), (2, "else")):
            locs = p[f"{branch}_input_locs"]
            b_in, b_out = _inner(p, k, kind.infer, [ins[loc] for loc in locs], outs)
            found.append((b_in, locs))
            outs = [kind.merged(p, f"output {j} of the then- and else-branches", a, b)
                    for j, (a, b) in enumerate(zip(outs, b_out, strict=True))]
        for values, locs in found:
            for v, loc in zip(values, locs, strict=True):
                ins[loc] = kind.merged(p, f"input {loc}", ins[loc], v)
        return ins, outs
    return rule


def _check_scalar(p: Params, shape: tuple | None) -> None:
    if shape is not None and all(d > 0 for d in shape) and int(np.prod(shape)) != 1:
        raise ShapeError(f"{p.label}: the condition must be a scalar (one element), its "
                         f"subgraph gives shape {shape}")


# -- running ----------------------------------------------------------------------------
class Bodies:
    """The runners of a node's bodies, made for the node's input shapes and dtypes."""

    def __init__(self, p: Params, op: str, in_shapes: list, in_dtypes: list) -> None:
        self.p = p
        body_inputs = _BODY_INPUTS[op]
        self.runners: list[GraphRunner] = []
        for k, (shapes, dtypes) in enumerate(zip(body_inputs(p, in_shapes, SHAPES.step),
                                                 body_inputs(p, in_dtypes, DTYPES.step),
                                                 strict=True)):
            self.runners.append(graph_runner(body_graph(p, k),
                                             _run_inference(p, k, infer_shapes, shapes),
                                             _run_inference(p, k, infer_dtypes, dtypes)))
        self.out_shapes = SHAPES_RULES[op](p, in_shapes, [None] * p.num_outputs)[1]

    def stacked(self, k: int) -> list[np.ndarray]:
        """Zeros for the stacked outputs of body `k`, in their dtypes."""
        runner = self.runners[k]
        nod = self.p.num_out_data
        return [np.zeros(s, runner.dtypes[e]) for s, e in
                zip(self.out_shapes[:nod], runner.graph.head_entry_ids()[:nod], strict=True)]

    def run(self, k: int, inputs: Sequence[np.ndarray], train: bool) -> list[np.ndarray]:
        """Body `k`'s outputs (copies: the runner reuses its buffers)."""
        return [np.array(a) for a in self.runners[k].forward(list(inputs), train)]

    def grads(self, k: int, inputs: list[np.ndarray], out_grads: Sequence[np.ndarray]) -> list:
        """The gradients of body `k`'s inputs (zeros where none flows), its forward
        recomputed on `inputs` first."""
        runner = self.runners[k]
        runner.forward(inputs, True)
        got = runner.backward(list(out_grads), inputs=inputs)
        return [np.zeros(x.shape, x.dtype) if g is None else np.array(g)
                for g, x in zip(got, inputs, strict=True)]

    def predicate(self, inputs: Sequence[np.ndarray]) -> bool:
        value = self.run(0, inputs, False)[0]
        if value.size != 1:
            raise OperatorError(f"{self.p.label}: the condition must be a scalar (one "
                                f"element), it gives shape {value.shape}")
        return bool(value.reshape(-1)[0])


# - _foreach
def _foreach_body_inputs(p: Params, values: list, step: Callable) -> list[list]:
    nd = len(p.in_data_locs)
    return [_arrange(p, [step(v) for v in values[:nd]] + values[nd:])]


def _arrange(p: Params, values: Sequence) -> list:
    """The outer values (data, states, the rest) in the order of the body's inputs."""
    locs = (*p.in_data_locs, *p.in_state_locs, *p.remain_locs)
    body: list = [None] * len(locs)
    for j, loc in enumerate(locs):
        body[loc] = values[j]
    return body


def step_of(data: np.ndarray, t: int) -> np.ndarray:
    """Step `t` of a loop's data: its `t`-th slice, of shape (1,) for 1-D data."""
    return data[t] if data.ndim > 1 else data[t:t + 1]


def _foreach_steps(state: Bodies, inputs: Sequence[np.ndarray], train: bool) -> Iterator:
    """Each step's body inputs and outputs, in order."""
    p = state.p
    nd, ns = len(p.in_data_locs), len(p.in_state_locs)
    states = list(inputs[nd:nd + ns])
    for t in range(inputs[0].shape[0] if nd else 0):
        body_in = _arrange(p, [step_of(d, t) for d in inputs[:nd]] + states
                           + list(inputs[nd + ns:]))
        out = state.run(0, body_in, train)
        states = out[p.num_out_data:]
        yield body_in, out


def _collect(state: Bodies, k: int, steps: Iterator, initial: Sequence[np.ndarray]) -> list:
    """The node's outputs: body `k`'s per-step outputs stacked, then its last states
    (`initial`, the loop's inputs, when no step runs)."""
    nod = state.p.num_out_data
    outs, last = state.stacked(k), [np.array(x) for x in initial]
    for t, (_, out) in enumerate(steps):
        for j in range(nod):
            outs[j][t] = out[j]
        last = out[nod:]
    return outs + last


def _foreach_forward(state: Bodies, ctx: Any, inputs: Sequence[np.ndarray]) -> list:
    nd, ns = len(state.p.in_data_locs), len(state.p.in_state_locs)
    return _collect(state, 0, _foreach_steps(state, inputs, ctx.is_train), inputs[nd:nd + ns])


def _foreach_backward(state: Bodies, ctx: Any, inputs: Sequence[np.ndarray],
                      outputs: Sequence[np.ndarray], out_grads: Sequence[np.ndarray]) -> list:
    p = state.p
    nod, nd, ns = p.num_out_data, len(p.in_data_locs), len(p.in_state_locs)
    grads = [np.zeros(x.shape, x.dtype) for x in inputs]
    state_grads = [np.array(g) for g in out_grads[nod:]]
    locs = (*p.in_data_locs, *p.in_state_locs, *p.remain_locs)
    steps = [body_in for body_in, _ in _foreach_steps(state, inputs, True)]
    for t in reversed(range(len(steps))):
        got = state.grads(0, steps[t], [g[t] for g in out_grads[:nod]] + state_grads)
        for j in range(nd):
            grads[j][t] = np.reshape(got[locs[j]], grads[j][t].shape)
        for j in range(nd + ns, len(locs)):
            grads[j] += got[locs[j]]
        state_grads = [got[loc] for loc in p.in_state_locs]
    grads[nd:nd + ns] = state_grads
    return grads


# - _while_loop
def _while_body_inputs(p: Params, values: list, step: Callable) -> list[list]:
    return [[values[loc] for loc in p.cond_input_locs],
            [values[loc] for loc in p.func_input_locs]]


def _while_steps(state: Bodies, inputs: Sequence[np.ndarray], train: bool) -> Iterator:
    """Each step's body inputs and outputs, in order."""
    p = state.p
    values, var_ins = list(inputs), _loop_var_inputs(p)
    steps = 0
    while steps < p.max_iterations and state.predicate([values[loc] for loc in
                                                        p.cond_input_locs]):
        body_in = [values[loc] for loc in p.func_input_locs]
        out = state.run(1, body_in, train)
        for i, loc in enumerate(var_ins):
            values[loc] = out[p.num_out_data + i]
        steps += 1
        yield body_in, out


def _while_forward(state: Bodies, ctx: Any, inputs: Sequence[np.ndarray]) -> list:
    return _collect(state, 1, _while_steps(state, inputs, ctx.is_train),
                    [inputs[loc] for loc in _loop_var_inputs(state.p)])


def _while_backward(state: Bodies, ctx: Any, inputs: Sequence[np.ndarray],
                    outputs: Sequence[np.ndarray], out_grads: Sequence[np.ndarray]) -> list:
    p = state.p
    nod, var_ins = p.num_out_data, _loop_var_inputs(p)
    grads = [np.zeros(x.shape, x.dtype) for x in inputs]
    var_grads = [np.array(g) for g in out_grads[nod:]]
    steps = [body_in for body_in, _ in _while_steps(state, inputs, True)]
    var_positions = set(p.func_var_locs)
    for t in reversed(range(len(steps))):
        got = state.grads(1, steps[t], [g[t] for g in out_grads[:nod]] + var_grads)
        for pos, loc in enumerate(p.func_input_locs):
            if pos not in var_positions:
                grads[loc] += got[pos]
        var_grads = [got[v] for v in p.func_var_locs]
    for loc, g in zip(var_ins, var_grads, strict=True):
        grads[loc] += g
    return grads


# - _cond
def _cond_body_inputs(p: Params, values: list, step: Callable) -> list[list]:
    return [[values[loc] for loc in p[f"{b}_input_locs"]] for b in ("cond", "then", "else")]


def _branch(state: Bodies, inputs: Sequence[np.ndarray]) -> tuple[int, tuple[int, ...]]:
    """The branch the condition picks: its subgraph and its input locations."""
    p = state.p
    taken = state.predicate([inputs[loc] for loc in p.cond_input_locs])
    return (1, p.then_input_locs) if taken else (2, p.else_input_locs)


def _cond_forward(state: Bodies, ctx: Any, inputs: Sequence[np.ndarray]) -> list:
    k, locs = _branch(state, inputs)
    return state.run(k, [inputs[loc] for loc in locs], ctx.is_train)


def _cond_backward(state: Bodies, ctx: Any, inputs: Sequence[np.ndarray],
                   outputs: Sequence[np.ndarray], out_grads: Sequence[np.ndarray]) -> list:
    k, locs = _branch(state, inputs)
    grads = [np.zeros(x.shape, x.dtype) for x in inputs]
    for loc, g in zip(locs, state.grads(k, [inputs[loc] for loc in locs], out_grads),
                      strict=True):
        grads[loc] += g
    return grads


# -- registration -----------------------------------------------------------------------
SHAPES_RULES = {"_foreach": _foreach_infer(SHAPES), "_while_loop": _while_infer(SHAPES),
                "_cond": _cond_infer(SHAPES)}
_COMMON = (Param("num_args", "int", doc="The inputs, the subgraphs included."),
           Param("num_outputs", "int", doc="The outputs of the operator."))


# Each body's inputs given the node's (shapes or dtypes), `step` making a data
# input's value one step's.
_BODY_INPUTS = {"_foreach": _foreach_body_inputs, "_while_loop": _while_body_inputs,
                "_cond": _cond_body_inputs}


def _state_maker(op: str) -> Callable[..., Bodies]:
    def create(p: Params, in_shapes: list, in_dtypes: list) -> Bodies:
        return Bodies(p, op, in_shapes, in_dtypes)
    return create


def _register(op: str, doc: str, params: tuple[Param, ...], infer: Callable,
              forward: Callable, backward: Callable) -> OpDef:
    return register(OpDef(
        name=op, doc=doc, params=_COMMON + params, inputs=_input_names(op),
        outputs=_output_names, infer_shape=SHAPES_RULES[op], infer_type=infer(DTYPES),
        create_state=_state_maker(op), forward=forward, backward=backward))


FOREACH = _register(
    "_foreach", "Run a for loop over an NDArray with user-defined computation.",
    (Param("num_out_data", "int", doc="The per-step outputs of the body."),
     Param("in_state_locs", _LOCS, doc="The body inputs that are the loop states."),
     Param("in_data_locs", _LOCS, doc="The body inputs that are the sliced data."),
     Param("remain_locs", _LOCS, doc="The body inputs that are the other inputs.")),
    _foreach_infer, _foreach_forward, _foreach_backward)
WHILE_LOOP = _register(
    "_while_loop", "Run a while loop with user-defined condition and computation.",
    (Param("num_out_data", "int", doc="The per-step outputs of the body."),
     Param("max_iterations", "int", doc="The most steps, the rows of the stacked outputs."),
     Param("cond_input_locs", _LOCS, doc="The condition's inputs among the inputs."),
     Param("func_input_locs", _LOCS, doc="The body's inputs among the inputs."),
     Param("func_var_locs", _LOCS, doc="The loop variables among the body's inputs.")),
    _while_infer, _while_forward, _while_backward)
COND = _register(
    "_cond", "Run an if-then-else using user-defined condition and computation.",
    (Param("cond_input_locs", _LOCS, doc="The condition's inputs among the inputs."),
     Param("then_input_locs", _LOCS, doc="The then-branch's inputs among the inputs."),
     Param("else_input_locs", _LOCS, doc="The else-branch's inputs among the inputs.")),
    _cond_infer, _cond_forward, _cond_backward)
