"""`Module.fit(kvstore=mx.kv.create(...))`: as in MXNet, the module puts its
parameters into the store and updates through it."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import minimx as mx


def test_fit_updates_through_a_kvstore_object(tmp_path: Path) -> None:
    net = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc"), name="lro")
    data = np.array([[1, 2], [3, 4], [0, 1], [1, 0]], np.float32)
    it = mx.io.NDArrayIter(data, np.array([1, 0, 2, 1], np.float32), batch_size=2,
                           label_name="lro_label")
    kv = mx.kv.create("local")
    mod = mx.mod.Module(net, label_names=["lro_label"])
    mod.fit(it, num_epoch=1, kvstore=kv, optimizer="sgd", initializer=mx.init.One(),
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    stored = mx.nd.zeros((1, 2))
    kv.pull("fc_weight", out=stored)
    expected = [[-1.1050000190734863, -1.8874999284744263]]   # MXNet 1.9.1's
    assert np.allclose(stored.asnumpy(), expected)
    assert np.allclose(mod.get_params()[0]["fc_weight"].asnumpy(), expected)
    mod.save_optimizer_states(str(tmp_path / "states"))   # the store's optimizer states
    mod.load_optimizer_states(str(tmp_path / "states"))


def test_a_fixed_weight_leaves_its_bias_trained() -> None:
    # MXNet 1.9.1 skips the bias gradient of a FullyConnected whose weight has no
    # gradient, so its bias never moves; minimx trains it (docs/api.md, departures).
    fc1 = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc1")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(fc1, num_hidden=2, name="fc2"),
                                        name="lro")
    mod = mx.mod.Module(net, label_names=["lro_label"], fixed_param_names=["fc1_weight"])
    mod.bind([("data", (1, 2))], [("lro_label", (1, 2))])
    mod.init_params(arg_params={name: mx.nd.ones(shape) for name, shape in (
        ("fc1_weight", (2, 2)), ("fc1_bias", (2,)), ("fc2_weight", (2, 2)), ("fc2_bias", (2,)))})
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    mod.forward_backward(mx.io.DataBatch([mx.nd.ones((1, 2))], [mx.nd.zeros((1, 2))]))
    mod.update()
    args = mod.get_params()[0]
    assert args["fc1_weight"].asnumpy().tolist() == [[1, 1], [1, 1]]
    assert np.allclose(args["fc1_bias"].asnumpy(), [0.3, 0.3])   # 1 - 0.1 * 7
