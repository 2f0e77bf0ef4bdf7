"""GraphRunner: runs a Graph synchronously on numpy arrays.

The executor pushes a runner's `forward` to the engine; a `_subgraph_op` node
runs its inner graph with a runner of its own. A runner knows the graph's
shapes and dtypes and keeps one state per stateful node (made on first use).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..graph import Graph
from ..ops.registry import OpContext

Monitor = Callable[[str, np.ndarray], None]


class GraphRunner:
    """Evaluates `graph` given arrays for its input variables."""

    def __init__(self, graph: Graph, shapes: Sequence, dtypes: Sequence) -> None:
        self.graph = graph
        self.shapes = list(shapes)
        self.dtypes = list(dtypes)
        self._states: dict[int, Any] = {}
        self.monitor: Monitor | None = None
        self.monitor_all = False

    def forward(self, inputs: Sequence[np.ndarray], is_train: bool = False
                ) -> list[np.ndarray]:
        """The graph's outputs, given one array per input variable (in `input_ids` order)."""
        g = self.graph
        env: list[np.ndarray | None] = [None] * g.num_entries
        for nid, data in zip(g.input_ids, inputs, strict=True):
            env[g.entry_ptr[nid]] = data
        ctx = OpContext(is_train=is_train)
        for nid, node in enumerate(g.nodes):
            if node.is_variable:
                continue
            results = node.opdef.forward(self._state(nid), ctx,
                                         [env[e] for e in g.input_entry_ids(nid)])
            if isinstance(results, np.ndarray):
                results = (results,)
            for eid, value in zip(g.output_entry_ids(nid), results, strict=True):
                env[eid] = value
            if self.monitor is not None:
                self._report(nid, env)
        return [env[e] for e in g.head_entry_ids()]

    def _state(self, nid: int) -> Any:
        """The node's params, or its operator state (made once, on first use)."""
        node = self.graph.nodes[nid]
        if node.opdef.create_state is None:
            return node.params
        if nid not in self._states:
            in_ids = self.graph.input_entry_ids(nid)
            self._states[nid] = node.opdef.create_state(
                node.params, [self.shapes[e] for e in in_ids], [self.dtypes[e] for e in in_ids])
        return self._states[nid]

    def _report(self, nid: int, env: list) -> None:
        node = self.graph.nodes[nid]
        count = node.num_outputs() if self.monitor_all else node.num_visible_outputs()
        for k, eid in enumerate(self.graph.output_entry_ids(nid)[:count]):
            self.monitor(node.entry_name(k), env[eid])
