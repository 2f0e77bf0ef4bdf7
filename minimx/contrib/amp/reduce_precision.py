"""MXNet 1.9.1's ``ReducePrecision`` pass (src/nnvm/low_precision_pass.cc): a float32
graph with ``amp_cast`` and ``amp_multicast`` nodes inserted.

Nodes are visited in nnvm's DFS order, and each output is tracked as known to be
float32, known to be the target dtype, or unknown:

1. A float32 operator (or an excluded node) gets its inputs cast to float32,
   except variables (taken to be float32 already).
2. A target operator gets its inputs cast to the target dtype, except mutable
   inputs, inputs its type rule keeps in another type (BatchNorm's gamma...),
   and with ``cast_optional_params`` the parameters (to be converted offline).
3. A widest-type operator whose inputs' types are all known gets float32
   casts if any is float32, target casts otherwise; else one ``amp_multicast``
   over all its inputs.
4. A conditional float32 operator whose parameter matches is as in 1, its
   mutable inputs left alone.
5. Any other node keeps its inputs; its outputs' types follow from its type
   rule when its first input's type is known.

Finally every graph output that is not known to be float32 is cast to it. A cast
is named ``<node>[_<output>]_amp_cast_<dtype>`` (the output's name for operators
that name their outputs, its index otherwise; nothing for variables) and one
cast per entry and dtype is shared by all its readers.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...base import BFLOAT16, MinimxError
from ...graph import Node, NodeEntry, topo_order
from ...graph.mxnet_names import entry_suffix

F32 = np.dtype(np.float32)
Key = tuple[int, int]


@dataclass(frozen=True)
class OpLists:
    """The operator names each rule applies to, and the names of nodes it skips."""

    target_ops: frozenset[str]
    fp32_ops: frozenset[str]
    widest_ops: frozenset[str]
    conditional: Mapping[str, Mapping[str, Sequence[str]]]   # op -> parameter -> values
    excluded: frozenset[str]


def _op_in(node: Node, names: Iterable[str] | Mapping) -> bool:
    """Whether the node's operator is among `names`, by its name or an alias."""
    opdef, _ = node.operator()
    return any(n in names for n in (opdef.name, *opdef.aliases))


