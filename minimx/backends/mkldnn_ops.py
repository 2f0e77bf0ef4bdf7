"""MXNet 1.9's fused oneDNN operators as MXNet writes them to files.

`_sg_mkldnn_conv` and `_sg_mkldnn_fully_connected` hold their chain
(Convolution [+ BatchNorm] [+ act] [+ elemwise_add [+ act]], or
FullyConnected [+ act]) as a subgraph, as minimx's own `_sg_dnnl_*` do. In
float32 they run that chain with the numpy kernels. With ``quantized=True``
(what `quantize_model_mkldnn` writes) they take int8/uint8 data and, after the
chain's inputs, the data's range (and the sum's, or the int8 weight's and
bias's for FC), and compute as MXNet's oneDNN path does
(`ops.quantization` holds the arithmetic): weights quantized per output
channel when the output is requantized (``min_calib_range`` /
``max_calib_range`` given), else per tensor; int32 accumulation; int8/uint8
output by the calibrated range, int32 with a computed range without it, or
float32 (FC's ``enable_float_output``). MXNet's quirks are kept, since its
files are computed with them: a conv with a sum writes in the sum operand's
type (`QuantizedConv._dst_type`), and the int32 ranges count 127 or 255
levels where the scales count 127.5 or 255.5.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import DTypeError, OperatorError
from ..graph import Node
from ..ops import quantization as q
from ..ops.conv import conv_forward
from ..ops.params import Param
from ..ops.registry import OpContext, OpDef, Params, register
from ..ops.window import make_window
from ..subgraph import subgraph_op
from ..subgraph.subgraph_op import GRAPH_PLUMBING, inner_graph

F32 = q.F32
_CALIB = (
    Param("min_calib_range", "float", None, "Calibrated output minimum (quantized)."),
    Param("max_calib_range", "float", None, "Calibrated output maximum (quantized)."),
)
# A conv chain's input names (Convolution's and BatchNorm's own, renamed) as MXNet's.
_CONV_ROLES = {"moving_mean": "mean", "moving_var": "var", "lhs": "sum", "rhs": "sum"}
# Post-ops after which every output is >= 0: MXNet makes such an output uint8.
_UNSIGNED_ACTS: set[tuple[str | None, str | None]] = {
    ("Activation", "relu"), ("Activation", "sigmoid"), ("Activation", "softrelu"), ("clip", None)}


def _is_conv(p: Params) -> bool:
    return "with_bn" in p


def _flag(p: Params, name: str) -> bool:
    """A flag of either operator (False where the operator has none); MXNet reads
    the legacy with_relu / with_postsum_relu as with_act / with_postsum_act."""
    legacy = {"with_act": "with_relu", "with_postsum_act": "with_postsum_relu"}.get(name, "")
    return bool(p.get(name) or p.get(legacy))


def _ops_of(p: Params) -> list[Node]:
    return [n for n in inner_graph(p).nodes if not n.is_variable]


def _params(node: Node) -> Params:
    return node.operator()[1]


def _unsigned(act: Node | None) -> bool:
    if act is None:
        return False
    p = _params(act)
    if act.op == "LeakyReLU":
        return bool(p.act_type == "leaky" and p.slope == 0)
    return (act.op, p.get("act_type")) in _UNSIGNED_ACTS


def _extra_inputs(p: Params) -> list[str]:
    """The range inputs a quantized node takes after its chain's inputs."""
    if _is_conv(p):
        return ["data_min", "data_max"] + (["sum_min", "sum_max"] if _flag(p, "with_sum") else [])
    if _flag(p, "channel_wise_quantize"):  # float weights: their ranges are not inputs
        return ["min_data", "max_data"]
    names = ["min_data", "max_data", "min_weight", "max_weight"]
    return names + ([] if _params(_head(p)).no_bias else ["min_bias", "max_bias"])


def _head(p: Params) -> Node:
    return _ops_of(p)[0]


def _float_output(p: Params) -> bool:
    return _flag(p, "enable_float_output")


def _out_names(p: Params) -> list[str]:
    """MXNet's names: ``output``, and the range of an integer output (the conv's
    ``output_min``, the FC's ``min_output``)."""
    if not p.quantized or _float_output(p):
        return ["output"]
    return ["output"] + (["output_min", "output_max"] if _is_conv(p)
                         else ["min_output", "max_output"])


def _chain_inputs(p: Params) -> list[str]:
    """MXNet's names of the chain's inputs (FListInputNames, which the monitor shows as
    ``<node>_<input>``): the FC's are its subgraph's variables'; the conv's say what
    each variable is to the chain (data, weight, bias, gamma, beta, mean, var, sum),
    the first use naming a variable read twice (a subgraph not yet split)."""
    if not _is_conv(p):
        return GRAPH_PLUMBING["inputs"](p)
    g = inner_graph(p)
    role: dict[int, str] = {}
    for node in _ops_of(p):
        for name, e in zip(node.input_names(), node.inputs, strict=True):
            if e.node.is_variable:
                role.setdefault(id(e.node), _CONV_ROLES.get(name, name))
    return [role[id(g.nodes[i])] for i in g.input_ids]


