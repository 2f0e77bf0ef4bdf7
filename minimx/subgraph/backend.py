"""Subgraph backends: named, ordered lists of properties, and partitioning with them."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..base import BackendError, settings, warn_user
from ..graph import Graph
from ..symbol import Symbol
from .partitioner import infer_graph, partition_graph, partition_with_property
from .property import SubgraphProperty
from .report import PartitionReport

_BACKENDS: dict[str, list[tuple[type[SubgraphProperty], dict[str, Any]]]] = {}
_BIND_OPTIONS: dict[str, Callable[[], dict[str, Any]]] = {}


def register_backend(name: str, aliases: Sequence[str] = ()) -> None:
    """Create an empty backend called `name` (and its aliases, which share it)."""
    if name in _BACKENDS:
        raise BackendError(f"backend {name!r} is already registered")
    _BACKENDS[name] = []
    for alias in aliases:
        _BACKENDS[alias] = _BACKENDS[name]


def register_property(backend_name: str, property_class: type[SubgraphProperty] | None = None,
                      **options: Any) -> Any:
    """Append a property to a backend; also usable as a class decorator."""
    def add(cls: type[SubgraphProperty]) -> type[SubgraphProperty]:
        if backend_name not in _BACKENDS:
            register_backend(backend_name)
        _BACKENDS[backend_name].append((cls, options))
        return cls
    return add if property_class is None else add(property_class)


def register_bind_options(backend_name: str, options: Callable[[], dict[str, Any]]) -> None:
    """The options `backend_name` takes at bind time, read when a bind partitions
    (the `default` backend's operator names come from the environment so)."""
    _BIND_OPTIONS[backend_name] = options


# The backends a bind partitions with, in order, each with its bind options.
BindBackends = tuple[tuple[str, dict[str, Any]], ...]


def bind_backends() -> BindBackends:
    """The backends a bind partitions with as the environment says now
    (MINIMX_SUBGRAPH_BACKEND and each backend's bind options): an executor keeps
    them, so that its reshapes partition as its bind did."""
    return tuple((b, _BIND_OPTIONS[b]() if b in _BIND_OPTIONS else {})
                 for b in settings().subgraph_backends)


def list_backends() -> list[str]:
    return sorted(_BACKENDS)


def _properties(backend: str, options: Mapping[str, Any]) -> list[SubgraphProperty]:
    if backend not in _BACKENDS:
        raise BackendError(f"unknown subgraph backend {backend!r} "
                           f"(registered: {', '.join(list_backends())})")
    return [cls(**{**opts, **options}) for cls, opts in _BACKENDS[backend]]


def _label(backend: str, prop: SubgraphProperty) -> str:
    return f"backend {backend} ({type(prop).__name__})"


def partition(sym: Symbol, backend_or_property: str | SubgraphProperty,
              shapes: Mapping[str, tuple] | None = None,
              dtypes: Mapping[str, np.dtype] | None = None, **options: Any) -> Symbol:
    """`sym` partitioned by a backend (its properties in order) or by one property.

    The user's symbol is not modified; the result keeps its arguments,
    auxiliary states and the number and order of its outputs. The partition
    summary goes to the ``minimx.subgraph`` logger (`partition_summary`).
    """
    part, report = _partition(sym, backend_or_property, shapes, dtypes, options)
    report.log()
    return part


def partition_summary(sym: Symbol, backend_or_property: str | SubgraphProperty,
                      shapes: Mapping[str, tuple] | None = None,
                      dtypes: Mapping[str, np.dtype] | None = None,
                      **options: Any) -> PartitionReport:
    """What `partition` with these arguments does: the subgraphs it makes, the
    patterns they fuse, the operators it leaves out and why; `str()` of the
    result is the summary (see `report`). How the subgraphs run (which
    convolutions run as Winograd) is decided when they are compiled:
    `Executor.debug_str` shows it for a bind."""
    return _partition(sym, backend_or_property, shapes, dtypes, options)[1]


def _partition(sym: Symbol, backend_or_property: str | SubgraphProperty,
               shapes: Mapping[str, tuple] | None, dtypes: Mapping[str, np.dtype] | None,
               options: Mapping[str, Any]) -> tuple[Symbol, PartitionReport]:
    if isinstance(backend_or_property, SubgraphProperty):
        props, name = [backend_or_property], "custom"
    else:
        props, name = _properties(backend_or_property, options), backend_or_property
    report = PartitionReport()
    next_id = 0   # subgraph ids run on over the properties
    for prop in props:
        sym, next_id = partition_with_property(sym, prop, _label(name, prop), next_id, report,
                                               shapes, dtypes)
        prop.finish()
    return sym, report


def partition_for_bind(graph: Graph, shape_of: list, dtype_of: list, backends: BindBackends,
                       training: bool) -> tuple[Graph, list, list, PartitionReport]:
    """The forward graph `bind` runs: `graph` (whose every entry's shape and dtype
    are `shape_of` and `dtype_of`) partitioned by each backend in order, with
    its entries' shapes and dtypes and what partitioning did. Each graph a
    property makes is inferred once, for the next property and for the bind.

    Inference-only properties are skipped, with one warning, when training.
    """
    next_id = 0   # subgraph ids run on over the backends and properties
    report = PartitionReport()
    # Partitioning keeps the inputs: their shapes and dtypes by name serve every graph.
    shapes = {graph.nodes[i].name: shape_of[graph.entry_ptr[i]] for i in graph.input_ids}
    dtypes = {graph.nodes[i].name: dtype_of[graph.entry_ptr[i]] for i in graph.input_ids}
    for backend, options in backends:
        for prop in _properties(backend, options):
            label = _label(backend, prop)
            if training and prop.inference_only:
                report.add_skipped(label, "inference-only, and the graph is bound with gradients")
                warn_user(f"subgraph backend {backend}: {type(prop).__name__} is "
                          "inference-only and is skipped for a graph bound with gradients")
                continue
            result, next_id = partition_graph(graph, shape_of, dtype_of, prop, label, next_id,
                                              report)
            prop.finish()
            if result is not graph:
                graph = result
                shape_of, dtype_of = infer_graph(graph, shapes, dtypes)
    return graph, shape_of, dtype_of, report


def optimize_for(sym: Symbol, backend: str, args: Any = None, aux: Any = None,
                 **options: Any) -> Symbol:
    """`partition` with shapes and dtypes taken from given argument / auxiliary arrays."""
    shapes, dtypes = {}, {}
    for given, names in ((args, sym.list_arguments()), (aux, sym.list_auxiliary_states())):
        if given is None:
            continue
        items = given.items() if isinstance(given, Mapping) else zip(names, given, strict=False)
        for name, arr in items:
            shapes[name], dtypes[name] = tuple(arr.shape), np.dtype(arr.dtype)
    return partition(sym, backend, shapes=shapes, dtypes=dtypes, **options)
