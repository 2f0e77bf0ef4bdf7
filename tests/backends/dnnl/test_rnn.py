"""RNN on oneDNN's RNN primitives against the numpy kernel (itself checked against
MXNet in tests/ops): every mode, stacked, bidirectional, with and without the
final states as outputs; and what the config leaves on numpy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.backends.dnnl.recurrent import layer_weights
from minimx.ops.registry import get_op

from .helpers import check, dnnl_nodes, inner_ops, outer_ops, partitioned


def rnn_symbol(mode: str, layers: int, bidirectional: bool, state_outputs: bool,
               hidden: int, **extra):
    ins = [mx.sym.var("data"), mx.sym.var("params"), mx.sym.var("state")]
    if mode == "lstm":
        ins.append(mx.sym.var("cell"))
    sym = mx.sym.RNN(*ins, state_size=hidden, num_layers=layers, mode=mode,
                     bidirectional=bidirectional, state_outputs=state_outputs, **extra)
    return mx.sym.Group([sym[i] for i in range(len(sym.list_outputs()))])


@settings(max_examples=30, deadline=None)
@given(mode=st.sampled_from(["lstm", "gru", "rnn_tanh", "rnn_relu"]), layers=st.integers(1, 3),
       bidirectional=st.booleans(), state_outputs=st.booleans(),
       steps=st.integers(1, 6), batch=st.integers(1, 3), width=st.integers(1, 7),
       hidden=st.integers(1, 9), seed=st.integers(0, 3))
def test_rnn_matches_numpy(mode, layers, bidirectional, state_outputs, steps, batch, width,
                           hidden, seed):
    sym = rnn_symbol(mode, layers, bidirectional, state_outputs, hidden)
    part = check(sym, {"data": (steps, batch, width)}, seed)
    assert outer_ops(part) == ["_sg_dnnl"]
    assert inner_ops(dnnl_nodes(part)[0]) == ["RNN"]


def test_gate_conversion_of_one_gru_cell():
    """oneDNN's u, r, o gates are MXNet's z, r, n; the GRU bias keeps the recurrent
    candidate bias as a fourth gate."""
    p = get_op("RNN").parse_params({"mode": "gru", "state_size": "1", "num_layers": "1"})
    # rows of wx: r, z, n (one unit each, input size 1), then wh, then bx, bh.
    flat = np.arange(1, 13, dtype=np.float32)
    wx, wh, bias = layer_weights(p, 1, flat, 0)
    assert wx.ravel().tolist() == [2, 1, 3]
    assert wh.ravel().tolist() == [5, 4, 6]
    assert bias.ravel().tolist() == [8 + 11, 7 + 10, 9, 12]


@pytest.mark.parametrize("extra", [{"projection_size": 2}, {"lstm_state_clip_min": -1.0,
                                                            "lstm_state_clip_max": 1.0}])
def test_lstm_options_oneDNN_lacks_stay_on_numpy(extra):
    sym = rnn_symbol("lstm", 1, False, False, 4, **extra)
    part = partitioned(sym, {"data": (3, 2, 5)})
    assert "RNN" in outer_ops(part)
