"""INT8 keeps a trained model's accuracy on real data.

A small CNN (conv16-bn-relu-pool, conv32-bn-relu-pool, fc10) is trained by
minimx itself (simple_bind, forward/backward, SGD with momentum below; under a
second on one core, so in the test rather than from a committed fixture) on
scikit-learn's bundled digits (1797 8x8 images, no download): 98.5% on a
held-out third. `quantize_model_mkldnn`, calibrated on four training batches
through `mx.io.NDArrayIter`, must then stay within 0.5 points of that with
naive and entropy calibration, tensor-wise and channel-wise weight scales,
``quantized_dtype='auto'``: on the numpy kernels, and inside one DNNL subgraph
on oneDNN's INT8 primitives, which give the numpy kernels' outputs exactly.

Every layer is quantized, the first convolution included: MXNet's examples
exclude it where the data may be negative (their uint8 runs), but these
pixels are not, so it takes uint8 input. Excluded, as in MXNet's benchmarks,
it stays in float32, at no cost in accuracy either.
"""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import minimx as mx
from minimx.contrib.quantization import quantize_model_mkldnn
from minimx.graph import Graph

from ..onednn_required import require_onednn

BATCH, EPOCHS, LR, MOMENTUM = 50, 8, 0.1, 0.9
CALIB_BATCHES = 4
TOLERANCE = 0.5   # percentage points
DNNL_INT8_OPS = ["_contrib_quantize_v2", "_sg_mkldnn_conv", "_contrib_quantized_pooling",
                 "_sg_mkldnn_conv", "_contrib_quantized_pooling", "_contrib_quantized_flatten",
                 "_sg_mkldnn_fully_connected", "SoftmaxOutput"]
COMBINATIONS = [(mode, granularity) for mode in ("naive", "entropy")
                for granularity in ("tensor-wise", "channel-wise")]


def digits() -> tuple[np.ndarray, ...]:
    """(train_x, test_x, train_y, test_y): pixels scaled to [0, 1], a stratified third held out."""
    bunch = load_digits()
    images = (bunch.images / 16.0).astype(np.float32)[:, None]
    return tuple(train_test_split(
        images, bunch.target.astype(np.float32), test_size=1 / 3, random_state=0,
        stratify=bunch.target))


def conv_net() -> mx.sym.Symbol:
    x = mx.sym.Variable("data")
    for i, filters in enumerate((16, 32)):
        x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters,
                               name=f"conv{i}")
        x = mx.sym.BatchNorm(x, fix_gamma=False, name=f"bn{i}")
        x = mx.sym.Activation(x, act_type="relu", name=f"relu{i}")
        x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax", normalization="batch")


def init_params(ex, rng: np.random.Generator) -> None:
    """He-normal weights; BatchNorm's gammas and running variances 1, all else 0."""
    for name, arr in {**ex.arg_dict, **ex.aux_dict}.items():
        if name.endswith("weight"):
            arr[:] = rng.normal(0.0, np.sqrt(2.0 / np.prod(arr.shape[1:])), arr.shape)
        else:
            arr[:] = 1.0 if name.endswith(("gamma", "var")) else 0.0


def train(sym, images: np.ndarray, labels: np.ndarray) -> tuple[dict, dict]:
    """(arg_params, aux_params) after EPOCHS of SGD with momentum, fixed seed."""
    rng = np.random.default_rng(0)
    params = [n for n in sym.list_arguments() if n not in ("data", "softmax_label")]
    ex = sym.simple_bind(mx.cpu(), grad_req={n: "write" for n in params},
                         data=(BATCH,) + images.shape[1:], softmax_label=(BATCH,))
    init_params(ex, rng)
    velocity = {n: mx.nd.zeros(ex.arg_dict[n].shape) for n in params}
    for _ in range(EPOCHS):
        order = rng.permutation(len(images))
        for start in range(0, len(images) - BATCH + 1, BATCH):
            idx = order[start:start + BATCH]
            ex.forward(is_train=True, data=images[idx], softmax_label=labels[idx])
            ex.backward()
            for name in params:
                velocity[name][:] = MOMENTUM * velocity[name] - LR * ex.grad_dict[name]
                ex.arg_dict[name] += velocity[name]
    return ({n: ex.arg_dict[n].copy() for n in params},
            {n: a.copy() for n, a in ex.aux_dict.items()})


