"""MXNet's JSON graph format: writing, and loading with its legacy forms.

The format (nnvm ``saveload_json.cc``): ``nodes`` in topological order, each
with ``op`` (``"null"`` for variables), ``name``, string ``attrs``, ``inputs``
as ``[node_id, output_index, version]`` and optional ``subgraphs``;
``arg_nodes``, ``node_row_ptr``, ``heads`` and graph ``attrs`` holding
``mxnet_version``. Loading accepts files from MXNet 0.8 on: ``attr`` and
``param`` keys, two-field inputs, missing auxiliary variables, and upgrades
them by their ``mxnet_version`` as MXNet's ``legacy_json_util.cc`` does. A file may ask
for no more than it lists: a variadic operator's count must match its inputs,
and subgraphs nest at most `MAX_SUBGRAPH_DEPTH` levels.
"""
from __future__ import annotations

import json
from typing import Any

from ..attribute import HIDDEN_KEYS
from ..base import ArgumentTypeError, GraphFormatError, GraphOperatorError, OperatorError
from ..graph import Graph, Node, NodeEntry
from .register import set_input_var_init
from .symbol import Symbol

MXNET_VERSION = 10901  # files written here claim MXNet 1.9.1's format
# Partitioners nest one level, or two; a deeper file is refused rather than
# risking Python's recursion limit.
MAX_SUBGRAPH_DEPTH = 64
# The versions whose files MXNet's legacy_json_util.cc upgrades, each rule
# applying to files older than it.
_V0_9_0, _V0_9_4, _V0_9_5 = 900, 904, 905


def to_graph_dict(sym: Symbol, nested: bool = False) -> dict[str, Any]:
    """The JSON object of `sym` (subgraphs nested in their nodes). As MXNet writes
    a subgraph: its input variables are fresh (an auxiliary input's entry has
    version 0, not 1) and it carries no graph attrs."""
    g = Graph(sym.outputs)
    aux_inputs = set() if nested else {(g.node_id(n), i) for n in g.nodes
                                       for i in n.aux_indices()}
    nodes = []
    for nid, node in enumerate(g.nodes):
        entry: dict[str, Any] = {"op": node.op or "null", "name": node.name}
        if node.attrs:
            entry["attrs"] = dict(sorted(node.attrs.items()))
        entry["inputs"] = [[g.node_id(e.node), e.index, int((nid, i) in aux_inputs)]
                           for i, e in enumerate(node.inputs)]
        if node.subgraphs:
            entry["subgraphs"] = [to_graph_dict(s, nested=True) for s in node.subgraphs]
        nodes.append(entry)
    graph = {
        "nodes": nodes,
        "arg_nodes": g.input_ids,
        "node_row_ptr": g.entry_ptr,
        "heads": [[g.node_id(e.node), e.index, 0] for e in sym.outputs],
    }
    return graph if nested else {**graph, "attrs": {"mxnet_version": ["int", MXNET_VERSION]}}


def to_json(sym: Symbol) -> str:
    """`sym` as MXNet writes it, byte for byte (dmlc's JSONWriter layout)."""
    return _write(to_graph_dict(sym), 0, _GRAPH)


# dmlc's JSONWriter puts a structure (the graph, a node) on several lines, a map
# when it has more than one entry, and an array when it has more than ten
# elements or its elements are structures; the rest stays on one line.
# Elements are separated by ", ", before the line break when on several lines.
_GRAPH, _NODE, _MAP, _ARRAY = "graph", "node", "map", "array"
_FIELD_KIND = {"nodes": _NODE, "subgraphs": _GRAPH, "attrs": _MAP}


def _write(value: Any, depth: int, kind: str) -> str:
    if isinstance(value, dict):
        items = [f"{json.dumps(k, ensure_ascii=False)}: "
                 f"{_write(v, depth + 1, _FIELD_KIND.get(k, _ARRAY) if kind != _MAP else _ARRAY)}"
                 for k, v in value.items()]
        return _join("{", items, "}", depth, kind != _MAP or len(items) > 1)
    if isinstance(value, list):
        structures = kind in (_NODE, _GRAPH)
        items = [_write(v, depth + 1, kind if structures else _ARRAY) for v in value]
        return _join("[", items, "]", depth, structures or len(items) > 10)
    return json.dumps(value, ensure_ascii=False)


def _join(open_: str, items: list[str], close: str, depth: int, multi_line: bool) -> str:
    if not multi_line or not items:
        return open_ + ", ".join(items) + close
    pad = "\n" + "  " * (depth + 1)
    return open_ + pad + (", " + pad).join(items) + "\n" + "  " * depth + close


