"""`mx.sym.contrib.foreach`, `while_loop` and `cond`: the nodes MXNet 1.9.1's Python makes.

Each calls the user's functions on fresh variables inside an ``mx.AttrScope`` that
marks every node they make with ``__subgraph_name__`` (``foreach0``,
``while_loop_cond0``, ...), groups the results into a subgraph (outputs that are
inputs, or made outside, go through ``identity``), and cuts every edge that enters it
from outside: the entry becomes a variable of the subgraph, named as the entry is
(``w``, ``exp0_output``), and an input of the node. The node's inputs and its
``*_locs`` parameters come out in MXNet's order, so that the JSON is MXNet's.

>>> import minimx as mx
>>> step = lambda x, states: (x + states[0], [states[0] * 2])
>>> with mx.name.NameManager():   # a fresh counter for the node names
...     outs, states = mx.sym.contrib.foreach(step, mx.sym.var('data'), [mx.sym.var('s')])
>>> outs.list_outputs()
['_foreach0_output0']
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ..attribute import AttrScope
from ..attribute import current as current_attr_scope
from ..graph import Node, NodeEntry
from ..name import current as current_name_manager
from ..ndarray import control_flow as nd_flow
from ..ndarray.control_flow import ControlFlowError, regroup
from ..ops.registry import get_op
from .register import Group, Variable, create
from .symbol import Symbol

_SUBGRAPH = "__subgraph_name__"
# How many subgraphs of each name were made (MXNet's AttrScope._subgraph_names).
SUBGRAPH_NAMES: Counter[str] = Counter()


def flatten(args: Any, what: str) -> tuple[list, Any]:
    """The symbols of a nested list, and its format for `regroup`: a symbol of several
    outputs stands for as many (MXNet's _flatten)."""
    return nd_flow.flatten(args, what, Symbol,
                           lambda s: len(s.outputs) if len(s.outputs) > 1 else 0)


# -- subgraphs --------------------------------------------------------------------------
def _unique_name(sym: Symbol) -> str:
    """The name of the variable standing for `sym` inside a body (``data-0``)."""
    return f"{sym.outputs[0].node.name}-{sym.outputs[0].index}"


def _subgraph_name(name: str) -> str:
    outer = current_attr_scope().get(None).get(_SUBGRAPH, "")
    if outer:
        name = f"{outer}${name}"
    SUBGRAPH_NAMES[name] += 1
    return f"{name}{SUBGRAPH_NAMES[name] - 1}"


def _in_subgraph(sym: Symbol, name: str) -> bool:
    return sym.outputs[0].node.attrs.get(_SUBGRAPH, "") == name


def _subgraph(outputs: list[Symbol], name: str, states_from: int | None = None) -> Symbol:
    """The group of a body's outputs as a subgraph: those that are inputs or made outside
    the body go through ``identity`` (a subgraph's outputs are its own nodes), as do the
    outputs from `states_from` on (foreach's states) that are also among those before."""
    inputs = set(Group(outputs).list_inputs())
    before = {o.name for o in outputs[:states_from]} if states_from is not None else set()
    return Group([create(get_op("_copy"), [o], {}, hint="identity")
                  if o.name in inputs or not _in_subgraph(o, name)
                  or (states_from is not None and i >= states_from and o.name in before)
                  else o for i, o in enumerate(outputs)])


def _cut(g: Symbol) -> dict[str, Symbol]:
    """Cut the edges entering the body `g` from outside (MXSymbolCutSubgraph): each
    outer entry becomes a variable named as the entry; the outer entries by that name."""
    name = g.outputs[0].node.attrs.get(_SUBGRAPH)
    if name is None:
        return {}
    made: dict[tuple[int, int], NodeEntry] = {}
    cut: dict[str, Symbol] = {}
    for node in g._topo():
        if node.attrs.get(_SUBGRAPH) != name:
            continue
        for j, entry in enumerate(node.inputs):
            if entry.node.attrs.get(_SUBGRAPH) == name:
                continue
            key = (id(entry.node), entry.index)
            if key not in made:
                var_name = entry.node.entry_name(entry.index)
                made[key] = NodeEntry(Node(None, var_name))
                cut[var_name] = Symbol([entry])
            node.inputs[j] = made[key]
    return cut


def _graph_inputs(g: Symbol) -> dict[str, Symbol]:
    return {n.name: Symbol([NodeEntry(n)]) for n in g._topo() if n.is_variable}


def _fresh_copy(sym: Symbol) -> Symbol:
    """A variable made inside a body becomes an input of its own (MXNet deep-copies it)."""
    node = sym.outputs[0].node
    return Symbol([NodeEntry(Node(None, node.name, node.attrs))])


def _check_symbols(items: list, what: str) -> None:
    if not all(isinstance(s, Symbol) for s in items):
        raise ControlFlowError(f"{what} should be a symbol or a nested list of symbols")


def _node(op: str, bodies: list[Symbol], inputs: list[Symbol], name: str | None,
          **params: Any) -> Symbol:
    """The control-flow node, named and attributed as MXNet's generated function does."""
    attrs = current_attr_scope().get(None)
    attrs.update({k: str(v) for k, v in params.items()})
    attrs["num_args"] = str(len(bodies) + len(inputs))
    node = Node(get_op(op), current_name_manager().get(name, op), attrs,
                [s.outputs[0] for s in inputs], bodies)
    return Symbol([NodeEntry(node, i) for i in range(int(params["num_outputs"]))])


# -- foreach ----------------------------------------------------------------------------
def foreach(body: Callable, data: Any, init_states: Any,
            name: str = "foreach") -> tuple[Any, Any]:
    """Run a for loop over axis 0 of `data`: ``out, states = body(data[i], states)``;
    returns the stacked outputs and the last states (MXNet's contrib.foreach)."""
    flat_data, data_fmt = flatten(data, "foreach input")
    _check_symbols(flat_data, "data")
    flat_states, state_fmt = flatten(init_states, "foreach states")
    _check_symbols(flat_states, "init_states")
    name = _subgraph_name(name)
    with AttrScope(**{_SUBGRAPH: name}):
        in_eles, _ = regroup([Variable(_unique_name(s)) for s in flat_data], data_fmt)
        states, _ = regroup([Variable(_unique_name(s)) for s in flat_states], state_fmt)
        sym_out, sym_states = body(in_eles, states)
        sym_out, out_fmt = flatten(sym_out, "foreach output")
        sym_states, new_state_fmt = flatten(sym_states, "foreach loop_vars")
        if new_state_fmt != state_fmt:
            raise ControlFlowError(f"{name}: the body returns states of format "
                                   f"{new_state_fmt}, the initial states are {state_fmt}")
        _check_symbols(sym_out + sym_states, "the body's outputs")
        g = _subgraph(sym_out + sym_states, name, states_from=len(sym_out))
    cut = _cut(g)
    ins = _graph_inputs(g)
    names = g.list_inputs()
    data_names = [_unique_name(s) for s in flat_data]
    state_names = [_unique_name(s) for s in flat_states]
    for what, wanted in (("data", data_names), ("state", state_names)):
        unused = [n for n in wanted if n not in names]
        if unused:
            raise ControlFlowError(f"{name}: the {what} arrays have to be used in the loop "
                                   f"body ({', '.join(unused)} are not)")
    remain = [n for n in names if n in cut or (n not in data_names and n not in state_names)]
    node = _node("_foreach", [g], [*flat_data, *flat_states,
                                   *(cut[n] if n in cut else _fresh_copy(ins[n]) for n in remain)],
                 None, num_outputs=len(sym_out) + len(sym_states), num_out_data=len(sym_out),
                 in_state_locs=[names.index(n) for n in state_names],
                 in_data_locs=[names.index(n) for n in data_names],
                 remain_locs=[names.index(n) for n in remain])
    outs, _ = regroup([node[i] for i in range(len(sym_out))], out_fmt)
    new_states, _ = regroup([node[len(sym_out) + i] for i in range(len(sym_states))], state_fmt)
    return outs, new_states


# -- while_loop and cond ------------------------------------------------------------------
def _body(name: str, make: Callable[[], tuple[list, list]]) -> tuple[Symbol, list, list]:
    """A body made by `make` (its outputs and states) in a subgraph scope of its own."""
    name = _subgraph_name(name)
    with AttrScope(**{_SUBGRAPH: name}):
        outs, states = make()
        _check_symbols(outs + states, f"{name}'s outputs")
        return _subgraph(outs + states, name), outs, states


def _union_inputs(graphs: Sequence[Symbol], known: Callable[[str, list], Symbol | None]
                  ) -> tuple[list[Symbol], list[list[int]]]:
    """The inputs of several bodies, each once, and where each body's inputs sit in
    them (MXNet's _union_inputs). `known(name, inputs_so_far)` gives an input a body
    shares with the outer graph by name, or None."""
    inputs: list[Symbol] = []
    where: dict[int, int] = {}
    locs = []
    for g in graphs:
        cut, ins = _cut(g), _graph_inputs(g)
        body_locs = []
        for n in g.list_inputs():
            sym = known(n, inputs)
            if sym is None:
                sym = cut[n] if n in cut else _fresh_copy(ins[n])
            if id(sym) not in where:
                where[id(sym)] = len(inputs)
                inputs.append(sym)
            body_locs.append(where[id(sym)])
        locs.append(body_locs)
    return inputs, locs


def while_loop(cond: Callable, func: Callable, loop_vars: Any, max_iterations: Any = None,
               name: str = "while_loop") -> tuple[Any, Any]:
    """Run ``outs, loop_vars = func(*loop_vars)`` while ``cond(*loop_vars)``, at most
    `max_iterations` times; returns the stacked outputs (``max_iterations`` rows) and the
    final loop variables (MXNet's contrib.while_loop)."""
    flat_vars, var_fmt = flatten(loop_vars, "while loop_vars")
    _check_symbols(flat_vars, "loop_vars")
    if max_iterations is None:
        raise ControlFlowError("max_iterations should be specified")
    try:
        max_iterations = int(max_iterations.asscalar() if hasattr(max_iterations, "asscalar")
                             else max_iterations)
    except (TypeError, ValueError):
        raise ControlFlowError(f"Cannot convert max_iteration {max_iterations!r} to python "
                               "int") from None
    if not flat_vars:
        raise ControlFlowError("loop_vars should contain at least one element")
    fmts: dict[str, Any] = {}

    def fresh_vars() -> Any:
        return regroup([Variable(_unique_name(s)) for s in flat_vars], var_fmt)[0]

    def make_cond() -> tuple[list, list]:
        result = cond(*fresh_vars())
        if not isinstance(result, Symbol):
            raise ControlFlowError("Return of cond must be a Symbol")
        return [], [result]

    def make_func() -> tuple[list, list]:
        step, new_vars = func(*fresh_vars())
        step, fmts["out"] = flatten([] if step is None else list(step)
                                    if isinstance(step, tuple) else step, "while output")
        new_vars, _ = flatten([] if new_vars is None else list(new_vars)
                              if isinstance(new_vars, tuple) else new_vars, "while loop_vars")
        if len(new_vars) != len(flat_vars):
            raise ControlFlowError("The number of loop_vars should be consistent during the "
                                   f"loop: {len(flat_vars)} given, func returns {len(new_vars)}")
        return step, new_vars

    cond_g, _, _ = _body(f"{name}_cond", make_cond)
    func_g, step, new_vars = _body(f"{name}_func", make_func)
    by_name = {_unique_name(s): s for s in flat_vars}
    inputs, (cond_locs, func_locs) = _union_inputs(
        [cond_g, func_g], lambda n, _: by_name.get(n))
    func_names = func_g.list_inputs()
    var_locs = [func_names.index(n) if n in func_names else -1 for n in by_name]
    for i, loc in enumerate(var_locs, 1):
        if loc == -1:
            raise ControlFlowError(f"The {i}-th loop_var doesn't involve into the computation")
    num_outputs = len(step) + len(new_vars)
    node = _node("_while_loop", [cond_g, func_g], inputs, None,
                 max_iterations=max_iterations, cond_input_locs=cond_locs,
                 func_input_locs=func_locs, func_var_locs=var_locs,
                 num_out_data=len(step), num_outputs=num_outputs)
    outs, _ = regroup([node[i] for i in range(len(step))], fmts["out"])
    final, _ = regroup([node[i] for i in range(len(step), num_outputs)], var_fmt)
    return outs, final


def cond(pred: Symbol, then_func: Callable, else_func: Callable, name: str = "cond") -> Any:
    """``then_func()`` if the scalar `pred` is true, else ``else_func()`` (MXNet's
    contrib.cond); both return the same number of symbols."""
    fmts: dict[str, Any] = {}

    def branch(fn: Callable, key: str) -> Callable[[], tuple[list, list]]:
        def make() -> tuple[list, list]:
            outs, fmts[key] = flatten(fn(), "cond outputs")
            return outs, []
        return make

    cond_g, pred_outs, _ = _body(f"{name}_pred", branch(lambda: pred, "pred"))
    if len(pred_outs) != 1:
        raise ControlFlowError("pred should always be a single output")
    then_g, then_outs, _ = _body(f"{name}_then", branch(then_func, "then"))
    else_g, else_outs, _ = _body(f"{name}_else", branch(else_func, "else"))
    if len(then_outs) != len(else_outs):
        raise ControlFlowError(f"Number of outputs differs between then-branch "
                               f"({len(then_outs)}) and else-branch ({len(else_outs)})")
    inputs, (cond_locs, then_locs, else_locs) = _union_inputs(
        [cond_g, then_g, else_g], lambda n, so_far: {s.name: s for s in so_far}.get(n))
    node = _node("_cond", [cond_g, then_g, else_g], inputs, None,
                 cond_input_locs=cond_locs, then_input_locs=then_locs,
                 else_input_locs=else_locs, num_outputs=len(then_outs))
    outs, _ = regroup([node[i] for i in range(len(then_outs))], fmts["then"])
    return outs
