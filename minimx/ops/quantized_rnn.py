"""MXNet 1.9's INT8 LSTM, `_contrib_quantized_rnn`, computed as its oneDNN build does
(`src/operator/quantization/mkldnn/mkldnn_quantized_rnn.cc` over oneDNN 2.4's
reference RNN with u8 data and s8 weights).

Data arrives as uint8 ``x * data_scale + data_shift`` (`_contrib_quantize_asym`).
The float32 weights are quantized per gate and output unit (``127 / max|W|``, one
scale vector shared by every layer and direction, taken from the weights as MXNet's
`GetMKLDNNRnnWeightsQParams` walks them), multiplied with the uint8 inputs in int32,
and the shift is taken out through the bias. The cell state stays float32; every
hidden state, between steps and between layers, is requantized to uint8 with the
data's scale and shift, so the outputs are multiples of ``1 / data_scale``.
"""
from __future__ import annotations

import numpy as np

from ..base import DTypeError, OperatorError
from .infer import merge_at
from .quantization import F32, RANGE, saturate, scalar
from .registry import GradReads, OpContext, OpDef, Param, Params, get_op, register
from .rnn import CellWeights, unpack

Array = np.ndarray
_GATES = 4
_S8_MAX = F32(127)
_RNN = get_op("RNN")


# -- the weights' scales ----------------------------------------------------------------------

def _later_widths(p: Params, input_size: int) -> list[int]:
    """The input widths of the oneDNN primitives MXNet runs after the first: it fuses
    the layers whose input is as wide as the state (MKLDNNRnnFullParam), except
    bidirectional ones (one primitive per layer)."""
    h, layers = p.state_size, p.num_layers
    if p.bidirectional:
        return [2 * h] * (layers - 1)
    if input_size == h or layers == 1:
        return []
    return [h]


def weight_scales(p: Params, input_size: int, flat: Array) -> Array:
    """The (4 * state_size,) int8 scales, ``127 / max|W|`` per gate row, over the
    elements MXNet's GetMKLDNNRnnWeightsQParams reads: the first layer's i2h and h2h
    rows (both directions), then for each later fused primitive the first
    ``4H * H`` values at its i2h start and at ``4H * H`` past it, read as (4H, H)."""
    h, dirs = p.state_size, 2 if p.bidirectional else 1
    rows, square = _GATES * h, _GATES * h * h
    first = rows * (input_size + h)                  # one layer-direction's weights

    def read(start: int, size: int) -> Array:
        if start + size > flat.size:
            raise OperatorError(f"_contrib_quantized_rnn: MXNet's weight-scale walk reads "
                                f"parameters [{start}, {start + size}) of {flat.size}")
        return np.abs(flat[start:start + size].astype(F32))

    wx, wh = read(0, rows * input_size), read(rows * input_size, square)
    if p.bidirectional:
        wx = np.maximum(wx, read(first, rows * input_size))
        wh = np.maximum(wh, read(first + rows * input_size, square))
    top = np.maximum(wx.reshape(rows, input_size).max(1, initial=F32(0)),
                     wh.reshape(rows, h).max(1))
    x_at, h_at = first * dirs, rows * input_size + first * dirs
    for width in _later_widths(p, input_size):
        # once per primitive: MXNet rereads the same values for each of its layers
        both = np.maximum(read(x_at, square), read(h_at, square))
        top = np.maximum(top, both.reshape(rows, h).max(1))
        x_at += rows * (width + h) * dirs
        h_at = x_at + square
    with np.errstate(divide="ignore"):
        return (_S8_MAX / top).astype(F32)


# -- one direction of one layer ---------------------------------------------------------------

class _QuantizedCell:
    """One layer-direction's s8 weights and the bias with the data shift taken out."""

    def __init__(self, w: CellWeights, scales: Array, data_scale: F32, data_shift: F32):
        wx = saturate(w.wx.astype(F32) * scales[:, None], np.int8)
        wh = saturate(w.wh.astype(F32) * scales[:, None], np.int8)
        self.wx, self.wh = _U8S8Weights(wx), _U8S8Weights(wh)
        # oneDNN's compensation: the shift times each row's sum, in float32
        comp = _row_sums(wh) + _row_sums(wx)
        denominator = (scales * data_scale).astype(F32)
        bias = (w.bx.astype(F32) + w.bh.astype(F32)).astype(F32)
        self.bias = (bias - (comp * data_shift).astype(F32) / denominator).astype(F32)
        self.dequantize = (F32(1) / denominator).astype(F32)

    def step(self, xw: Array, h: Array, c: Array) -> tuple[Array, Array]:
        """(float32 h, c) after one step from the step's input product ``xw``
        (`wx`'s, in int32), uint8 h and float32 c."""
        acc = xw + self.wh.product(h)
        gates = (acc.astype(F32) * self.dequantize + self.bias).astype(F32)
        i, f, g, o = np.split(gates, _GATES, axis=-1)
        c = (_sigmoid(f) * c + _sigmoid(i) * np.tanh(g)).astype(F32)
        return (_sigmoid(o) * np.tanh(c)).astype(F32), c


def _row_sums(w: Array) -> Array:
    return w.sum(1, dtype=np.int32).astype(F32)


