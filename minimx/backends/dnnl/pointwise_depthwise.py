"""A float32 1x1 convolution lowered with the depthwise convolution that reads
it, and the projection that reads that, as one kernel of minimx's own
(`onednn.pwdw_conv`).

MobileNet v2's blocks expand their channels with a 1x1 convolution, filter
them with a 3x3 depthwise one and project them back with a linear 1x1 one;
oneDNN writes the expanded and the filtered tensors to memory between the
three. The kernel keeps them in cache, row by row. On MobileNet v2's blocks
at 112x112 to 28x28 it took 0.56-0.84 of the time of oneDNN's three
primitives, at batch 1 (AMD Zen 5, `avx512_core_bf16`, two threads, the plans
alternating in one process; docs/measurements.md).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

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
# The fewest output rows of a block that the kernel also projects: it splits
# a block's rows among the threads (`MIN_BAND` rows a band in the kernel).
PROJECT_MIN_ROWS = 16


class Fused(NamedTuple):
    """What `pointwise_depthwise` found: the kernel, the chains it runs after
    the 1x1 convolution with the prefixes of their arguments (``dw_``, then
    ``post1_`` for a projection), and the entry it writes (the last chain's)."""

    op: onednn.Primitive
    chains: list[tuple[ConvChain, str]]
    entry: int


def _reader(low: Lowering, nid: int) -> tuple[int, ConvChain] | None:
    """The float32 convolution chain that alone reads node `nid`'s output, on
    the same side of the batch loop, and its node id."""
    reader = low.sole_reader(nid)
    if reader is None or reader.op not in CONV_CHAIN_OPS:
        return None
    rid = low.g.node_id(reader)
    chain = conv_chain(reader, low.g)
    if (chain.conv.op != "Convolution" or low.float_type(rid) != FLOAT32
            or chain.entry(chain.conv.inputs[0]) != low.g.entry_ptr[nid]):
        return None
    if low.parts is not None and (nid < low.parts.end) != (rid < low.parts.end):
        return None   # the batch loop ends between the two
    return rid, chain


def pointwise_depthwise(low: Lowering, nid: int, x: onednn.Slot, data: int,
                        weight_shape: tuple[int, ...], kw: dict) -> Fused | None:
    """minimx's kernel for float32 convolution `nid` reading entry `data` (`kw`:
    its stride, pad, dilate, num_group and post-ops; no sum) and the depthwise
    convolution chain that alone reads it, where the kernel takes the two
    (`onednn.pwdw_supports`, activations of none, relu or clip), the network's
    float convolutions run in 16-channel blocks (`conv_layout.blocked_types`)
    and MINIMX_DNNL_POINTWISE_DEPTHWISE is not 0; with them the linear 1x1
    projection that alone reads the depthwise one, adding `data` or nothing,
    where the kernel takes it (`onednn.pwdw_projects`, an output of at least
    `PROJECT_MIN_ROWS` rows); None elsewhere. The chains are then lowered
    with it (`Lowering.lowered_ahead`)."""
    if not settings().dnnl_pointwise_depthwise or FLOAT32 not in low.blocked_types:
        return None
    bounds = clamp_bounds(kw["post_ops"])
    found = _reader(low, nid)
    if bounds is None or found is None:
        return None
    rid, dw = found
    dw_bounds = clamp_bounds(low.eltwise_post(dw.act))
    _, p = dw.conv.operator()
    dw_weights = low.shape(dw.entry(dw.conv.inputs[1]))
    if dw.add is not None or dw_bounds is None or not onednn.pwdw_supports(
            x.shape, weight_shape, dw_weights, stride=kw["stride"], pad=kw["pad"],
            dilate=kw["dilate"], num_group=kw["num_group"], dw_stride=p.stride or None,
            dw_pad=p.pad or None, dw_dilate=p.dilate or None, dw_num_group=p.num_group):
        return None
    stride = spatial_param(p.stride or None, 2, 1, "stride", 1)[0]
    chains, last = [(dw, "dw_")], rid
    pc, residual = 0, False
    project = _projection(low, rid, data, weight_shape[0])
    if project is not None and low.shape(low.g.entry_ptr[rid])[2] >= PROJECT_MIN_ROWS:
        last, chain = project
        chains.append((chain, "post1_"))
        pc = low.shape(chain.entry(chain.conv.inputs[1]))[0]
        residual = chain.add is not None   # of the block's input: same shape, stride 1
    low.lowered_ahead.update({rid, last})
    op = onednn.pwdw_conv(x.shape, weight_shape[0], stride=stride, bounds=(bounds, dw_bounds),
                          project=pc, residual=residual)
    return Fused(op, chains, low.g.entry_ptr[last])


def _projection(low: Lowering, rid: int, data: int, channels: int
                ) -> tuple[int, ConvChain] | None:
    """The linear 1x1 convolution chain that alone reads depthwise node `rid`'s
    `channels` outputs (no activation; a sum only of `data`, the block's
    input), and its node id, where the kernel takes it."""
    found = _reader(low, rid)
    if found is None:
        return None
    pid, chain = found
    _, p = chain.conv.operator()
    linear = chain.act is None and chain.post_act is None
    residual = chain.add is None or low.root[chain.add] == low.root[data]
    if not (linear and residual and onednn.pwdw_projects(
            channels, low.shape(chain.entry(chain.conv.inputs[1])), stride=p.stride or None,
            pad=p.pad or None, dilate=p.dilate or None, num_group=p.num_group)):
        return None
    return pid, chain
