"""Cases found by comparing exports with MXNet 1.9.1's `mx.onnx.export_model` on random
small symbols: onnxruntime's outputs of minimx's file against minimx's own forward
(which agrees with MXNet 1.9.1's forward on each of them)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

import minimx as mx

S = mx.sym
data = S.var("data")
RNG = np.random.default_rng(11)


def _forward(sym: mx.sym.Symbol, x: np.ndarray, params: dict[str, np.ndarray]) -> np.ndarray:
    arg_shapes, _, _ = sym.infer_shape(data=x.shape)
    args = {n: mx.nd.array(x if n == "data" else params[n])
            for n, _ in zip(sym.list_arguments(), arg_shapes, strict=True)}
    return sym.bind(mx.cpu(), args, grad_req="null").forward(is_train=False)[0].asnumpy()


def _run(path: str, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {"data": x})[0]


def _check_checkpoint(sym: mx.sym.Symbol, shape: tuple[int, ...], tmp_path: Path) -> None:
    """Saved with save_checkpoint and exported from the files, as MXNet users do."""
    arg_shapes, _, _ = sym.infer_shape(data=shape)
    params = {n: RNG.standard_normal(s).astype(np.float32)
              for n, s in zip(sym.list_arguments(), arg_shapes, strict=True) if n != "data"}
    prefix = str(tmp_path / "m")
    mx.model.save_checkpoint(prefix, 0, sym, {k: mx.nd.array(v) for k, v in params.items()}, {})
    path = mx.onnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0000.params", [shape],
                                np.float32, str(tmp_path / "m.onnx"))
    x = RNG.standard_normal(shape).astype(np.float32)
    want = _forward(sym, x, params)
    got = _run(path, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_checkpoint_without_parameters(tmp_path: Path) -> None:
    # a symbol with no weights saves a .params file of no arrays, which loads as a list
    _check_checkpoint(S.Activation(data, act_type="relu", name="relu"), (1, 3, 4, 4), tmp_path)


# 'full' pooling whose last window starts past the input and its leading pad: MXNet (and
# minimx) keep it (float's lowest for max, 0 for avg); onnxruntime's ceil_mode drops it
FULL_POOLS: dict[str, tuple[dict[str, Any], tuple[int, ...]]] = {
    "max_k1_s2": (dict(kernel=(1, 1), stride=(2, 1), pool_type="max"), (2, 4, 8, 4)),
    "max_pad": (dict(kernel=(3, 2), stride=(2, 2), pad=(0, 1), pool_type="max"), (2, 2, 6, 9)),
    "max_both_axes": (dict(kernel=(2, 3), stride=(3, 2), pad=(1, 2), pool_type="max"),
                      (1, 4, 7, 5)),
    "avg_include_pad": (dict(kernel=(2, 3), stride=(3, 2), pad=(1, 2), pool_type="avg",
                             count_include_pad=True), (1, 2, 7, 5)),
    "avg_exclude_pad": (dict(kernel=(2, 3), stride=(3, 2), pad=(1, 2), pool_type="avg",
                             count_include_pad=False), (1, 2, 7, 5)),
    "avg_3d": (dict(kernel=(2, 2, 3), stride=(3, 3, 2), pad=(1, 0, 2), pool_type="avg"),
               (1, 2, 7, 6, 5)),
    "max_1d": (dict(kernel=(2,), stride=(3,), pool_type="max"), (1, 2, 8)),
}


@pytest.mark.parametrize("name", sorted(FULL_POOLS))
def test_full_pooling_windows_past_the_input(name: str, tmp_path: Path) -> None:
    kwargs, shape = FULL_POOLS[name]
    pooled = S.Pooling(data, pooling_convention="full", name="pool", **kwargs)
    _check_checkpoint(pooled, shape, tmp_path)


def test_full_pooling_past_the_input_then_dense(tmp_path: Path) -> None:
    # the dense layer's weights are sized by MXNet's output (5 rows, not onnxruntime's 4)
    pooled = S.Pooling(data, kernel=(1, 1), stride=(2, 1), pool_type="avg",
                       pooling_convention="full", name="pool")
    _check_checkpoint(S.FullyConnected(pooled, num_hidden=3, name="fc"), (1, 2, 8, 4), tmp_path)


def test_full_pooling_lowest_fill() -> None:
    # MXNet 1.9.1's forward gives -3.4028235e+38 for the last row of this pooling
    x = mx.nd.array(np.ones((1, 1, 8, 2), np.float32))
    y = mx.nd.Pooling(x, kernel=(1, 1), stride=(2, 1), pool_type="max",
                      pooling_convention="full").asnumpy()
    assert y.shape == (1, 1, 5, 2) and (y[0, 0, -1] == np.finfo(np.float32).min).all()


LAYERS = {
    "pad_constant": (lambda: S.Pad(data, mode="constant", constant_value=1.5,
                                   pad_width=(0, 0, 0, 0, 1, 2, 2, 0), name="pad"), (2, 3, 5, 4)),
    "pad_edge": (lambda: S.Pad(data, mode="edge", pad_width=(0, 0, 0, 0, 2, 0, 2, 1),
                               name="pad"), (1, 4, 5, 5)),
    "pad_reflect": (lambda: S.Pad(data, mode="reflect", pad_width=(0, 0, 0, 0, 1, 2, 2, 0),
                                  name="pad"), (2, 3, 5, 4)),
    "pad_edge_3d": (lambda: S.Pad(data, mode="edge", pad_width=(0, 0, 0, 0, 1, 2, 0, 1, 2, 0),
                                  name="pad"), (1, 2, 3, 4, 3)),
    "upsampling": (lambda: S.UpSampling(data, scale=3, sample_type="nearest", num_args=1,
                                        name="up"), (1, 2, 4, 5)),
    "upsampling_concat": (lambda: S.UpSampling(
        data, S.Pooling(data, kernel=(2, 2), stride=(2, 2), pool_type="max"), scale=2,
        sample_type="nearest", num_args=2, name="up"), (1, 2, 4, 4)),
    "upsampling_sum": (lambda: S.UpSampling(
        data, S.Pooling(data, kernel=(2, 2), stride=(2, 2), pool_type="max"), scale=2,
        sample_type="nearest", num_args=2, multi_input_mode="sum", name="up"), (1, 2, 4, 4)),
    "lrn": (lambda: S.LRN(data, nsize=3, alpha=0.1, beta=0.5, knorm=2.0, name="lrn"),
            (2, 5, 3, 3)),
    "lrn_defaults": (lambda: S.LRN(data, nsize=5, name="lrn"), (1, 6, 4, 4)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_mxnet_exports(name: str, tmp_path: Path) -> None:
    build, shape = LAYERS[name]
    _check_checkpoint(build(), shape, tmp_path)
