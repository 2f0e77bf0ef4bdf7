"""MXNet 1.9's int8 operators of its NLP (BERT) quantization flow:
`_contrib_quantize_asym`, `_contrib_quantized_elemwise_mul` and
`_contrib_quantized_embedding`, computed as MXNet 1.9.1's CPU build does
(`src/operator/quantization/quantize_asym*`, `quantized_elemwise_mul.cc`,
`quantized_indexing_op.cc`). Their scales and ranges are `ops.quantization`'s;
what differs is MXNet's own loops, kept as they are since its files are computed
with them: the elementwise product truncates toward zero (a C cast) where
oneDNN would round, and an uncalibrated product's int32 range counts 127
levels per operand.
"""
from __future__ import annotations

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from . import nn  # noqa: F401  (Embedding registered first: its parameters are reused)
from .infer import merge_at
from .quantization import (
    F32,
    INT8_LEVELS,
    RANGE,
    max_abs,
    multiplied_range,
    range_out,
    saturate,
    scalar,
)
from .registry import GradReads, OpContext, OpDef, Param, Params, get_op, register

_UINT8_MAX = F32(255)
_CALIB = (
    Param("min_calib_range", "float", None, "Calibrated minimum (None: taken at run time)."),
    Param("max_calib_range", "float", None, "Calibrated maximum (None: taken at run time)."),
)


def _calibrated(p: Params) -> bool:
    return p.min_calib_range is not None and p.max_calib_range is not None


OPERATORS: list[str] = []  # the names this module registers


def _int8_op(name: str, doc: str, **fields) -> OpDef:
    """Inference only, as in MXNet (its gradients are zero); no bfloat16 kernel."""
    OPERATORS.append(name)
    return register(OpDef(name=name, doc=doc, backward_reads=GradReads(), bfloat16="refuse",
                          **fields))


def _ranges_shape(n_data: int, n_in_ranges: int):
    """Shape rule: output 0 shaped as the `n_data` data inputs (equal shapes); every range (1,)."""
    def rule(p, in_shapes, out_shapes):
        ins, outs = list(in_shapes), list(out_shapes)
        for i in range(n_data):
            merge_at(outs, 0, ins[i], "output")
        for i in range(n_data):
            merge_at(ins, i, outs[0], "data")
        for i in range(n_data, n_data + n_in_ranges):
            merge_at(ins, i, RANGE, "min/max range input")
        for i in range(1, len(outs)):
            merge_at(outs, i, RANGE, "range output")
        return ins, outs
    return rule


# -- _contrib_quantize_asym -----------------------------------------------------------------

def asym_scale_shift(lo: float, hi: float) -> tuple[np.float32, np.float32]:
    """MXNet's uint8 scale and shift mapping [lo, hi] onto [0, 255], in float32."""
    scale = F32(_UINT8_MAX / F32(F32(hi) - F32(lo)))
    return scale, F32(_UINT8_MAX - F32(F32(hi) * scale))


def _quantize_asym(p: Params, ctx: OpContext, inputs: list) -> list:
    x = inputs[0]
    if x.ndim != 3:
        raise ShapeError(f"data is {x.ndim}-d {x.shape}: MXNet 1.9.1 quantizes 3-d data only "
                         "(its CPU fallback for other ranks crashes)")
    lo, hi = (p.min_calib_range, p.max_calib_range) if _calibrated(p) else (x.min(), x.max())
    scale, shift = asym_scale_shift(lo, hi)
    # oneDNN's reorder with rnn_data_qparams: x * scale + shift, rounded half to even, saturated.
    out = saturate((x.astype(F32) * scale + shift).astype(F32), np.uint8)
    return [out, np.array([scale], F32), np.array([shift], F32)]


def _float32_data(p, in_types, out_types):
    if in_types[0] is not None and in_types[0] != F32:
        raise DTypeError(f"data must be float32, got {in_types[0]}")
    return [np.dtype(F32)], [np.dtype(np.uint8), np.dtype(F32), np.dtype(F32)]


_int8_op(
    "_contrib_quantize_asym",
    """Quantize float32 (T, N, C) data to uint8 with a scale and a shift:
    ``out = round(x * scale + shift)``, ``scale = 255 / (max - min)``,
    ``shift = 255 - max * scale``, over the calibrated range or the data's own.""",
    forward=_quantize_asym, params=_CALIB, outputs=("output", "scale", "shift"),
    infer_shape=_ranges_shape(1, 0), infer_type=_float32_data)


