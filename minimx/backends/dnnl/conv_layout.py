"""Which layouts the float convolutions of a DNNL subgraph read and write.

Left to choose (`format_tag any`), oneDNN runs a float32 convolution on
AVX-512 in NHWC, the `network_layout`, and the tensors between convolutions
stay in whatever layout their producer wrote. Two exceptions pay, and
`float_conv` builds both:
- a convolution of few input channels (a CNN's first) would write a blocked
  layout that the next layer reorders back: it is asked for the network
  layout instead (`conv_in_network_layout`), unless it is a float32 one whose
  output fits in a core's L2 cache (`l2_cache_bytes`), where that reorder is
  cheap and reading the input in NCHW, which it then does, wins, or one that
  a max pooling reads (ResNet's stem), which pools the blocks before the
  reorder;
- a depthwise network (MobileNet v1 and v2) runs its convolutions in
  16-channel blocks (``aBcd16b``, nChw16c; channel counts such as MobileNet
  v2's 24 and 144 padded to whole blocks): oneDNN's blocked depthwise and 1x1
  kernels beat its NHWC ones there, by 7-19% over the whole network at batch
  1 and 16 in float32 (`blocked_types` says when; MINIMX_DNNL_BLOCKED_LAYOUT=0
  turns it off). Not dense networks: ResNet runs 1-3% slower blocked. In
  bfloat16 only without AMX (whose kernels are NHWC ones) and where every
  convolution writes whole blocks: MobileNet v1
  runs 2.2-2.8% faster blocked at batch 1 and 16 (its depthwise layers in
  half the time at 14x14), MobileNet v2, whose 24- and 144-channel layers
  run padded and whose 7x7 1x1 ones oneDNN's blocked kernel runs slower,
  4.6% slower at batch 1 (AMD Zen 5, `avx512_core_bf16`, blocked against
  NHWC alternating in one process). A
  convolution oneDNN has no blocked kernel of its own for (only its
  reference one) stays in the network layout; reorders then join the two.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ... import onednn
from ...base import settings
from ...graph import Node
from .weights import FLOAT32

BLOCK = 16                 # channels per block: one AVX-512 register of float32
BLOCKED = f"aBcd{BLOCK}b"  # of a 4-d (NCHW) tensor
L2_CACHE_INFO = "/sys/devices/system/cpu/cpu0/cache/index2/size"   # "2048K"


@functools.cache
def network_layout() -> str:
    """The layout oneDNN picks for the data of a typical float32 convolution
    (3x3, 64 channels, 56x56) on this CPU: the one most of a CNN's tensors
    stay in (``acdb``, NHWC, on AVX-512; a blocked one elsewhere)."""
    return onednn.conv((1, 64, 56, 56), (64, 64, 3, 3), pad=(1, 1)).desc("src").layout


def blocked_types(convs: Iterable[Node]) -> frozenset[np.dtype]:
    """The float types whose convolutions run in channel blocks in a graph whose
    convolutions are `convs` (each a ``Convolution`` node): float32 where some
    is depthwise, the network layout is unblocked (where it is blocked, oneDNN
    picks blocks anyway), and the user did not say no; bfloat16 too where,
    besides, every convolution writes whole blocks and the CPU has no AMX."""
    params = [node.operator()[1] for node in convs]
    if not (settings().dnnl_blocked_layout and network_layout().islower()
            and any(p.num_group > 1 and p.num_group == p.num_filter for p in params)):
        return frozenset()
    # oneDNN's AMX kernels are NHWC ones.
    if all(p.num_filter % BLOCK == 0 for p in params) and "amx" not in onednn.isa():
        return frozenset({FLOAT32, onednn.BFLOAT16})
    return frozenset({FLOAT32})


@functools.cache
def l2_cache_bytes() -> int:
    """The size of one core's L2 cache, as Linux reports it (1 MiB where it does not)."""
    try:
        size = Path(L2_CACHE_INFO).read_text().strip()
        return int(size[:-1]) * 1024 if size.endswith("K") else int(size)
    except (OSError, ValueError):
        return 1 << 20


def conv_in_network_layout(shape: tuple[int, ...], weight_shape: tuple[int, ...],
                           kw: dict, dtype: np.dtype, pooled: bool = False) -> onednn.Primitive:
    """A float convolution (of `dtype`) whose output is in `network_layout` when oneDNN has
    a kernel of its own (not the reference one) for that. Left to choose, a
    convolution of few input channels (a CNN's first) reads the input in NCHW
    and writes a blocked layout that the next layer then reorders: asked for
    NHWC, it reads NHWC too. Which costs less depends on whether its output
    stays in cache for that reorder. MobileNet's first convolution and what
    follows it (ms, in a plan; NHWC against NCHW and blocked): in float32 at
    batch 16, 1.97 against 3.10; in an INT8 graph, whose quantizing step
    reorders anyway, at batch 1 (1.6 MB of output) 0.22-0.25 against 0.19, at
    batch 16 2.6 against 3.1 (Intel Xeon with AMX). So a float32 one is asked
    for the network layout unless its output fits in `l2_cache_bytes`. A
    bfloat16 one always is: without AMX, where oneDNN's bf16 kernel for it
    writes blocks, the reorder of its output cost more than the NCHW read
    saves, in cache too (MobileNet v1 at batch 1, from the input's conversion
    to the next layer: 138 against 66 us; the whole forward 6% faster; AMD
    Zen 5, ``avx512_core_bf16``). A float32 one that a max pooling reads
    (`pooled`: ResNet's 7x7 stem) reads NCHW whatever its size: the pooling
    runs on its blocks and only the pooled tensor, a quarter of the size, is
    reordered (the stem 1.18x / 1.13x as fast as in NHWC at batch 1 / 16, a
    plan alternating the two; Intel Xeon with AMX, docs/measurements.md)."""
    op = onednn.conv(shape, weight_shape, dtype=dtype, **kw)
    want = network_layout()
    # Only an unblocked layout (lower-case letters) can be asked for.
    if len(shape) != 4 or not want.islower() or op.desc("dst").layout == want:
        return op
    if shape[1] < BLOCK and dtype == FLOAT32 and (
            pooled or op.desc("dst").nbytes <= l2_cache_bytes()):
        return op
    alt = onednn.conv(shape, weight_shape, dtype=dtype, dst_layout=want, **kw)
    return op if alt.impl.startswith("ref") else alt


def float_conv(shape: tuple[int, ...], weight_shape: tuple[int, ...], kw: dict,
               dtype: np.dtype, blocked: bool, pooled: bool = False) -> onednn.Primitive:
    """The float convolution of a DNNL subgraph: in channel blocks when `blocked`
    (`blocked_types`) and oneDNN has a kernel of its own for that (src
    blocked too unless it has fewer channels than a block: a CNN's 3-channel
    input is read as oneDNN likes), else as `conv_in_network_layout` (`pooled`:
    a max pooling reads it). `kw` holds the convolution's stride, pad, dilate,
    num_group, bias and post_ops."""
    if blocked and len(shape) == 4:
        src = (onednn.MemoryDesc.with_layout(shape, BLOCKED, dtype) if shape[1] >= BLOCK
               else shape)
        op = onednn.conv(src, weight_shape, dtype=dtype, dst_layout=BLOCKED, **kw)
        if not op.impl.startswith("ref"):
            return op
    return conv_in_network_layout(shape, weight_shape, kw, dtype, pooled)
