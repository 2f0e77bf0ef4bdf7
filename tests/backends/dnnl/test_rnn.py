"""RNN on oneDNN's RNN primitives against the numpy kernel (itself checked against
MXNet in tests/ops): every mode, stacked, bidirectional, with and without the
final states as outputs; Gluon's packed weights computed once by the weight cache;
and what the config leaves on numpy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.backends.dnnl import recurrent
from minimx.backends.dnnl.recurrent import layer_weights
from minimx.ops.registry import get_op

from .helpers import (
    assert_close,
    bind,
    check,
    dnnl_nodes,
    inner_ops,
    outer_ops,
    outputs,
    partitioned,
    random_arrays,
)


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


def gluon_lstm(layers: int = 2, hidden: int = 4, width: int = 3):
    """What Gluon exports: reshaped weights joined by _rnn_param_concat, zero states."""
    rows = 4 * hidden
    shapes = {f"l{k}_{kind}": shape for k in range(layers) for kind, shape in (
        ("i2h_weight", (rows, width if k == 0 else hidden)), ("h2h_weight", (rows, hidden)))}
    shapes |= {f"l{k}_{kind}": (rows,) for k in range(layers) for kind in ("i2h_bias",
                                                                            "h2h_bias")}
    parts = [mx.sym.Reshape(mx.sym.var(n, shape=s), shape=(-1,)) for n, s in shapes.items()]
    params = mx.sym._rnn_param_concat(*parts, dim=0, num_args=len(parts))
    zeros = [mx.sym.zeros((layers, 0, hidden)) for _ in range(2)]
    return mx.sym.RNN(mx.sym.var("data"), params, *zeros, state_size=hidden,
                      num_layers=layers, mode="lstm", state_outputs=True)[0]


def test_gluon_packing_is_folded_into_the_weight_cache(monkeypatch):
    sym, shapes = gluon_lstm(), {"data": (5, 2, 3)}
    part = check(sym, shapes)
    assert outer_ops(part) == ["_sg_dnnl"]
    calls = []
    monkeypatch.setattr(recurrent, "layer_weights",
                        lambda *a: calls.append(a[-1]) or layer_weights(*a))
    args, aux = random_arrays(sym, shapes)
    ex = bind(part, args, aux)
    first = ex.forward()[0].asnumpy()
    assert len(calls) == 3 * 2    # weights, weights_iter, bias of each layer, once
    assert np.array_equal(ex.forward()[0].asnumpy(), first)
    assert len(calls) == 6
    args["l1_h2h_weight"] = args["l1_h2h_weight"] * 2
    ex.arg_dict["l1_h2h_weight"][:] = args["l1_h2h_weight"]
    assert_close([ex.forward()[0].asnumpy()], outputs(sym, args, aux))
    assert len(calls) == 12       # every constant of the packed vector, refreshed


@pytest.mark.parametrize("fill", [mx.sym.zeros((2, 3)), mx.sym.ones((2, 3)),
                                  mx.sym.full((2, 3), 2.5)])
def test_constants_go_in_with_their_readers_only(fill):
    op = outer_ops(fill)[0]
    part = check(mx.sym.var("data") + fill, {"data": (2, 3)})
    assert inner_ops(dnnl_nodes(part)[0]) == [op, "elemwise_add"]
    assert outer_ops(partitioned(mx.sym.sin(fill), {})) == [op, "sin"]   # alone: no subgraph


def test_packed_parameters_read_elsewhere_or_computed():
    """A concatenation also read by another operator is computed as well; one of
    computed values is never an RNN's parameters inside a subgraph."""
    a, b = mx.sym.var("a"), mx.sym.var("b")
    zeros = mx.sym.zeros((1, 2, 4))
    shapes = {"data": (5, 2, 3), "a": (36,), "b": (12, 6)}
    for first, also in ((a, True), (a * 2, False)):
        params = mx.sym._rnn_param_concat(first, mx.sym.Reshape(b, shape=(-1,)), dim=0,
                                          num_args=2)
        sym = mx.sym.RNN(mx.sym.var("data"), params, zeros, state_size=4, num_layers=1,
                         mode="gru")
        part = check(mx.sym.Group([sym, params * 1]) if also else sym, shapes)
        inside = [inner_ops(n) for n in dnnl_nodes(part)]
        assert any("RNN" in ops for ops in inside)
        assert also or not any("RNN" in ops and "_mul_scalar" in ops for ops in inside)