def _in_names(p: Params) -> list[str]:
    return _chain_inputs(p) + (_extra_inputs(p) if p.quantized else [])


def _aux_names(p: Params) -> list[str]:
    """The chain's auxiliary inputs (BatchNorm's moving mean and var) under the node's names."""
    inner_aux = GRAPH_PLUMBING["aux"](p)
    return [name for name, inner in zip(_chain_inputs(p), GRAPH_PLUMBING["inputs"](p),
                                        strict=True) if inner in inner_aux]


def _split(p: Params, values: Sequence) -> tuple[list, list]:
    n = len(GRAPH_PLUMBING["inputs"](p))
    return list(values[:n]), list(values[n:])


def _infer_shape(p, in_shapes, out_shapes):
    if not p.quantized:
        return GRAPH_PLUMBING["infer_shape"](p, in_shapes, out_shapes)
    base, extra = _split(p, in_shapes)
    ins, outs = GRAPH_PLUMBING["infer_shape"](p, base, out_shapes[:1])
    return ins + [q.RANGE] * len(extra), outs + [q.RANGE] * (len(out_shapes) - 1)


def _sum_index(p: Params) -> int | None:
    return len(GRAPH_PLUMBING["inputs"](p)) - 1 if _is_conv(p) and _flag(p, "with_sum") else None


def _last_act(p: Params) -> Node | None:
    """The post-op whose output the node gives: MXNet's IsOutputUInt8 reads it."""
    acts = [n for n in _ops_of(p)[1:] if n.op not in ("BatchNorm", "elemwise_add")]
    if _is_conv(p) and _flag(p, "with_sum"):
        return acts[-1] if _flag(p, "with_postsum_act") else None
    return acts[0] if acts else None


def quantized_out_type(p: Params) -> np.dtype:
    if _float_output(p):
        return np.dtype(F32)
    if p.min_calib_range is None or p.max_calib_range is None:
        return np.dtype(np.int32)
    return np.dtype(np.uint8 if _unsigned(_last_act(p)) else np.int8)


def _infer_type(p, in_types, out_types):
    if not p.quantized:
        return GRAPH_PLUMBING["infer_type"](p, in_types, out_types)
    base, extra = _split(p, in_types)
    data_slots = [0] + ([_sum_index(p)] if _sum_index(p) is not None else [])
    int8_params = not _is_conv(p) and not _flag(p, "channel_wise_quantize")
    if int8_params:  # FC's weight and bias, quantized offline
        data_slots += list(range(1, len(base)))
    given = {i: base[i] for i in data_slots}
    for i, t in given.items():
        if t is not None and i in (0, _sum_index(p)) and t not in q.INT_TYPES:
            raise DTypeError(f"quantized input {i} must be int8 or uint8, got {t}")
    float_base = [np.dtype(F32) if i in given else t for i, t in enumerate(base)]
    ins, _ = GRAPH_PLUMBING["infer_type"](p, float_base, [None])
    if int8_params:
        ins = [ins[0]] + [np.dtype(np.int8)] * (len(base) - 1)
    ins = [given.get(i) if i in (0, _sum_index(p)) else t for i, t in enumerate(ins)]
    outs = [quantized_out_type(p)] + [np.dtype(F32)] * (len(out_types) - 1)
    return ins + [np.dtype(F32)] * len(extra), outs


def _create_state(p, in_shapes, in_dtypes):
    if not p.quantized:
        return subgraph_op.create_runner(p, in_shapes, in_dtypes)
    return (QuantizedConv if _is_conv(p) else QuantizedFC)(p)


def _forward(state, ctx: OpContext, inputs: list) -> list:
    return state.forward(inputs, ctx.is_train)


def _post_op(node: Node | None, y: np.ndarray) -> np.ndarray:
    """An activation of the chain run on float32 values, as oneDNN's eltwise post-op."""
    if node is None:
        return y
    opdef, params = node.operator()
    out = opdef.forward(params, OpContext(), [y])
    return (out[0] if isinstance(out, list) else out).astype(F32)


