"""MXNet 1.9's quantization operators, computed as MXNet's oneDNN (MKLDNN) CPU path does.

MXNet 1.9.1's CPU build runs every one of these through oneDNN, whose
arithmetic the kernels here reproduce, so that a checkpoint quantized by
MXNet gives MXNet's numbers:
- a float is made an integer by one float32 multiply by the scale, rounding
  to nearest even (oneDNN's reorder and output conversion, `vcvtps2dq`) and
  saturation to the type's range; int8 reaches -128;
- the ranges are MXNet's: `GetQuantizeScale` uses 127.5 and 255.5 levels
  (`kInt8Range`, `kUint8Range`), the older `_contrib_quantize` 127 and 255;
- integer products accumulate exactly (int32 in oneDNN: VNNI needs no weight
  halving), then go to float32, get the bias, the output scale and the
  post-ops there, and are rounded once at the end.

Each operator is MXNet's: name, parameters and defaults, inputs and outputs
(data, then min and max ranges as shape-(1,) float32 arrays), shape and dtype
inference. MXNet's own inconsistencies stay, as its files are computed with
them: int32 ranges count 127 or 255 levels where the scales count 127.5 or
255.5, and `_contrib_quantized_conv` adds its int8 bias unscaled. The last
section (`fold_batch_norm`, `weight_scales`, ...) is the arithmetic of MXNet's
fused `_sg_mkldnn_conv` / `_sg_mkldnn_fully_connected`, whose operators hold
subgraphs and so live above the graph layer, in `backends.mkldnn_ops`.

The fixtures come from a CPU with VNNI. Without it, oneDNN's int8 convolution
scales the weights of signed-data layers by 1/2 (against 16-bit saturation),
so MXNet's results there can differ from these by a rounding.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import DTypeLike

from ..base import DTypeError, OperatorError
from . import activation, norm, pooling, tensor  # noqa: F401  (registered first: their parameters are reused)
from .conv import conv_forward
from .infer import merge_at
from .registry import GradReads, OpContext, OpDef, Param, Params, get_op, register
from .window import make_window

F32 = np.float32
INT8_LEVELS = F32(127.5)    # kInt8Range: the levels GetQuantizeScale gives int8
UINT8_LEVELS = F32(255.5)   # kUint8Range
INT32_LEVELS = F32(2147483647)  # MinAbs(INT32_MIN, INT32_MAX) as a float: 2**31
INT_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))
RANGE = (1,)  # the shape of every min/max range input and output
OUT_TYPES = ("auto", "int8", "uint8")
Real = float | np.floating


# -- the arithmetic --------------------------------------------------------------------------

def max_abs(lo: Real, hi: Real) -> np.float32:
    return max(abs(F32(lo)), abs(F32(hi)))


def quantize_scale(dtype: DTypeLike, lo: Real, hi: Real) -> np.float32:
    """MXNet's GetQuantizeScale: levels per unit of the range's larger end."""
    real = max_abs(lo, hi)
    levels = INT8_LEVELS if np.dtype(dtype) == np.int8 else UINT8_LEVELS
    return F32(levels / real) if real else F32(np.iinfo(np.int32).max)


def saturate(values: np.ndarray, dtype: DTypeLike) -> np.ndarray:
    """oneDNN's conversion of float32 values: round half to even, then saturate (int32
    at the largest float32 below 2**31, as oneDNN: INT32_MAX is not a float32); NaN
    becomes 127 in int8 and 0 in uint8, as oneDNN's and MXNet 1.9.1's quantize give it."""
    info = np.iinfo(dtype)
    top = F32(info.max)
    if int(top) > info.max:
        top = np.nextafter(top, F32(0))
    out = np.clip(np.rint(values), info.min, top)
    if info.bits == 8:
        out = np.where(np.isnan(out), top if info.min < 0 else 0, out)
    return out.astype(dtype)


def scaled(values: np.ndarray, scale: np.ndarray | Real, dtype: DTypeLike) -> np.ndarray:
    """A oneDNN reorder with an output scale: ``saturate(float32(x) * scale)``."""
    return saturate(values.astype(F32) * np.asarray(scale, F32), dtype)


def range_out(lo: Real, hi: Real) -> tuple[np.ndarray, np.ndarray]:
    return np.array([lo], F32), np.array([hi], F32)


def multiplied_range(a: tuple[Real, Real], b: tuple[Real, Real],
                     b_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """MXNet's QuantizationRangeForMultiplication into int32: the range an int32
    product of `a` and `b` stands for. MXNet counts 127 levels for `a` and
    `b_levels` for `b`: 127 when the data is int8, else 255 (uint8's maximum,
    whichever factor the data is)."""
    a_level = F32(max_abs(*a) / F32(127))
    b_level = F32(max_abs(*b) / F32(b_levels))
    top = F32(F32(a_level * b_level) * INT32_LEVELS)
    return range_out(-top, top)


def output_type(p: Params) -> np.dtype:
    """MXNet's GetQuantizeOutputType: `auto` is uint8 only for a calibrated range
    that starts at 0 or above."""
    if p.out_type == "auto":
        calibrated = p.min_calib_range is not None and p.max_calib_range is not None
        return np.dtype(np.uint8 if calibrated and p.min_calib_range >= 0 else np.int8)
    return np.dtype(p.out_type)


def _calib(p: Params) -> tuple[float, float] | None:
    if (p.min_calib_range is None) != (p.max_calib_range is None):
        raise OperatorError(f"min_calib_range={p.min_calib_range} and max_calib_range="
                            f"{p.max_calib_range}: give both or neither")
    return None if p.min_calib_range is None else (p.min_calib_range, p.max_calib_range)


def scalar(a: np.ndarray) -> float:
    return float(np.asarray(a, F32).reshape(-1)[0])


# -- shared inference ------------------------------------------------------------------------

def _ranges_follow(n_in_ranges: int) -> Callable:
    """Shape rule: output 0 is shaped as input 0; every range is (1,)."""
    def rule(p, in_shapes, out_shapes):
        ins, outs = list(in_shapes), list(out_shapes)
        for i in range(1, 1 + n_in_ranges):
            merge_at(ins, i, RANGE, "min/max range input")
        for i in range(1, len(outs)):
            merge_at(outs, i, RANGE, "min/max range output")
        merge_at(outs, 0, ins[0], "output")
        merge_at(ins, 0, outs[0], "data")
        return ins, outs
    return rule


def _typed(data: Callable[[Params, np.dtype | None], np.dtype | None],
           out: Callable[[Params, np.dtype | None], np.dtype | None], n_in: int,
           n_out: int) -> Callable:
    """Dtype rule: `data(p, dtype)` checks input 0's dtype, `out(p, dtype)` gives
    output 0's; every range is float32."""
    def rule(p, in_types, out_types):
        got = in_types[0]
        return ([data(p, got)] + [np.dtype(F32)] * (n_in - 1),
                [out(p, got)] + [np.dtype(F32)] * (n_out - 1))
    return rule


