"""`export_model`: a minimx (MXNet) symbol and its parameters as an ONNX file.

The export infers every shape and dtype from the given input shapes, translates
the graph node by node (the `registry` that the modules of translations fill), and
only when every node has a translation builds the ONNX model (`proto`, the one module
that needs the `onnx` package) and writes it.
Names follow MXNet 1.9's exporter: graph inputs and initializers keep the variables'
names, and a node's output is named after the node (``fc1`` for ``fc1_output``;
``split0``, ``split1`` for a split's).
"""
from __future__ import annotations

import importlib.util
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from ..base import MinimxError, OperatorError, ShapeError
from ..graph.indexed import Graph
from ..graph.infer import infer_dtypes, infer_shapes
from ..graph.node import Node
from ..ndarray import NDArray
from ..ndarray import load as load_arrays
from ..symbol import Symbol
from ..symbol import load as load_symbol

# each module fills TRANSLATIONS when imported
from . import (  # noqa: F401
    attention,
    detection,
    elementwise,
    layers,
    ordering,
    products,
    recurrent,
    reductions,
    tensors,
)
from .emitter import Emitter, Site, Unsupported
from .registry import LABEL_INPUTS, TRANSLATIONS, refusal

_log = logging.getLogger(__name__)

Dims = Sequence[int | str | None]


class OnnxNotInstalledError(MinimxError, ImportError):
    """ONNX export was asked for, and the optional `onnx` package is missing."""


@dataclass
class Exported:
    """The translated graph: what `proto` turns into an ONNX model."""

    emitter: Emitter
    inputs: list[tuple[str, np.dtype, Dims]]     # (name, dtype, dims) of the graph inputs
    outputs: list[tuple[str, np.dtype, Dims]]


def export_model(sym: Symbol | str, params: Any,
                 in_shapes: Sequence[Sequence[int] | None] | None = None,
                 in_types: Any = np.float32, onnx_file_path: str = "model.onnx",
                 verbose: bool = False, dynamic: bool = False,
                 dynamic_input_shapes: Sequence[Dims] | None = None,
                 run_shape_inference: bool = False, input_type: Any = None,
                 input_shape: Sequence[Sequence[int] | None] | None = None) -> str:
    """Write `sym` with `params` to `onnx_file_path` as an ONNX model; returns the path.

    As MXNet 1.9's ``mx.onnx.export_model``: `sym` is a Symbol or the path of a
    ``-symbol.json``; `params` a dict of arrays (keys with or without ``arg:`` /
    ``aux:``), a list ``[arg_params, aux_params]``, or the path of a ``.params`` file.
    `in_shapes` gives one shape per input that `params` does not hold, in
    ``sym.list_inputs()`` order (None: left to shape inference), and `in_types`
    their dtypes (one for all, or a list). With `dynamic`, the inputs' dimensions
    are left free (or set by `dynamic_input_shapes`, ``None`` or a name for a free
    dimension); the shapes in `in_shapes` still resolve Reshape's special codes.
    `input_type` and `input_shape` are the old names of `in_types` and `in_shapes`.
    Before anything is written, an `OperatorError` lists every node that has no ONNX
    form. `verbose` logs each node converted; `run_shape_inference` adds ONNX's
    inferred shapes to the file (kept without them if ONNX's inference fails).
    """
    _require_onnx()
    in_types = in_types if input_type is None else input_type
    in_shapes = in_shapes if input_shape is None else input_shape
    if dynamic_input_shapes is not None and not dynamic:
        raise MinimxError("export_model: dynamic_input_shapes is given; pass dynamic=True "
                          "to use it")
    symbol = load_symbol(sym) if isinstance(sym, str) else sym
    if not isinstance(symbol, Symbol):
        raise MinimxError(f"export_model: sym must be a Symbol or the path of a symbol file, "
                          f"not {type(sym).__name__}")
    exported = translate(symbol, _params_dict(params), in_shapes, in_types, dynamic, verbose)
    if dynamic:
        exported.inputs = _free_inputs(exported.inputs, dynamic_input_shapes)
    from . import proto  # needs the optional onnx package, checked above
    proto.save(proto.to_bytes(exported, run_shape_inference), onnx_file_path)
    _log.info("exported ONNX file %s (inputs %s)", onnx_file_path, in_shapes)
    return onnx_file_path


def _require_onnx() -> None:
    if importlib.util.find_spec("onnx") is None:
        raise OnnxNotInstalledError("mx.onnx.export_model needs the onnx package: "
                                    "pip install 'minimx[onnx]' (or pip install onnx)")


