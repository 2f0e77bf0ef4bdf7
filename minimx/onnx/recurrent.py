"""The fused ``RNN`` operator in ONNX: one LSTM, GRU or RNN node per layer.

MXNet packs every weight and bias into one vector (see `minimx.ops.rnn`); ONNX takes
per layer W (directions, G*H, input), R (directions, G*H, H) and B (directions, 2*G*H:
input biases, then hidden ones), with the gates in another order: i, o, f, c for the
LSTM (MXNet: i, f, g, o) and z, r, h for the GRU (MXNet: r, z, n). The translation
slices the vector where it is read, so that it may be a constant or computed in the
graph (Gluon's ``_rnn_param_concat``). The GRU applies the reset gate after the
hidden product, as cuDNN and MXNet do (``linear_before_reset=1``). Layers are stacked
nodes; ONNX's output (T, directions, N, H) becomes MXNet's (T, N, directions * H).
"""
from __future__ import annotations

import numpy as np

from ..ops.rnn import param_size, unpack
from .emitter import Emitter, OnnxNode, Site, Unsupported
from .registry import translates

_OP_TYPE = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}
# ONNX's gates as indices into MXNet's
_GATE_ORDER = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2], "rnn_tanh": [0], "rnn_relu": [0]}


def _refusal(s: Site) -> str | None:
    if s.p.projection_size:
        return "projection_size: ONNX's LSTM has no projection"
    if s.p.lstm_state_clip_min is not None or s.p.lstm_state_clip_max is not None:
        return ("lstm_state_clip_min/max: ONNX's LSTM clips the gates' inputs "
                "symmetrically, not the cell state")
    if s.p.use_sequence_length:
        return "use_sequence_length (MXNet computes it only with cuDNN)"
    return None


def _gates(e: Emitter, s: Site, view: np.ndarray) -> str:
    """One matrix or bias of the packed vector in ONNX's gate order, with a leading axis
    of size 1 (for the direction). `view` is its part of ``arange(size)``: the
    positions it takes in the vector."""
    start, rows = int(view.flat[0]), view.shape[0]
    gates = len(_GATE_ORDER[s.p.mode])
    part = e.add("Slice", [s.inputs[1], e.ints(f"{s.name}_start", [start]),
                           e.ints(f"{s.name}_end", [start + view.size])])
    by_gate = e.add("Reshape", [part, e.ints(f"{s.name}_by_gate", [gates, -1])])
    ordered = e.add("Gather", [by_gate, e.ints(f"{s.name}_gate_order", _GATE_ORDER[s.p.mode])],
                    axis=0)
    return e.add("Reshape", [ordered, e.ints(f"{s.name}_shape", [1, rows, *view.shape[1:]])])


def _joined(e: Emitter, parts: list[str], axis: int = 0) -> str:
    return e.add("Concat", parts, axis=axis)


def _layer_states(e: Emitter, s: Site, k: int, layer: int, dirs: int) -> str:
    """Input state `k` (h or c) of one layer: its directions' rows."""
    return e.add("Slice", [s.inputs[k], e.ints(f"{s.name}_state_start", [layer * dirs]),
                           e.ints(f"{s.name}_state_end", [(layer + 1) * dirs])])


@translates("RNN")
def _rnn(e: Emitter, s: Site) -> None:
    if why := _refusal(s):
        raise Unsupported(why)
    mode, hidden, dirs = s.p.mode, s.p.state_size, 2 if s.p.bidirectional else 1
    lstm = mode == "lstm"
    width = s.in_shapes[0][2]
    cells = unpack(s.p, width, np.arange(param_size(s.p, width)))
    attrs: dict = {"hidden_size": hidden,
                   "direction": "bidirectional" if s.p.bidirectional else "forward"}
    if mode == "gru":
        attrs["linear_before_reset"] = 1
    if _OP_TYPE[mode] == "RNN":
        attrs["activations"] = ["Tanh" if mode == "rnn_tanh" else "Relu"] * dirs
    x, last_h, last_c = s.inputs[0], [], []
    for layer in range(s.p.num_layers):
        own = cells[layer * dirs:(layer + 1) * dirs]
        weights = [_joined(e, [_gates(e, s, getattr(c, m)) for c in own]) for m in ("wx", "wh")]
        biases = _joined(e, [_joined(e, [_gates(e, s, c.bx), _gates(e, s, c.bh)], axis=1)
                             for c in own])
        states = [_layer_states(e, s, k, layer, dirs) for k in ((2, 3) if lstm else (2,))]
        outs = [e.fresh(f"{s.name}_l{layer}_{n}") for n in ("y", "h", "c")[:3 if lstm else 2]]
        e.nodes.append(OnnxNode(_OP_TYPE[mode], [x, *weights, biases, "", *states], outs,
                                attrs, outs[0]))
        last_h.append(outs[1])
        last_c.extend(outs[2:])
        # (T, directions, N, H) -> (T, N, directions * H)
        steps_first = e.add("Transpose", [outs[0]], perm=[0, 2, 1, 3])
        last = layer == s.p.num_layers - 1
        x = e.add("Reshape", [steps_first, e.ints(f"{s.name}_merged", [0, 0, -1])],
                  s.outputs[0] if last else None)
    if s.p.state_outputs:
        e.add("Concat", last_h, s.outputs[1], axis=0)
        if lstm:
            e.add("Concat", last_c, s.outputs[2], axis=0)

