"""`mx.viz`: MXNet's `print_summary` table and `plot_network` graph of a symbol.

Needs: a Symbol (its JSON, and shape / dtype inference over its internals).
Guarantees: `print_summary` prints what MXNet 1.9's prints for the same
symbol and shapes - the same columns, rows, parameter counts and total,
quirks included (parameters are counted for Convolution, FullyConnected,
BatchNorm and Embedding only, from the channels of the previous layers; a
node whose outputs are numbered shows no shape); `summary` returns that text.
`plot_network` returns the `graphviz.Digraph` MXNet's returns (same nodes,
labels, colours and edges), except that an edge's label is the output it
carries (MXNet's: the node's first output) and a subgraph node (a partitioned
graph's ``_sg_dnnl``, ``_subgraph_op``...) is drawn as a cluster holding its
inner graph, filled with its backend's colour.

>>> import minimx as mx
>>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc')
>>> mx.viz.summary(fc, shape={'data': (1, 8)}).splitlines()[5].split()
['fc(FullyConnected)', '4', '36', 'data']
"""
from __future__ import annotations

import functools
import json
import math
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .base import MinimxError, ShapeError
from .symbol import Symbol

COLUMNS = ("Layer (type)", "Output Shape", "Param #", "Previous Layer")
POSITIONS = (.44, .64, .74, 1.)
# MXNet's colour map, in its order.
COLOURS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69",
           "#fccde5")
NODE_ATTRS = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
              "style": "filled"}
WEIGHT_LIKE = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
               "_running_var", "_running_mean")
# Subgraph operators by name prefix, first match: (backend, cluster colour); a
# fused chain inside a DNNL subgraph is paler than the subgraph.
BACKENDS = (("_sg_dnnl_", "DNNL fused", "#e4eef8"), ("_sg_mkldnn_", "DNNL fused", "#e4eef8"),
            ("_sg_dnnl", "DNNL", "#c6dbef"), ("_subgraph_op", "default", "#c7e9c0"))
OTHER_BACKEND = ("subgraph", "#e0e0e0")


def _ints(text: str) -> list[str]:
    """The numbers of a tuple attribute (``'(3, 3)'`` -> ``['3', '3']``)."""
    return re.findall(r"\d+", text)


def _check_symbol(symbol: object, what: str) -> None:
    if not isinstance(symbol, Symbol):
        raise MinimxError(f"{what}: symbol must be a Symbol, got {type(symbol).__name__}")


def _internal_values(symbol: Symbol, rule: str, given: Mapping[str, Any]
                     ) -> list[tuple[str, Any]]:
    """(name, shape) (`rule` 'shape') or (name, dtype) ('type') of each output of the
    symbol's internals, in order, inferred from the `given` inputs'."""
    internals = symbol.get_internals()
    infer = internals.infer_shape if rule == "shape" else internals.infer_type
    _, outs, _ = infer(**given)
    if outs is None:
        raise ShapeError(f"the input {rule}s {dict(given)} do not determine every {rule} "
                         "of the symbol")
    return list(zip(internals.list_outputs(), outs, strict=True))


def _node_values(symbol: Symbol, rule: str, given: Mapping[str, Any]) -> list[list[Any]]:
    """Per node of the symbol's JSON, each output's shape (`rule` 'shape') or dtype
    ('type'), inferred from the `given` inputs'."""
    outs = [value for _, value in _internal_values(symbol, rule, given)]
    per_node, start = [], 0
    for node in symbol._topo():   # the internals' order, and the JSON's
        per_node.append(list(outs[start:start + node.num_visible_outputs()]))
        start += node.num_visible_outputs()
    return per_node


# -- print_summary -------------------------------------------------------------------------
def _row(fields: Sequence[object], stops: Sequence[int]) -> str:
    """Fields cut to and padded out to their column stops."""
    line = ""
    for field, stop in zip(fields, stops, strict=True):
        line = (line + str(field))[:stop]
        line += " " * (stop - len(line))
    return line


def _param_count(node: Mapping[str, Any], channels: int, out_shape: Sequence[int] | None
                 ) -> int:
    """MXNet's count: from the previous layers' `channels`, for four operators only."""
    op, attrs = node["op"], node.get("attrs", {})
    has_bias = attrs.get("no_bias") != "True"
    if op == "Convolution":
        filters = int(attrs["num_filter"])
        count = channels * filters // int(attrs.get("num_group", "1"))
        return count * math.prod(int(k) for k in _ints(attrs["kernel"])) + \
            (filters if has_bias else 0)
    if op == "FullyConnected":
        return (channels + has_bias) * int(attrs["num_hidden"])
    if op == "BatchNorm" and out_shape is not None:
        return int(out_shape[1]) * 2
    if op == "Embedding":
        return int(attrs["input_dim"]) * int(attrs["output_dim"])
    return 0


def _summary_shape(shapes: Mapping[str, tuple[int, ...]] | None, node: Mapping[str, Any]
                   ) -> tuple[int, ...] | None:
    """A node's shape as MXNet's table finds it: under ``<name>_output`` (or a variable's
    name), so a node whose outputs are numbered (``_output0``...) or otherwise named has
    none, and neither counts channels nor shows a shape."""
    key = node["name"] if node["op"] == "null" else node["name"] + "_output"
    return None if shapes is None else shapes.get(key)


