"""MXNet 1.9's fused oneDNN self-attention products, as MXNet writes them to files:
`_sg_mkldnn_selfatt_qk` and `_sg_mkldnn_selfatt_valatt` (MXNet's
SgMKLDNNTransformerProperty wraps each `_contrib_interleaved_matmul_selfatt_*`
node into one, holding it as a subgraph; `quantize_model_mkldnn` then sets
``quantized`` and the output range).

Both are one oneDNN matmul over the interleaved (T, B, heads * 3 * D)
projection, so the kernels here compute that product directly (the subgraph is
kept for the file, not run): an exact product (int32 in oneDNN when
quantized), made float32 and multiplied by one output scale, then rounded half
to even and saturated to the output type. The scales are MXNet's
(`ops.quantization.quantize_scale`); its quirk stays: an uncalibrated int32
query-key product reports the range (0, 0), as MXNet computes it from zeroed
locals (`SgMKLDNNSelfAttQKOp::Initialize`).
"""
from __future__ import annotations

import numpy as np

from ..base import DTypeError
from ..ops import quantization as q
from ..ops.registry import GradReads, OpContext, OpDef, Param, Params, get_op, register

F32 = q.F32
_PARAMS = (
    Param("heads", "int", doc="Set number of heads"),
    Param("quantized", "bool", False, "Whether the node computes in int8."),
    Param("enable_float_output", "bool", False, "Quantized: give float32 output."),
    Param("min_calib_range", "float", None, "Calibrated output minimum (quantized)."),
    Param("max_calib_range", "float", None, "Calibrated output maximum (quantized)."),
)


def _calibrated(p: Params) -> bool:
    return p.min_calib_range is not None and p.max_calib_range is not None


