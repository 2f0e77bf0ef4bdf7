"""`Module.fit` trains a small convnet on scikit-learn's digits (8x8 images, ten
classes), written as an MXNet 1.x training script writes it: NDArrayIter,
``mod.fit(..., optimizer=..., optimizer_params=..., eval_metric='acc',
batch_end_callback=mx.callback.Speedometer(...),
epoch_end_callback=mx.callback.do_checkpoint(prefix))``. Both SGD with momentum
and Adam reach 95% validation accuracy in a few epochs; training resumed from a
checkpoint (with its optimizer states) ends where uninterrupted training ends;
the trained checkpoint predicts through the DNNL backend as on the numpy
kernels."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

import minimx as mx
from tests.onednn_required import require_onednn

BATCH = 32
SGD = ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4})
ADAM = ("adam", {"learning_rate": 0.01})


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train images, train labels, validation images, validation labels): 1400 and 397."""
    bunch = load_digits()
    images = (bunch.images / 16.0).astype(np.float32)[:, None]
    order = np.random.RandomState(0).permutation(len(images))
    images, labels = images[order], bunch.target[order].astype(np.float32)
    return images[:1400], labels[:1400], images[1400:], labels[1400:]


def convnet() -> mx.sym.Symbol:
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def fit(digits, optimizer, params, num_epoch, shuffle=True, **kwargs) -> mx.mod.Module:
    tx, ty, vx, vy = digits
    train = mx.io.NDArrayIter(tx, ty, batch_size=BATCH, shuffle=shuffle)
    val = mx.io.NDArrayIter(vx, vy, batch_size=BATCH)
    mod = kwargs.pop("module", None) or mx.mod.Module(symbol=convnet(), context=mx.cpu())
    mod.fit(train, eval_data=val, optimizer=optimizer, optimizer_params=params,
            eval_metric="acc", num_epoch=num_epoch, **kwargs)
    return mod


def accuracy(mod: mx.mod.Module, digits) -> float:
    _, _, vx, vy = digits
    probs = mod.predict(mx.io.NDArrayIter(vx, vy, batch_size=BATCH)).asnumpy()
    assert probs.shape == (len(vx), 10)   # the padding of the last batch is dropped
    return float((probs.argmax(1) == vy).mean())


@pytest.mark.parametrize("optimizer, params", [SGD, ADAM], ids=["sgd_momentum", "adam"])
def test_fit_reaches_95_percent_and_checkpoints_every_epoch(
        digits, optimizer, params, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    mx.random.seed(0)
    prefix = str(tmp_path / "digits")
    with caplog.at_level(logging.INFO):
        mod = fit(digits, optimizer, params, num_epoch=4,
                  initializer=mx.init.Xavier(rnd_type="gaussian", magnitude=2),
                  batch_end_callback=mx.callback.Speedometer(BATCH, frequent=20),
                  epoch_end_callback=mx.callback.do_checkpoint(prefix))
    assert accuracy(mod, digits) >= 0.95
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"digits-{e:04d}.params" for e in range(1, 5)] + ["digits-symbol.json"]
    messages = caplog.text
    assert "Epoch[3] Validation-accuracy=" in messages and "samples/sec" in messages
    # The last checkpoint is the trained module.
    _, args, auxs = mx.model.load_checkpoint(prefix, 4)
    trained_args, trained_auxs = mod.get_params()
    for saved, trained in ((args, trained_args), (auxs, trained_auxs)):
        assert saved.keys() == trained.keys()
        for name in saved:
            np.testing.assert_array_equal(saved[name].asnumpy(), trained[name].asnumpy())


def test_resumed_training_ends_where_uninterrupted_training_ends(digits, tmp_path: Path
                                                                 ) -> None:
    prefix = str(tmp_path / "digits")
    mx.random.seed(1)
    whole = fit(digits, *SGD, num_epoch=4, shuffle=False, initializer=mx.init.Xavier())
    mx.random.seed(1)
    first = mx.mod.Module(symbol=convnet(), context=mx.cpu())
    fit(digits, *SGD, num_epoch=2, shuffle=False, module=first, initializer=mx.init.Xavier(),
        epoch_end_callback=mx.callback.module_checkpoint(first, prefix,
                                                         save_optimizer_states=True))
    resumed = mx.mod.Module.load(prefix, 2, load_optimizer_states=True)
    with pytest.warns(UserWarning, match="already initialized"):   # as MXNet: loaded params stay
        fit(digits, *SGD, num_epoch=4, shuffle=False, module=resumed, begin_epoch=2)
    for got, want in zip(resumed.get_params(), whole.get_params(), strict=True):
        for name in want:
            np.testing.assert_allclose(got[name].asnumpy(), want[name].asnumpy(),
                                       rtol=1e-5, atol=1e-6, err_msg=name)
    assert accuracy(resumed, digits) >= 0.95


def test_trained_checkpoint_predicts_with_dnnl(digits, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    require_onednn()
    prefix = str(tmp_path / "digits")
    mx.random.seed(2)
    fit(digits, *ADAM, num_epoch=3, initializer=mx.init.Xavier(),
        epoch_end_callback=mx.callback.do_checkpoint(prefix))
    _, _, vx, vy = digits
    probs = {}
    for backend in ("", "DNNL"):
        monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
        mod = mx.mod.Module.load(prefix, 3)
        mod.bind(for_training=False, data_shapes=[("data", (BATCH, 1, 8, 8))])
        probs[backend] = mod.predict(mx.io.NDArrayIter(vx, vy, batch_size=BATCH)).asnumpy()
        assert ("_sg_dnnl" in mod._exec_group.execs[0].debug_str()) == (backend == "DNNL")
    np.testing.assert_allclose(probs["DNNL"], probs[""], rtol=1e-4, atol=1e-5)
    assert float((probs["DNNL"].argmax(1) == vy).mean()) >= 0.95
