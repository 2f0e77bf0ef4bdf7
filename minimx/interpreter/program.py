"""A Program: a graph's schedule (forward, and backward for training), its
memory plan, and the buffers allocated from that plan.

The runner interprets a Program; keeping the planning and allocation here
lets the runner stay an environment and a loop. Buffers are allocated once
per Program, one per storage block, and every planned entry is a fixed view
into its block, so repeated runs reuse the same memory.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import profiler
from ..base import settings
from ..graph import Graph
from ..graph.gradient import BackwardGraph, build_backward
from ..graph.plan_memory import MemoryPlan, graph_steps, plan_memory


class Program:
    """Forward (and, given grad_reqs, backward) schedule of `graph`, planned together
    (``share_memory=False``: every entry in a buffer of its own)."""

    def __init__(self, graph: Graph, shapes: Sequence, dtypes: Sequence,
                 grad_reqs: list[str] | None = None, share_memory: bool = True) -> None:
        self.graph = graph
        self.backward: BackwardGraph | None = (build_backward(graph, grad_reqs)
                                               if grad_reqs else None)
        grad_of = self.backward.grad_of if self.backward else []
        self.shapes = [tuple(s) for s in shapes] + [tuple(shapes[e]) for e in grad_of]
        self.dtypes = [np.dtype(t) for t in dtypes] + [np.dtype(dtypes[e]) for e in grad_of]
        external = {graph.entry_ptr[nid] for nid in graph.input_ids}
        external.update(graph.head_entry_ids())
        steps = graph_steps(graph)
        if self.backward is not None:
            external |= self.backward.external()
            steps += self.backward.steps()
        nbytes = [int(np.prod(s, dtype=np.int64)) * t.itemsize
                  for s, t in zip(self.shapes, self.dtypes, strict=True)]
        # Per head: whether backward reads its gradient (loss layers' heads: no).
        self.head_grad_needed: list[bool] = (self.backward.head_grad_needed()
                                             if self.backward else [False] * len(graph.outputs))
        self.plan: MemoryPlan = plan_memory(nbytes, steps, external,
                                            settings().exec_enable_inplace, share_memory)
        self._env: list[np.ndarray | None] | None = None
        self._owned: dict[int, np.ndarray] = {}
        self._zeros: dict[int, np.ndarray] = {}

    @property
    def env(self) -> list[np.ndarray | None]:
        """One array per entry: planned views (allocated on first use); None where external."""
        if self._env is None:
            # float64 words keep every view 8-byte aligned.
            words = [np.empty(-(-size // 8), np.float64) for size in self.plan.block_bytes]
            for block in words:
                profiler.track_allocation(block)
            blocks = [w.view(np.uint8)[:size]
                      for w, size in zip(words, self.plan.block_bytes, strict=True)]
            self._env = [None] * len(self.shapes)
            for eid, sid in enumerate(self.plan.storage):
                if sid >= 0:
                    size = self.plan.entry_bytes[eid]
                    self._env[eid] = (blocks[sid][:size].view(self.dtypes[eid])
                                      .reshape(self.shapes[eid]))
        return self._env

    def owned(self, eid: int) -> np.ndarray:
        """A buffer of the program's own for external entry `eid` (made once)."""
        if eid not in self._owned:
            self._owned[eid] = np.empty(self.shapes[eid], self.dtypes[eid])
            profiler.track_allocation(self._owned[eid])
        return self._owned[eid]

    def zeros(self, eid: int) -> np.ndarray:
        """Read-only zeros shaped like entry `eid` (the gradient nothing sends)."""
        if eid not in self._zeros:
            z = np.zeros(self.shapes[eid], self.dtypes[eid])
            z.flags.writeable = False
            self._zeros[eid] = z
        return self._zeros[eid]
