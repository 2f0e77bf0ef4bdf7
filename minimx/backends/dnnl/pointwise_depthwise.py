"""A float32 1x1 convolution lowered with the depthwise convolution that reads
it, as one kernel of minimx's own (`onednn.pwdw_conv`).

MobileNet v2's blocks expand their channels with a 1x1 convolution and
filter them with a 3x3 depthwise one; oneDNN writes the expanded tensor to
memory between the two. The kernel keeps it in cache, row by row. Against
oneDNN's two primitives (AMD Zen 5, `avx512_core_bf16`, batch 1, two threads,
the two plans alternating in one process; README, Measurements) it took
0.79-0.93 of their time at 112x112, 56x56 and 28x28 and about the same at
14x14 and 7x7.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import onednn
from ...base import settings
from ...onednn.primitives import spatial_param
from .eltwise import clamp_bounds
from .patterns import CONV_CHAIN_OPS, ConvChain, conv_chain
from .weights import FLOAT32

if TYPE_CHECKING:
    from .lower import Lowering

# As the partition summary says it.
POINTWISE_DEPTHWISE = "1x1 convolutions run with the depthwise ones reading them by minimx's kernel"


def pointwise_depthwise(low: Lowering, nid: int, x: onednn.Slot,
                        weight_shape: tuple[int, ...], kw: dict
                        ) -> tuple[onednn.Primitive, ConvChain, int] | None:
    """minimx's kernel for float32 convolution `nid` (`kw`: its stride, pad,
    dilate, num_group and post-ops; no sum), the depthwise convolution chain it
    runs with and that chain's output entry, where the chain is the only
    reader of its output and the kernel takes the two (`onednn.pwdw_supports`,
    activations of none, relu or clip), the network's float convolutions run
    in 16-channel blocks (`conv_layout.blocked_types`) and
    MINIMX_DNNL_POINTWISE_DEPTHWISE is not 0; None elsewhere. The reader is
    then lowered with it (`Lowering.lowered_ahead`)."""
    if not settings().dnnl_pointwise_depthwise or FLOAT32 not in low.blocked_types:
        return None
    bounds = clamp_bounds(kw["post_ops"])
    reader = low.sole_reader(nid)
    if bounds is None or reader is None or reader.op not in CONV_CHAIN_OPS:
        return None
    rid = low.g.node_id(reader)
    chain = conv_chain(reader, low.g)
    conv = chain.conv
    if (conv.op != "Convolution" or chain.add is not None or low.float_type(rid) != FLOAT32
            or chain.entry(conv.inputs[0]) != low.g.entry_ptr[nid]):
        return None
    if low.parts is not None and (nid < low.parts.end) != (rid < low.parts.end):
        return None   # the batch loop ends between the two
    dw_bounds = clamp_bounds(low.eltwise_post(chain.act))
    _, p = conv.operator()
    if dw_bounds is None or not onednn.pwdw_supports(
            x.shape, weight_shape, low.shape(chain.entry(conv.inputs[1])),
            stride=kw["stride"], pad=kw["pad"], dilate=kw["dilate"],
            num_group=kw["num_group"], dw_stride=p.stride or None, dw_pad=p.pad or None,
            dw_dilate=p.dilate or None, dw_num_group=p.num_group):
        return None
    low.lowered_ahead.add(rid)
    stride = spatial_param(p.stride or None, 2, 1, "stride", 1)[0]
    op = onednn.pwdw_conv(x.shape, weight_shape[0], stride=stride, bounds=(bounds, dw_bounds))
    return op, chain, low.g.entry_ptr[rid]