def summary(symbol: Symbol, shape: Mapping[str, Sequence[int]] | None = None,
            line_length: int = 120, positions: Sequence[float] = POSITIONS) -> str:
    """The text `print_summary` prints (each line ending in a newline)."""
    _check_symbol(symbol, "print_summary")
    # by output name, as MXNet looks them up (of nodes sharing a name, the last one's)
    shapes = None if shape is None else dict(_internal_values(symbol, "shape", shape))
    conf = json.loads(symbol.tojson())
    nodes = conf["nodes"]
    # MXNet reads the first head entry ([node, index, version]) as a set of node
    # ids, so node 0 (the data input) counts as a layer: kept for the same table.
    layer_ids = set(conf["heads"][0])
    stops = ([int(line_length * p) for p in positions] if positions[-1] <= 1
             else [int(p) for p in positions])
    lines = ["_" * line_length, _row(COLUMNS, stops), "=" * line_length]
    total = 0
    for i, node in enumerate(nodes):
        if node["op"] == "null" and i > 0:
            continue
        previous, channels = [], 0
        for source, *_ in node["inputs"]:
            before = nodes[source]
            if before["op"] == "null" and source not in layer_ids:
                continue
            previous.append(before["name"])
            dims = (_summary_shape(shapes, before) or ())[1:]
            # MXNet fails on a one-axis input (it has no channels): counted as none
            channels += int(dims[0]) if dims else 0
        out_shape = _summary_shape(shapes, node)
        params = _param_count(node, channels, out_shape)
        total += params
        lines.append(_row([f"{node['name']}({node['op']})",
                           "x".join(map(str, out_shape[1:] if out_shape else ())),
                           params, previous[0] if previous else ""], stops))
        lines += [_row(["", "", "", name], stops) for name in previous[1:]]
        lines.append(("=" if i == len(nodes) - 1 else "_") * line_length)
    lines += [f"Total params: {total}", "_" * line_length]
    return "".join(line + "\n" for line in lines)


def print_summary(symbol: Symbol, shape: Mapping[str, Sequence[int]] | None = None,
                  line_length: int = 120, positions: Sequence[float] = POSITIONS) -> None:
    """Print each layer's type, output shape, parameter count and previous layers,
    then the total, as MXNet 1.9's `mx.viz.print_summary` does. `shape` gives the
    input shapes (without it, shapes are blank and fewer parameters are counted);
    `positions` are the column stops, as fractions of `line_length` or in characters."""
    print(summary(symbol, shape, line_length, positions), end="")


# -- plot_network --------------------------------------------------------------------------
def _label_and_colour(node: Mapping[str, Any]) -> tuple[str, str]:
    """MXNet's label and fill colour of an operator node."""
    op, name, attrs = node["op"], node["name"], node.get("attrs", {})
    stride = "x".join(_ints(attrs["stride"])) if "stride" in attrs else "1"
    if op == "Convolution":
        kernel = "x".join(_ints(attrs["kernel"]))
        return f"Convolution\n{kernel}/{stride}, {attrs['num_filter']}", COLOURS[1]
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs['num_hidden']}", COLOURS[1]
    if op == "BatchNorm":
        return name, COLOURS[3]
    if op in ("Activation", "LeakyReLU"):
        act = attrs.get("act_type", "Leaky" if op == "LeakyReLU" else "")
        return f"{op}\n{act}", COLOURS[2]
    if op == "Pooling":
        kernel = "x".join(_ints(attrs["kernel"])) if "kernel" in attrs else "[]"
        return f"Pooling\n{attrs['pool_type']}, {kernel}/{stride}", COLOURS[4]
    if op in ("Concat", "Flatten", "Reshape"):
        return name, COLOURS[5]
    if op == "Softmax":
        return name, COLOURS[6]
    return attrs["op_type"] if op == "Custom" else name, COLOURS[7]


def backend_of(op: str) -> tuple[str, str]:
    """(backend, cluster colour) of a subgraph operator."""
    return next(((backend, colour) for prefix, backend, colour in BACKENDS
                 if op.startswith(prefix)), OTHER_BACKEND)


# A drawn producer of an entry: (graphviz node name, edge label), or None when hidden.
Ref = tuple[str, str] | None
EdgeLabel = Callable[[int, int], str]   # (node index, output index) -> the edge's label


def _same(ref: Ref, k: int) -> Ref:
    """A variable's only output."""
    return ref