def load_json(text: str | bytes) -> Symbol:
    """The Symbol of an MXNet JSON graph; `GraphFormatError` if malformed."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise ArgumentTypeError(f"load_json takes the JSON text, a str, not "
                                f"{type(text).__name__}")
    try:
        obj = json.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:
        raise GraphFormatError(f"not valid JSON: {exc}") from None
    return from_graph_dict(obj)


def load(fname: str) -> Symbol:
    """The Symbol saved in file `fname` (``prefix-symbol.json``)."""
    try:
        with open(fname, "rb") as f:
            text = f.read()
    except OSError as exc:
        raise GraphFormatError(f"cannot read symbol file {fname!r}: {exc}") from None
    return load_json(text)


def _fail(where: str, what: str) -> GraphFormatError:
    return GraphFormatError(f"{where}: {what}")


def _version(obj: dict) -> int:
    attrs = obj.get("attrs") or {}
    value = attrs.get("mxnet_version") if isinstance(attrs, dict) else None
    if isinstance(value, list) and len(value) == 2:
        value = value[1]
    if value is None:
        return 800  # no version: MXNet 0.8.0
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail("graph attrs", f"bad mxnet_version {value!r}: expected an integer "
                                   f"such as {MXNET_VERSION}")
    return value


def _entry(raw: Any, nodes: list[Node], limit: int, where: str) -> NodeEntry:
    if (not isinstance(raw, list) or len(raw) not in (2, 3)
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in raw)):
        raise _fail(where, f"an entry must be [node_id, index(, version)], got {raw!r}")
    nid, index = raw[0], raw[1]
    if not 0 <= nid < limit:
        raise _fail(where, f"entry {raw!r} refers to node {nid}, but only nodes 0..{limit - 1} "
                           "may be referred to here")
    if not 0 <= index < nodes[nid].num_outputs():
        raise _fail(where, f"entry {raw!r}: node {nodes[nid].label} has "
                           f"{nodes[nid].num_outputs()} outputs")
    return NodeEntry(nodes[nid], index, raw[2] if len(raw) == 3 else 0)


def _node_attrs(raw: dict, where: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for key in ("param", "attr", "attrs"):
        value = raw.get(key) or {}
        if not isinstance(value, dict):
            raise _fail(where, f"{key!r} must be an object")
        attrs.update({str(k): v if isinstance(v, str) else json.dumps(v)
                      for k, v in value.items()})
    return attrs


# An attribute of an operator's input given to the operator (``weight_lr_mult``):
# its key, the input's name and the key it gets on that input (``__lr_mult__``).
_InputKey = tuple[str, str, str]


def _pop_hidden_keys(attrs: dict[str, str], is_variable: bool) -> list[_InputKey]:
    """MXNet's FixParsing: ``lr_mult`` becomes ``__lr_mult__``; an operator's
    ``weight_lr_mult`` is taken out, to move onto its input ``weight``. A
    variable keeps ``weight_lr_mult`` as it is."""
    moved: list[_InputKey] = []
    for key in list(attrs):
        hidden = next((h for h in HIDDEN_KEYS if key.endswith(h)), None)
        if hidden is None:
            continue
        if key == hidden:
            attrs[f"__{hidden}__"] = attrs.pop(key)
        elif not is_variable and len(key) > len(hidden) + 1:
            # MXNet cuts one separator character, whichever it is.
            moved.append((key, key[:-len(hidden) - 1], f"__{hidden}__"))
    return moved


def _move_input_keys(node: Node, moved: list[_InputKey], attrs: dict[str, str]) -> None:
    """Put each moved key on its input variable. As in MXNet, one that names no
    variable input stays on the node, for the operator's parser to judge."""
    names = node.input_names()[:len(node.inputs)]
    kept = False
    for key, input_name, hidden in moved:
        source = node.inputs[names.index(input_name)].node if input_name in names else None
        if source is not None and source.is_variable:
            source.attrs[hidden] = attrs[key]
        else:
            node.attrs[key] = attrs[key]
            kept = True
    if kept:
        node.reparse()


def _drop_old_argmax_axis(op: str, attrs: dict[str, str]) -> None:
    """Before MXNet 0.9.5, argmax/argmin's ``axis=-1`` meant "no axis": reduce
    the whole array, not the last axis."""
    if op in ("argmax", "argmin") and attrs.get("axis") == "-1":
        del attrs["axis"]


def from_graph_dict(obj: Any) -> Symbol:
    """The Symbol of a parsed JSON graph object."""
    _check_nesting(obj)
    return _graph(obj)