# -- _contrib_quantized_elemwise_mul ----------------------------------------------------------

def _mul_out_names(p: Params) -> list[str]:
    return ["output"] + ([] if p.enable_float_output else ["min_output", "max_output"])


def _mul_out_type(p: Params) -> np.dtype:
    if p.enable_float_output:
        return np.dtype(F32)
    return np.dtype(np.int8 if _calibrated(p) else np.int32)


def _mul_type(p, in_types, out_types):
    for i, t in enumerate(in_types[:2]):
        if t is not None and t != np.int8:
            raise DTypeError(f"{('lhs', 'rhs')[i]} must be int8, got {t}")
    outs = [_mul_out_type(p)] + [np.dtype(F32)] * (len(out_types) - 1)
    return [np.dtype(np.int8)] * 2 + [np.dtype(F32)] * 4, outs


def _quantized_mul(p: Params, ctx: OpContext, inputs: list) -> list:
    a, b = inputs[:2]
    lhs, rhs = (scalar(inputs[2]), scalar(inputs[3])), (scalar(inputs[4]), scalar(inputs[5]))
    product = a.astype(np.int32) * b.astype(np.int32)
    lhs_scale, rhs_scale = F32(INT8_LEVELS / max_abs(*lhs)), F32(INT8_LEVELS / max_abs(*rhs))
    if p.enable_float_output:
        scale = F32(1.0 / float(lhs_scale) / float(rhs_scale))  # MXNet's 1.0 is a double
        return [product.astype(F32) * scale]
    if not _calibrated(p):
        return [product, *multiplied_range(lhs, rhs, 127)]
    out_scale = F32(INT8_LEVELS / max_abs(p.min_calib_range, p.max_calib_range))
    scale = F32(F32(out_scale / lhs_scale) / rhs_scale)
    # A C cast: toward zero (saturated here; MXNet leaves overflow undefined).
    out = saturate(np.trunc(product.astype(F32) * scale), np.int8)
    return [out, *range_out(p.min_calib_range, p.max_calib_range)]


_int8_op(
    "_contrib_quantized_elemwise_mul",
    """Elementwise product of two int8 arrays of one shape: int32 with the product's range,
    int8 by a calibrated range (truncated, as MXNet's loop), or float32
    (``enable_float_output``).""",
    forward=_quantized_mul,
    params=(*_CALIB, Param("enable_float_output", "bool", False, "Give float32 output.")),
    inputs=("lhs", "rhs", "lhs_min", "lhs_max", "rhs_min", "rhs_max"),
    outputs=_mul_out_names, infer_shape=_ranges_shape(2, 4), infer_type=_mul_type)


# -- _contrib_quantized_embedding -------------------------------------------------------------

def _embedding_shape(p, in_shapes, out_shapes):
    ins, outs = get_op("Embedding").infer_shape(p, list(in_shapes[:2]), list(out_shapes[:1]))
    return ins + [RANGE, RANGE], outs + [RANGE, RANGE]


def _embedding_type(p, in_types, out_types):
    if in_types[0] is None:
        raise DTypeError("data (the indices) must have a known type, as MXNet requires")
    if in_types[1] is not None and in_types[1] != np.int8:
        raise DTypeError(f"weight must be int8, got {in_types[1]}")
    return ([in_types[0], np.dtype(np.int8), np.dtype(F32), np.dtype(F32)],
            [np.dtype(np.int8), np.dtype(F32), np.dtype(F32)])


def _quantized_embedding(p: Params, ctx: OpContext, inputs: list) -> list:
    x, w = inputs[:2]
    if w.shape != (p.input_dim, p.output_dim):
        raise OperatorError(f"weight is {w.shape}, input_dim={p.input_dim} and "
                            f"output_dim={p.output_dim} need {(p.input_dim, p.output_dim)}")
    rows = get_op("Embedding").forward(p, ctx, [x, w])
    return [rows, *range_out(scalar(inputs[2]), scalar(inputs[3]))]


_int8_op(
    "_contrib_quantized_embedding",
    """Embedding of int8 weights: the rows of the indices (truncated, clipped to the
    vocabulary), with the weight's range.""",
    forward=_quantized_embedding, params=get_op("Embedding").params,
    inputs=("data", "weight", "min_weight", "max_weight"),
    outputs=("output", "min_output", "max_output"),
    infer_shape=_embedding_shape, infer_type=_embedding_type)