def _int8_data(p: Params, dtype: np.dtype | None) -> np.dtype | None:
    if dtype is not None and dtype not in INT_TYPES:
        raise DTypeError(f"data must be int8 or uint8, got {dtype}")
    return dtype


def _float_data(p: Params, dtype: np.dtype | None) -> np.dtype:
    if dtype is not None and dtype != F32:
        raise DTypeError(f"data must be float32, got {dtype}")
    return np.dtype(F32)


def _same_type(p: Params, dtype: np.dtype | None) -> np.dtype | None:
    return dtype


_QUANTIZE_OUT = ("output0", "output1", "output2")  # MXNet lists no names: its defaults
_KEEP_OUT = ("output", "min_output", "max_output")
_NO_GRAD = GradReads()


OPERATORS: list[str] = []  # the names this module registers


def _quantized_op(name: str, forward: Callable, doc: str, **fields) -> OpDef:
    OPERATORS.append(name)
    return register(OpDef(name=name, forward=forward, doc=doc, backward_reads=_NO_GRAD,
                          bfloat16="refuse", **fields))


# -- quantize, dequantize, requantize --------------------------------------------------------

_CALIB_PARAMS = (
    Param("out_type", "str", "int8", "Output type; auto is uint8 when min_calib_range >= 0.",
          choices=OUT_TYPES),
    Param("min_calib_range", "float", None, "Calibrated minimum (None: taken at run time)."),
    Param("max_calib_range", "float", None, "Calibrated maximum (None: taken at run time)."),
)


