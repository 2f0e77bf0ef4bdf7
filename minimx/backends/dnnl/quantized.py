"""Lowering MXNet's quantized operators onto oneDNN's INT8 primitives.

Needs: a `Lowering` (lower.py) walking a DNNL subgraph whose quantized nodes
the config accepted (the `calibrated` check: their output ranges fixed by
calibration, their input ranges made by such nodes). Guarantees: the numpy
kernels' numbers (`ops.quantization`, `backends.mkldnn_ops`), computed the
same way:
- every range is known when the plan compiles (a calibrated range, an
  input's passed on, or a range input of the subgraph, whose value the plan
  is compiled for), so the scales are constants; the (1,)-shaped range
  outputs are constants too, written out where read outside;
- weights (BatchNorm folded first) and biases are quantized by the numpy
  kernels' own functions in the weight cache, recomputed when a weight moves;
- the primitive runs unscaled on the integers (int32 sum plus int32 bias, in
  float32) and then multiplies by the kernel's per-channel requantization
  factor as a binary post-op, so the float32 products are the kernel's;
  activations and the sum follow as post-ops, and the dst conversion rounds
  half to even and saturates, as the kernels do;
- quantize and dequantize are reorders multiplying by the kernel's scale.
One difference remains possible, not seen on the fixtures: oneDNN's sum
post-op could round the scaled addend before adding it where the kernel
rounds once (one quantization step, on .5 ties).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ... import onednn
from ...base import BackendError
from ...graph import Node
from ...ops import quantization as q
from ..mkldnn_ops import QuantizedConv, QuantizedFC
from .eltwise import eltwise_of

if TYPE_CHECKING:
    from .lower import Lowering

F32 = np.float32


def _post(node: Node | None) -> list[onednn.PostOp]:
    found = None if node is None else eltwise_of(node)
    if node is not None and found is None:
        raise BackendError(f"DNNL lowering: {node.label} is not an eltwise post-op")
    return [] if found is None else [onednn.PostOp.eltwise(*found)]


def _retyped(desc: onednn.MemoryDesc, dtype: np.dtype,
             shape: tuple[int, ...] | None = None) -> onednn.MemoryDesc:
    """`desc`'s layout with another data type (and `shape`, if given), where the
    layout is unblocked (INT8 primitives choose NHWC), else the plain layout."""
    order, shape = desc.layout, shape or desc.shape
    if sorted(order) == [chr(ord("a") + i) for i in range(len(shape))]:
        return onednn.MemoryDesc.ordered(shape, order, dtype)
    return onednn.MemoryDesc.plain(shape, dtype)


def _scale_step(low: Lowering, x: onednn.Slot, dst: onednn.MemoryDesc, scale: np.float32
                ) -> onednn.Slot:
    """``saturate(x * scale)`` into `dst` (oneDNN's reorder)."""
    op = onednn.reorder(x.desc, dst, src_scale_mask=0)
    return low.plan.add(op, src=x, src_scale=low.plan.constant(np.array([scale], F32)))


def quantize(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs) -> onednn.Slot:
    """`_contrib_quantize_v2` with a calibrated range (as `ops.quantization._quantize_v2`),
    4-d data into NHWC, the layout oneDNN's INT8 convolutions take."""
    _, p = node.operator()
    lo, hi = p.min_calib_range, p.max_calib_range
    dtype = q.output_type(p)
    real = q.max_abs(lo, hi)
    levels = q.UINT8_LEVELS if dtype == np.uint8 else q.INT8_LEVELS
    out = low.g.entry_ptr[nid]
    low.set_range(out, *(q.range_out(lo, hi) if dtype == np.uint8 else q.range_out(-real, real)))
    x = low.value(ins[0])
    dst = onednn.MemoryDesc.ordered(x.shape, "acdb", dtype) if len(x.shape) == 4 else \
        onednn.MemoryDesc.plain(x.shape, dtype)
    return _scale_step(low, x, dst, F32(levels / real) if real else F32(0))


def dequantize(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs
               ) -> onednn.Slot:
    """`_contrib_dequantize`: ``x * max(|min|, |max|) / levels``."""
    x = low.value(ins[0])
    levels = q.UINT8_LEVELS if x.desc.dtype == np.uint8 else q.INT8_LEVELS
    return _scale_step(low, x, _retyped(x.desc, np.dtype(F32)),
                       F32(q.max_abs(*low.range_of(ins[1:3])) / levels))


def _conv_arrays(qc: QuantizedConv, data_scale: np.float32, out_scale: np.float32,
                 arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray | None,
                                                        np.ndarray]:
    """(int8 weights, int32 bias or None, requantization factor per channel) of a
    calibrated quantized convolution, from its weight [bias] [BatchNorm parameters]."""
    w, rest = arrays[0], list(arrays[1:])
    bias = None if qc.conv.no_bias else rest.pop(0)
    if qc.bn is not None:
        gamma, beta, mean, var = rest[:4]
        w, bias = q.fold_batch_norm(w, bias, gamma, beta, mean, var, qc.bn.eps,
                                    qc.bn.fix_gamma)
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
    n_base = len(ins) - (4 if p.with_sum else 2)
    base, extra = ins[:n_base], ins[n_base:]
    x = low.value(base[0])
    data_scale = q.quantize_scale(x.desc.dtype, *low.range_of(extra[:2]))
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
    post = [onednn.PostOp.binary(factor, "mul")] + _post(qc.act)
    dst_type = qc.out_type
    if p.with_sum:  # written in the addend's type, as MXNet (`QuantizedConv._dst_type`)
        dst_type = low.dtype(base[-1])
        sum_scale = F32(out_scale / q.quantize_scale(dst_type, *low.range_of(extra[2:4])))
        post += [onednn.PostOp.sum(float(sum_scale))] + _post(qc.postsum_act)
    c = qc.conv
    has_bias = not c.no_bias or qc.bn is not None
    op = onednn.conv(x.shape, low.shape(base[1]), stride=c.stride or None, pad=c.pad or None,
                     dilate=c.dilate or None, num_group=c.num_group, bias=has_bias,
                     post_ops=post, int8=onednn.Int8(
                         src=x.desc.dtype, dst=dst_type, bias=np.int32, src_scale=False,
                         weight_scales=None, dst_scale=False))
    args = {"src": low.plan.reorder(x, op.desc("src")),
            "weights": low.constant(inputs, sources, part(0), op, "weights"),
            "post0_src1": low.constant(inputs, sources, part(2), op, "post0_src1")}
    if has_bias:
        args["bias"] = low.constant(inputs, sources, part(1), op, "bias")
    dst = None if not p.with_sum else low.addend(base[-1], op.desc("dst"), nid, [base[0]])
    y = low.plan.add(op, dst=dst, **args)
    low.set_range(low.g.entry_ptr[nid], *q.range_out(p.min_calib_range, p.max_calib_range))
    if y.desc.dtype != qc.out_type:  # values >= 0 (a uint8 output ends in relu)
        y = low.plan.reorder(y, _retyped(y.desc, qc.out_type))
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
    n_base = 2 if qfc.fc.no_bias else 3
    base, extra = ins[:n_base], ins[n_base:]
    x = low.value(base[0])
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
    return low.plan.add(op, **args)


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
    dtype, scale, out_range = q.requantize_scale(p, low.range_of(ins[1:3]))
    low.set_range(low.g.entry_ptr[nid], *q.range_out(*out_range))
    x = low.value(ins[0])
    return _scale_step(low, x, _retyped(x.desc, dtype), scale)


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
