"""`mx.mod.SequentialModule` chains modules as MXNet 1.9.1's does: the numbers are
MXNet's for the same seeded chains (MLP pieces; a conv piece with BatchNorm, then
an FC piece with a SoftmaxOutput head taking the labels), trained with SGD from
the same parameters (`set_params`), run with MXNET_ENGINE_TYPE=NaiveEngine (its
threaded engine races on a chain's BatchNorm statistics)."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError

RNG = np.random.RandomState(7)
X = RNG.randn(12, 5).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(np.float32) + (X[:, 2] > 0.5)
XC = RNG.randn(12, 1, 6, 6).astype(np.float32)
YC = (XC.mean(axis=(1, 2, 3)) > 0).astype(np.float32) + (XC[:, 0, 0, 0] > 1)


def fc(name: str, hidden: int, act: str | None = None, data: str = "data") -> mx.sym.Symbol:
    out = mx.sym.FullyConnected(mx.sym.var(data), num_hidden=hidden, name=name)
    return mx.sym.Activation(out, act_type=act, name=f"{name}_act") if act else out


def head(name: str, hidden: int, data: str = "data") -> mx.mod.Module:
    net = mx.sym.SoftmaxOutput(fc(name, hidden, data=data), name="softmax")
    return mx.mod.Module(net, data_names=[data])


def piece(net: mx.sym.Symbol, data: str = "data") -> mx.mod.Module:
    return mx.mod.Module(net, data_names=[data], label_names=None)


def two_mlp() -> mx.mod.SequentialModule:
    return mx.mod.SequentialModule().add(piece(fc("fc1", 4, "tanh"))).add(
        head("fc2", 3), take_labels=True, auto_wiring=True)


def three_mlp_named() -> mx.mod.SequentialModule:
    """Without auto_wiring: each module's data is named as the outputs before it."""
    return mx.mod.SequentialModule().add(piece(fc("fc1", 6, "relu"))).add(
        piece(fc("fc2", 4, "tanh", data="fc1_act_output"), "fc1_act_output")).add(
        head("fc3", 3, data="fc2_act_output"), take_labels=True)


def conv_fc() -> mx.mod.SequentialModule:
    net = mx.sym.Convolution(mx.sym.var("data"), kernel=(3, 3), num_filter=2, name="conv")
    net = mx.sym.Activation(mx.sym.BatchNorm(net, fix_gamma=False, name="bn"), act_type="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max")
    return mx.mod.SequentialModule().add(piece(mx.sym.Flatten(net, name="flat"))).add(
        head("fc", 3, data="feat"), take_labels=True, auto_wiring=True)


def seeded_params(seq: mx.mod.SequentialModule) -> tuple[dict, dict]:
    args, auxs = seq.get_params()
    rng = np.random.RandomState(3)
    return ({k: mx.nd.array(rng.uniform(-0.5, 0.5, v.shape)) for k, v in sorted(args.items())},
            {k: mx.nd.array(rng.uniform(0.5, 1.5, v.shape)) for k, v in sorted(auxs.items())})


def bound(seq: mx.mod.SequentialModule, it: mx.io.DataIter, **kwargs: bool
          ) -> mx.mod.SequentialModule:
    seq.bind(it.provide_data, it.provide_label, **kwargs)
    seq.init_params()
    seq.set_params(*seeded_params(seq))
    return seq


# chain, data, labels, epochs, optimizer_params -> MXNet's trained values
TRAINED = {
    "two_mlp": (two_mlp, X, Y, 3, {"learning_rate": 0.3}, {
        "fc1_bias": [0.12436, 0.3902, -0.20682], "fc2_bias": [-0.16288, 0.76206, -0.46785]},
        0.75, [0.11885, 0.75336, 0.12779]),
    "three_mlp_named": (three_mlp_named, X, Y, 3,
                        {"learning_rate": 0.2, "momentum": 0.9, "wd": 0.01}, {
        "fc2_bias": [0.73181, 0.3432, 0.14096], "fc3_bias": [-0.55274, 1.09568, -1.21046]},
        0.75, [0.05216, 0.90992, 0.03792]),
    "conv_fc": (conv_fc, XC, YC, 3, {"learning_rate": 0.1}, {
        "conv_bias": [0.39295, 0.39629], "fc_bias": [0.01934, 0.41686, -0.30487],
        "bn_moving_mean": [0.51378, 0.62749], "bn_moving_var": [0.61507, 0.63527]},
        0.5, [0.45627, 0.36375, 0.17998]),
}


@pytest.mark.parametrize("case", sorted(TRAINED))
def test_fit_score_predict_as_mxnet(case: str) -> None:
    chain, data, labels, epochs, opt_params, params, accuracy, first_row = TRAINED[case]
    seq = bound(chain(), mx.io.NDArrayIter(data, labels, batch_size=4))
    seq.fit(mx.io.NDArrayIter(data, labels, batch_size=4), optimizer_params=opt_params,
            eval_data=mx.io.NDArrayIter(data, labels, batch_size=4), num_epoch=epochs)
    args, auxs = seq.get_params()
    for name, expected in params.items():
        np.testing.assert_allclose({**args, **auxs}[name].asnumpy()[:3], expected, atol=2e-4)
    assert seq.score(mx.io.NDArrayIter(data, labels, batch_size=4), "acc") == \
        [("accuracy", accuracy)]
    predicted = seq.predict(mx.io.NDArrayIter(data[:10], labels[:10], batch_size=4))
    assert predicted.shape == (10, 3)   # the last batch's padding dropped
    np.testing.assert_allclose(predicted.asnumpy()[0], first_row, atol=2e-4)
    assert seq.output_shapes == [("softmax_output", (4, 3))]
    assert [tuple(d)[:2] for d in seq.label_shapes] == [("softmax_label", (4,))]