def _quantize_v2(p: Params, ctx: OpContext, inputs: list) -> list:
    x = inputs[0]
    calib = _calib(p)
    if x.dtype in INT_TYPES:  # already quantized: passed through with its range
        levels = UINT8_LEVELS if x.dtype == np.uint8 else INT8_LEVELS
        lo, hi = calib or ((F32(0), levels) if x.dtype == np.uint8 else (-levels, levels))
        return [x.copy(), *range_out(lo, hi)]
    # Measured ranges pass NaN by, as MXNet's and oneDNN's min and max do.
    lo, hi = calib or ((F32(np.nanmin(x)), F32(np.nanmax(x))) if x.size else (F32(0), F32(0)))
    dtype = output_type(p)
    real = max_abs(lo, hi)
    levels = UINT8_LEVELS if dtype == np.uint8 else INT8_LEVELS
    out = scaled(x, levels / real, dtype) if real else np.zeros(x.shape, dtype)
    return [out, *(range_out(lo, hi) if dtype == np.uint8 else range_out(-real, real))]


_quantized_op(
    "_contrib_quantize_v2", _quantize_v2,
    """Quantize float32 data to int8 or uint8 by a calibrated range or its own min and max.

    int8: ``out = round(x * 127.5 / max(|min|, |max|))``, range (-m, m); uint8 the same with
    255.5 levels and range (min, max); rounding half to even, saturating (oneDNN's reorder).
    int8 or uint8 input passes through.""",
    params=_CALIB_PARAMS, outputs=_QUANTIZE_OUT,
    infer_shape=_ranges_follow(0),
    infer_type=_typed(lambda p, t: t if t in INT_TYPES else _float_data(p, t),
                      lambda p, t: output_type(p), 1, 3))


def _quantize(p: Params, ctx: OpContext, inputs: list) -> list:
    x, lo, hi = inputs[0], scalar(inputs[1]), scalar(inputs[2])
    real = max_abs(lo, hi)
    dtype = np.dtype(p.out_type)
    levels = F32(255 if dtype == np.uint8 else 127)
    out = scaled(x, levels / real, dtype) if real else np.zeros(x.shape, dtype)
    return [out, *(range_out(lo, hi) if dtype == np.uint8 else range_out(-real, real))]


_quantized_op(
    "_contrib_quantize", _quantize,
    """Quantize float32 data by given min_range and max_range inputs (127 or 255 levels).""",
    params=(Param("out_type", "str", "uint8", "Output data type.", choices=("int8", "uint8")),),
    inputs=("data", "min_range", "max_range"), outputs=_QUANTIZE_OUT,
    infer_shape=_ranges_follow(2),
    infer_type=_typed(_float_data, lambda p, t: np.dtype(p.out_type), 3, 3))


def _dequantize(p: Params, ctx: OpContext, inputs: list) -> np.ndarray:
    x = inputs[0]
    _int8_data(p, x.dtype)
    levels = UINT8_LEVELS if x.dtype == np.uint8 else INT8_LEVELS
    scale = F32(max_abs(scalar(inputs[1]), scalar(inputs[2])) / levels)
    return x.astype(F32) * scale


_quantized_op(
    "_contrib_dequantize", _dequantize,
    """Dequantize int8 or uint8 data: ``out = x * max(|min|, |max|) / levels`` (127.5 or 255.5,
    as MXNet's oneDNN path).""",
    params=(Param("out_type", "str", "float32", "Output data type.", choices=("float32",)),),
    inputs=("data", "min_range", "max_range"),
    infer_shape=_ranges_follow(2),
    infer_type=_typed(_int8_data, lambda p, t: np.dtype(F32), 3, 1))


def requantize_scale(p: Params, in_range: tuple[Real, Real], reach: int = 0
                     ) -> tuple[np.dtype, np.float32, tuple[Real, Real]]:
    """(output type, scale, output range) of a requantize from int32 over `in_range`:
    to the calibrated range, else to the range the data reaches (`reach`, its
    largest magnitude)."""
    in_real = max_abs(*in_range)
    calib = _calib(p)
    real = max_abs(*calib) if calib is not None else \
        F32(F32(F32(reach) * in_real) / INT32_LEVELS)
    dtype = output_type(p)
    levels = F32(255 if dtype == np.uint8 else 127)
    scale = F32(F32(in_real / INT32_LEVELS) * F32(levels / real)) if real else F32(0)
    return dtype, scale, (0 if dtype == np.uint8 else -real, real)


