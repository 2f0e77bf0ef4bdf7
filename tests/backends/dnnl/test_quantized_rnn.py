"""MXNet's INT8 LSTM (`_contrib_quantized_rnn`) on oneDNN's int8 LSTM against the numpy
kernel (itself checked against MXNet 1.9.1 in tests/ops/test_quantized_rnn.py).

With VNNI oneDNN sums the u8 x s8 products exactly in int32, where the kernel (MXNet's
non-VNNI arithmetic) saturates pairs of neighbouring products in int16. The two agree
where no pair saturates: the weights of each pair of neighbouring inputs have opposite
signs, or the data and hidden states stay below 128. oneDNN's exp and tanh may move a
hidden value across a rounding boundary (one uint8 level) and the cell state by a few
float32 ulps; on these inputs they agree exactly on the hidden values. Without VNNI
the node stays on numpy.
"""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.ops import get_op
from minimx.ops.quantized_nlp import asym_scale_shift
from minimx.ops.rnn import unpack

from .helpers import dnnl_nodes, inner_ops, outer_ops, partitioned, vnni

STEPS, BATCH, WIDTH, HIDDEN = 5, 3, 6, 7


def quantized_lstm(layers: int, bidirectional: bool, state_outputs: bool):
    ins = [mx.sym.var(n) for n in ("data", "params", "state", "cell", "scale", "shift")]
    sym = mx.sym.contrib.quantized_rnn(*ins, state_size=HIDDEN, num_layers=layers, mode="lstm",
                                       bidirectional=bidirectional, state_outputs=state_outputs)
    return mx.sym.Group([sym[i] for i in range(len(sym.list_outputs()))])


def lstm_arrays(sym, layers: int, bidirectional: bool, seed: int, lo: float, hi: float,
                data_top: int, alternating: bool) -> dict[str, np.ndarray]:
    """uint8 data below `data_top`, the data's scale and shift for the range [lo, hi],
    float weights (with `alternating`, of opposite signs on neighbouring inputs)."""
    rng = np.random.default_rng(seed)
    dirs = 2 if bidirectional else 1
    states = (layers * dirs, BATCH, HIDDEN)
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(
        data=(STEPS, BATCH, WIDTH), state=states, cell=states, scale=(1,), shift=(1,))[0],
        strict=True))
    scale, shift = asym_scale_shift(lo, hi)
    arrays = {"data": rng.integers(0, data_top, (STEPS, BATCH, WIDTH)).astype(np.uint8),
              "params": (rng.standard_normal(shapes["params"]) * 0.3).astype(np.float32),
              "state": (rng.standard_normal(states) * 0.5).astype(np.float32),
              "cell": (rng.standard_normal(states) * 0.5).astype(np.float32),
              "scale": np.array([scale], np.float32), "shift": np.array([shift], np.float32)}
    if alternating:
        p = get_op("_contrib_quantized_rnn").parse_params(
            {"state_size": str(HIDDEN), "num_layers": str(layers), "mode": "lstm",
             "bidirectional": str(bidirectional)})
        for cell in unpack(p, WIDTH, arrays["params"]):   # views: set in place
            for w in (cell.wx, cell.wh):
                w[:] = np.abs(w) * np.where(np.arange(w.shape[1]) % 2, -1, 1)
    return arrays


def bound(sym, arrays: dict[str, np.ndarray]):
    return sym.bind(mx.cpu(), {k: mx.nd.array(v, dtype=v.dtype) for k, v in arrays.items()},
                    grad_req="null")


def outputs(sym, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [o.asnumpy() for o in bound(sym, arrays).forward()]


def assert_kernels_agree(got: list[np.ndarray], want: list[np.ndarray], scale: float) -> None:
    """Output and final h within one uint8 level; the cell state within a few ulps."""
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got[:2], want[:2], strict=False):
        np.testing.assert_allclose(g, w, rtol=0, atol=1.0001 / scale)
    if len(want) == 3:
        np.testing.assert_allclose(got[2], want[2], rtol=1e-6, atol=4e-7)


@vnni
@pytest.mark.parametrize("state_outputs", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("layers", [1, 2])
def test_int8_lstm_is_the_kernels_where_no_pair_saturates(layers, bidirectional,
                                                          state_outputs):
    sym = quantized_lstm(layers, bidirectional, state_outputs)
    # Hidden states up to 204 levels: the weights' signs keep the pairs in int16.
    arrays = lstm_arrays(sym, layers, bidirectional, seed=layers, lo=-1.0, hi=1.5,
                         data_top=256, alternating=True)
    part = partitioned(sym, {k: v.shape for k, v in arrays.items()})
    assert outer_ops(part) == ["_sg_dnnl"]
    assert inner_ops(dnnl_nodes(part)[0]) == ["_contrib_quantized_rnn"]
    got, want = outputs(part, arrays), outputs(sym, arrays)
    assert_kernels_agree(got, want, float(arrays["scale"][0]))
    np.testing.assert_array_equal(got[0], want[0])


@vnni
@pytest.mark.parametrize("bidirectional", [False, True])
def test_int8_lstm_is_the_kernels_on_data_below_128(bidirectional):
    """Any weights: data and hidden states (h < 1 maps below 125) under 128 keep every
    pair of products within int16."""
    sym = quantized_lstm(2, bidirectional, True)
    arrays = lstm_arrays(sym, 2, bidirectional, seed=7, lo=-1.0, hi=3.1, data_top=128,
                         alternating=False)
    part = partitioned(sym, {k: v.shape for k, v in arrays.items()})
    assert_kernels_agree(outputs(part, arrays), outputs(sym, arrays),
                         float(arrays["scale"][0]))


def run_once(seed: int):
    """(symbol, arrays, executor of the partitioned symbol after one forward)."""
    sym = quantized_lstm(1, False, False)
    arrays = lstm_arrays(sym, 1, False, seed=seed, lo=-1.0, hi=1.5, data_top=256,
                         alternating=True)
    exe = bound(partitioned(sym, {k: v.shape for k, v in arrays.items()}), arrays)
    exe.forward()
    return sym, arrays, exe


@vnni
def test_a_new_data_scale_compiles_a_new_plan():
    sym, arrays, exe = run_once(3)
    scale, shift = asym_scale_shift(-2.0, 2.0)
    exe.arg_dict["scale"][:] = scale
    exe.arg_dict["shift"][:] = shift
    moved = {**arrays, "scale": np.array([scale], np.float32),
             "shift": np.array([shift], np.float32)}
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), outputs(sym, moved)[0])


