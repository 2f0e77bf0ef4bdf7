"""`mx.mod.Module` step by step: binding, parameters, reshaping, the optimizer and its
saved states, and the errors for what a module refuses."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError, ShapeError


def mlp() -> mx.sym.Symbol:
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def bound(for_training: bool = True, **kwargs) -> mx.mod.Module:
    mod = mx.mod.Module(mlp(), **kwargs)
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))],
             for_training=for_training)
    mx.random.seed(0)
    mod.init_params(mx.init.Xavier())
    return mod


def batch(n: int = 4, seed: int = 0) -> mx.io.DataBatch:
    rng = np.random.default_rng(seed)
    return mx.io.DataBatch([mx.nd.array(rng.normal(size=(n, 5)))],
                           [mx.nd.array(rng.integers(0, 3, n))])


def test_forward_equals_the_symbol_on_the_same_parameters() -> None:
    mod = bound(for_training=False)
    args, auxs = mod.get_params()
    assert sorted(args) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"] and not auxs
    b = batch()
    mod.forward(b)
    want = mlp().eval(data=b.data[0], softmax_label=b.label[0], **args)[0].asnumpy()
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), want, rtol=1e-6)
    assert mod.output_shapes == [("softmax_output", (4, 3))]


def test_a_batch_of_another_size_reshapes_and_keeps_the_parameters() -> None:
    mod = bound()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    mod.forward(batch(7), is_train=True)
    assert mod.data_shapes[0].shape == (7, 5) and mod.label_shapes[0].shape == (7,)
    mod.backward()
    mod.update()
    mod.forward(batch(4))
    assert mod.get_outputs()[0].shape == (4, 3)
    args, _ = mod.get_params()
    direct = mlp().eval(data=batch(4).data[0], softmax_label=batch(4).label[0], **args)[0]
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), direct.asnumpy(), rtol=1e-6)


def test_a_reshape_without_label_shapes_keeps_the_label_names_for_metrics() -> None:
    mod = bound(for_training=False)
    b = batch()
    mod.forward(b)
    with pytest.warns(UserWarning, match="label_shapes"):
        mod.reshape([("data", (4, 5))], None)   # MXNet keeps the names the labels had
    metric = mx.metric.create("acc")
    mod.update_metric(metric, b.label)
    want = (mod.get_outputs()[0].asnumpy().argmax(1) == b.label[0].asnumpy()).mean()
    assert metric.get() == ("accuracy", pytest.approx(want))


def test_update_is_one_sgd_step_with_rescaled_gradients() -> None:
    mod = bound()
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 0.5),))
    before, _ = mod.get_params()
    before = {n: v.asnumpy() for n, v in before.items()}
    mod.forward_backward(batch())
    grads = {n: g.asnumpy() for n, g in mod._exec_group.execs[0].grad_dict.items()
             if g is not None}
    mod.update()
    after, _ = mod.get_params()
    for name, value in after.items():   # rescale_grad = 1 / batch size; no wd on biases
        np.testing.assert_allclose(value.asnumpy(), before[name] - 0.5 * grads[name] / 4,
                                   rtol=1e-5, atol=1e-7)


def test_fixed_parameters_and_input_gradients() -> None:
    mod = mx.mod.Module(mlp(), fixed_param_names=["fc1_weight"])
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))],
             inputs_need_grad=True)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    fixed = mod.get_params()[0]["fc1_weight"].asnumpy()
    mod.forward_backward(batch())
    mod.update()
    np.testing.assert_array_equal(mod.get_params()[0]["fc1_weight"].asnumpy(), fixed)
    (grad,) = mod.get_input_grads()
    assert grad.shape == (4, 5) and np.abs(grad.asnumpy()).sum() > 0


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_checkpoint_with_optimizer_states_round_trips(optimizer: str, tmp_path: Path) -> None:
    params = {"learning_rate": 0.1, "momentum": 0.9} if optimizer == "sgd" else {}
    prefix = str(tmp_path / "mlp")
    mod = bound()
    mod.init_optimizer(optimizer=optimizer, optimizer_params=params)
    for seed in range(3):
        mod.forward_backward(batch(seed=seed))
        mod.update()
    mod.save_checkpoint(prefix, 3, save_optimizer_states=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp-0003.params", "mlp-0003.states",
                                                           "mlp-symbol.json"]
    again = mx.mod.Module.load(prefix, 3, load_optimizer_states=True)
    again.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    again.init_optimizer(optimizer=optimizer, optimizer_params=params)
    for index, state in mod._updater.states.items():
        for saved, loaded in zip(_arrays(state), _arrays(again._updater.states[index]),
                                 strict=True):
            np.testing.assert_array_equal(loaded.asnumpy(), saved.asnumpy())
    if optimizer == "adam":
        return   # as in MXNet, the states file holds no update counts: Adam's t starts again
    for m in (mod, again):
        m.forward_backward(batch(seed=9))
        m.update()
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(again.get_params()[0][name].asnumpy(), value.asnumpy())


def _arrays(state) -> tuple:
    return state if isinstance(state, tuple) else (state,)


def test_predict_drops_padding_and_merges_batches() -> None:
    mod = bound(for_training=False)
    data = np.random.default_rng(1).normal(size=(10, 5)).astype(np.float32)
    merged = mod.predict(mx.io.NDArrayIter(data, batch_size=4))
    assert merged.shape == (10, 3)
    per_batch = mod.predict(mx.io.NDArrayIter(data, batch_size=4), merge_batches=False)
    assert [outs[0].shape for outs in per_batch] == [(4, 3), (4, 3), (2, 3)]
    args, _ = mod.get_params()
    want = mlp().eval(data=mx.nd.array(data), softmax_label=mx.nd.zeros((10,)), **args)[0]
    np.testing.assert_allclose(merged.asnumpy(), want.asnumpy(), rtol=1e-6)


def test_score_and_the_metric_over_batches() -> None:
    mod = bound(for_training=False)
    data = np.random.default_rng(2).normal(size=(8, 5)).astype(np.float32)
    labels = np.arange(8) % 3
    (name, value), = mod.score(mx.io.NDArrayIter(data, labels, batch_size=4), "acc")
    predicted = mod.predict(data).asnumpy().argmax(1)
    assert name == "accuracy" and value == pytest.approx((predicted == labels).mean())


def test_set_params_and_init_params_rules() -> None:
    mod = bound()
    args, auxs = mod.get_params()
    with pytest.warns(UserWarning, match="already initialized"):
        mod.init_params()
    with pytest.raises(MinimxError, match="fc1_bias is not presented"):
        mod.init_params(arg_params={"fc1_weight": args["fc1_weight"]}, force_init=True)
    mod.set_params({"fc2_bias": mx.nd.ones((3,))}, {}, allow_missing=True)
    assert mod.get_params()[0]["fc2_bias"].asnumpy().tolist() == [1, 1, 1]
    with pytest.raises(ShapeError):
        mod.set_params({**args, "fc2_bias": mx.nd.ones((4,))}, auxs)


@pytest.mark.parametrize("make, message", [
    (lambda: mx.mod.Module(mlp(), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1]),
     "1 entries for 2 contexts"),
    (lambda: mx.mod.Module(mlp(), data_names=["image"]), "'image' is not found"),
    (lambda: mx.mod.Module(mlp()).forward(batch()), "call bind and init_params first"),
    (lambda: bound().init_optimizer(kvstore="dist_sync"), "kvstore 'dist_sync'"),
    (lambda: bound().update(), "call init_optimizer first"),
    (lambda: bound().fit(None), "num_epoch"),
    (lambda: bound().bind([("data", (4, 5))], for_training=False, force_rebind=True,
                          inputs_need_grad=True), "inputs_need_grad"),
])
def test_refusals(make, message: str) -> None:
    with pytest.raises(MinimxError, match=message):
        make()


def test_gpu_context_is_refused_where_it_is_made() -> None:
    with pytest.raises(MinimxError, match="CPU only"):
        mx.mod.Module(mlp(), context=mx.gpu())


def test_an_unknown_input_name_is_a_python_warning_as_in_mxnet():
    # A warnings.warn, not a root-logger message: a later logging.basicConfig still works.
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    with pytest.warns(UserWarning, match="'softmax_label' is not found"):
        mx.mod.Module(net)