def _requantize(p: Params, ctx: OpContext, inputs: list) -> list:
    x = inputs[0]
    reach = int(max(abs(F32(x.min())), abs(F32(x.max())))) \
        if x.size and _calib(p) is None else 0
    dtype, scale, out_range = requantize_scale(p, (scalar(inputs[1]), scalar(inputs[2])),
                                               reach)
    return [scaled(x, scale, dtype), *range_out(*out_range)]


def _int32_data(p: Params, dtype: np.dtype | None) -> np.dtype:
    if dtype is not None and dtype != np.int32:
        raise DTypeError(f"data must be int32, got {dtype}")
    return np.dtype(np.int32)


_quantized_op(
    "_contrib_requantize", _requantize,
    """Requantize int32 data to int8 or uint8 by a calibrated range or the range it reaches.""",
    params=_CALIB_PARAMS, inputs=("data", "min_range", "max_range"), outputs=_QUANTIZE_OUT,
    infer_shape=_ranges_follow(2),
    infer_type=_typed(_int32_data, lambda p, t: output_type(p), 3, 3))


# -- operators that keep their input's range -------------------------------------------------

def _keeps_range(name: str, base: str, compute: Callable[[Params, np.ndarray], np.ndarray],
                 doc: str, **fields) -> OpDef:
    """An int8/uint8 operator over (data, min_data, max_data) whose output keeps the
    data's type and range; `base` is the float operator whose parameters and data
    shape rule it takes."""
    op = get_op(base)

    def forward(p: Params, ctx: OpContext, inputs: list) -> list:
        _int8_data(p, inputs[0].dtype)
        return [compute(p, inputs[0]), inputs[1].astype(F32), inputs[2].astype(F32)]

    def infer_shape(p, in_shapes, out_shapes):
        ins, outs = list(in_shapes), list(out_shapes)
        for i in (1, 2):
            merge_at(ins, i, RANGE, "min/max range input")
            merge_at(outs, i, RANGE, "min/max range output")
        data_in, data_out = op.infer_shape(p, ins[:1], outs[:1])
        return data_in + ins[1:], data_out + outs[1:]

    return _quantized_op(
        name, forward, doc, params=op.params, inputs=("data", "min_data", "max_data"),
        outputs=_KEEP_OUT, infer_shape=infer_shape,
        infer_type=_typed(_int8_data, _same_type, 3, 3), **fields)


def _pool(p: Params, x: np.ndarray) -> np.ndarray:
    pooled = get_op("Pooling").forward(p, OpContext(), [x.astype(F32)])
    return saturate(pooled, x.dtype)


_keeps_range("_contrib_quantized_pooling", "Pooling", _pool,
             """Pooling of int8 or uint8 data (max exact; avg rounded half to even).""")
_keeps_range("_contrib_quantized_flatten", "Flatten", lambda p, x: x.reshape(x.shape[0], -1),
             """Flatten int8 or uint8 data; the range passes through.""")


def _act(p: Params, x: np.ndarray) -> np.ndarray:
    if p.act_type != "relu":
        raise OperatorError(f"act_type={p.act_type}: quantized activation supports relu only")
    return np.maximum(x, 0).astype(x.dtype)


_keeps_range("_contrib_quantized_act", "Activation", _act,
             """relu of int8 or uint8 data; the range passes through (as MXNet's oneDNN path).""")


# -- BatchNorm of int8 data ----------------------------------------------------------------

_BN_PARAMS_IN = ("data", "gamma", "beta", "moving_mean", "moving_var")
_BN_RANGES = ("min_data", "max_data")


