"""Which leading operators of a DNNL subgraph run once per part of the batch.

At a large batch the first layers of a CNN move far more activation bytes
than weight bytes: MobileNet v1's first eleven layers at batch 16 hold
tensors of up to 77 MB, with 0.5 MB of weights between them. Run image by
image (`onednn.Plan.batch_loop`), their tensors stay in the caches, and the
same oneDNN kernels run faster (MobileNet v1's depthwise ones two to three
times; the whole forward 1.13x on AMD Zen 5); the later layers, whose weights
outweigh one image's activations, run on the whole batch as before, reading
each weight once for all of it. `batch_parts` says where that boundary lies
and into how many parts the batch splits; `lower` builds the loop where it
says so, unless the user turned it off (MINIMX_DNNL_BATCH_PARTS=0).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...base import settings
from ...graph import Graph, Node
from .config import default_support
from .patterns import PATTERNS

# Operators whose output image k depends on input image k alone, by the kind
# `configs/dnnl.yaml` (or a fused pattern) lowers them as; concat only along
# another axis than the batch (checked below).
PER_IMAGE = frozenset({
    "conv", "fused_conv", "pooling", "eltwise", "batch_norm", "lrn", "binary", "concat", "cast",
    "quantize", "quantize_asym", "requantize", "dequantize", "quantized_conv",
    "quantized_add", "quantized_concat", "quantized_batch_norm"})
CONCATS = frozenset({"concat", "quantized_concat"})
FUSED_KINDS = {p.fused: p.lower for p in PATTERNS}

# A layer stays in the loop while one image's activations (its input and
# output, in bytes) outweigh this many times its weights, counted in
# elements: a part reads every weight again, and a quantized layer, whose
# weights are a quarter of the bytes, multiplies four times as fast. (At
# batch 16 MobileNet v1 and v2 and ResNet-18 and -50 ran fastest near this
# threshold in float32, bfloat16 and INT8 alike; by bytes, float32 wanted a
# quarter of INT8's.)
ACTIVATION_TO_WEIGHT = 2
# ... and while its input has at least this many pixels an image: below, one
# image's products are too short for oneDNN's kernels (MobileNet v2's 14x14
# layers ran slower image by image than on the whole batch of 16).
MIN_PIXELS = 28 * 28
# A part holds as many images as keep the largest layer's input and output
# within this many bytes (at least one image; about what a 2-core share of a
# server CPU's L2 and L3 keeps); a batch that fits whole is not split.
PART_BYTES = 8 << 20

BATCH_PARTS = "operators run once per part of the batch"   # as the partition summary says it


@dataclass(frozen=True)
class BatchParts:
    """Nodes ``[0, end)`` of the graph (its variables among them) run once per
    part: ``count`` parts of ``images`` images each."""

    end: int
    count: int
    images: int


def _kind(node: Node) -> str | None:
    return FUSED_KINDS.get(node.op or "") or default_support().lowering(node.op)


def batch_parts(g: Graph, shapes: Sequence[tuple[int, ...] | None],
                nbytes: Callable[[int], int]) -> BatchParts | None:
    """Where the per-part loop of `g` ends and how it splits the batch, given
    every entry's shape and its bytes (`nbytes`, by entry id: in the type the
    plan computes in). None: no loop pays, or the user turned it off."""
    if not settings().dnnl_batch_parts:
        return None
    first = next((n for n in g.nodes if not n.is_variable and not _is_cast(n)), None)
    batch_shape = None if first is None else shapes[g.entry_ptr[g.node_id(first)]]
    if batch_shape is None or len(batch_shape) < 2:
        return None
    batch, end, largest = batch_shape[0], 0, 0
    for nid, node in enumerate(g.nodes):
        if node.is_variable:
            continue
        out, ins = g.entry_ptr[nid], g.input_entry_ids(nid)
        y, x = shapes[out], shapes[ins[0]] if ins else None
        kind = _kind(node)
        if input_cast(node) and (y is None or len(y) < 2 or y[0] != batch):
            continue   # AMP's cast of a weight: read where a weight is, in or after the loop
        if y is None or x is None or len(y) < 2:
            break
        if (kind not in PER_IMAGE or y[0] != batch or x[0] != batch
                or kind in CONCATS and _concat_axis(node, len(y)) == 0):
            break
        image = (nbytes(out) + nbytes(ins[0])) // batch
        weights = sum(math.prod(w) for e, entry in zip(ins[1:], node.inputs[1:], strict=True)
                      if _is_parameter(entry.node) and (w := shapes[e]) is not None
                      and _is_weight(w, batch))
        if ACTIVATION_TO_WEIGHT * weights > image or math.prod(x[2:]) < MIN_PIXELS:
            break
        end, largest = nid + 1, max(largest, image)
    if end == 0 or batch < 2:
        return None
    images = next(k for k in range(batch, 0, -1)
                  if batch % k == 0 and (k * largest <= PART_BYTES or k == 1))
    return None if images == batch else BatchParts(end, batch // images, images)


def _is_cast(node: Node) -> bool:
    return _kind(node) == "cast"


def input_cast(node: Node) -> bool:
    """Whether `node` is AMP's cast of subgraph inputs (the data's, or a
    weight's in bfloat16): the lowering reads the data's per part and a
    weight's whole, so its own shapes stay the whole batch's."""
    return _is_cast(node) and all(e.node.is_variable for e in node.inputs)


def _is_parameter(node: Node) -> bool:
    """A variable, or AMP's cast of variables (a weight in bfloat16)."""
    return node.is_variable or input_cast(node)


def _is_weight(shape: tuple[int, ...], batch: int) -> bool:
    """Whether a variable input of this shape is a weight (two or more dims,
    not the batch's first: that is an addend's)."""
    return len(shape) >= 2 and shape[0] != batch


def _concat_axis(node: Node, ndim: int) -> int:
    _, p = node.operator()
    return int(p.dim) % ndim
