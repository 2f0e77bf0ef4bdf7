"""Which convolutions of a DNNL subgraph run as Winograd, and with which tile.

`onednn.winograd_supports` says which convolutions Winograd can compute;
this module adds when it pays, and which of F(4x4, 3x3) and F(2x2, 3x3):
on enough output tiles, and unless the user turned it off
(MINIMX_DNNL_WINOGRAD=0). `lower` asks `winograd_tile` for each convolution
it lowers and builds `onednn.wino_conv` with the tile it gives.

A Winograd convolution reads its weights once per forward, transformed:
F(4x4) holds 36/9 = 4x the direct weights, F(2x2) 16/9, for 4x and 2.25x
fewer products. On few tiles those weights, read from memory, cost what the
products save: at batch 1 a 14x14 layer of 256 channels (9.4 MB of F(4x4)
weights) ran as fast direct as by F(4x4) in ResNet-50 and -18 (the VM's
memory gives one thread about 5.5 GB/s). By F(2x2) the forward ran
0.98-1.02x as fast as by F(4x4) (docs/measurements.md): about even, and
F(2x2)'s rounding errors are smaller.
"""
from __future__ import annotations

from ... import onednn
from ...base import settings

# Below this many 4x4 output tiles in the batch, F(4x4)'s products are too
# thin to pay for reading their weights (4x the direct ones): one 7x7 image
# (4 tiles) runs slower than oneDNN's direct convolution, one 14x14 image (16
# tiles) about 2x faster with its weights in cache (benchmarks/dnnl_winograd.py).
WINOGRAD_MIN_TILES = 16
# An image alone (batch 1) with fewer 4x4 tiles than this runs as F(2x2): a
# 14x14 one (16 tiles), whose F(4x4) weights are read for too few tiles. Not
# at a larger batch: 7x7 images at batch 4 (16 tiles) ran 1.19x as fast by
# F(4x4) as by F(2x2), and F(2x2) is slower than F(4x4) alone at 14x14 with
# the weights from memory too (0.84 against 0.80 ms; it wins in the network,
# docs/measurements.md; benchmarks/dnnl_winograd.py --cold).
F2_BELOW_TILES = 32

WINOGRAD = "convolutions run as Winograd F(4x4, 3x3)"   # as the partition summary says it
WINOGRAD_2 = "convolutions run as Winograd F(2x2, 3x3)"
LABELS = {4: WINOGRAD, 2: WINOGRAD_2}   # by tile


def output_tiles(src: tuple[int, ...], pad: tuple[int, ...] | None, tile: int = 4) -> int:
    """tile x tile output tiles of a 3x3, stride-1 convolution over the whole batch."""
    tiles_h, tiles_w = (-(-(x + 2 * p - 2) // tile)
                        for x, p in zip(src[2:], pad or (0, 0), strict=True))
    return src[0] * tiles_h * tiles_w


def winograd_tile(src: tuple[int, ...], weight: tuple[int, ...], kw: dict) -> int | None:
    """The output tile side (4 or 2) with which a convolution runs as Winograd
    (`onednn.wino_conv`), or None: where it can, on enough tiles, unless
    MINIMX_DNNL_WINOGRAD=0. `kw` holds the convolution's stride, pad, dilate,
    num_group and post_ops."""
    if not settings().dnnl_winograd or not onednn.winograd_supports(
            src, weight, stride=kw["stride"], dilate=kw["dilate"],
            num_group=kw["num_group"], post_ops=kw["post_ops"]):
        return None
    tiles = output_tiles(src, kw["pad"])
    if tiles < WINOGRAD_MIN_TILES:
        return None
    return 2 if src[0] == 1 and tiles < F2_BELOW_TILES else 4
