"""RNN against a step-by-step reference written from MXNet's documented cell equations
and packed layout, its gradient (backpropagation through time), inference, and
_rnn_param_concat's inference."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.base import OperatorError
from minimx.ops import OpContext, get_op

from gradcheck import check_gradient
from ops_support import attrs_of, infer, run

FAST = settings(max_examples=40, deadline=None)
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def sig(z):
    return 1 / (1 + np.exp(-z))


def cell(mode, x, h, c, wx, wh, bx, bh):
    """One step of MXNet's documented equations (gates i, f, g, o and r, z, n)."""
    if mode == "gru":
        ax, ah = np.split(x @ wx.T + bx, 3, -1), np.split(h @ wh.T + bh, 3, -1)
        r, z = sig(ax[0] + ah[0]), sig(ax[1] + ah[1])
        n = np.tanh(ax[2] + r * ah[2])
        return (1 - z) * n + z * h, c
    a = x @ wx.T + bx + h @ wh.T + bh
    if mode == "lstm":
        i, f, g, o = np.split(a, 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        return sig(o) * np.tanh(c), c
    return (np.tanh(a) if mode == "rnn_tanh" else np.maximum(a, 0)), c


def reference_rnn(mode, layers, dirs, hidden, x, flat, h0, c0):
    rows, pos = GATES[mode] * hidden, 0

    def take(n):
        nonlocal pos
        pos += n
        return flat[pos - n:pos]

    widths = [x.shape[2]] + [hidden * dirs] * (layers - 1)
    mats = [(take(rows * w).reshape(rows, w), take(rows * hidden).reshape(rows, hidden))
            for w in widths for _ in range(dirs)]
    biases = [(take(rows), take(rows)) for _ in range(layers * dirs)]
    hy, cy = np.zeros_like(h0), np.zeros_like(h0)
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            h, c = h0[k], c0[k]
            ys = [None] * len(x)
            for t in (reversed(range(len(x))) if d else range(len(x))):
                h, c = cell(mode, x[t], h, c, *mats[k], *biases[k])
                ys[t] = h
            hy[k], cy[k] = h, c
            outs.append(np.stack(ys))
        x = np.concatenate(outs, -1)
    return x, hy, cy


def rnn_inputs(rng, mode, layers, dirs, hidden, steps, batch, width):
    """Data, a packed vector of the size the layout implies, and initial states."""
    rows = GATES[mode] * hidden
    size = sum(rows * (w + hidden + 2) for w in [width] + [hidden * dirs] * (layers - 1)) * dirs
    inputs = [rng.standard_normal((steps, batch, width)), rng.uniform(-0.6, 0.6, size),
              rng.standard_normal((layers * dirs, batch, hidden))]
    if mode == "lstm":
        inputs.append(rng.standard_normal((layers * dirs, batch, hidden)))
    return inputs


@FAST
@given(st.sampled_from(list(GATES)), st.integers(1, 2), st.integers(1, 2), st.integers(1, 3),
       st.integers(1, 3), st.integers(1, 2), st.integers(1, 3), st.integers(0, 2**16))
def test_rnn_matches_step_reference(mode, layers, dirs, hidden, steps, batch, width, seed):
    inputs = rnn_inputs(np.random.default_rng(seed), mode, layers, dirs, hidden, steps, batch,
                        width)
    params = dict(mode=mode, state_size=hidden, num_layers=layers, bidirectional=dirs == 2,
                  state_outputs=True)
    got = run("RNN", params, *inputs)
    c0 = inputs[3] if mode == "lstm" else np.zeros_like(inputs[2])
    want = reference_rnn(mode, layers, dirs, hidden, *inputs[:3], c0)
    assert len(got) == (3 if mode == "lstm" else 2)
    for g, w in zip(got, want, strict=False):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    (out,) = run("RNN", {**params, "state_outputs": False}, *inputs)
    np.testing.assert_array_equal(out, got[0])


def grad_inputs(seed, mode, dirs):
    inputs = rnn_inputs(np.random.default_rng(seed), mode, 2, dirs, 2, 3, 2, 2)
    if mode == "rnn_relu":  # positive inputs and weights keep relu away from its kink
        return [np.abs(a) + 0.05 for a in inputs]
    return inputs


@pytest.mark.parametrize("mode", list(GATES))
def test_rnn_gradient_through_time(mode):
    params = dict(mode=mode, state_size=2, num_layers=2, bidirectional=True, state_outputs=True)
    check_gradient("RNN", params, grad_inputs(7, mode, 2), rtol=1e-4, atol=1e-6)
    check_gradient("RNN", {**params, "state_outputs": False, "bidirectional": False},
                   grad_inputs(8, mode, 1), rtol=1e-4, atol=1e-6)


def test_rnn_inference_matches_mxnet_rules():
    data = mx.sym.var("data")
    lstm = mx.sym.RNN(data, mx.sym.var("w"), mx.sym.var("h"), mx.sym.var("c"), mode="lstm",
                      state_size=4, num_layers=2, bidirectional=True, state_outputs=True,
                      name="lstm")
    assert lstm.list_outputs() == ["lstm_output", "lstm_state_output", "lstm_statecell_output"]
    # MXNet's GetRnnParamSize: (3 + 4 + 2) * 32 + (8 + 4 + 2) * 32 = 736
    assert lstm.infer_shape(data=(5, 2, 3)) == (
        [(5, 2, 3), (736,), (4, 2, 4), (4, 2, 4)], [(5, 2, 8), (4, 2, 4), (4, 2, 4)], [])
    projected = infer("RNN", dict(mode="lstm", state_size=4, num_layers=1, projection_size=2,
                                  state_outputs=True), [(5, 2, 3), None, None, None],
                      [None, None, None])
    # (3 + 2 + 2) * 16 + 2 * 4 = 120
    assert projected == ([(5, 2, 3), (120,), (1, 2, 2), (1, 2, 4)],
                         [(5, 2, 2), (1, 2, 2), (1, 2, 4)])
    gru = mx.sym.RNN(data, mx.sym.var("w"), mx.sym.var("h"), mode="gru", state_size=3,
                     num_layers=1, name="gru")
    assert gru.list_arguments() == ["data", "w", "h"] and gru.list_outputs() == ["gru_output"]
    assert gru.infer_type(data="float32")[0] == [np.float32] * 3


def test_rnn_training_dropout_and_unsupported_options():
    inputs = rnn_inputs(np.random.default_rng(9), "gru", 2, 1, 3, 4, 2, 3)
    op = get_op("RNN")
    params = dict(mode="gru", state_size=3, num_layers=2, p=0.5)
    p = op.parse_params(attrs_of(**params))
    infer_out = op.forward(p, OpContext(), inputs)[0]
    train_out = op.forward(p, OpContext(is_train=True, rng=np.random.default_rng(0)), inputs)[0]
    assert not np.allclose(infer_out, train_out)
    np.testing.assert_array_equal(run("RNN", {**params, "p": 0.0}, *inputs)[0], infer_out)
    with pytest.raises(OperatorError, match="use_sequence_length"):
        run("RNN", {**params, "use_sequence_length": True}, *inputs, np.array([4, 4]))
    with pytest.raises(OperatorError, match="clipping"):
        run("RNN", {**params, "lstm_state_clip_min": -1, "lstm_state_clip_max": 1}, *inputs)
    with pytest.raises(OperatorError, match="projection_size"):
        run("RNN", {**params, "projection_size": 2}, *inputs)


def test_rnn_param_concat_shares_the_unknown_rest():
    # Gluon packs reshape(-1) of each parameter; the first-layer i2h weights of both
    # directions are unknown until the packed size is.
    assert infer("_rnn_param_concat", dict(num_args=4, dim=0), [(0,), (0,), (16,), (8,)],
                 [(64,)]) == ([(20,), (20,), (16,), (8,)], [(64,)])
    assert infer("_rnn_param_concat", dict(num_args=2, dim=0), [(4,), (6,)]) == \
        ([(4,), (6,)], [(10,)])
    out = run("_rnn_param_concat", dict(num_args=2, dim=0), np.ones(2), np.zeros(3))
    np.testing.assert_array_equal(out, [1, 1, 0, 0, 0])
