"""Lowering MXNet's ``RNN`` onto oneDNN's RNN primitives, one per layer.

Needs: a `Lowering` (lower.py) and an RNN node the config accepted (no LSTM
projection, state clipping or sequence lengths), its packed parameter vector
an input of the subgraph or Gluon's _rnn_param_concat of inputs (the weight
cache folds it: `weights.Folded`). Guarantees: the numpy kernel's formulas
(ops/rnn.py): oneDNN's LSTM and linear-before-reset GRU are MXNet's cells;
only the gate order and the bias layout differ, and the weight cache brings
MXNet's packed vector into oneDNN's (`layer_weights`). Each layer reads the
previous layer's output (both directions concatenated) and its slice of the
initial states; the final states of the layers are concatenated into
MXNet's (layers * directions, N, H) outputs when ``state_outputs`` asks.
Dropout between layers (``p``) is a training matter: inference never drops.
In a bf16 subgraph the cells run in bf16 (data, weights, hidden states; the bias
and an LSTM's cell states float32).

MXNet's INT8 LSTM, ``_contrib_quantized_rnn`` (ops/quantized_rnn.py), runs on
oneDNN's int8 LSTM: uint8 data, the float32 weights quantized to s8 once per gate
row with the numpy kernel's `weight_scales` (the same s8 values; oneDNN takes the
data shift out through the bias as the kernel does), its data scale and shift
(range inputs: the plan is compiled for their values) as oneDNN's
rnn_data_qparams. oneDNN quantizes the float32 initial h, passes uint8 hidden
sequences between layers, and dequantizes the last layer's output and the final h
as ``(u8 - shift) / scale``, the kernel's formula. Only with VNNI (the selector's
INT8 rule), where its products are exact int32: the kernel's numbers where no
int16 pair saturates in MXNet's arithmetic (oneDNN's exp and tanh may move a
hidden value by one uint8 level). The weight scales are attributes of the
primitives: weights whose scales move make the plan compile again.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ... import onednn
from ...base import BackendError
from ...graph import Node
from ...ops.params import Params
from ...ops.quantization import saturate
from ...ops.quantized_rnn import weight_scales
from ...ops.rnn import GATES, unpack
from .weights import StaleConstant

if TYPE_CHECKING:
    from .lower import Lowering

# Where each of oneDNN's gates sits in MXNet's order: LSTM i, f, c, o is MXNet's
# i, f, g, o; GRU u, r, o is MXNet's z, r, n.
GATE_ORDER = {"lstm": [0, 1, 2, 3], "gru": [1, 0, 2], "rnn_relu": [0], "rnn_tanh": [0]}


def layer_weights(p: Params, input_size: int, flat: np.ndarray, layer: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layer `layer`'s weights_layer (1, D, C, G, H), weights_iter (1, D, H, G, H)
    and bias (1, D, G, H) - for the GRU (1, D, 4, H): oneDNN's linear-before-reset
    bias keeps the recurrent candidate bias apart - from MXNet's packed vector."""
    dirs = 2 if p.bidirectional else 1
    cells = unpack(p, input_size, flat)[layer * dirs:(layer + 1) * dirs]
    order, h, gates = GATE_ORDER[p.mode], p.state_size, GATES[p.mode]

    def gate_major(w: np.ndarray) -> np.ndarray:   # (G*H, C) -> (C, G, H), oneDNN's gates
        return w.reshape(gates, h, -1)[order].transpose(2, 0, 1)

    def bias(bx: np.ndarray, bh: np.ndarray) -> np.ndarray:
        bx, bh = bx.reshape(gates, h)[order], bh.reshape(gates, h)[order]
        if p.mode == "gru":   # u and r sum both biases; o's recurrent bias goes inside r * (.)
            return np.concatenate([bx[:2] + bh[:2], bx[2:], bh[2:]])
        return bx + bh

    return (np.stack([gate_major(c.wx) for c in cells])[None],
            np.stack([gate_major(c.wh) for c in cells])[None],
            np.stack([bias(c.bx, c.bh) for c in cells])[None])


