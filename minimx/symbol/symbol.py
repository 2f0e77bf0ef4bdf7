"""The Symbol: a list of output entries of a graph, and MXNet's methods on it."""
from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .. import attribute
from ..base import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    IndexRangeError,
    MinimxError,
    ShapeError,
    as_dtype,
    warn_user,
)
from ..formats.atomic import atomic_write
from ..graph import Graph, Node, NodeEntry, read_through, topo_order
from ..graph.infer import infer_dtypes, infer_shapes
from ..ops.infer import known
from ..ops.params import Param, ParamParseError


class NotImplementedForSymbol(MinimxError):
    """An NDArray operation that a Symbol does not have (MXNet's error of that name)."""

    def __init__(self, function: Any, alias: str) -> None:
        super().__init__(f'Function {function.__name__} (namely operator "{alias}") is not '
                         "implemented for Symbol and only available in NDArray.")


# Binding (minimx.executor) and partitioning (minimx.subgraph) sit in layers
# above this one. They hand their entry points to Symbol when imported
# (`provide`), so that Symbol's methods reach them without importing upward.
_ABOVE: dict[str, Any] = {}


def provide(**entry_points: Any) -> None:
    """Register functions of higher layers that Symbol's methods call (`bind`,
    `simple_bind`, `partition`, `optimize_for`)."""
    _ABOVE.update(entry_points)


def _above(name: str) -> Any:
    if name not in _ABOVE:
        raise MinimxError(f"Symbol.{name} needs the layer that provides it: import minimx")
    return _ABOVE[name]


# Arguments MXNet's bind takes that minimx accepts (so MXNet code runs) and
# ignores, and why.
_IGNORED = {
    "stype_dict": "every array is dense",
    "shared_buffer": "executors do not share memory",
    "group2ctx": "everything runs on the one CPU context",
    "shared_exec": "executors do not share memory",
    "shared_arg_names": "executors do not share memory",
}


def _warn_ignored(method: str, **given: Any) -> None:
    """One warning naming the ignored arguments the caller gave (not None)."""
    named = [f"{name} ({_IGNORED[name]})" for name, value in given.items() if value is not None]
    if named:
        warn_user(f"{method} ignores {' and '.join(named)}")


def _json_format() -> Any:
    # json_format builds Symbols and so imports this module; this one imports
    # it when first used.
    from . import json_format
    return json_format


def _register() -> Any:
    # register builds Symbols (the operator overloads call it); imported when used.
    from . import register
    return register


# AMP's cast operators: output k is input k in another dtype.
AMP_CASTS = ("amp_cast", "amp_multicast")