def batch_norm_scale_shift(p: Params, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray,
                           var: np.ndarray, data_range: tuple[Real, Real]
                           ) -> tuple[np.ndarray, np.ndarray]:
    """The per-channel (scale, shift) that MXNet's quantized BatchNorm hands oneDNN
    (its mean 0, variance 1): the float BatchNorm moved from the data's int8 scale
    to the calibrated output's, in MXNet's float32 steps (the inverse std in double).
    A fixed gamma counts as 1, as the float BatchNorm has it (MXNet 1.9.1's kernel
    reads the gamma array even then; the two agree where gamma is 1, as gluon's
    ``scale=False`` keeps it)."""
    real_in = max_abs(*data_range)
    real_out = max_abs(p.min_calib_range, p.max_calib_range)
    g = np.ones_like(gamma, dtype=F32) if p.fix_gamma else gamma.astype(F32)
    inv_std = (1.0 / np.sqrt(var.astype(np.float64) + p.eps)).astype(F32)
    scale = ((g * inv_std) * F32(real_in)) / F32(real_out)
    shift = ((beta.astype(F32) - (mean.astype(F32) * g) * inv_std) * INT8_LEVELS) / F32(real_out)
    return scale.astype(F32), shift.astype(F32)


def batch_norm_int8(x: np.ndarray, scale: np.ndarray, shift: np.ndarray, eps: float,
                    axis: int) -> np.ndarray:
    """oneDNN's int8 batch normalization with mean 0 and variance 1: ``x`` times
    ``scale / sqrt(1 + eps)`` plus ``shift`` in one fused multiply-add, rounded half
    to even and saturated to int8. uint8 data is first reordered to int8 (times
    127.5 / 255.5), as MXNet does."""
    if x.dtype == np.uint8:
        x = scaled(x, INT8_LEVELS / UINT8_LEVELS, np.int8)
    factor = (scale / np.sqrt(F32(1) + F32(eps))).astype(F32)
    view = [-1 if i == axis else 1 for i in range(x.ndim)]
    y = x.astype(np.float64) * factor.reshape(view) + shift.reshape(view)
    return saturate(y.astype(F32), np.int8)


def _quantized_batch_norm(p: Params, ctx: OpContext, inputs: list) -> list:
    x, gamma, beta, mean, var = inputs[:5]
    _int8_data(p, x.dtype)
    if _calib(p) is None:
        raise OperatorError("quantized BatchNorm needs min_calib_range and max_calib_range "
                            "(MXNet's has no run-time range either: calibrate with naive "
                            "or entropy)")
    if not -x.ndim <= p.axis < x.ndim:
        raise OperatorError(f"axis {p.axis} is out of range for {x.ndim}-D data")
    scale, shift = batch_norm_scale_shift(p, gamma, beta, mean, var,
                                          (scalar(inputs[5]), scalar(inputs[6])))
    y = batch_norm_int8(x, scale, shift, p.eps, p.axis % x.ndim)
    return [y, *range_out(p.min_calib_range, p.max_calib_range)]


def _quantized_bn_shape(p, in_shapes, out_shapes):
    ins, outs = list(in_shapes), list(out_shapes)
    n = len(_BN_PARAMS_IN)
    data_in, data_out = get_op("BatchNorm").infer_shape(p, ins[:n], outs[:1] + [None, None])
    for i in (n, n + 1):
        merge_at(ins, i, RANGE, "min/max range input")
    for i in (1, 2):
        merge_at(outs, i, RANGE, "min/max range output")
    return data_in + ins[n:], data_out[:1] + outs[1:]


_quantized_op(
    "_contrib_quantized_batch_norm", _quantized_batch_norm,
    """BatchNorm (global statistics) of int8 or uint8 data into int8 by a calibrated output
    range, as MXNet's oneDNN path computes it (see `batch_norm_int8`).""",
    params=get_op("BatchNorm").params, inputs=(*_BN_PARAMS_IN, *_BN_RANGES), outputs=_KEEP_OUT,
    aux=("moving_mean", "moving_var"), infer_shape=_quantized_bn_shape,
    infer_type=_typed(_int8_data, lambda p, t: np.dtype(np.int8), 7, 3))


# -- the arithmetic of MXNet's fused quantized convolution and fully connected ------------

def fold_batch_norm(w: np.ndarray, b: np.ndarray | None, gamma: np.ndarray, beta: np.ndarray,
                    mean: np.ndarray, var: np.ndarray, eps: float,
                    fix_gamma: bool) -> tuple[np.ndarray, np.ndarray]:
    """MXNet's UpdateConvWeightBias: BatchNorm folded into the weight and bias; the
    channel factor in double (eps is a double), the rest in float32."""
    g = np.ones_like(gamma, dtype=np.float64) if fix_gamma else gamma.astype(np.float64)
    alpha = (g / np.sqrt(var.astype(np.float64) + eps)).astype(F32)
    shift = alpha * (b.astype(F32) - mean) if b is not None else -(alpha * mean)
    folded = w.astype(F32) * alpha.reshape((-1,) + (1,) * (w.ndim - 1))
    return folded, (beta.astype(F32) + shift).astype(F32)