class _Plot:
    """Draws a symbol's JSON graph (and the graphs inside subgraph nodes) on a Digraph."""

    def __init__(self, node_attrs: Mapping[str, str], hide_weights: bool,
                 edge_label: EdgeLabel) -> None:
        self.node_attrs = {**NODE_ATTRS, **node_attrs}
        self.hide_weights = hide_weights
        self.edge_label = edge_label   # of a top-level node's output, for its edges
        # (tail, head, label): drawn after every node, as MXNet orders its DOT source.
        self.edges: list[tuple[str, str, str]] = []

    def graph(self, target: Any, nodes: list[dict], prefix: str,
              outer: Sequence[Ref]) -> list[Callable[[int], Ref]]:
        """Draw `nodes` on `target` (names prefixed by `prefix`); a variable of an
        inner graph is the producer `outer` gives for its position. Returns, per
        node, its output k's drawn producer."""
        refs: list[Callable[[int], Ref]] = []
        variables = 0
        for nid, node in enumerate(nodes):
            if node["op"] == "null":
                ref = outer[variables] if prefix else self._variable(target, nid, node)
                refs.append(functools.partial(_same, ref))
                variables += 1
                continue
            inputs = [refs[src](index) for src, index, *_ in node["inputs"]]
            if node.get("subgraphs"):
                refs.append(self._cluster(target, nid, node, prefix, inputs))
                continue
            name = prefix + node["name"]
            label, colour = _label_and_colour(node)
            target.node(name=name, label=label, **{**self.node_attrs, "fillcolor": colour})
            if node["op"] == "_contrib_BilinearResize2D":
                inputs = inputs[:1]   # as MXNet: the data, not the `like` input
            self.edges += [(name, ref[0], ref[1]) for ref in inputs if ref is not None]
            refs.append(functools.partial(self._output, name, prefix, nid))
        return refs

    def _output(self, name: str, prefix: str, nid: int, k: int) -> Ref:
        return name, self._label(prefix, nid, k)

    def _label(self, prefix: str, nid: int, k: int) -> str:
        """Edges inside a subgraph have no label (its entries are not inferred)."""
        return "" if prefix else self.edge_label(nid, k)

    def _variable(self, target: Any, nid: int, node: Mapping[str, Any]) -> Ref:
        name = node["name"]
        if name.endswith(WEIGHT_LIKE):
            # Drawn by no node; shown (as graphviz's default oval) unless hidden.
            return None if self.hide_weights else (name, self.edge_label(nid, 0))
        target.node(name=name, label=name,
                    **{**self.node_attrs, "shape": "oval", "fillcolor": COLOURS[0]})
        return name, self.edge_label(nid, 0)

    def _cluster(self, target: Any, nid: int, node: Mapping[str, Any], prefix: str,
                 inputs: Sequence[Ref]) -> Callable[[int], Ref]:
        """A subgraph node as a cluster of its inner graph; its output k is the
        inner graph's head k."""
        backend, colour = backend_of(node["op"])
        name = prefix + node["name"]
        inner = node["subgraphs"][0]
        with target.subgraph(name=f"cluster_{name}") as cluster:
            cluster.attr(label=f"{node['name']} ({node['op']}, {backend})", style="filled",
                         fillcolor=colour, color="#505050")
            refs = self.graph(cluster, inner["nodes"], f"{name}/", inputs)
        heads = [refs[src](index) for src, index, *_ in inner["heads"]]
        return lambda k: None if heads[k] is None else (heads[k][0],
                                                        self._label(prefix, nid, k))


def plot_network(symbol: Symbol, title: str = "plot", save_format: str = "pdf",
                 shape: Mapping[str, Sequence[int]] | None = None,
                 dtype: Mapping[str, Any] | None = None,
                 node_attrs: Mapping[str, str] | None = None,
                 hide_weights: bool = True) -> Any:
    """The graph of `symbol` as a `graphviz.Digraph` named `title` (render it with
    ``.render()``, in `save_format`), as MXNet 1.9's `mx.viz.plot_network` draws it:
    an edge from each operator to each input, labelled with the tensor's shape
    (without the batch axis) given input `shape`s, and its type given `dtype`s;
    `node_attrs` override graphviz node attributes; `hide_weights` leaves out
    weights, biases and BatchNorm's parameters and statistics. Subgraph nodes
    are clusters holding their inner graph, coloured by backend."""
    # Imported here: graphviz is only needed for drawing.
    from graphviz import Digraph

    _check_symbol(symbol, "plot_network")
    shapes = None if shape is None else _node_values(symbol, "shape", shape)
    dtypes = None if dtype is None else _node_values(symbol, "type", dtype)
    nodes = json.loads(symbol.tojson())["nodes"]
    names = [n["name"] for n in nodes]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, this "
                      "may result in cyclic graph. Repeated names: " + ",".join(repeated),
                      RuntimeWarning, stacklevel=2)

    def edge_label(nid: int, k: int) -> str:
        label = "" if shapes is None else "x".join(str(d) for d in shapes[nid][k][1:])
        return label if dtypes is None else f"{label}({np.dtype(dtypes[nid][k]).name})"

    dot = Digraph(name=title, format=save_format)
    plot = _Plot(node_attrs or {}, hide_weights, edge_label)
    plot.graph(dot, nodes, "", ())
    for tail, head, label in plot.edges:
        dot.edge(tail_name=tail, head_name=head, dir="back", arrowtail="open", label=label)
    return dot


__all__ = ["plot_network", "print_summary", "summary"]