def bound(sym, args: dict, auxs: dict, images: np.ndarray):
    """An inference executor of `sym` over `images`, in one batch."""
    feeds = {**args, "data": mx.nd.array(images),
             "softmax_label": mx.nd.zeros((len(images),))}
    return sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                    aux_states=auxs)


def predict(sym, args: dict, auxs: dict, images: np.ndarray) -> np.ndarray:
    """The class probabilities `sym` gives `images`."""
    return bound(sym, args, auxs, images).forward(is_train=False)[0].asnumpy()


def accuracy(probs: np.ndarray, labels: np.ndarray) -> float:
    return 100.0 * float(np.mean(probs.argmax(axis=1) == labels))


@pytest.fixture(scope="module")
def model():
    """(symbol, arg_params, aux_params, data split), trained on the numpy path."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("MINIMX_SUBGRAPH_BACKEND", "MXNET_SUBGRAPH_BACKEND"):
            patch.delenv(name, raising=False)
        train_x, test_x, train_y, test_y = digits()
        sym = conv_net()
        args, auxs = train(sym, train_x, train_y)
    return sym, args, auxs, (train_x, test_x, train_y, test_y)


def quantize(model, calib_mode: str, granularity: str, excluded: list[str] | None = None):
    sym, args, auxs, (train_x, *_) = model
    return quantize_model_mkldnn(
        sym, args, auxs, calib_mode=calib_mode, quantize_granularity=granularity,
        quantized_dtype="auto", excluded_sym_names=excluded,
        calib_data=mx.io.NDArrayIter(train_x, batch_size=BATCH, shuffle=False),
        num_calib_examples=CALIB_BATCHES * BATCH)


@pytest.fixture(scope="module", params=COMBINATIONS, ids="-".join)
def quantized(request, model):
    """One quantized model per (calib_mode, granularity), shared by both backends."""
    return quantize(model, *request.param)


def test_fp32_model_learns_the_digits(model):
    sym, args, auxs, (_, test_x, _, test_y) = model
    assert accuracy(predict(sym, args, auxs, test_x), test_y) >= 95.0


def test_int8_on_numpy_is_within_half_a_point(model, quantized, monkeypatch):
    sym, args, auxs, (_, test_x, _, test_y) = model
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    fp32 = accuracy(predict(sym, args, auxs, test_x), test_y)
    int8 = accuracy(predict(*quantized, test_x), test_y)
    assert abs(int8 - fp32) <= TOLERANCE, (fp32, int8)


def test_int8_in_dnnl_subgraphs_is_the_numpy_result(model, quantized, monkeypatch):
    sym, args, auxs, (_, test_x, _, test_y) = model
    require_onednn()
    # The whole quantized net in one subgraph on oneDNN's INT8 primitives, its
    # float head (SoftmaxOutput) too.
    part = mx.subgraph.partition(quantized[0], "DNNL", shapes={"data": test_x.shape})
    nodes = [n for n in Graph(part.outputs).nodes if not n.is_variable]
    assert [n.op for n in nodes] == ["_sg_dnnl"]
    assert [n.op for n in Graph(nodes[0].subgraphs[0].outputs).nodes
            if not n.is_variable] == DNNL_INT8_OPS
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    want = predict(*quantized, test_x)
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    fp32 = accuracy(predict(sym, args, auxs, test_x), test_y)
    ex = bound(*quantized, test_x)
    assert f"sg_dnnl_0 (_sg_dnnl): {len(DNNL_INT8_OPS)} operators" in ex.debug_str()
    got = ex.forward(is_train=False)[0].asnumpy()
    # The INT8 layers give the numpy path's integers; the float softmax after them is
    # oneDNN's, whose last bits differ (an integer level off would move the
    # probabilities by 1e-3 or more).
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9)
    assert abs(accuracy(got, test_y) - fp32) <= TOLERANCE, (fp32, accuracy(got, test_y))


def test_first_convolution_excluded_stays_float(model):
    sym, args, auxs, (_, test_x, _, test_y) = model
    qsym, qargs, qauxs = quantize(model, "naive", "tensor-wise", excluded=["conv0"])
    ops = {n.name: n.op for n in Graph(qsym.outputs).nodes}
    assert ops["sg_mkldnn_conv_bn_act_0"] == "_sg_mkldnn_conv"
    assert "quantized_sg_mkldnn_conv_bn_act_1" in ops
    fp32 = accuracy(predict(sym, args, auxs, test_x), test_y)
    assert abs(accuracy(predict(qsym, qargs, qauxs, test_x), test_y) - fp32) <= TOLERANCE