_HALF_INT32 = F32(np.iinfo(np.int32).max) / F32(2)


def weight_scales(w: np.ndarray, bias: np.ndarray | None, data_scale: np.float32,
                  channelwise: bool) -> tuple[np.ndarray, float, float]:
    """MXNet's GetWeightScales: (one int8 scale per output channel, or one for the
    whole tensor; the weight's min and max). Per channel, a bias that would reach
    beyond INT32_MAX / 2 lowers its channel's scale."""
    rows = w.reshape(w.shape[0], -1)
    lows, highs = rows.min(axis=1), rows.max(axis=1)
    if not channelwise:
        lo, hi = float(lows.min()), float(highs.max())
        return np.array([quantize_scale(np.int8, lo, hi)], F32), lo, hi
    scales = np.array([quantize_scale(np.int8, lo, hi) for lo, hi in zip(lows, highs,
                                                                          strict=True)], F32)
    if bias is not None:
        with np.errstate(divide="ignore"):
            limit = (_HALF_INT32 / np.abs(bias.astype(F32))) / data_scale
        scales = np.where(bias != 0, np.minimum(scales, limit), scales).astype(F32)
    return scales, float(lows.min()), float(highs.max())


def channel_view(values: np.ndarray, ndim: int) -> np.ndarray:
    """Per-channel values shaped to broadcast along axis 1 of an `ndim`-d array."""
    return values.reshape((1, -1) + (1,) * (ndim - 2))


