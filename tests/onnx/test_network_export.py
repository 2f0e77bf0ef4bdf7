"""Small whole networks composed of common blocks, exported and run in onnxruntime
against minimx's own forward (cases a differential fuzz against MXNet 1.9.1 found)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import minimx as mx
from tests.onnx.test_translations import run_both

S = mx.sym
RNG = np.random.default_rng(11)


def seeded(net: mx.sym.Symbol, dtype: str = "float32", **shapes: tuple[int, ...]
           ) -> dict[str, np.ndarray]:
    """Small random weights; BatchNorm's statistics and scales in float32, as MXNet
    keeps them for float16 data."""
    args, _, aux = net.infer_shape(**shapes)
    params = {}
    for name, shape in zip(net.list_arguments() + net.list_auxiliary_states(), args + aux,
                           strict=True):
        if name in shapes:
            continue
        batch_norm = name.endswith(("gamma", "beta", "moving_mean", "moving_var"))
        values = RNG.uniform(0.5, 1.5, shape) if name.endswith("var") else \
            RNG.standard_normal(shape) * 0.3
        params[name] = values.astype("float32" if batch_norm else dtype)
    return params


def encoder(tokens: mx.sym.Symbol, width: int, heads: int) -> mx.sym.Symbol:
    """A transformer encoder layer as MXNet scripts write it: per-head batch_dot."""
    x = S.Embedding(tokens, input_dim=10, output_dim=width, name="embed")

    def heads_first(name: str) -> mx.sym.Symbol:  # (B, T, W) -> (B * heads, T, W / heads)
        z = S.FullyConnected(x, num_hidden=width, flatten=False, name=name)
        z = S.transpose(S.reshape(z, shape=(0, 0, heads, -1)), axes=(0, 2, 1, 3))
        return S.reshape(z, shape=(-3, 0, 0))

    scores = S.batch_dot(S._contrib_div_sqrt_dim(heads_first("q")), heads_first("k"),
                         transpose_b=True)
    att = S.batch_dot(S.softmax(scores, axis=-1), heads_first("v"))
    att = S.reshape(S.transpose(S.reshape(att, shape=(-4, -1, heads, 0, 0)),
                                axes=(0, 2, 1, 3)), shape=(0, 0, -3))
    x = S.LayerNorm(x + S.FullyConnected(att, num_hidden=width, flatten=False, name="proj"),
                    name="ln1")
    ffn = S.LeakyReLU(S.FullyConnected(x, num_hidden=2 * width, flatten=False, name="ffn1"),
                      act_type="gelu")
    x = S.LayerNorm(x + S.FullyConnected(ffn, num_hidden=width, flatten=False, name="ffn2"),
                    name="ln2")
    return S.log_softmax(S.FullyConnected(x, num_hidden=10, flatten=False, name="lm"), axis=-1)


def test_transformer_encoder_with_batch_dot(tmp_path: Path) -> None:
    net = encoder(S.var("tokens"), width=8, heads=2)
    tokens = RNG.integers(0, 10, (2, 5)).astype(np.float32)
    (got,), (want,) = run_both(net, {"tokens": tokens}, tmp_path,
                               seeded(net, tokens=tokens.shape))
    assert got.shape == want.shape == (2, 5, 10)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def se_residual(data: mx.sym.Symbol) -> mx.sym.Symbol:
    """conv-BN(fix_gamma)-relu, a squeeze-excitation scale and the shortcut."""
    y = S.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True, name="conv")
    y = S.Activation(S.BatchNorm(y, fix_gamma=True, name="bn"), act_type="relu")
    s = S.Pooling(y, kernel=(1, 1), global_pool=True, pool_type="avg")
    s = S.Activation(S.Convolution(s, kernel=(1, 1), num_filter=4, name="se"),
                     act_type="sigmoid")
    return data + S.broadcast_mul(y, s)


def test_float16_net_with_fixed_gamma(tmp_path: Path) -> None:
    """float16 data with BatchNorm's float32 parameters: the gamma of ones that
    fix_gamma puts in is float32 too, as ONNX wants it the same type as beta."""
    net = se_residual(S.var("data"))
    data = RNG.standard_normal((2, 4, 6, 6)).astype(np.float16)
    (got,), (want,) = run_both(net, {"data": data}, tmp_path,
                               seeded(net, "float16", data=data.shape))
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
