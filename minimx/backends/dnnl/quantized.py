"""Lowering MXNet's quantized operators onto oneDNN's INT8 primitives.

Needs: a `Lowering` (lower.py) walking a DNNL subgraph whose quantized nodes
the config accepted (the `calibrated` check: their output ranges fixed by
calibration, their input ranges made by such nodes, or the nodes below that
find ranges at run time). Guarantees: the numpy kernels' numbers
(`ops.quantization`, `backends.mkldnn_ops`), computed the same way:
- a calibrated node's ranges are known when the plan compiles (a calibrated range, an
  input's passed on, or a range input of the subgraph, whose value the plan
  is compiled for), so the scales are constants; the (1,)-shaped range
  outputs are constants too, written out where read outside;
- weights (BatchNorm folded first) and biases are quantized by the numpy
  kernels' own functions in the weight cache, recomputed when a weight moves;
- the primitive runs unscaled on the integers (int32 sum plus int32 bias, in
  float32) and then multiplies by the kernel's per-channel requantization
  factor as a binary post-op, so the float32 products are the kernel's;
  activations and the sum follow as post-ops, and the dst conversion rounds
  half to even and saturates, as the kernels do; a depthwise 3x3 one on
  uint8 data and a 1x1 one expanding its channels run with minimx's
  own kernels where they pay (`_own_depthwise`, `onednn.dw8_conv`;
  `_own_pointwise`, `onednn.pw8_conv`), which compute the same float32 steps;
- quantize and dequantize are reorders multiplying by the kernel's scale; a
  float32 first convolution (3x3, stride 2, on RGB data) and the quantize
  that reads it run as one kernel of minimx's own (`quantized_first_conv`,
  `onednn.first_conv`), whose float32 sums may differ from oneDNN's in the
  last bit.
Ranges found at run time (calib_mode none: `_contrib_quantize_v2` and
`_contrib_requantize` without a calibrated range, `_contrib_dequantize` of
such a range) are plan steps too: oneDNN's min/max reduction of the data,
then the kernel's scale arithmetic, one float32 operation per oneDNN binary
or eltwise step on 1-element tensors (each rounds once, as numpy does), the
scale bound to the reorder at run time. Where the kernel's scale is infinite
(a zero range) the plan's is float32's largest, which gives the kernel's
zeros instead of NaN.
One difference remains possible, not seen on the fixtures: oneDNN's sum
post-op could round the scaled addend before adding it where the kernel
rounds once (one quantization step, on .5 ties).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ... import onednn
from ...base import BackendError, DTypeError, settings
from ...graph import Node
from ...onednn.primitives import spatial_param
from ...ops import quantization as q
from ...ops.quantized_nlp import asym_scale_shift
from ..mkldnn_ops import QuantizedConv, QuantizedFC
from .config import calibrated
from .eltwise import clamp_bounds, eltwise_of, is_relu

if TYPE_CHECKING:
    from .lower import Lowering

F32 = np.float32
FLT_MAX = float(np.finfo(F32).max)
OWN_DEPTHWISE = "INT8 depthwise convolutions run by minimx's kernel"   # in the summary
OWN_FIRST_CONV = "first convolutions run with their quantizing by minimx's kernel"
OWN_POINTWISE = "INT8 1x1 convolutions expanding their channels run by minimx's kernel"
# minimx's INT8 1x1 kernel (`onednn.pw8_conv`) pays where a layer has at
# least this many times as many output channels as input ones, and at most
# POINTWISE_MAX_IN input channels. Alone against oneDNN's kernel (batch 1 / 16;
# `benchmarks/int8_kernels.py`, Intel Xeon without AMX, `avx512_core_vnni`
# kernels, a twenty-seventh session): MobileNet v2's sixfold expansions
# 1.09-1.59x, v1's twofold ones of 32 to 256 input channels 1.01-1.23x and
# its 512 to 1024 0.91-1.00x; layers that do not expand 0.72-1.11x (1024 to
# 1024 at 7x7 the least: its weights do not stay in L1).
POINTWISE_MIN_EXPANSION = 2
POINTWISE_MAX_IN = 320
# AMX's INT8 tiles sum over 64 input channels at a time, into 16 output
# channels a tile: a convolution of fewer than 64 input or output channels
# leaves much of them idle, and oneDNN's kernel for AVX512-VNNI runs it faster
# (MobileNet v2's 1x1 layers of 16, 24 and 32 input channels took 1.2-1.6x
# the time of MXNet's VNNI ones on the tiles at batch 16, 1.1-1.3x at batch 1;
# on VNNI for those, the whole network 1.5% faster at batch 1 and 4-6% at
# batch 16, and for the 24- and 32-channel outputs too, 0.5% and 1-2% more;
# Intel Xeon with AMX, oneDNN 3.2).
AMX_MIN_CHANNELS = 64


def _post(node: Node | None) -> list[onednn.PostOp]:
    found = None if node is None else eltwise_of(node)
    if node is not None and found is None:
        raise BackendError(f"DNNL lowering: {node.label} is not an eltwise post-op")
    return [] if found is None else [onednn.PostOp.eltwise(*found)]


def _saturated(post: list[onednn.PostOp], dst: np.dtype) -> list[onednn.PostOp]:
    """`post` without a last relu where the dst is uint8, whose conversion saturates
    what the relu would zero: the same integers, and one operation less in the
    kernel's epilogue (1-7% of the time of MobileNet's 1x1 INT8 layers, the
    most where they have few input channels; AMD Zen 5, `avx512_core_vnni`, the
    two alternating in one process)."""
    return post[:-1] if dst == np.uint8 and post and is_relu(post[-1]) else post


def _retyped(desc: onednn.MemoryDesc, dtype: np.dtype,
             shape: tuple[int, ...] | None = None) -> onednn.MemoryDesc:
    """`desc`'s layout with another data type (and `shape`, if given), where the
    layout is unblocked (INT8 primitives choose NHWC), else the plain layout."""
    order, shape = desc.layout, shape or desc.shape
    if sorted(order) == [chr(ord("a") + i) for i in range(len(shape))]:
        return onednn.MemoryDesc.ordered(shape, order, dtype)
    return onednn.MemoryDesc.plain(shape, dtype)


def _scale_step(low: Lowering, x: onednn.Slot, dst: onednn.MemoryDesc,
                scale: np.float32 | onednn.Slot) -> onednn.Slot:
    """``saturate(x * scale)`` into `dst`; `scale` a number or a (1,) slot. Float data
    whose layout `dst` keeps is quantized by a binary multiply, which oneDNN 3.2 runs
    about twice as fast as a reorder with a scale (MobileNet v2's first activations:
    59 against 110 us in the plan); both round to nearest even. (A binary of int8
    data and a float scale has only oneDNN's reference kernel: those reorder.)"""
    factor = scale if isinstance(scale, onednn.Slot) else float(scale)
    if x.desc.dtype == F32 and dst == _retyped(x.desc, dst.dtype) \
            and x.desc == _retyped(x.desc, x.desc.dtype):
        op = onednn.binary(x.desc, (1,) * len(x.shape), "mul", dst_dtype=dst.dtype)
        return low.plan.add(op, src=x, src1=_binary_operand(low, factor, len(x.shape)))
    op = onednn.reorder(x.desc, dst, src_scale_mask=0)
    return low.plan.add(op, src=x, src_scale=_binary_operand(low, factor, 1))


# -- scale arithmetic at run time: 1-element float32 tensors ---------------------------------

def _reduced(low: Lowering, x: onednn.Slot, alg: str) -> onednn.Slot:
    """The max or min of all of `x`, as a (1,) float32 slot."""
    size = int(np.prod(x.shape))
    if size == 1:  # oneDNN reduces over some dim of size > 1 only: the value itself
        y = low.plan.reorder(x, onednn.MemoryDesc.plain(x.shape), copy=True)
        return low.plan.view(y, onednn.MemoryDesc.plain((1,)))
    if x.desc.dtype == np.int32:  # oneDNN reduces int32 data as a flat vector only
        dense = x.desc.is_strided and x.desc.nbytes == x.desc.dtype.itemsize * size
        if x.kind != "temp" or not dense:
            x = low.plan.reorder(x, onednn.MemoryDesc.plain(x.shape, x.desc.dtype), copy=True)
        x = low.plan.view(x, onednn.MemoryDesc.plain((size,), x.desc.dtype))
    y = low.plan.add(onednn.reduction(x.desc, alg), src=x)
    return low.plan.view(y, onednn.MemoryDesc.plain((1,)))


def _const(low: Lowering, value: float, ndim: int = 1) -> onednn.Slot:
    return low.plan.constant(np.full((1,) * ndim, value, F32))


def _binary(low: Lowering, alg: str, a: onednn.Slot | float, b: onednn.Slot | float
            ) -> onednn.Slot:
    """``alg(a, b)``, one float32 rounding: `a` a slot or a number, `b` one of `a`'s
    shape or a (1,) slot or a number (broadcast)."""
    a = a if isinstance(a, onednn.Slot) else _const(low, a)
    b = _binary_operand(low, b, len(a.shape))
    return low.plan.add(onednn.binary(a.desc, b.desc, alg), src=a, src1=b)


def _binary_operand(low: Lowering, b: onednn.Slot | float, ndim: int) -> onednn.Slot:
    """`b` as a binary's second operand for data of `ndim` dimensions: a number as a
    constant, a (1,) temporary viewed with `ndim` dimensions, other slots as they are."""
    if not isinstance(b, onednn.Slot):
        return _const(low, float(b), ndim)
    if len(b.shape) < ndim:
        return low.plan.view(b, onednn.MemoryDesc.plain((1,) * ndim))
    return b


def _eltwise(low: Lowering, x: onednn.Slot, alg: str, alpha: float | None = None,
             beta: float | None = None) -> onednn.Slot:
    return low.plan.add(onednn.eltwise(x.desc, alg, alpha, beta), src=x)


def _max_abs(low: Lowering, lo: onednn.Slot, hi: onednn.Slot) -> onednn.Slot:
    """`q.max_abs` of two (1,) slots."""
    return _binary(low, "max", _eltwise(low, lo, "abs"), _eltwise(low, hi, "abs"))


def _per(low: Lowering, levels: float, real: onednn.Slot) -> onednn.Slot:
    """``levels / real``, float32's largest where it is infinite."""
    return _binary(low, "min", _binary(low, "div", levels, real), FLT_MAX)


def _set_run_time_range(low: Lowering, nid: int, lo: onednn.Slot, hi: onednn.Slot) -> None:
    """The range outputs of node `nid`, computed by the plan."""
    out = low.g.entry_ptr[nid]
    low.slots[out + 1], low.slots[out + 2] = lo, hi


def _range_known(low: Lowering, eids: Sequence[int]) -> bool:
    """Whether the range entries `eids` are known when the plan compiles."""
    return all(low.root[e] in low.ranges for e in eids)


def _quantized_dst(x: onednn.Slot, dtype: np.dtype) -> onednn.MemoryDesc:
    """4-d data into NHWC, the layout oneDNN's INT8 convolutions take."""
    return onednn.MemoryDesc.ordered(x.shape, "acdb", dtype) if len(x.shape) == 4 else \
        onednn.MemoryDesc.plain(x.shape, dtype)


def quantize(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs) -> onednn.Slot:
    """`_contrib_quantize_v2` (as `ops.quantization._quantize_v2`) by its calibrated range,
    or by the data's own min and max."""
    _, p = node.operator()
    if not calibrated(p, node.op):
        return _quantize_at_run_time(low, node, nid, ins)
    dtype, scale = _calibrated_quantize(low, node, nid)
    x = low.value(ins[0])
    return _scale_step(low, x, _quantized_dst(x, dtype), scale)


def _calibrated_quantize(low: Lowering, node: Node, nid: int) -> tuple[np.dtype, np.float32]:
    """(the output type, the scale) of calibrated `_contrib_quantize_v2` node `nid`,
    whose range outputs it records."""
    _, p = node.operator()
    lo, hi = p.min_calib_range, p.max_calib_range
    dtype = q.output_type(p)
    real = q.max_abs(lo, hi)
    levels = q.UINT8_LEVELS if dtype == np.uint8 else q.INT8_LEVELS
    out = low.g.entry_ptr[nid]
    low.set_range(out, *(q.range_out(lo, hi) if dtype == np.uint8 else q.range_out(-real, real)))
    return dtype, F32(levels / real) if real else F32(0)


def quantized_first_conv(low: Lowering, nid: int, x: onednn.Slot,
                         weight_shape: tuple[int, ...], kw: dict
                         ) -> tuple[onednn.Primitive, int] | None:
    """minimx's quantized first convolution (`onednn.first_conv`) for float32
    convolution `nid` with `kw` (stride, pad, dilate, num_group, post_ops), and
    the entry it writes, where the only reader of its output is a calibrated
    `_contrib_quantize_v2` and the kernel takes it (an activation of none, relu
    or clip; unless MINIMX_DNNL_FIRST_CONV_INT8=0); None elsewhere. The reader
    is then lowered with it (`Lowering.lowered_ahead`): the entry is the
    reader's output."""
    reader = low.sole_reader(nid)
    if (reader is None or reader.op != "_contrib_quantize_v2" or not settings().dnnl_first_conv_int8
            or not calibrated(reader.operator()[1], reader.op)):
        return None
    bounds = clamp_bounds(kw["post_ops"])
    if bounds is None or not onednn.first_conv_supports(
            x.shape, weight_shape, stride=kw["stride"], pad=kw["pad"], dilate=kw["dilate"],
            num_group=kw["num_group"]):
        return None
    rid = low.g.node_id(reader)
    if low.parts is not None and (nid < low.parts.end) != (rid < low.parts.end):
        return None   # the batch loop ends between the two
    dtype, scale = _calibrated_quantize(low, reader, rid)
    low.lowered_ahead.add(rid)
    return (onednn.first_conv(x.shape, weight_shape[0], lo=bounds[0], hi=bounds[1],
                              scale=float(scale), dst_dtype=dtype), low.g.entry_ptr[rid])


def quantize_asym(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs
                  ) -> onednn.Slot:
    """`_contrib_quantize_asym` by its calibrated range (as `ops.quantized_nlp`): uint8
    ``x * scale + shift``, each step rounding to float32 as the kernel's, the last
    to nearest even and saturated; its scale and shift are known to its readers."""
    _, p = node.operator()
    scale, shift = asym_scale_shift(p.min_calib_range, p.max_calib_range)
    low.set_range(low.g.entry_ptr[nid], np.array([scale], F32), np.array([shift], F32))
    scaled = _binary(low, "mul", low.value(ins[0]), float(scale))
    ndim = len(scaled.shape)
    op = onednn.binary(scaled.desc, (1,) * ndim, "add", dst_dtype=np.dtype(np.uint8))
    return low.plan.add(op, src=scaled, src1=_binary_operand(low, float(shift), ndim))


def _quantize_at_run_time(low: Lowering, node: Node, nid: int, ins: Sequence[int]
                          ) -> onednn.Slot:
    dtype = q.output_type(node.operator()[1])
    x = low.value(ins[0])
    lo, hi = _reduced(low, x, "min"), _reduced(low, x, "max")
    real = _max_abs(low, lo, hi)
    if dtype == np.uint8:
        _set_run_time_range(low, nid, lo, hi)
    else:
        _set_run_time_range(low, nid, _binary(low, "mul", real, -1.0), real)
    levels = q.UINT8_LEVELS if dtype == np.uint8 else q.INT8_LEVELS
    return _scale_step(low, x, _quantized_dst(x, dtype), _per(low, float(levels), real))


def dequantize(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs
               ) -> onednn.Slot:
    """`_contrib_dequantize`: ``x * max(|min|, |max|) / levels``, by a range known when
    the plan compiles or read at run time."""
    x = low.value(ins[0])
    levels = q.UINT8_LEVELS if x.desc.dtype == np.uint8 else q.INT8_LEVELS
    dst = _retyped(x.desc, np.dtype(F32))
    if _range_known(low, ins[1:3]):
        return _scale_step(low, x, dst, F32(q.max_abs(*low.range_of(ins[1:3])) / levels))
    real = _max_abs(low, low.value(ins[1]), low.value(ins[2]))
    return _scale_step(low, x, dst, _binary(low, "div", real, float(levels)))


def _folded(qc: QuantizedConv, arrays: Sequence[np.ndarray]
            ) -> tuple[np.ndarray, np.ndarray | None]:
    """(float weight, float bias or None) of a quantized convolution, from its weight
    [bias] [BatchNorm parameters], BatchNorm folded in."""
    w, rest = arrays[0], list(arrays[1:])
    bias = None if qc.conv.no_bias else rest.pop(0)
    if qc.bn is not None:
        gamma, beta, mean, var = rest[:4]
        w, bias = q.fold_batch_norm(w, bias, gamma, beta, mean, var, qc.bn.eps,
                                    qc.bn.fix_gamma)
    return w, bias


def _conv_arrays(qc: QuantizedConv, data_scale: np.float32, out_scale: np.float32,
                 arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray | None,
                                                        np.ndarray]:
    """(int8 weights, int32 bias or None, requantization factor per channel) of a
    calibrated quantized convolution, from its weight [bias] [BatchNorm parameters]."""
    w, bias = _folded(qc, arrays)
    scales, _, _ = q.weight_scales(w, bias, data_scale, channelwise=True)
    w_q = q.scaled(w, scales.reshape((-1,) + (1,) * (w.ndim - 1)), np.int8)
    b_q = None if bias is None else q.scaled(bias, (scales * data_scale).astype(F32), np.int32)
    requant = ((out_scale / data_scale) / scales).astype(F32)
    return w_q, b_q, q.channel_view(requant, w.ndim)  # the output has w's ndim


def quantized_conv(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs
                   ) -> onednn.Slot:
    """A calibrated quantized `_sg_mkldnn_conv` (as `mkldnn_ops.QuantizedConv`), or a
    float32 one (minimx's fused convolution chain)."""
    _, p = node.operator()
    if not p.quantized:
        return low.fused_conv(node, nid, ins, inputs)
    qc = QuantizedConv(p)
    if not calibrated(p, node.op):
        return _conv_at_run_time(low, node, qc, nid, ins, inputs)
    n_base = len(ins) - (4 if p.with_sum else 2)
    base, extra = ins[:n_base], ins[n_base:]
    x = low.value(base[0])
    d_lo, d_hi = low.range_of(extra[:2])
    if d_lo < 0 and x.desc.dtype != np.int8:   # as the kernel (and MXNet) refuses it
        raise DTypeError(f"{node.label}: data is {x.desc.dtype} with min {d_lo}: a quantized "
                         "convolution takes int8 data, or uint8 data with a range from 0")
    data_scale = q.quantize_scale(x.desc.dtype, d_lo, d_hi)
    out_scale = q.quantize_scale(qc.out_type, p.min_calib_range, p.max_calib_range)
    n_params = 1 + (not qc.conv.no_bias) + 4 * (qc.bn is not None)
    sources = [low.source(e, f"{node.label} weights") for e in base[1:1 + n_params]]
    channels = low.shape(base[1])[0]
    ndim = len(x.shape)
    factor_shape = (1, channels) + (1,) * (ndim - 2)

    def part(i: int):
        return lambda *a: _conv_arrays(qc, data_scale, out_scale, a)[i]

    # Channels last, as the primitive's dst: where the factor has the dst's shape
    # (batch 1, 1x1 output), oneDNN's fast kernels want the same layout.
    factor = onednn.MemoryDesc.ordered(factor_shape, "a" + "cdefgh"[:ndim - 2] + "b", np.dtype(F32))
    act = _post(qc.act)
    post = [onednn.PostOp.binary(factor, "mul"), *act]
    dst_type = qc.out_type
    if p.with_sum:  # written in the addend's type, as MXNet (`QuantizedConv._dst_type`)
        dst_type = low.dtype(base[-1])
        sum_scale = F32(out_scale / q.quantize_scale(dst_type, *low.range_of(extra[2:4])))
        post += [onednn.PostOp.sum(float(sum_scale))] + _post(qc.postsum_act)
    c = qc.conv
    has_bias = not c.no_bias or qc.bn is not None
    weight_shape = low.shape(base[1])
    # a classifier's 1x1 convolution of 1x1 images runs on the batch as a row
    row = None if p.with_sum else low.images_as_row(x, weight_shape, c.pad, x.desc.dtype)
    if _own_depthwise(qc, act, x, weight_shape):
        stride = spatial_param(c.stride or None, 2, 1, "stride", 1)[0]
        op = onednn.dw8_conv(x.shape, stride=stride, bias=has_bias, relu=bool(act),
                             dst_dtype=dst_type)
        low.kernels[OWN_DEPTHWISE].append(node.name)
    elif _own_pointwise(qc, act, x, weight_shape):
        op = onednn.pw8_conv((row or x).shape, weight_shape[0], src_dtype=x.desc.dtype,
                             bias=has_bias, relu=bool(act), dst_dtype=dst_type)
        low.kernels[OWN_POINTWISE].append(node.name)
    else:
        op = onednn.conv(x.shape if row is None else row.desc, weight_shape,
                         stride=None if row is not None else c.stride or None,
                         pad=c.pad or None, dilate=c.dilate or None, num_group=c.num_group,
                         bias=has_bias, post_ops=_saturated(post, dst_type),
                         int8=onednn.Int8(src=x.desc.dtype, dst=dst_type, bias=np.int32,
                                          src_scale=False, weight_scales=None,
                                          dst_scale=False),
                         dst_layout=None if row is None else "acdb",
                         avoid="amx" if c.num_group == 1
                         and min(weight_shape[:2]) < AMX_MIN_CHANNELS else None)
    args = {"src": low.plan.reorder(row or x, op.desc("src")),
            "weights": low.constant(inputs, sources, part(0), op, "weights"),
            "post0_src1": low.constant(inputs, sources, part(2), op, "post0_src1")}
    if has_bias:
        args["bias"] = low.constant(inputs, sources, part(1), op, "bias")
    dst = None if not p.with_sum else low.addend(base[-1], op.desc("dst"), nid, [base[0]])
    y = low.plan.add(op, dst=dst, **args)
    if row is not None:
        y = low.row_as_images(y, x.shape[0])
    low.set_range(low.g.entry_ptr[nid], *q.range_out(p.min_calib_range, p.max_calib_range))
    if y.desc.dtype != qc.out_type:  # the sum's type read as the output's, no copy
        y = low.plan.view(y, _retyped(y.desc, qc.out_type))
    return y


def _own_depthwise(qc: QuantizedConv, act: list[onednn.PostOp], x: onednn.Slot,
                   weight_shape: tuple[int, ...]) -> bool:
    """Whether a calibrated quantized convolution runs with minimx's INT8
    depthwise kernel (`onednn.dw8_conv`): where it can and pays
    (`onednn.dw8_supports`; `_own_kernel_takes`), unless
    MINIMX_DNNL_DEPTHWISE_INT8=0."""
    return (settings().dnnl_depthwise_int8
            and _own_kernel_takes(qc, act, x, weight_shape, onednn.dw8_supports))


def _own_pointwise(qc: QuantizedConv, act: list[onednn.PostOp], x: onednn.Slot,
                   weight_shape: tuple[int, ...]) -> bool:
    """Whether a calibrated quantized convolution runs with minimx's INT8 1x1
    kernel (`onednn.pw8_conv`): where it can (`onednn.pw8_supports`;
    `_own_kernel_takes`) and pays (`POINTWISE_MIN_EXPANSION`,
    `POINTWISE_MAX_IN`), unless
    MINIMX_DNNL_POINTWISE_INT8=0."""
    return (settings().dnnl_pointwise_int8
            and weight_shape[0] >= POINTWISE_MIN_EXPANSION * weight_shape[1]
            and weight_shape[1] <= POINTWISE_MAX_IN
            and _own_kernel_takes(qc, act, x, weight_shape, onednn.pw8_supports))


def _own_kernel_takes(qc: QuantizedConv, act: list[onednn.PostOp], x: onednn.Slot,
                      weight_shape: tuple[int, ...], supports: Callable[..., bool]) -> bool:
    """Whether one of minimx's INT8 convolution kernels, whose shape check is
    `supports`, takes this convolution: no sum and no activation but relu (the
    epilogue the kernels have), and a shape `supports` accepts."""
    c = qc.conv
    return (not qc.p.with_sum and all(map(is_relu, act))
            and supports(x.shape, weight_shape, x.desc.dtype, stride=c.stride or None,
                         pad=c.pad or None, dilate=c.dilate or None, num_group=c.num_group))


def _run_time_conv_arrays(qc: QuantizedConv, arrays: Sequence[np.ndarray]
                          ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """(int8 weights, float bias or None, the weight's one scale, its level: max |w| / 127)
    of an uncalibrated quantized convolution (scaled per tensor, as `QuantizedConv`)."""
    w, bias = _folded(qc, arrays)
    scales, lo, hi = q.weight_scales(w, bias, F32(1), channelwise=False)
    level = np.array([q.max_abs(lo, hi) / F32(127)], F32)
    return q.scaled(w, scales[0], np.int8), bias, scales, level


def _quantize_scale(low: Lowering, dtype: np.dtype, real: onednn.Slot) -> onednn.Slot:
    """`q.quantize_scale` of a (1,) max |range| slot: ``levels / real``, or INT32_MAX
    as float32 where real is 0 (``per * (1 - zero) + 2**31 * zero``)."""
    levels = q.INT8_LEVELS if dtype == np.int8 else q.UINT8_LEVELS
    zero = _binary(low, "eq", real, 0.0)
    per = _binary(low, "mul", _per(low, float(levels), real), _binary(low, "sub", 1.0, zero))
    return _binary(low, "add", per, _binary(low, "mul", zero, float(np.iinfo(np.int32).max)))


def _conv_at_run_time(low: Lowering, node: Node, qc: QuantizedConv, nid: int,
                      ins: Sequence[int], inputs) -> onednn.Slot:
    """An uncalibrated quantized `_sg_mkldnn_conv` without a sum (`QuantizedConv.forward`
    without calibration): int32 output of the int8 weights and the bias quantized by
    the data's scale, found at run time with the product's range."""
    base, extra = ins[:-2], ins[-2:]
    x = low.value(base[0])
    real = _max_abs(low, low.value(extra[0]), low.value(extra[1]))
    n_params = 1 + (not qc.conv.no_bias) + 4 * (qc.bn is not None)
    sources = [low.source(e, f"{node.label} weights") for e in base[1:1 + n_params]]
    weight_shape = low.shape(base[1])

    def part(i: int):
        return lambda *a: _run_time_conv_arrays(qc, a)[i]

    c = qc.conv
    has_bias = not c.no_bias or qc.bn is not None
    op = onednn.conv(x.shape, weight_shape, stride=c.stride or None, pad=c.pad or None,
                     dilate=c.dilate or None, num_group=c.num_group, bias=has_bias,
                     post_ops=_post(qc.act), int8=onednn.Int8(
                         src=x.desc.dtype, dst=np.int32, bias=np.int32, src_scale=False,
                         weight_scales=None, dst_scale=False))
    args = {"src": low.plan.reorder(x, op.desc("src")),
            "weights": low.constant(inputs, sources, part(0), op, "weights")}
    if has_bias:
        bias = low.constant(inputs, sources, part(1), shape=(weight_shape[0],))
        scale = _binary(low, "mul", low.constant(inputs, sources, part(2), shape=(1,)),
                        _quantize_scale(low, x.desc.dtype, real))
        reorder = onednn.reorder(bias.desc, op.desc("bias"), src_scale_mask=0)
        args["bias"] = low.plan.add(reorder, src=bias, src_scale=scale)
    y = low.plan.add(op, **args)
    data_level = _binary(low, "div", real, 127.0 if x.desc.dtype == np.int8 else 255.0)
    top = _binary(low, "mul", _binary(low, "mul", low.constant(inputs, sources, part(3),
                                                                shape=(1,)), data_level),
                  float(q.INT32_LEVELS))
    _set_run_time_range(low, nid, _binary(low, "mul", top, -1.0), top)
    return y


def _fc_arrays(qfc: QuantizedFC, data_scale: np.float32, out_scale: np.float32,
               arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray | None,
                                                      np.ndarray]:
    """(int8 weights, int32 bias or None, output factor per channel) of a quantized
    FC, from its weight [bias] [and their ranges, int8 weights quantized offline]."""
    w, rest = arrays[0], list(arrays[1:])
    bias = None if qfc.fc.no_bias else rest.pop(0)
    w_q, w_scale, b_q = qfc.int8_weights([None, w, bias], [None, None, *rest], data_scale)
    factor = (out_scale / w_scale).astype(F32)
    return w_q, b_q, np.broadcast_to(factor, (1, w.shape[0])).copy()


def quantized_fc(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs
                 ) -> onednn.Slot:
    """A quantized `_sg_mkldnn_fully_connected`, calibrated or with float output
    (as `mkldnn_ops.QuantizedFC`), or a float32 one (minimx's fused FC chain)."""
    _, p = node.operator()
    if not p.quantized:
        return low.fused_fc(node, nid, ins, inputs)
    qfc = QuantizedFC(p)
    if not calibrated(p, node.op):
        return _fc_at_run_time(low, node, qfc, nid, ins, inputs)
    n_base = 2 if qfc.fc.no_bias else 3
    base, extra = ins[:n_base], ins[n_base:]
    x, lead = low.rows(base[0], qfc.fc.flatten)
    data_scale = q.quantize_scale(x.desc.dtype, *low.range_of(extra[:2]))
    act_scale = F32(1)
    if qfc.calibrated:
        out_scale = q.quantize_scale(qfc.out_type, p.min_calib_range, p.max_calib_range)
        if qfc.act is not None:  # oneDNN's eltwise post-op scales after the activation
            act_scale, out_scale = out_scale, F32(1)
        out_scale = F32(out_scale / data_scale)
    else:
        out_scale = F32(1.0 / float(data_scale))
    sources = [low.source(e, f"{node.label} weights") for e in (*base[1:], *extra[2:])]
    num_hidden = low.shape(base[1])[0]

    def part(i: int):
        return lambda *a: _fc_arrays(qfc, data_scale, out_scale, a)[i]

    post = [onednn.PostOp.binary((1, num_hidden), "mul")] + _post(qfc.act)
    if act_scale != 1:
        post.append(onednn.PostOp.eltwise("linear", float(act_scale)))
    op = onednn.inner_product(x.shape, num_hidden, bias=not qfc.fc.no_bias, post_ops=post,
                              int8=onednn.Int8(src=x.desc.dtype, dst=qfc.out_type,
                                               bias=np.int32, src_scale=False,
                                               weight_scales=None, dst_scale=False))
    args = {"src": low.plan.reorder(x, op.desc("src")),
            "weights": low.constant(inputs, sources, part(0), op, "weights"),
            "post0_src1": low.constant(inputs, sources, part(2), shape=(1, num_hidden))}
    if not qfc.fc.no_bias:
        args["bias"] = low.constant(inputs, sources, part(1), op, "bias")
    if qfc.calibrated and not p.enable_float_output:
        low.set_range(low.g.entry_ptr[nid], *q.range_out(p.min_calib_range, p.max_calib_range))
    return low.unrows(low.plan.add(op, **args), lead, num_hidden)


def _std_round(low: Lowering, v: onednn.Slot) -> onednn.Slot:
    """`q.std_round` (C's round, halves away from zero) of a float32 slot:
    ``sign(v) * floor(|v| + 0.5)``, floor(t) as ``rint(t) - (rint(t) > t)``."""
    t = _binary(low, "add", _eltwise(low, v, "abs"), 0.5)
    r = _eltwise(low, t, "round")
    floor = _binary(low, "sub", r, _binary(low, "gt", r, t))
    sign = _binary(low, "sub", _binary(low, "gt", v, 0.0), _binary(low, "lt", v, 0.0))
    return _binary(low, "mul", sign, floor)


def _fc_constants(qfc: QuantizedFC, b_levels: float, arrays: Sequence[np.ndarray]
                  ) -> np.ndarray:
    """(weight level: max |w| / `b_levels`, weight scale, bias scale, the bias rescale
    limit) of an uncalibrated FC from its weight, [bias,] weight range [, bias range]
    (as `QuantizedFC._int32_bias`)."""
    ranges = [q.scalar(a) for a in arrays[1 if qfc.fc.no_bias else 2:]]
    w_real = q.max_abs(*ranges[:2])
    w_scale = q.quantize_scale(np.int8, *ranges[:2])
    if qfc.fc.no_bias:
        return np.array([w_real / F32(b_levels), w_scale, 1, 1], F32)
    b_scale = q.quantize_scale(np.int8, *ranges[2:])
    with np.errstate(divide="ignore"):  # an all-zero bias: no limit
        limit = F32(F32(F32(np.iinfo(np.int32).max // 2) / q.max_abs(*ranges[2:])) / b_scale)
    return np.array([w_real / F32(b_levels), w_scale, b_scale, limit], F32)


def _fc_at_run_time(low: Lowering, node: Node, qfc: QuantizedFC, nid: int,
                    ins: Sequence[int], inputs) -> onednn.Slot:
    """An uncalibrated quantized `_sg_mkldnn_fully_connected` with int32 output
    (`QuantizedFC.forward` without calibration): MXNet rescales the int8 bias to the
    product's scale, found at run time (and the int8 weights, where the bias would
    pass INT32_MAX / 2), rounding half away from zero; done here in plan steps."""
    n_base = 2 if qfc.fc.no_bias else 3
    base, extra = ins[:n_base], ins[n_base:]
    x, lead = low.rows(base[0], qfc.fc.flatten)
    real = _max_abs(low, low.value(extra[0]), low.value(extra[1]))
    sources = [low.source(e, f"{node.label} weights") for e in (*base[1:], *extra[2:])]
    num_hidden = low.shape(base[1])[0]
    b_levels = 127.0 if x.desc.dtype == np.int8 else 255.0

    def const(i: int) -> onednn.Slot:
        return low.constant(inputs, sources, lambda *a: _fc_constants(qfc, b_levels, a)[i:i + 1],
                            shape=(1,))

    op = onednn.inner_product(x.shape, num_hidden, bias=not qfc.fc.no_bias,
                              post_ops=_post(qfc.act),
                              int8=onednn.Int8(src=x.desc.dtype, dst=np.int32, bias=np.int32,
                                               src_scale=False, weight_scales=None,
                                               dst_scale=False))
    args = {"src": low.plan.reorder(x, op.desc("src"))}
    if qfc.fc.no_bias:
        args["weights"] = low.constant(inputs, sources, lambda w, *_: w, op, "weights")
    else:
        w_scale, b_scale, limit = const(1), const(2), const(3)
        data_scale = _quantize_scale(low, x.desc.dtype, real)
        rescale = _binary(low, "div", _binary(low, "mul", data_scale, w_scale), b_scale)
        bias = low.constant(inputs, sources, lambda w, b, *_: b.astype(F32),
                            shape=(num_hidden,))
        b_q = _std_round(low, _binary(low, "mul", bias, _binary(low, "min", rescale, limit)))
        args["bias"] = low.plan.reorder(b_q, op.desc("bias"))
        # Past the limit the weights are rescaled: w + over * (rescaled - w), the
        # rescaled ones kept finite (clipped to int8) where the limit is infinite.
        over = _binary(low, "gt", rescale, limit)
        w_rescale = _binary(low, "div", _binary(low, "div", _binary(low, "mul", limit, b_scale),
                                                data_scale), w_scale)
        w = low.constant(inputs, sources, lambda w, *_: w.astype(F32))
        rescaled = _eltwise(low, _std_round(low, _binary(low, "mul", w, _binary(
            low, "min", w_rescale, FLT_MAX))), "clip", -128.0, 127.0)
        moved = _binary(low, "mul", _binary(low, "sub", rescaled, w), over)
        weights = _binary(low, "add", w, moved)   # (num_hidden, K) in the op's dims:
        weights = low.plan.view(weights, onednn.MemoryDesc.plain(op.desc("weights").shape))
        args["weights"] = low.plan.reorder(weights, op.desc("weights"))
    y = low.unrows(low.plan.add(op, **args), lead, num_hidden)
    top = _binary(low, "mul", _binary(low, "mul", _binary(low, "div", real, 127.0), const(0)),
                  float(q.INT32_LEVELS))
    _set_run_time_range(low, nid, _binary(low, "mul", top, -1.0), top)
    return y


def _rescaled(low: Lowering, x: onednn.Slot, dtype: np.dtype, scale: np.float32
              ) -> onednn.Slot:
    """`x` times `scale` in `dtype`, in `x`'s layout where unblocked."""
    return _scale_step(low, x, _retyped(x.desc, dtype), scale)


def quantized_add(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs
                  ) -> onednn.Slot:
    """`_contrib_quantized_elemwise_add` (as `ops.quantization._quantized_add`): each
    operand times its scale in float32, summed, then rounded into the output type
    (by the calibrated range, or int32 over both operands' ranges)."""
    _, p = node.operator()
    xs = [low.value(e) for e in ins[:2]]
    dtypes = [x.desc.dtype for x in xs]
    dtype, scales, out_range = q.add_scales(p, dtypes, [low.range_of(ins[2:4]),
                                                        low.range_of(ins[4:6])])
    if dtypes[0] != dtypes[1]:  # the uint8 one is first rescaled into int8
        u8 = dtypes.index(np.dtype(np.uint8))
        xs[u8], scales[u8] = _rescaled(low, xs[u8], np.dtype(np.int8), scales[u8]), F32(1)
    a, b = (_rescaled(low, x, np.dtype(F32), s) for x, s in zip(xs, scales, strict=True))
    b = low.plan.reorder(b, a.desc)
    total = low.plan.add(onednn.binary(a.desc, b.desc, "add"), src=a, src1=b)
    low.set_range(low.g.entry_ptr[nid], *q.range_out(*out_range))
    return low.plan.reorder(total, _retyped(total.desc, dtype))


def requantize(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs
               ) -> onednn.Slot:
    """A calibrated `_contrib_requantize` (as `ops.quantization._requantize`): int32
    times the scale from its range to the calibrated one, rounded into int8/uint8."""
    _, p = node.operator()
    if not calibrated(p, node.op):
        return _requantize_at_run_time(low, node, nid, ins)
    dtype, scale, out_range = q.requantize_scale(p, low.range_of(ins[1:3]))
    low.set_range(low.g.entry_ptr[nid], *q.range_out(*out_range))
    x = low.value(ins[0])
    return _scale_step(low, x, _retyped(x.desc, dtype), scale)


def _requantize_at_run_time(low: Lowering, node: Node, nid: int, ins: Sequence[int]
                            ) -> onednn.Slot:
    """`_contrib_requantize` to the range the int32 data reaches (`q.requantize_scale`
    with `reach`), its input range known or read at run time."""
    dtype = q.output_type(node.operator()[1])
    x = low.value(ins[0])
    in_real = _max_abs(low, low.value(ins[1]), low.value(ins[2]))
    reach = _max_abs(low, _reduced(low, x, "min"), _reduced(low, x, "max"))
    real = _binary(low, "div", _binary(low, "mul", reach, in_real), float(q.INT32_LEVELS))
    _set_run_time_range(low, nid, _const(low, 0.0) if dtype == np.uint8 else
                        _binary(low, "mul", real, -1.0), real)
    levels = 255.0 if dtype == np.uint8 else 127.0
    scale = _binary(low, "mul", _binary(low, "div", in_real, float(q.INT32_LEVELS)),
                    _per(low, levels, real))
    op = onednn.reorder(x.desc, _retyped(x.desc, dtype), src_scale_mask=0)
    return low.plan.add(op, src=x, src_scale=_binary(low, "min", scale, FLT_MAX))


def quantized_concat(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs
                     ) -> onednn.Slot:
    """`_contrib_quantized_concat` (as `ops.quantization._quantized_concat`): each input
    rescaled to the joint range, int8 if any input is."""
    _, p = node.operator()
    n = p.num_args
    xs = [low.value(e) for e in ins[:n]]
    ranges = [low.range_of(ins[n + 2 * i:n + 2 * i + 2]) for i in range(n)]
    lo = min(0.0, *(r[0] for r in ranges))
    hi = max(0.0, *(r[1] for r in ranges))
    dtype = np.dtype(np.int8 if any(x.desc.dtype == np.int8 for x in xs) else np.uint8)
    out_scale = q.quantize_scale(dtype, lo, hi)
    parts = []
    for x, r in zip(xs, ranges, strict=True):
        x_scale = q.quantize_scale(x.desc.dtype, *r)
        same = x_scale == out_scale and x.desc.dtype == dtype
        part = x if same else _rescaled(low, x, dtype, F32(out_scale / x_scale))
        parts.append(low.plan.reorder(part, _retyped(xs[0].desc, dtype, part.shape)))
    op = onednn.concat([x.desc for x in parts], axis=p.dim)
    low.set_range(low.g.entry_ptr[nid], *q.range_out(lo, hi))
    return low.plan.add(op, **{f"src{i}": x for i, x in enumerate(parts)})


def quantized_batch_norm(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs
                         ) -> onednn.Slot:
    """A calibrated `_contrib_quantized_batch_norm` (as `ops.quantization`): oneDNN's
    int8 batch normalization (channels last, its fused multiply-add kernel) with
    MXNet's scale and shift, mean 0 and variance 1; uint8 data reordered to int8
    first."""
    _, p = node.operator()
    x = low.value(ins[0])
    data_range = low.range_of(ins[5:7])
    s8 = onednn.MemoryDesc.ordered(x.shape, "a" + "cdefgh"[:len(x.shape) - 2] + "b",
                                   np.dtype(np.int8))
    if x.desc.dtype == np.uint8:
        x = _scale_step(low, x, s8, F32(q.INT8_LEVELS / q.UINT8_LEVELS))
    x = low.plan.reorder(x, s8)
    channels = x.shape[1]
    sources = [low.source(e, f"{node.label} parameters") for e in ins[1:5]]

    def part(i: int):
        return lambda gamma, beta, mean, var: q.batch_norm_scale_shift(
            p, gamma, beta, mean, var, data_range)[i]

    low.set_range(low.g.entry_ptr[nid], *q.range_out(p.min_calib_range, p.max_calib_range))
    return low.plan.add(
        onednn.batch_norm(x.desc, eps=p.eps), src=x,
        mean=low.plan.constant(np.zeros(channels, F32)),
        variance=low.plan.constant(np.ones(channels, F32)),
        scale=low.constant(inputs, sources, part(0)),
        shift=low.constant(inputs, sources, part(1)))
