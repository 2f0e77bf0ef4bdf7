"""The interleaved self-attention products of GluonNLP's BERT in ONNX.

The input interleaves queries, keys and values per head: ``(T, B, heads * 3 * D)``
read as ``(T, B, heads, 3, D)``. Shapes are fixed at export (a Reshape per product).
"""
from __future__ import annotations

import numpy as np

from .emitter import Emitter, Site
from .registry import translates


def _part(e: Emitter, s: Site, index: int, perm: list[int]) -> str:
    """Queries (0), keys (1) or values (2) of every head, transposed by `perm` from
    ``(T, B, heads, D)``."""
    s.needs_fixed_shapes()
    t, b, width = s.in_shapes[0]
    heads = s.p.heads
    split = e.add("Reshape", [s.inputs[0], e.ints(f"{s.name}_heads",
                                                  [t, b, heads, 3, width // (3 * heads)])])
    part = e.add("Gather", [split, e.const(f"{s.name}_part{index}", index, np.int64)], axis=3)
    return e.add("Transpose", [part], perm=perm)


@translates("_contrib_interleaved_matmul_selfatt_qk")
def _selfatt_qk(e: Emitter, s: Site) -> None:
    queries = _part(e, s, 0, [1, 2, 0, 3])      # (B, heads, T, D)
    keys = _part(e, s, 1, [1, 2, 3, 0])         # (B, heads, D, T)
    head_dim = s.in_shapes[0][2] // (3 * s.p.heads)
    scale = e.const(f"{s.name}_scale", 1 / np.sqrt(np.float32(head_dim)), s.dtype)
    scores = e.add("Mul", [e.add("MatMul", [queries, keys]), scale])
    e.add("Reshape", [scores, e.ints(f"{s.name}_shape", s.out_shapes[0])], s.outputs[0])


@translates("_contrib_interleaved_matmul_selfatt_valatt")
def _selfatt_valatt(e: Emitter, s: Site) -> None:
    values = _part(e, s, 2, [1, 2, 0, 3])       # (B, heads, T, D)
    t, b, _ = s.in_shapes[0]
    maps = e.add("Reshape", [s.inputs[1], e.ints(f"{s.name}_maps", [b, s.p.heads, t, t])])
    weighted = e.add("Transpose", [e.add("MatMul", [maps, values])], perm=[2, 0, 1, 3])
    e.add("Reshape", [weighted, e.ints(f"{s.name}_shape", s.out_shapes[0])], s.outputs[0])