@vnni
def test_weights_that_move_after_compiling_compile_a_new_plan():
    """The weights' int8 scales are attributes of oneDNN's primitives."""
    sym, arrays, exe = run_once(4)
    exe.arg_dict["params"][:] = arrays["params"] * 2
    moved = {**arrays, "params": arrays["params"] * 2}
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), outputs(sym, moved)[0])
    exe.arg_dict["params"][:] = arrays["params"]   # and back
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), outputs(sym, arrays)[0])


def test_without_vnni_it_stays_on_numpy(monkeypatch):
    monkeypatch.setattr(onednn, "isa", lambda: "avx512_core")
    sym = quantized_lstm(1, False, False)
    shapes = {"data": (STEPS, BATCH, WIDTH), "state": (1, BATCH, HIDDEN),
              "cell": (1, BATCH, HIDDEN), "scale": (1,), "shift": (1,)}
    with pytest.warns(UserWarning, match="no VNNI: 1 INT8 nodes"):
        part = mx.subgraph.partition(sym, "DNNL", shapes=shapes,
                                     dtypes={"data": np.uint8})
    assert outer_ops(part) == ["_contrib_quantized_rnn"]


@vnni
def test_gluon_packed_weights_fold_into_the_lstms_subgraph():
    # Gluon packs an LSTM's weights with Reshape and _rnn_param_concat of variables: the
    # weight cache computes them (once), as for the float RNN, so no subgraph of their
    # own recomputes them, and the int8 weights with them, every forward.
    names = ("l0_i2h_weight", "l0_h2h_weight", "l0_i2h_bias", "l0_h2h_bias")
    parts = [mx.sym.Reshape(mx.sym.var(n), shape=(-1,)) for n in names]
    params = mx.sym._rnn_param_concat(*parts, num_args=len(parts), dim=0)
    ins = [mx.sym.var(n) for n in ("data", "state", "cell", "scale", "shift")]
    sym = mx.sym.contrib.quantized_rnn(ins[0], params, *ins[1:], state_size=HIDDEN,
                                       num_layers=1, mode="lstm")
    shapes = {"data": (STEPS, BATCH, WIDTH), "l0_i2h_weight": (4 * HIDDEN, WIDTH),
              "l0_h2h_weight": (4 * HIDDEN, HIDDEN), "l0_i2h_bias": (4 * HIDDEN,),
              "l0_h2h_bias": (4 * HIDDEN,), "state": (1, BATCH, HIDDEN),
              "cell": (1, BATCH, HIDDEN), "scale": (1,), "shift": (1,)}
    part = partitioned(sym, shapes)
    assert outer_ops(part) == ["_sg_dnnl"]
    assert {"_rnn_param_concat", "_contrib_quantized_rnn"} <= set(inner_ops(dnnl_nodes(part)[0]))


@vnni
@pytest.mark.parametrize("lo, hi", [(-1.0, 1.55), (-0.43, 0.47), (0.0, 3.0)])
def test_quantize_asym_in_dnnl_is_the_kernels(lo, hi):
    # x * scale + shift in float32, rounded half to even into uint8 and saturated: data
    # on the levels' half-way points, past both ends, and at random.
    scale, shift = asym_scale_shift(lo, hi)
    levels = (np.arange(-3, 259, dtype=np.float32) + np.float32(0.5) - shift) / scale
    rng = np.random.default_rng(0)
    data = np.concatenate([levels, rng.uniform(lo - 1, hi + 1, 262).astype(np.float32)])
    data = data.reshape(4, 131, 1)
    sym = mx.sym.contrib.quantize_asym(mx.sym.var("data"), min_calib_range=lo,
                                       max_calib_range=hi)
    sym = mx.sym.Group([sym[i] for i in range(3)])
    part = partitioned(sym, {"data": data.shape})
    assert outer_ops(part) == ["_sg_dnnl"]
    got = [o.asnumpy() for o in part.bind(mx.cpu(), {"data": mx.nd.array(data)}).forward()]
    want = [o.asnumpy() for o in sym.bind(mx.cpu(), {"data": mx.nd.array(data)}).forward()]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