def _params_dict(params: Any) -> dict[str, np.ndarray]:
    """The parameters as numpy arrays by name, MXNet's ``arg:``/``aux:`` prefixes dropped."""
    if isinstance(params, str):
        params = load_arrays(params)
        if isinstance(params, list) and not params:  # a file of no arrays, saved unnamed
            params = {}
    elif isinstance(params, (list, tuple)) and len(params) == 2:
        params = {**params[0], **params[1]}
    if not isinstance(params, Mapping):
        raise MinimxError("export_model: params must be a dict of arrays, a list "
                          "[arg_params, aux_params] or the path of a .params file, not "
                          f"{type(params).__name__}")
    return {re.sub(r"^(arg|aux):", "", k): v.asnumpy() if isinstance(v, NDArray) else np.asarray(v)
            for k, v in params.items()}


def _data_inputs(graph: Graph, params: Mapping[str, np.ndarray]) -> list[Node]:
    """The variables the ONNX graph takes as inputs: those without a value in
    `params`, less the labels that only a loss layer reads."""
    label_reads: dict[int, bool] = {}
    for node in graph.nodes:
        for k, entry in enumerate(node.inputs):
            is_label = LABEL_INPUTS.get(str(node.op)) == k
            label_reads[id(entry.node)] = label_reads.get(id(entry.node), True) and is_label
    return [graph.nodes[i] for i in graph.input_ids
            if graph.nodes[i].name not in params and not label_reads.get(id(graph.nodes[i]))]


def _known(graph: Graph, values: Mapping[str, Any]) -> dict[int, Any]:
    """Entry ids of the variables named in `values`, with their values."""
    return {graph.entry_ptr[i]: values[graph.nodes[i].name]
            for i in graph.input_ids if graph.nodes[i].name in values}


def tensor_name(node: Node, index: int) -> str:
    """The ONNX name of a node's output, as MXNet's exporter names it."""
    return re.sub(r"_output(\d*)$", r"\1", node.entry_name(index))


def translate(symbol: Symbol, params: Mapping[str, np.ndarray],
              in_shapes: Sequence[Sequence[int] | None] | None, in_types: Any,
              dynamic: bool = False,
              verbose: bool = False) -> Exported:
    """The ONNX form of `symbol`, or an `OperatorError` naming every node without one."""
    graph = Graph(symbol.outputs)
    # A quantized or partitioned graph is refused whatever inputs it is given.
    kinds = [f"{n.label}: {why}" for n in graph.nodes
             if not n.is_variable and (why := refusal(str(n.op)))]
    if kinds:
        _refuse(kinds)
    inputs = _data_inputs(graph, params)
    names = [n.name for n in inputs]
    # MXNet's call also gives the labels' shapes and types (its ONNX lists the labels
    # as inputs): they are dropped with the labels.
    unset = [graph.nodes[i].name for i in graph.input_ids if graph.nodes[i].name not in params]
    if in_shapes is not None and len(in_shapes) == len(unset) != len(names):
        in_shapes = [s for n, s in zip(unset, in_shapes, strict=True) if n in names]
        if isinstance(in_types, (list, tuple)) and len(in_types) == len(unset):
            in_types = [d for n, d in zip(unset, in_types, strict=True) if n in names]
    if in_shapes is None or len(in_shapes) != len(inputs):
        raise ShapeError(f"export_model: in_shapes must give one shape for each input "
                         f"{names} (and may give the labels' too: {unset}), got {in_shapes}")
    types = list(in_types) if isinstance(in_types, (list, tuple)) else [in_types] * len(inputs)
    if len(types) != len(inputs):
        raise MinimxError(f"export_model: {len(types)} in_types for the inputs {names}")
    # Operators with no translation are known before inference, which some of them
    # may not pass: they are listed whatever it says.
    untranslated = {id(n): "no ONNX translation" for n in graph.nodes
                    if not n.is_variable and n.op not in TRANSLATIONS}
    try:
        shapes, dtypes = _infer(graph, params,
                                {n: tuple(s) for n, s in zip(names, in_shapes, strict=True)
                                 if s is not None},
                                dict(zip(names, map(np.dtype, types), strict=True)))
    except MinimxError:
        if untranslated:
            _refuse([f"{n.label}: {untranslated[id(n)]}" for n in graph.nodes
                     if id(n) in untranslated])
        raise
    missing = [n.label for nid, n in enumerate(graph.nodes)
               if any(shapes[i] is None for i in graph.output_entry_ids(nid))]
    if missing:
        raise ShapeError(f"export_model: cannot infer the shapes of {', '.join(missing)} "
                         f"from in_shapes {in_shapes}")

    walk = _Walk(graph, params, shapes, dtypes, untranslated, dynamic, verbose)
    for nid in range(len(graph.nodes)):
        walk.visit(nid)
    unmade = [f"{x.node.label}: its output {x.index} is a graph output the export does "
              "not produce" for x in graph.outputs if x.key() not in walk.produced]
    if walk.problems or unmade:
        _refuse(walk.problems + unmade)
    outputs: list[tuple[str, np.dtype, Dims]] = [
        (walk.produced[x.key()], np.dtype(dtypes[i]),
         [None] * len(shapes[i]) if dynamic else list(shapes[i]))
        for x, i in zip(graph.outputs, graph.head_entry_ids(), strict=True)]
    graph_inputs: list[tuple[str, np.dtype, Dims]] = [
        (walk.produced[(id(n), 0)], np.dtype(t), list(shapes[graph.entry_ptr[graph.node_id(n)]]))
        for n, t in zip(inputs, types, strict=True)]
    return Exported(walk.emitter, graph_inputs, outputs)


