"""Graph nodes and entries: the IR shared by Symbols, passes and executors.

A `Node` is an operator application (or a variable when it has no op); a
`NodeEntry` names one output of a node. Symbols are lists of entries; the
`Graph` of `graph.indexed` is a topologically ordered view of the nodes they
reach.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from ..base import MinimxError, OperatorError, node_label
from ..ops.params import Params
from ..ops.registry import OpDef, get_op


class Node:
    """One operator application, or a variable (``opdef is None``)."""

    __slots__ = ("opdef", "name", "attrs", "inputs", "subgraphs", "params")

    def __init__(self, opdef: OpDef | None, name: str, attrs: Mapping[str, str] | None = None,
                 inputs: Iterable[NodeEntry] = (), subgraphs: Iterable = ()) -> None:
        if opdef is not None and opdef.shape_from_values:
            raise OperatorError(f"{node_label(name, opdef.name)}: cannot be a graph node: its "
                                "output shape depends on its input values, which shape "
                                "inference cannot know before running; call it through mx.nd")
        self.opdef = opdef
        self.name = name
        self.attrs: dict[str, str] = {k: str(v) for k, v in (attrs or {}).items()}
        self.inputs: list[NodeEntry] = list(inputs)
        self.subgraphs: tuple = tuple(subgraphs)
        self.params: Params | None = None
        self.reparse()

    @classmethod
    def create(cls, op_name: str | None, name: str, attrs: Mapping[str, str] | None = None,
               inputs: Iterable[NodeEntry] = (), subgraphs: Iterable = ()) -> Node:
        """A node of the operator called `op_name` (None or "null": a variable)."""
        opdef = None if op_name in (None, "null") else get_op(op_name)
        return cls(opdef, name, attrs, inputs, subgraphs)

    def with_inputs(self, inputs: Iterable[NodeEntry]) -> Node:
        """A copy of this node reading `inputs` (attributes copied, not parsed again)."""
        node = Node.__new__(Node)
        node.opdef, node.name, node.params = self.opdef, self.name, self.params
        node.attrs = dict(self.attrs)
        node.inputs = list(inputs)
        node.subgraphs = self.subgraphs
        return node

    def reparse(self) -> None:
        """Parse the attributes again (after they changed)."""
        if self.opdef is not None:
            self.params = self.opdef.parse_params(self.attrs, self.name, self.subgraphs)

    @property
    def op(self) -> str | None:
        """The operator's name, or None for a variable (as selectors see it)."""
        return None if self.opdef is None else self.opdef.name

    @property
    def is_variable(self) -> bool:
        return self.opdef is None

    @property
    def label(self) -> str:
        return node_label(self.name, self.op)

    def operator(self) -> tuple[OpDef, Params]:
        """The operator and its parsed parameters, for code that reads an
        operator node; a variable has neither (MinimxError)."""
        if self.opdef is None or self.params is None:
            raise MinimxError(f"{self.label}: a variable has no operator")
        return self.opdef, self.params

    def _operator_outputs(self) -> tuple[str, ...]:
        """The operator's output names, listed once per parse: every entry that
        reads the node asks for them, and a split may have thousands."""
        opdef, params = self.operator()
        names = params.cache.get("output_names")
        if names is None:
            names = params.cache["output_names"] = tuple(opdef.output_names(params))
        return names

    def num_outputs(self) -> int:
        return 1 if self.opdef is None else len(self._operator_outputs())

    def num_visible_outputs(self) -> int:
        if self.opdef is None or self.opdef.visible_outputs is None:
            return self.num_outputs()   # from the cached names (a split may have thousands)
        return self.opdef.visible_outputs(self.operator()[1])

    def input_names(self) -> list[str]:
        if self.opdef is None:
            return []
        opdef, params = self.operator()
        return opdef.input_names(params)

    def output_names(self) -> list[str]:
        return [self.name] if self.opdef is None else list(self._operator_outputs())

    def aux_indices(self) -> list[int]:
        if self.opdef is None:
            return []
        opdef, params = self.operator()
        return opdef.aux_indices(params)

    def entry_name(self, index: int) -> str:
        """The name MXNet gives output `index` (``conv0_output``; a variable's own name)."""
        if self.opdef is None:
            return self.name
        return f"{self.name}_{self._operator_outputs()[index]}"

    def __repr__(self) -> str:
        return f"<Node {self.label}>"


class NodeEntry(NamedTuple):
    """Output `index` of `node`; `version` is kept only for MXNet's JSON."""

    node: Node
    # nnvm's name for the output number; it shadows tuple.index, which no caller uses
    index: int = 0  # type: ignore[assignment]
    version: int = 0

    def key(self) -> tuple[int, int]:
        """Identity of the entry (version ignored)."""
        return (id(self.node), self.index)


def topo_order(outputs: Iterable[NodeEntry]) -> list[Node]:
    """Nodes reachable from `outputs` in nnvm's DFS post-order (inputs in order).

    Iterative, so that 10,000-node chains do not hit Python's recursion limit.
    """
    order: list[Node] = []
    seen: set[int] = set()
    for head in outputs:
        if id(head.node) in seen:
            continue
        seen.add(id(head.node))
        stack: list[tuple[Node, int]] = [(head.node, 0)]
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                child = node.inputs[i].node
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                stack.pop()
                order.append(node)
    return order


def rewritten(outputs: Iterable[NodeEntry],
              replace: Callable[[Node, list[NodeEntry]], list[NodeEntry] | None]
              ) -> list[NodeEntry]:
    """`outputs` rebuilt node by node in topological order: `replace(node, inputs)`
    (its inputs as rebuilt) gives the entries a reader of its outputs reads instead
    (output k: the k-th), or None, and the node is copied onto those inputs
    (variables kept)."""
    made: dict[int, Node | list[NodeEntry]] = {}   # a copy, or the entries read instead

    def output(e: NodeEntry) -> NodeEntry:
        m = made[id(e.node)]
        return m[e.index] if isinstance(m, list) else NodeEntry(m, e.index, e.version)

    outputs = list(outputs)
    for node in topo_order(outputs):
        inputs = [output(e) for e in node.inputs]
        replaced = replace(node, inputs)
        made[id(node)] = (replaced if replaced is not None else
                          node if node.is_variable else node.with_inputs(inputs))
    return [output(e) for e in outputs]


def read_through(outputs: Iterable[NodeEntry], passes: Callable[[Node], bool]
                 ) -> list[NodeEntry]:
    """`outputs` with every node for which `passes` holds read through: a reader of its
    output k reads its input k instead (identities, casts). Other nodes are copied
    where an input changed; `outputs` are returned as they are when nothing passes. A
    node whose output past its inputs is read (Dropout's mask) stays."""
    outputs = list(outputs)
    order = topo_order(outputs)
    highest: dict[int, int] = {}   # node -> the highest output index read of it
    for e in [*outputs, *(e for node in order for e in node.inputs)]:
        highest[id(e.node)] = max(highest.get(id(e.node), 0), e.index)
    bypassed = {id(node) for node in order if not node.is_variable
                and highest[id(node)] < len(node.inputs) and passes(node)}
    if not bypassed:
        return outputs
    return rewritten(outputs, lambda node, inputs: inputs if id(node) in bypassed else None)