@dataclass
class _Pass:
    lists: OpLists
    target: np.dtype
    data_names: frozenset[str]
    cast_optional_params: bool
    mirror: dict[int, Node] = field(default_factory=dict)
    fp32: dict[Key, NodeEntry] = field(default_factory=dict)
    low: dict[Key, NodeEntry] = field(default_factory=dict)

    def _of(self, dtype: np.dtype) -> dict[Key, NodeEntry]:
        return self.low if dtype == self.target else self.fp32

    def _mirror_entry(self, e: NodeEntry) -> NodeEntry:
        return NodeEntry(self.mirror[id(e.node)], e.index, e.version)

    def _cast(self, e: NodeEntry, dtype: np.dtype) -> NodeEntry:
        """The entry `e` cast to `dtype`, made once and shared."""
        known = self._of(dtype)
        if e.key() not in known:
            cast = Node.create("amp_cast", f"{e.node.name}{entry_suffix(e)}_amp_cast_{dtype}",
                               {"dtype": str(dtype)}, [self._mirror_entry(e)])
            known[e.key()] = NodeEntry(cast, 0, e.version)
        return known[e.key()]

    def _record_outputs(self, node: Node, new: Node, dtypes: Sequence[np.dtype | None]) -> None:
        for i, t in enumerate(dtypes):
            if t is not None and (t == self.target or t == F32):
                self._of(t)[(id(node), i)] = NodeEntry(new, i)

    def _infer_outputs(self, node: Node, first: np.dtype) -> tuple[list, list] | None:
        """The node's input and output types given its first input's, by its type rule
        (None if the rule refuses)."""
        opdef, params = node.operator()
        try:
            return opdef.infer_type(params, [first] + [None] * (len(node.inputs) - 1),
                                    [None] * node.num_outputs())
        except MinimxError:
            return None

    # -- the five kinds of node ---------------------------------------------------------
    def visit(self, node: Node) -> None:
        lists = self.lists
        new = node.with_inputs([])
        is_op, excluded = not node.is_variable, node.name in lists.excluded
        if (is_op and _op_in(node, lists.fp32_ops)) or excluded:
            self._to_fp32(node, new, cast_variables=False, keep=())
        elif is_op and _op_in(node, lists.target_ops):
            self._to_target(node, new)
        elif is_op and _op_in(node, lists.widest_ops):
            self._to_widest(node, new)
        elif is_op and self._conditional_fp32(node):
            self._to_fp32(node, new, cast_variables=True, keep=node.aux_indices())
        else:
            self._keep(node, new)
        self.mirror[id(node)] = new

    def _conditional_fp32(self, node: Node) -> bool:
        opdef, _ = node.operator()
        rules = next((self.lists.conditional[n] for n in (opdef.name, *opdef.aliases)
                      if n in self.lists.conditional), {})
        return any(node.attrs.get(param) in values for param, values in rules.items())

    def _to_fp32(self, node: Node, new: Node, cast_variables: bool, keep: Sequence[int]) -> None:
        self._record_outputs(node, new, [F32] * node.num_outputs())
        for i, e in enumerate(node.inputs):
            if e.key() in self.fp32:
                new.inputs.append(self.fp32[e.key()])
            elif (e.node.is_variable and not cast_variables) or i in keep:
                new.inputs.append(self._mirror_entry(e))
            else:
                new.inputs.append(self._cast(e, F32))

    def _to_target(self, node: Node, new: Node) -> None:
        inferred = self._infer_outputs(node, self.target)
        if inferred is None:
            raise MinimxError(f"{node.label}: cannot run in {self.target} (its type rule "
                              "refuses it); list it among fp32_ops")
        in_types, out_types = inferred
        self._record_outputs(node, new, out_types)
        mutable = node.aux_indices()
        for i, e in enumerate(node.inputs):
            optional = (self.cast_optional_params and e.node.is_variable
                        and e.node.name not in self.data_names)
            if e.key() in self.low:
                new.inputs.append(self.low[e.key()])
            elif optional or i in mutable or (in_types[i] is not None
                                               and in_types[i] != self.target):
                new.inputs.append(self._mirror_entry(e))
                if self.cast_optional_params and e.node.is_variable:
                    self.low[e.key()] = self._mirror_entry(e)
            else:
                new.inputs.append(self._cast(e, self.target))

    def _to_widest(self, node: Node, new: Node) -> None:
        if not node.inputs:
            raise MinimxError(f"{node.label} has no inputs; the symbol is malformed")
        if node.aux_indices():
            raise MinimxError(f"{node.label}: a widest-type operator with mutable inputs")
        keys = [e.key() for e in node.inputs]
        if not all(k in self.low or k in self.fp32 for k in keys):
            self._multicast(node, new)
            return
        widest = F32 if any(k in self.fp32 for k in keys) else self.target
        self._record_outputs(node, new, [widest] * node.num_outputs())
        known = self._of(widest)
        new.inputs += [known[e.key()] if e.key() in known else self._cast(e, widest)
                       for e in node.inputs]

    def _multicast(self, node: Node, new: Node) -> None:
        first = node.inputs[0]
        multicast = Node.create(
            "amp_multicast", f"{first.node.name}{entry_suffix(first)}_amp_multicast",
            {"num_outputs": str(len(node.inputs))},
            [self._mirror_entry(e) for e in node.inputs])
        new.inputs += [NodeEntry(multicast, i, e.version) for i, e in enumerate(node.inputs)]

    def _keep(self, node: Node, new: Node) -> None:
        if node.inputs:
            key = node.inputs[0].key()
            first = self.target if key in self.low else F32 if key in self.fp32 else None
            inferred = None if first is None else self._infer_outputs(node, first)
            if inferred is not None:
                self._record_outputs(node, new, inferred[1])
        new.inputs += [self._mirror_entry(e) for e in node.inputs]

    def head(self, e: NodeEntry) -> NodeEntry:
        return self.fp32[e.key()] if e.key() in self.fp32 else self._cast(e, F32)


def reduce_precision(outputs: Sequence[NodeEntry], lists: OpLists, target: np.dtype = BFLOAT16,
                     data_names: Iterable[str] = (), cast_optional_params: bool = False
                     ) -> list[NodeEntry]:
    """The heads of a new graph: `outputs`' graph with the casts inserted (the
    original graph is left as it is)."""
    rewrite = _Pass(lists, np.dtype(target), frozenset(data_names), cast_optional_params)
    for node in topo_order(outputs):
        rewrite.visit(node)
    return [rewrite.head(e) for e in outputs]