def _split(p: Params, qkv: np.ndarray) -> np.ndarray:
    """(T, B, heads * 3 * D) -> (T, B, heads, 3, D), as a float64 view for exact products."""
    t, b, width = qkv.shape
    return qkv.astype(np.float64).reshape(t, b, p.heads, 3, width // (3 * p.heads))


def _out_type(p: Params) -> np.dtype:
    if not p.quantized or p.enable_float_output:
        return np.dtype(F32)
    return np.dtype(np.int8 if _calibrated(p) else np.int32)


def _scaled(p: Params, acc: np.ndarray, in_scales: tuple[np.float32, ...],
            divisor: float = 1.0) -> tuple[np.ndarray, tuple[float, float] | None]:
    """oneDNN's output: the product in float32 times MXNet's output scale (divided by
    `divisor`, in MXNet's order), as the output type; and the calibrated range
    (None where MXNet computes one, or where the output is float32)."""
    y = acc.astype(F32)
    if not p.quantized:
        return y * F32(F32(1) / divisor), None
    product_scale = F32(in_scales[0] * in_scales[1])
    if p.enable_float_output:
        return y * F32(F32(F32(1) / product_scale) / divisor), None
    if not _calibrated(p):
        return q.saturate(y * F32(F32(1) / divisor), np.int32), None
    out = q.quantize_scale(np.int8, p.min_calib_range, p.max_calib_range)
    y = y * F32(F32(out / product_scale) / divisor)
    return q.saturate(y, np.int8), (p.min_calib_range, p.max_calib_range)


def _with_range(p: Params, y: np.ndarray, calibrated: tuple[float, float] | None,
                computed: tuple[np.ndarray, np.ndarray]) -> list:
    """The node's outputs: `y`, and for an integer output its range."""
    if not p.quantized or p.enable_float_output:
        return [y]
    return [y, *(q.range_out(*calibrated) if calibrated else computed)]


def _qk(p: Params, ctx: OpContext, inputs: list) -> list:
    parts = _split(p, inputs[0])
    acc = np.einsum("tbhd,sbhd->bhts", parts[..., 0, :], parts[..., 1, :])
    acc = acc.reshape(-1, *acc.shape[2:])
    scale = q.quantize_scale(inputs[0].dtype, q.scalar(inputs[1]), q.scalar(inputs[2])) \
        if p.quantized else F32(1)
    y, calibrated = _scaled(p, acc, (scale, scale), np.sqrt(F32(parts.shape[-1])))
    # MXNet's int32 range comes from zeroed locals, not the data's range: (0, 0).
    return _with_range(p, y, calibrated, q.multiplied_range((0.0, 0.0), (0.0, 0.0), 127))


def _valatt(p: Params, ctx: OpContext, inputs: list) -> list:
    parts, att = _split(p, inputs[0]), inputs[1]
    t, b = parts.shape[:2]
    maps = att.astype(np.float64).reshape(b, p.heads, *att.shape[1:])
    acc = np.einsum("bhts,sbhd->tbhd", maps, parts[..., 2, :]).reshape(t, b, -1)
    if not p.quantized:
        return [_scaled(p, acc, ())[0]]
    qkv_range = (q.scalar(inputs[2]), q.scalar(inputs[3]))
    att_range = (q.scalar(inputs[4]), q.scalar(inputs[5]))
    scales = (q.quantize_scale(inputs[0].dtype, *qkv_range),
              q.quantize_scale(att.dtype, *att_range))
    y, calibrated = _scaled(p, acc, scales)
    # int8 values times uint8 maps: 127 and 255 levels.
    return _with_range(p, y, calibrated, q.multiplied_range(qkv_range, att_range, 255))


def _in_names(base: tuple[str, ...], ranges: tuple[str, ...]):
    return lambda p: list(base) + (list(ranges) if p.quantized else [])


def _out_names(p: Params) -> list[str]:
    integer = p.quantized and not p.enable_float_output
    return ["output"] + (["min_output", "max_output"] if integer else [])


def _infer_shape(base: str, n_base: int):
    """The interleaved product's shape rule for the data inputs; every range (1,)."""
    op = get_op(base)

    def rule(p, in_shapes, out_shapes):
        ins, outs = op.infer_shape(p, list(in_shapes[:n_base]), list(out_shapes[:1]))
        return ins + [q.RANGE] * (len(in_shapes) - n_base), \
            outs + [q.RANGE] * (len(out_shapes) - 1)
    return rule


def _infer_type(quantized_types: tuple[np.dtype, ...]):
    """Float32 throughout, or (quantized) `quantized_types` for the data inputs, float32
    ranges and MXNet's output type."""
    def rule(p, in_types, out_types):
        data = quantized_types if p.quantized else (np.dtype(F32),) * len(quantized_types)
        for i, (got, want) in enumerate(zip(in_types, data, strict=False)):
            if got is not None and got != want:
                raise DTypeError(f"input {i} must be {want}, got {got}")
        ranges = [np.dtype(F32)] * (len(in_types) - len(data))
        return list(data) + ranges, [_out_type(p)] + [np.dtype(F32)] * (len(out_types) - 1)
    return rule


def _register(name: str, forward, base: str, inputs: tuple[str, ...],
              ranges: tuple[str, ...], types: tuple[np.dtype, ...], doc: str) -> None:
    register(OpDef(
        name=name, doc=doc, forward=forward, params=_PARAMS,
        inputs=_in_names(inputs, ranges), outputs=_out_names,
        infer_shape=_infer_shape(base, len(inputs)), infer_type=_infer_type(types),
        backward_reads=GradReads(), bfloat16="refuse"))


_register("_sg_mkldnn_selfatt_qk", _qk, "_contrib_interleaved_matmul_selfatt_qk",
          ("queries_keys_values",), ("min_qkv", "max_qkv"), (np.dtype(np.int8),),
          "MXNet's fused oneDNN query-key product of self-attention: (T, B, 3 * E) -> "
          "(B * heads, T, T), scaled by 1/sqrt(D); int8 in when quantized.")
_register("_sg_mkldnn_selfatt_valatt", _valatt, "_contrib_interleaved_matmul_selfatt_valatt",
          ("queries_keys_values", "attention"),
          ("min_qkv", "max_qkv", "min_attention", "max_attention"),
          (np.dtype(np.int8), np.dtype(np.uint8)),
          "MXNet's fused oneDNN attention-weighted values: (T, B, 3 * E) and "
          "(B * heads, T, T) -> (T, B, E); int8 values and uint8 maps when quantized.")