def accumulate(acc: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """oneDNN's int32 accumulator in float32, plus the int32 bias (both converted)."""
    y = acc.astype(F32)
    return y if bias is None else y + channel_view(bias.astype(F32), y.ndim)


def add_scaled(y: np.ndarray, addend: np.ndarray, scale: np.float32) -> np.ndarray:
    """oneDNN's sum post-op: ``y + scale * addend``, one fused multiply-add (one
    rounding) when the scale is not 1."""
    if scale == 1:
        return y + addend.astype(F32)
    return (y.astype(np.float64) + addend.astype(np.float64) * float(scale)).astype(F32)


def std_round(values: np.ndarray) -> np.ndarray:
    """C's round: halves away from zero (MXNet's own loops use it, not oneDNN)."""
    return np.sign(values) * np.floor(np.abs(values) + F32(0.5))


# -- int8 x int8 -> int32: quantized convolution and fully connected ------------------------

def _data_scale(dtype: np.dtype, lo: float, hi: float) -> np.float32:
    """The scale MXNet's int8 operators give their data: 127.5 or 255.5 levels."""
    return F32((INT8_LEVELS if dtype == np.int8 else UINT8_LEVELS) / max_abs(lo, hi))


def _uint8_data(p: Params, dtype: np.dtype | None) -> np.dtype | None:
    if dtype is not None and dtype != np.uint8:
        raise DTypeError(f"data is {dtype}: MXNet's oneDNN quantized convolution takes uint8")
    return dtype


def _with_ranges(base: str, names: Callable[[Params], list[str]],
                 data_type: Callable = _int8_data) -> dict:
    """The OpDef fields of an int8 form of `base` (Convolution, FullyConnected): its
    parameters, `names` as inputs (data, weight[, bias], then a min and a max for
    each), its shape rule for the first ones, int32 output with its range;
    `data_type` checks the data's type."""
    op = get_op(base)

    def infer_shape(p, in_shapes, out_shapes):
        n = len(op.input_names(p))
        ins, outs = op.infer_shape(p, list(in_shapes[:n]), list(out_shapes[:1]))
        return ins + [RANGE] * (len(in_shapes) - n), outs + [RANGE, RANGE]

    def infer_type(p, in_types, out_types):
        n = len(op.input_names(p))
        data_type(p, in_types[0])
        return ([in_types[0]] + [np.dtype(np.int8)] * (n - 1)
                + [np.dtype(F32)] * (len(in_types) - n),
                [np.dtype(np.int32), np.dtype(F32), np.dtype(F32)])

    return dict(params=op.params, inputs=names, outputs=_KEEP_OUT,
                infer_shape=infer_shape, infer_type=infer_type)


def _minmax_names(names: tuple[str, ...]) -> list[str]:
    return [*names, *(f"{m}_{n}" for n in names for m in ("min", "max"))]


def _conv_like_names(p: Params) -> list[str]:
    return _minmax_names(("data", "weight") if p.no_bias else ("data", "weight", "bias"))


def _ranges_of(inputs: list, n: int) -> list[tuple[float, float]]:
    """The (min, max) pairs after the `n` data inputs."""
    return [(scalar(inputs[n + 2 * i]), scalar(inputs[n + 2 * i + 1])) for i in range(n)]


def _quantized_conv(p: Params, ctx: OpContext, inputs: list) -> list:
    n = 2 if p.no_bias else 3
    x, w = inputs[0], inputs[1]
    _uint8_data(p, x.dtype)
    win = make_window("_contrib_quantized_conv", p.kernel, p.stride, p.dilate, p.pad)
    acc = conv_forward(x.astype(np.float64), w.astype(np.float64), win, p.num_group,
                       p.workspace)
    # oneDNN adds the int8 bias as it is (MXNet does not rescale it here).
    y = accumulate(acc, None if p.no_bias else inputs[2])
    data_range, weight_range = _ranges_of(inputs, n)[:2]
    return [saturate(y, np.int32), *multiplied_range(data_range, weight_range, 127)]


_quantized_op(
    "_contrib_quantized_conv", _quantized_conv,
    """Convolution of uint8 data with int8 weights into int32, with the product's range.""",
    **_with_ranges("Convolution", _conv_like_names, _uint8_data))


def _quantized_fc(p: Params, ctx: OpContext, inputs: list) -> list:
    n = 2 if p.no_bias else 3
    x, w = inputs[0], inputs[1]
    ranges = _ranges_of(inputs, n)
    data_scale = _data_scale(x.dtype, *ranges[0])
    w_scale = F32(INT8_LEVELS / max_abs(*ranges[1]))
    flat = x.reshape(x.shape[0], -1) if p.flatten else x
    y = (flat.astype(np.float64) @ w.astype(np.float64).T).astype(F32)
    if not p.no_bias:  # C's float-to-int conversion truncates
        rescale = F32(F32(F32(data_scale * w_scale) * max_abs(*ranges[2])) / INT8_LEVELS)
        y = y + np.trunc(inputs[2].astype(F32) * rescale).astype(np.int32).astype(F32)
    return [saturate(y, np.int32),
            *multiplied_range(ranges[0], ranges[1], 127 if x.dtype == np.int8 else 255)]


_quantized_op(
    "_contrib_quantized_fully_connected", _quantized_fc,
    """Fully connected of int8/uint8 data with int8 weights into int32 (the int8 bias
    rescaled to the product's scale), with the product's range.""",
    **_with_ranges("FullyConnected", _conv_like_names))


# -- elemwise_add and Concat of int8 operands ------------------------------------------------

_OUT_LEVELS = {np.dtype(np.int8): INT8_LEVELS, np.dtype(np.uint8): UINT8_LEVELS,
               np.dtype(np.int32): INT32_LEVELS}


def _add_type(p: Params, a: np.dtype, b: np.dtype) -> np.dtype:
    if _calib(p) is None:
        return np.dtype(np.int32)
    return a if a == b else np.dtype(np.int8)


def _levels(dtype: np.dtype) -> np.float32:
    return INT8_LEVELS if dtype == np.int8 else UINT8_LEVELS


def add_scales(p: Params, dtypes: Sequence[np.dtype], ranges: Sequence[tuple[float, float]]
               ) -> tuple[np.dtype, list[np.float32], tuple[Real, Real]]:
    """(output type, each operand's scale into it, output range) of a quantized sum of
    operands of `dtypes` over `ranges`: by the calibrated range, else int32 over the
    sum of the operands' ranges."""
    dtype = _add_type(p, *dtypes)
    calib = _calib(p)
    if calib is not None:
        out_scale = F32(_OUT_LEVELS[dtype] / max_abs(*calib))
        return dtype, [F32(out_scale / _data_scale(t, *r))
                       for t, r in zip(dtypes, ranges, strict=True)], calib
    spans = [max_abs(*r) for r in ranges]
    hi = F32(spans[0] + spans[1])
    return dtype, [F32(F32(span * INT32_LEVELS) / F32(hi * _levels(t)))
                   for t, span in zip(dtypes, spans, strict=True)], (-hi, hi)


def _quantized_add(p: Params, ctx: OpContext, inputs: list) -> list:
    operands = inputs[:2]
    dtype, scales, (lo, hi) = add_scales(p, [x.dtype for x in operands], _ranges_of(inputs, 2))
    if operands[0].dtype != operands[1].dtype:  # the uint8 one is first rescaled into int8
        u8 = 0 if operands[0].dtype == np.uint8 else 1
        operands[u8] = scaled(operands[u8], scales[u8], np.int8)
        scales[u8] = F32(1)
    y = operands[0].astype(F32) * scales[0] + operands[1].astype(F32) * scales[1]
    return [saturate(y, dtype), *range_out(lo, hi)]


def _add_shape(p, in_shapes, out_shapes):
    ins, outs = list(in_shapes), list(out_shapes)
    for i in range(2, 6):
        merge_at(ins, i, RANGE, "min/max range input")
    for i in (1, 2):
        merge_at(outs, i, RANGE, "min/max range output")
    for i in (0, 1):
        merge_at(outs, 0, ins[i], "output")
    ins[0] = ins[1] = outs[0]
    return ins, outs


def _add_type_rule(p, in_types, out_types):
    a, b = (_int8_data(p, t) for t in in_types[:2])
    out = _add_type(p, a, b) if a is not None and b is not None else None
    return [a, b] + [np.dtype(F32)] * 4, [out, np.dtype(F32), np.dtype(F32)]


_quantized_op(
    "_contrib_quantized_elemwise_add", _quantized_add,
    """Sum of two int8/uint8 arrays: int8/uint8 by a calibrated range, else int32 over the
    sum of the operands' ranges (oneDNN's sum with MXNet's scales).""",
    params=_CALIB_PARAMS[1:], inputs=_minmax_names(("lhs", "rhs"))[:2]
    + ["lhs_min", "lhs_max", "rhs_min", "rhs_max"],
    outputs=_KEEP_OUT, infer_shape=_add_shape, infer_type=_add_type_rule)


def _concat_type(dtypes: list) -> np.dtype:
    return np.dtype(np.int8 if any(t == np.int8 for t in dtypes) else np.uint8)


def _quantized_concat(p: Params, ctx: OpContext, inputs: list) -> list:
    n = p.num_args
    ranges = _ranges_of(inputs, n)
    lo = min(0.0, *(r[0] for r in ranges))
    hi = max(0.0, *(r[1] for r in ranges))
    dtype = _concat_type([x.dtype for x in inputs[:n]])
    out_scale = _data_scale(dtype, lo, hi)
    parts = []
    for x, r in zip(inputs[:n], ranges, strict=True):
        x_scale = _data_scale(x.dtype, *r)
        parts.append(x if x_scale == out_scale else scaled(x, F32(out_scale / x_scale), dtype))
    joined = get_op("Concat").forward(p, ctx, parts)
    return [joined, *range_out(lo, hi)]


def _concat_names(p: Params) -> list[str]:
    args = [f"arg{i}" for i in range(p.num_args)]
    return args + [f"{a}_{m}" for a in args for m in ("min", "max")]


def _concat_shape(p, in_shapes, out_shapes):
    n = p.num_args
    ins, outs = get_op("Concat").infer_shape(p, list(in_shapes[:n]), list(out_shapes[:1]))
    return ins + [RANGE] * (2 * n), outs + [RANGE, RANGE]


def _concat_type_rule(p, in_types, out_types):
    data = [_int8_data(p, t) for t in in_types[:p.num_args]]
    out = _concat_type(data) if all(t is not None for t in data) else None
    return data + [np.dtype(F32)] * (2 * p.num_args), [out, np.dtype(F32), np.dtype(F32)]


_quantized_op(
    "_contrib_quantized_concat", _quantized_concat,
    """Concat of int8/uint8 arrays, each rescaled to the joint range (int8 if any is).""",
    params=get_op("Concat").params, inputs=_concat_names, outputs=_KEEP_OUT,
    infer_shape=_concat_shape, infer_type=_concat_type_rule)