class _Walk:
    """Translates a graph's nodes in order, naming each output it produces and
    collecting the problems of the nodes it cannot translate."""

    def __init__(self, graph: Graph, params: Mapping[str, np.ndarray], shapes: list,
                 dtypes: list, untranslated: Mapping[int, str], dynamic: bool,
                 verbose: bool) -> None:
        self.graph, self.params, self.shapes, self.dtypes = graph, params, shapes, dtypes
        self.untranslated, self.dynamic, self.verbose = untranslated, dynamic, verbose
        self.emitter = Emitter()
        self.produced: dict[tuple[int, int], str] = {}   # entry key -> ONNX tensor name
        self.problems: list[str] = []

    def visit(self, nid: int) -> None:
        node, e = self.graph.nodes[nid], self.emitter
        if node.is_variable:
            name = self.produced[(id(node), 0)] = e.fresh(node.name)
            if node.name in self.params:
                e.constants[name] = self.params[node.name]
            return
        # A node that cannot be exported still names its outputs, so that the nodes
        # after it are checked too: every problem is listed at once.
        names = [e.fresh(tensor_name(node, k)) for k in range(node.num_outputs())]
        problem = self.untranslated.get(id(node)) or self._unread(node)
        made = set(names)
        if problem is None:
            start = len(e.nodes)
            try:
                TRANSLATIONS[str(node.op)](e, self._site(nid, names))
                made = {o for n in e.nodes[start:] for o in n.outputs}
            except Unsupported as exc:
                del e.nodes[start:]
                problem = str(exc)
        if problem is not None:
            self.problems.append(f"{node.label}: {problem}")
        self.produced.update({(id(node), k): n for k, n in enumerate(names) if n in made})

    def _unread(self, node: Node) -> str | None:
        unread = [f"output {x.index} of {x.node.label}" for x in node.inputs
                  if x.key() not in self.produced]
        return f"reads {', '.join(unread)}, which the export does not produce" if unread else None

    def _site(self, nid: int, names: list[str]) -> Site:
        node, g = self.graph.nodes[nid], self.graph
        in_ids, out_ids = g.input_entry_ids(nid), g.output_entry_ids(nid)
        if self.verbose:
            _log.info("converting %s", node.label)
        return Site(node, node.operator()[1], [self.produced[x.key()] for x in node.inputs],
                    names, [self.shapes[i] for i in in_ids], [self.shapes[i] for i in out_ids],
                    [np.dtype(self.dtypes[i]) for i in in_ids],
                    np.dtype(self.dtypes[(in_ids or out_ids)[0]]), self.dynamic)


def _infer(graph: Graph, params: Mapping[str, np.ndarray], shapes: Mapping[str, tuple],
           dtypes: Mapping[str, np.dtype]) -> tuple[list, list]:
    """(shapes, dtypes) of every entry, from the inputs' and the parameters'."""
    return (infer_shapes(graph, _known(graph, {**{k: v.shape for k, v in params.items()},
                                               **shapes})),
            infer_dtypes(graph, _known(graph, {**{k: v.dtype for k, v in params.items()},
                                               **dtypes})))


def _refuse(problems: list[str]) -> NoReturn:
    raise OperatorError(f"cannot export to ONNX: {len(problems)} node(s) have no ONNX form"
                        "\n  " + "\n  ".join(problems))


def _free_inputs(inputs: list[tuple[str, np.dtype, Dims]],
                 dims: Sequence[Dims] | None) -> list[tuple[str, np.dtype, Dims]]:
    """The inputs with free dimensions: all of them, or as `dims` sets them."""
    if dims is None:
        return [(name, dtype, [None] * len(shape)) for name, dtype, shape in inputs]
    if len(dims) != len(inputs) or any(len(d) != len(s) for d, (_, _, s) in
                                       zip(dims, inputs, strict=False)):
        raise ShapeError(f"export_model: dynamic_input_shapes {list(dims)} must give one "
                         f"shape of the same rank for each input "
                         f"{[(n, list(s)) for n, _, s in inputs]}")
    return [(name, dtype, list(d)) for (name, dtype, _), d in zip(inputs, dims, strict=True)]