class _U8S8Weights:
    """s8 weights (N, K) for ``x @ w.T`` in int32 as oneDNN 2.4's u8s8 gemm computes it
    without VNNI (and MXNet 1.9.1 runs its INT8 LSTM only there: with VNNI oneDNN has
    no reorder for its weights): each pair of neighbouring products is summed in
    int16, saturated (pmaddubsw), then the pairs in int32.

    A pair of uint8 inputs can leave int16 only where its two weights have one sign
    and magnitudes adding up to more than 128 (255 * 128 < 32767); such pairs are
    found once. The product is then the exact one (float32 or float64 matrix
    product, whichever holds every sum exactly) corrected by the saturation of
    those pairs alone."""

    def __init__(self, w: Array) -> None:
        if w.shape[1] % 2:
            w = np.pad(w, ((0, 0), (0, 1)))
        self._k = w.shape[1]
        exact = np.float32 if 255 * 128 * self._k < 2**24 else np.float64
        self._exact = w.astype(exact).T
        w = w.astype(np.int32)
        w0, w1 = w[:, 0::2], w[:, 1::2]
        self._rows, pairs = np.nonzero((np.abs(w0 + w1) > 128) & (w0 * w1 > 0))
        self._first = 2 * pairs
        self._w0, self._w1 = w[self._rows, self._first], w[self._rows, self._first + 1]

    def product(self, x: Array) -> Array:
        """``x @ w.T`` (x uint8, (B, K)) as the gemm computes it, in int32."""
        if x.shape[1] < self._k:
            x = np.pad(x, ((0, 0), (0, self._k - x.shape[1])))
        acc = (x.astype(self._exact.dtype) @ self._exact).astype(np.int32)
        if self._rows.size:
            xi = x.astype(np.int32)
            pair = xi[:, self._first] * self._w0 + xi[:, self._first + 1] * self._w1
            b, m = np.nonzero((pair > 32767) | (pair < -32768))   # the pairs that saturate
            np.add.at(acc, (b, self._rows[m]), np.clip(pair[b, m], -32768, 32767) - pair[b, m])
        return acc


def _sigmoid(x: Array) -> Array:
    # oneDNN's logistic_fwd: 0 where exp(-x) would overflow float32
    minus = -x
    with np.errstate(over="ignore"):
        value = F32(1) / (F32(1) + np.exp(minus))
    return np.where(minus < F32(88.72283172607421875), value, F32(0)).astype(F32)


# -- the operator -----------------------------------------------------------------------------

def _check(p: Params) -> None:
    if p.mode != "lstm":
        raise OperatorError(f"_contrib_quantized_rnn: mode={p.mode!r}; MXNet quantizes LSTM "
                            "only")
    if p.projection_size is not None or p.use_sequence_length:
        raise OperatorError("_contrib_quantized_rnn: projection_size and use_sequence_length "
                            "have no INT8 form in MXNet 1.9.1")


def _forward(p: Params, ctx: OpContext, inputs: list) -> list:
    data, flat, h0, c0 = inputs[:4]
    scale, shift = F32(scalar(inputs[4])), F32(scalar(inputs[5]))

    def to_u8(h: Array) -> Array:
        return saturate((h.astype(F32) * scale + shift).astype(F32), np.uint8)

    dirs = 2 if p.bidirectional else 1
    cells = unpack(p, data.shape[2], flat)
    scales = weight_scales(p, data.shape[2], flat)
    x, hs, cs = data, to_u8(h0), c0.astype(F32).copy()
    for layer in range(p.num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            cell = _QuantizedCell(cells[k], scales, scale, shift)
            steps = range(x.shape[0]) if d == 0 else range(x.shape[0] - 1, -1, -1)
            out = np.empty(x.shape[:2] + (p.state_size,), np.uint8)
            # The inputs' products of every step at once; the recurrence's step by step.
            xw = cell.wx.product(x.reshape(-1, x.shape[2])).reshape(x.shape[:2] + (-1,))
            for t in steps:
                h, cs[k] = cell.step(xw[t], hs[k], cs[k])
                hs[k] = out[t] = to_u8(h)
            outs.append(out)
        x = np.concatenate(outs, axis=2)

    def to_f32(u8: Array) -> Array:
        return ((u8.astype(F32) - shift) / scale).astype(F32)

    return [to_f32(x), to_f32(hs), cs][:3 if p.state_outputs else 1]


def _shape(p, in_shapes, out_shapes):
    _check(p)
    ins, outs = _RNN.infer_shape(p, in_shapes[:4], out_shapes)
    ins = [*ins, *in_shapes[4:]]
    for i in (4, 5):
        merge_at(ins, i, RANGE, "_contrib_quantized_rnn: data_scale/data_shift")
    return ins, outs


def _type(p, in_types, out_types):
    if in_types[0] is not None and in_types[0] != np.uint8:
        raise DTypeError(f"_contrib_quantized_rnn: data must be uint8, got {in_types[0]}")
    for name, t in zip(("parameters", "state", "state_cell", "data_scale", "data_shift"),
                       in_types[1:], strict=True):
        if t is not None and t != F32:
            raise DTypeError(f"_contrib_quantized_rnn: {name} must be float32, got {t}")
    return [np.dtype(np.uint8)] + [np.dtype(F32)] * 5, [np.dtype(F32)] * len(out_types)


def _outputs(p: Params) -> list[str]:
    # MXNet's spelling, "statecell_ouput", as its FListOutputNames has it
    return ["output", "state_output", "statecell_ouput"] if p.state_outputs else ["output"]


register(OpDef(
    name="_contrib_quantized_rnn", aliases=("_npx_contrib_quantized_rnn",),
    doc="LSTM over uint8 data (with its float32 scale and shift) and float32 weights, "
        "states and outputs, computed with int8 weights as MXNet's oneDNN build does.",
    inputs=lambda p: ["data", "parameters", "state", "state_cell", "data_scale",
                      "data_shift"],
    outputs=_outputs,
    params=(*_RNN.params, Param("quantized", "bool", True,
                                "set by MXNet's parser on every quantized RNN node")),
    forward=_forward, infer_shape=_shape, infer_type=_type,
    backward_reads=GradReads(), bfloat16="refuse",
))