def _check_nesting(obj: Any) -> None:
    """Refuse subgraphs nested deeper than `MAX_SUBGRAPH_DEPTH`, before building any."""
    level: list[tuple[Any, str | None]] = [(obj, "")]  # the graphs of one depth, and their holders
    for _ in range(MAX_SUBGRAPH_DEPTH + 1):
        level = [(sub, node.get("name")) for graph, _ in level
                 if isinstance(graph, dict) and isinstance(graph.get("nodes"), list)
                 for node in graph["nodes"]
                 if isinstance(node, dict) and isinstance(node.get("subgraphs"), list)
                 for sub in node["subgraphs"]]
        if not level:
            return
    raise _fail(f"node {level[0][1]!r}", f"its subgraph is nested {MAX_SUBGRAPH_DEPTH + 1} "
                                         f"levels deep; minimx loads at most {MAX_SUBGRAPH_DEPTH}")


def _graph(obj: Any, nested: bool = False) -> Symbol:
    if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list):
        raise _fail("graph", "expected an object with a 'nodes' list")
    # A subgraph has no version of its own; MXNet upgrades only the outer graph.
    version = MXNET_VERSION if nested else _version(obj)
    nodes: list[Node] = []
    for i, raw in enumerate(obj["nodes"]):
        nodes.append(_node(raw, i, nodes, version))
    heads = obj.get("heads")
    if not isinstance(heads, list) or not heads:
        raise _fail("graph", "'heads' must be a non-empty list of entries")
    return Symbol([_entry(h, nodes, len(nodes), "heads") for h in heads])


def _node(raw: Any, i: int, nodes: list[Node], version: int) -> Node:
    """Node `i` of a file, reading the nodes before it."""
    if not isinstance(raw, dict) or not isinstance(raw.get("op"), str) \
            or not isinstance(raw.get("name"), str):
        raise _fail(f"node {i}", "expected an object with string 'op' and 'name'")
    where = f"node {i} {raw['name']!r}"
    attrs = _node_attrs(raw, where)
    raw_inputs = raw.get("inputs", [])
    subgraphs = raw.get("subgraphs", [])
    if not isinstance(raw_inputs, list) or not isinstance(subgraphs, list):
        raise _fail(where, "'inputs' and 'subgraphs' must be lists")
    inputs = [_entry(e, nodes, i, f"{where} input") for e in raw_inputs]
    is_variable = raw["op"] == "null"
    moved = _pop_hidden_keys(attrs, is_variable) if version < MXNET_VERSION else []
    if version < _V0_9_5:
        _drop_old_argmax_axis(raw["op"], attrs)
    inner = [_subgraph(s, where) for s in subgraphs]
    moved_keys = {key for key, _, _ in moved}
    try:
        node = Node.create(raw["op"], raw["name"],
                           {k: v for k, v in attrs.items() if k not in moved_keys}, inputs, inner)
        if not node.is_variable:
            _complete_inputs(node, version, where)
            _move_input_keys(node, moved, attrs)
            if version < _V0_9_4:
                set_input_var_init(node)
            node.num_outputs()  # a bad count of outputs is found here, naming the node
    except OperatorError as exc:
        raise GraphOperatorError(f"{where}: {exc}") from None
    return node


def _subgraph(obj: Any, where: str) -> Symbol:
    try:
        return _graph(obj, nested=True)
    except GraphFormatError as exc:  # GraphOperatorError stays one
        raise type(exc)(f"{where} subgraph: {exc}") from None


def _complete_inputs(node: Node, version: int, where: str) -> None:
    """Check the inputs of an operator node; add what older files leave out."""
    opdef, params = node.operator()
    count_param = opdef.variadic
    # Checked before anything lists the inputs: a count is what a file asks
    # minimx to build, and it may ask for no more inputs than it lists.
    if (count_param is not None and opdef.counts_inputs(params)
            and params[count_param] != len(node.inputs)):
        raise _fail(where, f"{node.label}: {count_param}={params[count_param]}, but "
                           f"the node lists {len(node.inputs)} inputs (a file must list "
                           "every input of a variadic operator)")
    if version < _V0_9_0:
        _add_missing_inputs(node)
    names = node.input_names()
    if len(node.inputs) != len(names):
        raise _fail(where, f"{node.label} has {len(node.inputs)} inputs, the operator takes "
                           f"{len(names)} ({', '.join(names)})")


def _add_missing_inputs(node: Node) -> None:
    """Files older than MXNet 0.9 did not store auxiliary inputs; MXNet creates
    them, carrying the node's attributes."""
    for input_name in node.input_names()[len(node.inputs):]:
        node.inputs.append(NodeEntry(Node(None, f"{node.name}_{input_name}", node.attrs), 0))