def test_names_and_metrics_of_three_pieces() -> None:
    seq = mx.mod.SequentialModule().add(piece(fc("fc1", 6, "relu"))).add(
        piece(fc("fc2", 4, "tanh")), auto_wiring=True).add(
        head("fc3", 3), take_labels=True, auto_wiring=True)
    it = mx.io.NDArrayIter(X, Y, batch_size=4)
    bound(seq, it).fit(it, eval_metric=["acc", "ce"], num_epoch=4,
                       optimizer_params={"learning_rate": 0.3})
    assert seq.data_names == ["data"] and seq.output_names == ["softmax_output"]
    (acc_name, acc), (ce_name, ce) = seq.score(it, ["acc", "ce"])
    assert (acc_name, ce_name) == ("accuracy", "cross-entropy")
    np.testing.assert_allclose([acc, ce], [0.75, 0.6138078], atol=1e-5)
    np.testing.assert_allclose(seq.get_params()[0]["fc3_bias"].asnumpy(),
                               [-0.391, 0.48391, -0.76043], atol=2e-4)


def test_every_module_taking_labels_is_scored() -> None:
    first = mx.sym.SoftmaxOutput(fc("fc1", 3), label=mx.sym.var("softmax_label"), name="sm1")
    seq = mx.mod.SequentialModule().add(mx.mod.Module(first), take_labels=True).add(
        head("fc2", 3), take_labels=True, auto_wiring=True)
    it = mx.io.NDArrayIter(X, Y, batch_size=4)
    bound(seq, it, for_training=False)
    metric = mx.metric.create(["acc", "ce"])
    for batch in it:
        seq.forward(batch)
        seq.update_metric(metric, batch.label)
    assert [m.num_inst for m in metric.metrics] == [24, 24]
    np.testing.assert_allclose([v for _, v in metric.get_name_value()], [0.625, 1.0992981],
                               atol=1e-5)


def test_input_grads_come_from_the_first_module() -> None:
    """MXNet never sets the chain's inputs_need_grad, so its get_input_grads always
    fails; these are its first module's input gradients."""
    seq = bound(two_mlp(), mx.io.NDArrayIter(X[:4], Y[:4], batch_size=4),
                inputs_need_grad=True)
    seq.forward(mx.io.DataBatch([mx.nd.array(X[:4])], [mx.nd.array(Y[:4])]), is_train=True)
    seq.backward()
    np.testing.assert_allclose(seq.get_outputs()[0].asnumpy()[0], [0.28199, 0.53091, 0.18709],
                               atol=1e-4)
    np.testing.assert_allclose(seq.get_input_grads()[0].asnumpy()[0],
                               [-0.06471, -0.02523, 0.10174, 0.00884, 0.04661], atol=1e-4)


def test_predict_without_labels() -> None:
    seq = mx.mod.SequentialModule().add(piece(fc("fc1", 4, "sigmoid"))).add(
        piece(fc("fc2", 2)), auto_wiring=True)
    seq.bind([("data", (5, 5))], for_training=False)
    seq.init_params(mx.init.Xavier())
    seq.set_params(*seeded_params(seq))
    assert seq.label_shapes is None
    out = seq.predict(mx.io.NDArrayIter(X, batch_size=5))
    np.testing.assert_allclose(out.asnumpy()[:2], [[-0.08466, 1.13149], [-0.13457, 1.01183]],
                               atol=1e-4)


def test_monitor_watches_every_module() -> None:
    it = mx.io.NDArrayIter(X, Y, batch_size=4)
    seq = bound(two_mlp(), it, for_training=False)
    mon = mx.mon.Monitor(1, pattern=".*")
    seq.install_monitor(mon)
    mon.tic()
    seq.forward(next(iter(it)))
    assert sorted(name for _, name, _ in mon.toc()) == [
        "data", "data", "fc1_act_output", "fc1_bias", "fc1_output", "fc1_weight", "fc2_bias",
        "fc2_output", "fc2_weight", "softmax_label", "softmax_output"]


def test_refusals() -> None:
    with pytest.raises(MinimxError, match="unknown meta"):
        mx.mod.SequentialModule().add(piece(fc("a", 2)), take_label=True)
    with pytest.raises(MinimxError, match="empty"):
        mx.mod.SequentialModule().bind([("data", (2, 5))])
    seq = mx.mod.SequentialModule().add(piece(fc("fc1", 3)))
    with pytest.raises(MinimxError, match="shared_module"):
        seq.bind([("data", (2, 3))], shared_module=seq)
    twice = seq.add(piece(fc("fc1", 3)), auto_wiring=True)
    twice.bind([("data", (2, 3))])
    with pytest.raises(MinimxError, match="duplicated parameter names: name 'fc1_weight' "
                                          "in layer 1"):
        twice.init_params()


def test_adding_after_bind_needs_a_new_bind() -> None:
    seq = mx.mod.SequentialModule().add(piece(fc("fc1", 3)))
    seq.bind([("data", (2, 3))])
    seq.init_params()
    assert seq.add(piece(fc("fc2", 3)), auto_wiring=True) is seq
    assert not seq.binded and not seq.params_initialized
    with pytest.raises(MinimxError, match="call bind"):
        seq.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]))