class QuantizedConv:
    """The numpy kernel of a quantized `_sg_mkldnn_conv` (MXNet's SgMKLDNNConvOperator)."""

    def __init__(self, p: Params) -> None:
        self.p = p
        ops = _ops_of(p)
        self.conv = _params(ops[0])
        self.bn = next((_params(n) for n in ops if n.op == "BatchNorm"), None)
        acts = [n for n in ops[1:] if n.op not in ("BatchNorm", "elemwise_add")]
        self.act = acts[0] if _flag(p, "with_act") else None
        self.postsum_act = acts[-1] if _flag(p, "with_postsum_act") else None
        self.out_type = quantized_out_type(p)
        if self.act is not None and self.act.op == "clip":
            if _flag(p, "with_sum"):
                raise OperatorError("a quantized conv + clip + sum is not supported "
                                    "(MXNet's oneDNN path refuses it too)")
            self.act = None  # the output's saturation is the clip

    def forward(self, inputs: list, is_train: bool = False) -> list:
        p, conv = self.p, self.conv
        base, extra = _split(p, inputs)
        data, w = base[0], base[1]
        rest = base[2:]
        bias = None if conv.no_bias else rest.pop(0)
        if self.bn is not None:
            gamma, beta, mean, var = rest[:4]
            w, bias = q.fold_batch_norm(w, bias, gamma, beta, mean, var, self.bn.eps,
                                        self.bn.fix_gamma)
        d_lo, d_hi = q.scalar(extra[0]), q.scalar(extra[1])
        if data.dtype not in q.INT_TYPES or (d_lo < 0 and data.dtype != np.int8):
            raise DTypeError(f"data is {data.dtype} with min {d_lo}: a quantized convolution "
                             "takes int8 data, or uint8 data with a range from 0")
        data_scale = q.quantize_scale(data.dtype, d_lo, d_hi)
        calibrated = p.min_calib_range is not None and p.max_calib_range is not None
        scales, w_lo, w_hi = q.weight_scales(w, bias, data_scale, channelwise=calibrated)
        w_q = q.scaled(w, scales.reshape((-1,) + (1,) * (w.ndim - 1)), np.int8)
        b_q = None if bias is None else q.scaled(bias, (scales * data_scale).astype(F32),
                                                  np.int32)
        win = make_window("_sg_mkldnn_conv", conv.kernel, conv.stride, conv.dilate, conv.pad)
        acc = conv_forward(data.astype(np.float64), w_q.astype(np.float64), win,
                           conv.num_group, conv.workspace)
        y = q.accumulate(acc, b_q)
        if calibrated:
            out_scale = q.quantize_scale(self.out_type, p.min_calib_range, p.max_calib_range)
            requant = ((out_scale / data_scale) / scales).astype(F32)
            y = y * q.channel_view(requant, y.ndim)
            lo, hi = q.range_out(p.min_calib_range, p.max_calib_range)
        else:
            out_scale = F32(data_scale * scales[0])
            lo, hi = q.multiplied_range((w_lo, w_hi), (d_lo, d_hi),
                                        127 if data.dtype == np.int8 else 255)
        y = _post_op(self.act, y)
        if _flag(p, "with_sum"):
            addend = base[-1]
            sum_scale = F32(out_scale / q.quantize_scale(addend.dtype, q.scalar(extra[2]),
                                                         q.scalar(extra[3])))
            y = q.add_scaled(y, addend, sum_scale)
        y = _post_op(self.postsum_act, y)
        return [q.saturate(y, self._dst_type(inputs)).view(self.out_type), lo, hi]


    def _dst_type(self, inputs: list) -> np.dtype:
        """The type oneDNN writes. With a sum, MXNet builds the primitive on the sum
        operand's buffer, so an int8 or uint8 output is written in the operand's
        type (saturating there) and read back as the output's: a uint8 output over
        an int8 residual stops at 127. An int32 output gets an int32 copy."""
        if not _flag(self.p, "with_sum") or self.out_type == np.int32:
            return self.out_type
        return inputs[len(GRAPH_PLUMBING["inputs"](self.p)) - 1].dtype


