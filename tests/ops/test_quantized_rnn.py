"""`_contrib_quantized_rnn` (MXNet 1.9's INT8 LSTM) against MXNet 1.9.1's own outputs.

Fixtures (tools/mxnet_int8_rnn_fixtures.py, group int8_rnn): the operator run
imperatively by MXNet on seeded uint8 data, one layer, fused and unfused stacks,
bidirectional, with and without state outputs. The hidden states are uint8 levels
dequantized, so output and state_output match exactly; the float32 cell state
within a few float32 ulps (oneDNN's exp and tanh).
"""
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.base import DTypeError, OperatorError
from minimx.ops import get_op
from minimx.ops.quantized_rnn import _U8S8Weights, weight_scales

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "int8_rnn"
SPEC = json.loads((FIXTURES / "quantized_rnn.json").read_text())
INPUTS = ("data", "parameters", "state", "state_cell")


def case_arrays(name: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    with np.load(FIXTURES / "quantized_rnn.npz") as npz:
        inputs = [npz[f"{name}:{k}"] for k in INPUTS]
        outs = [npz[k] for k in sorted(npz.files) if k.startswith(f"{name}:out")]
    return inputs, outs


def run(name: str, **attrs) -> list[np.ndarray]:
    spec = SPEC["cases"][name]
    inputs, _ = case_arrays(name)
    outs = mx.nd.contrib.quantized_rnn(
        *(mx.nd.array(x, dtype=x.dtype) for x in inputs),
        mx.nd.array([spec["data_scale"]]), mx.nd.array([spec["data_shift"]]),
        **{**spec["attrs"], **attrs})
    return [o.asnumpy() for o in (outs if isinstance(outs, list) else [outs])]


@pytest.mark.parametrize("name", sorted(SPEC["cases"]))
def test_outputs_are_mxnets(name):
    _, want = case_arrays(name)
    got = run(name)
    assert [g.dtype for g in got] == [np.float32] * len(want)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got[:2], want[:2], strict=False):   # uint8 levels: exact
        np.testing.assert_array_equal(g, w)
    if len(want) == 3:
        np.testing.assert_allclose(got[2], want[2], rtol=0, atol=4e-7)


def test_outputs_are_levels_of_the_data_scale():
    spec = SPEC["cases"]["one_layer"]
    out = run("one_layer")[0]
    levels = out * np.float32(spec["data_scale"]) + np.float32(spec["data_shift"])
    np.testing.assert_allclose(levels, np.rint(levels), atol=1e-3)


def test_pairs_of_products_saturate_as_onednn_without_vnni():
    # 255 * 127 twice overflows int16: oneDNN's pmaddubsw saturates the pair at 32767.
    p = get_op("_contrib_quantized_rnn").parse_params(
        {"state_size": "1", "num_layers": "1", "mode": "lstm"})
    params = np.zeros(4 * (2 + 1 + 2), np.float32)
    params[:8] = 1.0                                   # every i2h weight quantizes to 127
    data = np.full((1, 1, 2), 255, np.uint8)
    zeros = np.zeros((1, 1, 1), np.float32)
    out = get_op("_contrib_quantized_rnn").forward(
        p, None, [data, params, zeros, zeros, np.array([127.5], np.float32),
                  np.array([0.0], np.float32)])[0]
    gate = np.float32(32767) / np.float32(127 * 127.5)   # not 2 * 255 * 127
    sig = 1 / (1 + np.exp(-gate))
    h = sig * np.tanh(sig * np.tanh(gate))
    assert out[0, 0, 0] == np.rint(h * 127.5) / np.float32(127.5)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 9), st.integers(1, 33), st.integers(0, 2**32 - 1),
       st.sampled_from([8, 64, 127]))
def test_the_gemm_is_the_pairwise_saturating_one(batch, rows, width, seed, spread):
    # The fast product (exact, then the saturating pairs corrected) against the
    # definition: neighbouring u8 x s8 products summed and saturated in int16.
    rng = np.random.default_rng(seed)
    w = rng.integers(-spread, spread + 1, (rows, width), dtype=np.int32).astype(np.int8)
    x = rng.choice(np.array([0, 1, 128, 254, 255], np.uint8), (batch, width))
    xp, wp = (np.pad(a, ((0, 0), (0, width % 2))).astype(np.int32) for a in (x, w))
    pairs = xp[:, None, 0::2] * wp[None, :, 0::2] + xp[:, None, 1::2] * wp[None, :, 1::2]
    want = np.clip(pairs, -32768, 32767).sum(-1, dtype=np.int32)
    np.testing.assert_array_equal(_U8S8Weights(w).product(x), want)


def test_weight_scales_follow_mxnets_walk():
    # Two fused layers: MXNet reads only the first layer's weights for the scales.
    p = get_op("_contrib_quantized_rnn").parse_params(
        {"state_size": "1", "num_layers": "2", "mode": "lstm"})
    flat = np.zeros(2 * 4 * 2 + 2 * 8, np.float32)
    flat[:8] = [0.5, 2, 1, 1, 4, 0.25, 1, 1]           # layer 0: i2h rows then h2h rows
    flat[8:16] = 100.0                                 # layer 1: not read
    np.testing.assert_array_equal(weight_scales(p, 1, flat),
                                  np.float32(127) / np.float32([4, 2, 1, 1]))


def test_refuses_what_mxnet_cannot_quantize():
    with pytest.raises(OperatorError, match="LSTM only"):
        run("one_layer", mode="gru")
    inputs, _ = case_arrays("one_layer")
    x = mx.sym.contrib.quantized_rnn(*map(mx.sym.var, [*INPUTS, "s", "t"]), state_size=3,
                                     num_layers=1, mode="lstm", name="q")
    with pytest.raises(DTypeError, match="uint8"):
        x.infer_type(data="int8")
    shapes = x.infer_shape(data=inputs[0].shape)
    assert shapes[0][1] == inputs[1].shape and shapes[0][4:] == [(1,), (1,)]