def _int8_weights(p: Params, width: int, flat: np.ndarray, layer: int, scales: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`layer_weights` of an INT8 LSTM: the weights quantized to s8 with `scales`, the
    (4 * state_size,) scales of `weight_scales` the primitives were made with (the
    LSTM's gates are in MXNet's order in oneDNN too); the float32 bias as it is."""
    now = weight_scales(p, width, flat)
    if not np.array_equal(now, scales):
        raise StaleConstant("_contrib_quantized_rnn: the weights' int8 scales changed")
    wx, wh, bias = layer_weights(p, width, flat, layer)
    rows = scales.reshape(GATES[p.mode], p.state_size)
    return saturate(wx * rows, np.int8), saturate(wh * rows, np.int8), bias


def rnn(low: Lowering, node: Node, nid: int, ins: Sequence[int], inputs) -> onednn.Slot:
    _, p = node.operator()
    sources, packed = low.weight(ins[1])   # an input, or Gluon's _rnn_param_concat of inputs
    width = low.shape(ins[0])[2]
    lstm, dirs = p.mode == "lstm", 2 if p.bidirectional else 1
    states = [_layered(low, e, p.num_layers, dirs) for e in ins[2:4 if lstm else 3]]
    # In a bf16 subgraph a float RNN runs in bf16 (its bias and cell states float32).
    dtype = low.float_type(nid) if node.op == "RNN" else onednn.FLOAT32
    x = low.plan.reorder(low.data(ins[0], dtype))
    weights: Callable[[Params, int, np.ndarray, int], tuple[np.ndarray, ...]] = layer_weights
    int8 = None
    if node.op == "_contrib_quantized_rnn":
        if inputs is None:
            raise BackendError("DNNL lowering: an INT8 LSTM's weight scales are part of its "
                               "primitives; compile with the inputs")
        scale, shift = low.range_of(ins[4:6])
        scales = weight_scales(p, width, packed(*(inputs[i] for i in sources)))
        int8 = onednn.RnnInt8(scale, shift, scales, np.dtype(np.uint8))
        weights = partial(_int8_weights, scales=scales)
    # Per final state (h, and c for the LSTM), each layer's part, when they are outputs.
    finals: list[list[onednn.Slot]] = [[] for _ in states] if p.state_outputs else []
    for layer in range(p.num_layers):
        if int8 is not None and layer == p.num_layers - 1:   # float output, dequantized
            int8 = replace(int8, dst_dtype=np.dtype(np.float32))
        op = onednn.rnn(p.mode, x.desc, p.state_size, bidirectional=p.bidirectional,
                        state_outputs=p.state_outputs, int8=int8, dtype=dtype)
        args = {name: low.plan.reorder(low.plan.part(s, op.desc(name).shape, (layer, 0, 0, 0)),
                                       op.desc(name))
                for name, s in zip(("src_iter", "src_iter_c"), states, strict=False)}
        for k, arg in enumerate(("weights", "weights_iter", "bias")):
            args[arg] = low.constant(inputs, sources, lambda *arrays, k=k, layer=layer:
                                     weights(p, width, packed(*arrays), layer)[k], op, arg)
        for name, parts in zip(op.extra_dsts, finals, strict=True):
            args[name] = low.plan.temp(op.desc(name))
            parts.append(args[name])
        x = low.plan.add(op, src=x, **args)
    out = low.g.entry_ptr[nid]
    for k, parts in enumerate(finals, 1):
        low.slots[out + k] = _joined(low, parts, low.shape(out + k))
    return x


def _layered(low: Lowering, eid: int, layers: int, dirs: int) -> onednn.Slot:
    """MXNet's (layers * D, N, H) states viewed as (layers, D, N, H)."""
    _, batch, h = low.shape(eid)
    return low.plan.view(low.viewable(eid), onednn.MemoryDesc.plain((layers, dirs, batch, h)))


def _joined(low: Lowering, parts: list[onednn.Slot], shape: tuple[int, ...]) -> onednn.Slot:
    """The layers' (1, D, N, H) final states as MXNet's (layers * D, N, H)."""
    whole = parts[0] if len(parts) == 1 else low.plan.add(
        onednn.concat([s.desc for s in parts], axis=0),
        **{f"src{i}": s for i, s in enumerate(parts)})
    return low.plan.view(whole, onednn.MemoryDesc.plain(shape, whole.desc.dtype))