class QuantizedFC:
    """The numpy kernel of a quantized `_sg_mkldnn_fully_connected` (MXNet's SgMKLDNNFCOp):
    int8 weights quantized offline into the params file with their ranges, or with
    channel_wise_quantize float weights it quantizes per output channel."""

    def __init__(self, p: Params) -> None:
        self.p = p
        self.fc = _params(_head(p))
        self.act = _last_act(p) if p.with_eltwise else None
        self.out_type = quantized_out_type(p)
        self.calibrated = p.min_calib_range is not None and p.max_calib_range is not None
        if p.channel_wise_quantize and not (self.calibrated or p.enable_float_output):
            raise OperatorError("channel_wise_quantize=True needs min_calib_range and "
                                "max_calib_range, or enable_float_output (as MXNet)")

    def forward(self, inputs: list, is_train: bool = False) -> list:
        p = self.p
        base, extra = _split(p, inputs)
        data = base[0]
        d_lo, d_hi = q.scalar(extra[0]), q.scalar(extra[1])
        data_scale = q.quantize_scale(data.dtype, d_lo, d_hi)
        w, w_scale, b_q = self.int8_weights(base, extra, data_scale)
        x = data.reshape(data.shape[0], -1) if self.fc.flatten else data
        acc = x.astype(np.float64) @ w.astype(np.float64).T
        y = q.accumulate(acc.reshape(-1, acc.shape[-1]), b_q).reshape(acc.shape)
        if not (self.calibrated or p.enable_float_output):
            lo, hi = q.multiplied_range((d_lo, d_hi), (q.scalar(extra[2]), q.scalar(extra[3])),
                                        127 if data.dtype == np.int8 else 255)
            return [q.saturate(_post_op(self.act, y), np.int32), lo, hi]
        act_scale = F32(1)
        if self.calibrated:
            out_scale = q.quantize_scale(self.out_type, p.min_calib_range, p.max_calib_range)
            if self.act is not None:  # oneDNN's eltwise post-op scales after the activation
                act_scale, out_scale = out_scale, F32(1)
            y = y * (F32(out_scale / data_scale) / w_scale)
        else:
            y = y * (F32(1.0 / float(data_scale)) / w_scale)
        y = _post_op(self.act, y) * act_scale
        if p.enable_float_output:
            return [y.astype(F32)]
        return [q.saturate(y, self.out_type), *q.range_out(p.min_calib_range,
                                                           p.max_calib_range)]

    def int8_weights(self, base: list, extra: list,
                 data_scale: np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(int8 weight, its scale per output channel or one, int32 bias or None)."""
        w, bias = base[1], (None if self.fc.no_bias else base[2])
        if self.p.channel_wise_quantize:
            scales, _, _ = q.weight_scales(w, bias, data_scale, channelwise=True)
            b_q = None if bias is None else q.scaled(bias, (scales * data_scale).astype(F32),
                                                     np.int32)
            return q.scaled(w, scales.reshape(-1, 1), np.int8), scales, b_q
        w_scale = q.quantize_scale(np.int8, q.scalar(extra[2]), q.scalar(extra[3]))
        if bias is None:
            return w, np.array([w_scale], F32), None
        w, w_scale, b_q = self._int32_bias(bias, w, data_scale, w_scale,
                                           (q.scalar(extra[4]), q.scalar(extra[5])))
        return w, np.array([w_scale], F32), b_q

    @staticmethod
    def _int32_bias(bias: np.ndarray, w: np.ndarray, data_scale: np.float32,
                    w_scale: np.float32, b_range: tuple[float, float]):
        """MXNet's rescaling of the int8 bias to the product's int32 scale; a bias
        that would pass INT32_MAX / 2 rescales the weight instead."""
        b_scale = q.quantize_scale(np.int8, *b_range)
        rescale = F32(F32(data_scale * w_scale) / b_scale)
        with np.errstate(divide="ignore"):  # an all-zero bias: no limit
            limit = F32(F32(F32(np.iinfo(np.int32).max // 2) / q.max_abs(*b_range)) / b_scale)
        if rescale > limit:
            w_rescale = F32(F32(F32(limit * b_scale) / data_scale) / w_scale)
            w = q.std_round(w.astype(F32) * w_rescale).astype(np.int8)
            w_scale, rescale = F32(w_scale * w_rescale), limit
        return w, w_scale, q.std_round(bias.astype(F32) * rescale).astype(np.int32)


def _register(name: str, params: tuple[Param, ...], doc: str) -> None:
    register(OpDef(
        name=name, doc=doc,
        params=params + (Param("quantized", "bool", False, "Whether the node computes in int8."),
                         *_CALIB),
        inputs=_in_names, outputs=_out_names, aux=_aux_names,
        infer_shape=_infer_shape, infer_type=_infer_type,
        create_state=_create_state, forward=_forward, backward=subgraph_op.run_backward,
    ))


def _flags(*names: str) -> tuple[Param, ...]:
    return tuple(Param(f, "bool", False, f"Whether the chain includes {f[5:]}.") for f in names)


_register("_sg_mkldnn_conv",
          _flags("with_bn", "with_act", "with_sum", "with_postsum_act")
          + (Param("with_relu", "bool", False, "Legacy name of with_act."),
             Param("with_postsum_relu", "bool", False, "Legacy name of with_postsum_act.")),
          "MXNet's fused oneDNN convolution chain (float32, or int8 when quantized).")
_register("_sg_mkldnn_fully_connected",
          _flags("with_eltwise")
          + (Param("enable_float_output", "bool", False, "Quantized: give float32 output."),
             Param("channel_wise_quantize", "bool", None, "Quantized: float weights, "
                   "quantized per output channel.")),
          "MXNet's fused oneDNN fully connected (+ activation); int8 when quantized.")