class Symbol:
    """A symbolic graph output (or several); build with `mx.sym.*`.

    >>> import minimx as mx
    >>> data = mx.sym.Variable('data')
    >>> fc = mx.sym.FullyConnected(data, num_hidden=10, name='fc')
    >>> fc.list_arguments()
    ['data', 'fc_weight', 'fc_bias']
    """

    __slots__ = ("outputs",)
    __array_priority__ = 1000.0  # numpy defers `np.float32(2) * sym` to us, as MXNet's

    def __init__(self, outputs: Sequence[NodeEntry]) -> None:
        self.outputs: list[NodeEntry] = list(outputs)

    # -- structure ----------------------------------------------------------
    def _graph(self) -> Graph:
        return Graph(self.outputs)

    @property
    def name(self) -> str | None:
        """The name of the symbol's node; None for a group of outputs of several nodes
        (as MXNet's: the outputs of one split node are named after it)."""
        node = self._one_node()
        return node.name if node is not None else None

    def _one_node(self) -> Node | None:
        """The node all outputs come from, if they come from one (nnvm's GetAttr rule)."""
        node = self.outputs[0].node
        return node if all(e.node is node for e in self.outputs) else None

    def _topo(self) -> list[Node]:
        return topo_order(self.outputs)

    def list_arguments(self) -> list[str]:
        g = self._graph()
        return [g.nodes[i].name for i in g.argument_ids]

    def list_auxiliary_states(self) -> list[str]:
        g = self._graph()
        return [g.nodes[i].name for i in g.aux_ids]

    def list_inputs(self) -> list[str]:
        return [n.name for n in self._topo() if n.is_variable]

    def list_outputs(self) -> list[str]:
        return [e.node.entry_name(e.index) for e in self.outputs]

    def __len__(self) -> int:
        return len(self.outputs)

    def __iter__(self) -> Iterator[Symbol]:
        return (Symbol([e]) for e in self.outputs)

    def __getitem__(self, index: int | str | slice) -> Symbol:
        if isinstance(index, slice):
            # As MXNet's: a slice of the outputs is a group of them (``parts[1:]``).
            picked = self.outputs[index]
            if not picked:
                raise MinimxError(f"output slice {index} of a symbol with "
                                  f"{len(self.outputs)} outputs is empty")
            return Symbol(picked)
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if len(matches) != 1:
                raise ArgumentError(
                    f"output {index!r} {'is ambiguous' if matches else 'not found'}"
                    f" (outputs: {', '.join(names)})")
            index = matches[0]
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise ArgumentTypeError(f"a symbol's outputs are indexed by int, name or slice, "
                                    f"got {index!r}")
        if not -len(self.outputs) <= index < len(self.outputs):
            raise IndexRangeError(f"output index {index} out of range for a symbol with "
                                  f"{len(self.outputs)} outputs")
        return Symbol([self.outputs[index]])

    def get_internals(self) -> Symbol:
        """Every visible output of every node, in graph order (MXNet's: BatchNorm's
        mean and variance, hidden, are not among them)."""
        return Symbol([NodeEntry(n, i) for n in self._topo()
                       for i in range(n.num_visible_outputs())])

    def get_children(self) -> Symbol | None:
        """The inputs of this symbol's head node(s), each node once; None for variables."""
        heads = {id(e.node): e.node for e in self.outputs}  # split's outputs share one node
        entries = [e for node in heads.values() for e in node.inputs]
        return Symbol(entries) if entries else None

    # -- attributes -------------------------------------------------------
    def _single_node(self, what: str) -> Node:
        node = self._one_node()
        if node is None:
            raise MinimxError(f"{what} needs a symbol whose outputs come from one node, this "
                              f"one has {len(self.outputs)} outputs of several nodes")
        return node

    def attr(self, key: str) -> str | None:
        """The attribute `key`; MXNet's hidden keys also by their plain names
        (``attr('lr_mult')`` reads ``__lr_mult__``)."""
        # As MXNet's: None for a group of outputs of several nodes.
        node = self._one_node()
        return attribute.lookup(node.attrs, key) if node is not None else None

    def list_attr(self, recursive: bool = False) -> dict[str, str]:
        """The head node's attributes; hidden keys under both names, as in MXNet."""
        if recursive:
            raise MinimxError("list_attr(recursive=True) is deprecated in MXNet; use attr_dict()")
        # As MXNet's (nnvm's shallow ListAttrs): the first output's node, for groups too.
        return attribute.listed(self.outputs[0].node.attrs)

    def attr_dict(self) -> dict[str, dict[str, str]]:
        """The attributes of every node that has some, by node name (as `list_attr`);
        as MXNet's, nodes of one name share an entry, later nodes' keys winning."""
        merged: dict[str, dict[str, str]] = {}
        for n in self._topo():
            if n.attrs:
                merged.setdefault(n.name, {}).update(attribute.listed(n.attrs))
        return merged

    def _set_attr(self, **kwargs: Any) -> None:
        node = self._single_node("_set_attr")
        old = dict(node.attrs)
        node.attrs.update({attribute.stored_key(k): str(v) for k, v in kwargs.items()})
        try:
            node.reparse()
        except MinimxError:
            node.attrs = old
            raise

    # -- inference ------------------------------------------------------------
    def _known_inputs(self, g: Graph, args: Sequence, kwargs: Mapping, what: str,
                      parse, from_attr, complete) -> dict[int, Any]:
        """Entry ids of the variables given positionally (argument order) or by name."""
        # As MXNet's, a name gives its value to every input of that name (two
        # Variable('x') nodes in one graph both take x=...).
        by_name: dict[str, list[int]] = {}
        for i in g.input_ids:
            by_name.setdefault(g.nodes[i].name, []).append(i)
        if len(args) > len(g.argument_ids):
            raise MinimxError(f"{what}: {len(args)} positional values for "
                              f"{len(g.argument_ids)} arguments")
        given: dict[int, Any] = {}
        for nid, value in zip(g.argument_ids, args, strict=False):
            if value is not None:
                given[g.entry_ptr[nid]] = parse(value)
        for name, value in kwargs.items():
            if name not in by_name:
                raise MinimxError(f"{what}: {name!r} is not an input of the symbol "
                                  f"(inputs: {', '.join(by_name)})")
            if value is not None:
                parsed = parse(value)
                for nid in by_name[name]:
                    given[g.entry_ptr[nid]] = parsed
        for nid in g.input_ids:
            attr_value = from_attr(g.nodes[nid])
            eid = g.entry_ptr[nid]
            # As MXNet's inference: a variable's __shape__ / __dtype__ attribute stands
            # for what the call leaves unknown - the whole shape when the given one
            # has an unknown (0) dimension - and a complete given value wins.
            if attr_value is not None and (eid not in given or not complete(given[eid])):
                given[eid] = attr_value
        return given

    def _infer(self, rule: str, args: Sequence, kwargs: Mapping, graph: Graph | None = None
               ) -> tuple[list, list, list, list]:
        """(arguments', outputs', auxiliary states' values, every entry's value) by
        `rule` (``shape`` or ``type``); `graph` is this symbol's, when the caller has it."""
        g = graph or self._graph()
        values: list[Any]
        if rule == "shape":
            known_in = self._known_inputs(g, args, kwargs, "infer_shape", _as_shape, attr_shape,
                                          known)
            values = infer_shapes(g, known_in)
        else:
            known_in = self._known_inputs(g, args, kwargs, "infer_type", as_dtype, attr_dtype,
                                          lambda t: t is not None)
            values = infer_dtypes(g, known_in)
        pick = lambda ids: [values[g.entry_ptr[i]] for i in ids]  # noqa: E731
        return (pick(g.argument_ids), [values[e] for e in g.head_entry_ids()],
                pick(g.aux_ids), values)

    def infer_shape(self, *args: Any, **kwargs: Any):
        """(arg_shapes, out_shapes, aux_shapes), or (None, None, None) if incomplete."""
        arg, out, aux, _ = self._infer("shape", args, kwargs)
        if not all(known(s) for s in (*arg, *out, *aux)):
            return None, None, None
        return arg, out, aux

    def infer_shape_partial(self, *args: Any, **kwargs: Any):
        """Like infer_shape; unknown shapes are () and unknown dimensions 0."""
        arg, out, aux, _ = self._infer("shape", args, kwargs)
        fill = lambda xs: [s if s is not None else () for s in xs]  # noqa: E731
        return fill(arg), fill(out), fill(aux)

    def infer_type(self, *args: Any, **kwargs: Any):
        """(arg_types, out_types, aux_types) as numpy dtypes, or (None, None, None)
        when some are unknown."""
        arg, out, aux, _ = self._infer("type", args, kwargs)
        if any(t is None for t in (*arg, *out, *aux)):
            return None, None, None
        return arg, out, aux

    def infer_type_partial(self, *args: Any, **kwargs: Any):
        """Like infer_type, with None for each dtype that is unknown (MXNet 1.9's)."""
        arg, out, aux, _ = self._infer("type", args, kwargs)
        return arg, out, aux

    # -- serialization, binding -----------------------------------------
    def tojson(self, remove_amp_cast: bool = False) -> str:
        """MXNet's JSON graph; with `remove_amp_cast`, without AMP's casts (what MXNet
        writes by default: minimx keeps them unless asked)."""
        kept = self
        if remove_amp_cast:
            kept = Symbol(read_through(self.outputs, lambda n: n.op in AMP_CASTS))
        return _json_format().to_json(kept)

    def save(self, fname: str, remove_amp_cast: bool = False) -> None:
        """Write the JSON graph to `fname`, replacing it whole or not at all (see
        `tojson`)."""
        text = self.tojson(remove_amp_cast).encode("utf-8")
        with atomic_write(fname) as f:
            f.write(text)

    def simple_bind(self, ctx=None, grad_req="write", type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **shapes):
        _warn_ignored("simple_bind", stype_dict=stype_dict, group2ctx=group2ctx,
                      shared_arg_names=shared_arg_names, shared_exec=shared_exec,
                      shared_buffer=shared_buffer)
        # As MXNet's simple_bind, shapes and dtypes of names that are not inputs of
        # the symbol are ignored (a label shape given for a symbol without a label).
        inputs = set(self.list_inputs())
        shapes = {k: v for k, v in shapes.items() if k in inputs}
        if type_dict is not None:
            type_dict = {k: v for k, v in type_dict.items() if k in inputs}
        return _above("simple_bind")(self, ctx, grad_req=grad_req, type_dict=type_dict,
                                     shapes=shapes)

    def bind(self, ctx=None, args=None, args_grad=None, grad_req="write", aux_states=None,
             group2ctx=None, shared_exec=None):
        _warn_ignored("bind", group2ctx=group2ctx, shared_exec=shared_exec)
        return _above("bind")(self, ctx, args, args_grad=args_grad, grad_req=grad_req,
                    aux_states=aux_states)

    def eval(self, ctx=None, **kwargs):
        """Bind to the given arrays (arguments and auxiliary states by name), run
        forward for inference and return the outputs."""
        aux_names = set(self.list_auxiliary_states())
        args = {k: v for k, v in kwargs.items() if k not in aux_names}
        aux = {k: v for k, v in kwargs.items() if k in aux_names}
        return self.bind(ctx, args, grad_req="null", aux_states=aux).forward()

    def get_backend_symbol(self, backend_name: str) -> Symbol:
        return _above("partition")(self, backend_name)

    def optimize_for(self, backend: str, args=None, aux=None, ctx=None, **kwargs) -> Symbol:
        return _above("optimize_for")(self, backend, args=args, aux=aux, **kwargs)

    # -- copies, pickles, composition ---------------------------------------
    # As in MXNet, copies and pickles go through the JSON form: it holds the
    # whole graph (subgraphs included), and reading it is iterative, so that
    # deep graphs do not hit the recursion limit. Copies are always deep.
    def __getstate__(self) -> dict[str, str]:
        return {"json": self.tojson()}

    def __setstate__(self, state: dict[str, str]) -> None:
        self.outputs = _json_format().load_json(state["json"]).outputs

    def __deepcopy__(self, memo: dict | None) -> Symbol:
        return _json_format().load_json(self.tojson())

    def __copy__(self) -> Symbol:
        return self.__deepcopy__(None)

    def __call__(self, *args: Symbol, **kwargs: Any) -> Symbol:
        """A copy of this symbol with free variables replaced by symbols.

        >>> import minimx as mx
        >>> net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
        >>> net(data=mx.sym.relu(mx.sym.Variable('x'), name='r')).list_arguments()
        ['x', 'fc_weight', 'fc_bias']
        """
        composed = copy.deepcopy(self)
        composed._compose(*args, **kwargs)
        return composed

    def _compose(self, *args: Symbol, name: str | None = None, **kwargs: Symbol) -> None:
        """Replace variables in place: positional symbols replace the variables in
        `list_inputs()` order, keyword ones the variables of that name; `name`
        renames the head node."""
        replacing = self._compose_plan(args, kwargs)
        for node in self._topo():
            node.inputs = [replacing.get(id(e.node), e) for e in node.inputs]
        self.outputs = [replacing.get(id(e.node), e) for e in self.outputs]
        if name:
            self.outputs[0].node.name = name

    def _compose_plan(self, args: Sequence[Symbol], kwargs: Mapping[str, Symbol]
                      ) -> dict[int, NodeEntry]:
        """The entry that replaces each variable (by id) in a composition."""
        if args and kwargs:
            raise MinimxError("compose: give the input symbols by position or by name, not both")
        given = list(enumerate(args)) + list(kwargs.items())
        for key, value in given:
            if not isinstance(value, Symbol) or len(value.outputs) != 1:
                raise ArgumentTypeError(f"compose: argument {key!r} must be a single-output "
                                        f"Symbol, got {value!r}")
        variables = [n for n in self._topo() if n.is_variable]
        if len(args) > len(variables):
            raise MinimxError(f"compose: {len(args)} positional symbols for "
                              f"{len(variables)} variables")
        unknown = set(kwargs) - {n.name for n in variables}
        if unknown:
            raise MinimxError(f"compose: {', '.join(sorted(unknown))} not among the variables "
                              f"({', '.join(n.name for n in variables)})")
        plan = {id(node): value.outputs[0] for node, value in zip(variables, args, strict=False)}
        plan.update({id(n): kwargs[n.name].outputs[0] for n in variables if n.name in kwargs})
        return plan

    # -- printing ------------------------------------------------------------

    def __repr__(self) -> str:
        name = self.name
        if name is not None:
            return f"<Symbol {name}>"
        return f"<Symbol group [{', '.join(str(s.name) for s in self)}]>"

    def __str__(self) -> str:
        return str(self._graph())

    # -- arithmetic --------------------------------------------------------
    def _binary(self, other: Any, sym_op: str, scalar_op: str, reverse: bool = False) -> Symbol:
        return _register().arith(self, other, sym_op, scalar_op, reverse)

    def __add__(self, o): return self._binary(o, "_Plus", "_PlusScalar")
    def __radd__(self, o): return self._binary(o, "_Plus", "_PlusScalar")
    def __sub__(self, o): return self._binary(o, "_Minus", "_MinusScalar")
    def __rsub__(self, o): return self._binary(o, "_Minus", "_RMinusScalar", True)
    def __mul__(self, o): return self._binary(o, "_Mul", "_MulScalar")
    def __rmul__(self, o): return self._binary(o, "_Mul", "_MulScalar")
    def __truediv__(self, o): return self._binary(o, "_Div", "_DivScalar")
    def __rtruediv__(self, o): return self._binary(o, "_Div", "_RDivScalar", True)
    def __mod__(self, o): return self._binary(o, "_Mod", "_ModScalar")
    def __rmod__(self, o): return self._binary(o, "_Mod", "_RModScalar", True)
    def __neg__(self): return self._binary(-1.0, "_Mul", "_MulScalar")
    def __abs__(self): return self.abs()   # the fluent method
    def __pow__(self, o): return self._binary(o, "_Power", "_PowerScalar")
    # MXNet's __rpow__ and comparisons call the operators by their snake_case names
    # (``_internal._rpower_scalar``), which give the automatic names ``_rpower_scalar0``,
    # ``_greater_scalar0``, not ``_rpowerscalar0`` as mx.sym.power(2, x) gives.
    def __rpow__(self, o): return self._binary(o, "_Power", "_rpower_scalar", True)
    # As MXNet's: 1 where the comparison holds, else 0. (== and != stay Python's identity
    # comparisons, which dicts and sets of symbols rely on.)
    def __gt__(self, o): return self._binary(o, "_greater", "_greater_scalar")
    def __ge__(self, o): return self._binary(o, "_greater_equal", "_greater_equal_scalar")
    def __lt__(self, o): return self._binary(o, "_lesser", "_lesser_scalar")
    def __le__(self, o): return self._binary(o, "_lesser_equal", "_lesser_equal_scalar")

    def __bool__(self) -> bool:
        raise NotImplementedForSymbol(self.__bool__, "bool")


_SHAPE = Param("__shape__", "shape")


def _as_shape(value: Any) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in value)
    except (TypeError, ValueError):
        raise ShapeError(f"not a shape: {value!r}") from None


def attr_shape(node: Node) -> tuple[int, ...] | None:
    """The shape a variable's ``__shape__`` attribute gives, if any."""
    text = node.attrs.get("__shape__")
    if text is None:
        return None
    try:
        return _SHAPE.parse(text)
    except ParamParseError as exc:
        raise ShapeError(f"{node.label}: bad __shape__ attribute: {exc}") from None


def attr_dtype(node: Node) -> np.dtype | None:
    """The dtype a variable's ``__dtype__`` attribute gives (a flag or a name), if any."""
    text = node.attrs.get("__dtype__")
    if text is None:
        return None
    try:
        return as_dtype(int(text)) if text.strip().lstrip("-").isdigit() else as_dtype(text)
    except DTypeError as exc:
        raise DTypeError(f"{node.label}: bad __dtype__ attribute: {exc}") from None
