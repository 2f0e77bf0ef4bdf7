"""Training through the Executor: backward, grad_req, BatchNorm statistics,
loss heads, monitor, the default subgraph backend, memory reuse, and a conv
net's gradients against MXNet 1.9.1's (tests/fixtures/handnet, made by
tools/mxnet_fixtures.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minimx as mx

FIXTURES = Path(__file__).parents[1] / "fixtures"


def mlp(num_hidden: int = 5) -> mx.sym.Symbol:
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=num_hidden, name="fc1")
    act = mx.sym.Activation(fc1, act_type="tanh", name="act")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def bound(sym: mx.sym.Symbol, grad_req="write", seed: int = 0, **shapes) -> mx.executor.Executor:
    ex = sym.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)
    rng = np.random.default_rng(seed)
    for name, arr in ex.arg_dict.items():
        if name not in shapes:
            arr[:] = rng.normal(0, 0.5, arr.shape)
    for arr in ex.aux_dict.values():
        arr[:] = rng.uniform(0.5, 1.5, arr.shape)
    return ex


def test_conv_net_gradients_match_mxnet():
    io = np.load(FIXTURES / "handnet" / "handnet-io.npz")
    sym, args, auxs = mx.model.load_checkpoint(str(FIXTURES / "handnet" / "handnet"), 0)
    feeds = {"data": io["data"], "softmax_label": io["softmax_label"]}
    ex = sym.simple_bind(mx.cpu(), grad_req="write", **{k: v.shape for k, v in feeds.items()})
    for kind in ("ones", "rand"):
        ex.copy_params_from(args, auxs)
        outs = ex.forward(is_train=True, **feeds)
        for k, out in enumerate(outs):
            np.testing.assert_allclose(out.asnumpy(), io[f"train_out_{k}"], rtol=1e-4, atol=1e-5)
        ex.backward(out_grads=[mx.nd.array(io[f"head_grad_{kind}_{k}"]) for k in range(2)])
        for name, grad in ex.grad_dict.items():
            np.testing.assert_allclose(grad.asnumpy(), io[f"grad_{kind}:{name}"], rtol=1e-4,
                                       atol=1e-5, err_msg=f"{kind}: gradient of {name}")
    for name, value in ex.aux_dict.items():
        np.testing.assert_allclose(value.asnumpy(), io[f"aux_after_train:{name}"], rtol=1e-5,
                                   atol=1e-6)


def training_step_grads(x: np.ndarray, label: np.ndarray) -> dict[str, np.ndarray]:
    """The gradients of one training forward and backward of a fresh `mlp()`."""
    ex = bound(mlp(), data=x.shape)
    ex.forward(is_train=True, data=x, softmax_label=label)
    ex.backward()
    return {n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None}


def test_grad_req_write_add_and_null_per_argument():
    x = np.random.default_rng(1).normal(size=(4, 6)).astype(np.float32)
    label = np.array([0, 1, 2, 1], np.float32)
    want = training_step_grads(x, label)
    reqs = {"fc1_weight": "add", "fc1_bias": "null", "fc2_weight": "write", "fc2_bias": "add"}
    ex = bound(mlp(), grad_req=reqs, data=(4, 6))
    # As MXNet 1.9.1: every argument has an entry, None where its grad_req is 'null'.
    assert {n for n, g in ex.grad_dict.items() if g is not None} == {
        "fc1_weight", "fc2_weight", "fc2_bias"}
    assert ex.grad_dict["fc1_bias"] is None and list(ex.grad_dict) == mlp().list_arguments()
    ex.grad_dict["fc1_weight"][:] = 1.0
    for _ in range(2):
        ex.forward(is_train=True, data=x, softmax_label=label)
        ex.backward()
    got = {n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None}
    np.testing.assert_allclose(got["fc1_weight"], 1.0 + 2 * want["fc1_weight"], rtol=1e-5)
    np.testing.assert_allclose(got["fc2_bias"], 2 * want["fc2_bias"], rtol=1e-5)
    np.testing.assert_allclose(got["fc2_weight"], want["fc2_weight"], rtol=1e-6)


def test_non_loss_heads_need_out_grads_as_in_mxnet():
    data = mx.sym.Variable("data")
    sym = mx.sym.Group([mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=3,
                                                                  name="fc"), name="sm"),
                        mx.sym.tanh(data, name="t")])
    ex = bound(sym, data=(2, 3))
    ex.forward(is_train=True)
    with pytest.raises(mx.MinimxError, match="t_output needs a gradient.*head gradient is "
                                             "required"):
        ex.backward()
    with pytest.raises(mx.ShapeError, match="out_grad for t_output has shape"):
        ex.backward([None, mx.nd.ones((3, 3))])
    # The loss head's gradient is not needed (and ignored when given).
    ex.backward([None, mx.nd.ones((2, 3))])
    first = ex.grad_dict["data"].asnumpy()
    ex.backward({"t_output": mx.nd.ones((2, 3)), "sm_output": mx.nd.ones((2, 3)) * 7})
    np.testing.assert_array_equal(ex.grad_dict["data"].asnumpy(), first)


def test_outputs_nothing_flows_back_through_need_no_out_grads_as_in_mxnet():
    # MXNet prunes the paths of zero gradients: BlockGrad and argmax outputs beside a
    # loss need no head gradient, and what feeds only them gets zeros.
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    for extra in (mx.sym.argmax(fc, axis=1), mx.sym.BlockGrad(fc), fc > 0):
        ex = bound(mx.sym.Group([mx.sym.SoftmaxOutput(fc, name="sm"), extra]), data=(2, 3))
        for array in ex.arg_dict.values():
            array[:] = 0.1
        ex.arg_dict["data"][:] = np.arange(6).reshape(2, 3)
        ex.forward(is_train=True)
        ex.backward()
        # MXNet 1.9.1's gradient for both groups
        np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy()[0],
                                   [-1.9999999, -3.333333, -4.6666665], rtol=1e-6)
    x, idx = mx.sym.Variable("x"), mx.sym.Variable("idx")
    # batch_take has no gradient; behind stop_gradient none is asked of it.
    ex = mx.sym.stop_gradient(mx.sym.batch_take(x * x, idx)).simple_bind(
        mx.cpu(), x=(2, 3), idx=(2,), type_dict={"idx": np.int32})
    ex.forward(is_train=True, x=mx.nd.array(np.arange(6).reshape(2, 3)),
               idx=mx.nd.array([0, 2], dtype="int32"))
    ex.backward()
    assert ex.outputs[0].asnumpy().tolist() == [0, 25]
    assert not ex.grad_dict["x"].asnumpy().any()


def test_module_fits_a_loss_grouped_with_a_blocked_prediction():
    data, label = mx.sym.Variable("data"), mx.sym.Variable("label")
    pred = mx.sym.FullyConnected(data, num_hidden=1, name="fc")
    loss = mx.sym.MakeLoss(mx.sym.mean(mx.sym.square(mx.sym.reshape(pred, (-1,)) - label)))
    it = mx.io.NDArrayIter(np.ones((8, 3), "float32"), np.ones((8,), "float32"),
                           batch_size=4, label_name="label")
    mod = mx.mod.Module(mx.sym.Group([loss, mx.sym.BlockGrad(pred)]), data_names=["data"],
                        label_names=["label"])
    mod.fit(it, num_epoch=1, optimizer="sgd", eval_metric="loss",
            initializer=mx.init.Constant(0.01))
    # MXNet 1.9.1's weights after the epoch
    np.testing.assert_allclose(mod.get_params()[0]["fc_weight"].asnumpy(), [[0.019603] * 3],
                               rtol=1e-5)


def test_batchnorm_moving_statistics_update_only_in_training():
    data = mx.sym.Variable("data")
    sym = mx.sym.BatchNorm(data, fix_gamma=False, momentum=0.5, name="bn")
    ex = bound(sym, data=(8, 2))
    ex.aux_dict["bn_moving_mean"][:] = 0.0
    x = np.random.default_rng(2).normal(3.0, 1.0, size=(8, 2)).astype(np.float32)
    ex.forward(is_train=False, data=x)
    np.testing.assert_array_equal(ex.aux_dict["bn_moving_mean"].asnumpy(), 0.0)
    ex.forward(is_train=True, data=x)
    np.testing.assert_allclose(ex.aux_dict["bn_moving_mean"].asnumpy(), 0.5 * x.mean(0),
                               rtol=1e-5)
    ex.backward(mx.nd.ones((8, 2)))
    # Training-mode BatchNorm: a constant head gradient gives a zero data gradient.
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), 0.0, atol=1e-5)


def test_backward_after_an_inference_forward_uses_its_values():
    x = np.random.default_rng(3).normal(size=(4, 6)).astype(np.float32)
    label = np.array([2, 1, 0, 1], np.float32)
    results = []
    for is_train in (True, False):
        ex = bound(mlp(), data=(4, 6))
        ex.forward(is_train=is_train, data=x, softmax_label=label)
        ex.backward()
        results.append({n: g.asnumpy() for n, g in ex.grad_dict.items()})
    for name, grad in results[0].items():
        np.testing.assert_allclose(results[1][name], grad, rtol=1e-6)
    # backward re-runs that forward for training: refused where an argument was
    # written since (MXNet would differentiate the stored values; the re-run, others)
    ex = bound(mlp(), data=(4, 6))
    ex.forward(is_train=False, data=x, softmax_label=label)
    first = ex.arg_dict[sorted(ex.arg_dict)[0]]
    first[:] = first + 1
    with pytest.raises(mx.MinimxError, match=f"{sorted(ex.arg_dict)[0]} written since "
                                             "that forward.*run forward again"):
        ex.backward()   # refused at the call: nothing reaches the engine


def test_a_refused_backward_leaves_the_next_training_step_whole():
    # Refused in the engine, its failure passed to the gradients, from them to the
    # next update's weights, and from there to every step after (a Module fuzz
    # against MXNet 1.9.1 found training stuck); refused at the call, nothing is.
    x = np.random.default_rng(5).normal(size=(4, 6)).astype(np.float32)
    label = np.array([2, 1, 0, 1], np.float32)
    want = training_step_grads(x, label)
    ex = bound(mlp(), data=(4, 6))
    with pytest.raises(mx.MinimxError, match="backward: run forward first"):
        ex.backward()
    ex.forward(is_train=False, data=x, softmax_label=label)
    ex.arg_dict["data"][:] = x
    with pytest.raises(mx.MinimxError, match="data written since that forward"):
        ex.backward()
    ex.forward(is_train=True, data=x, softmax_label=label)
    ex.backward()
    for name, grad in want.items():
        np.testing.assert_array_equal(ex.grad_dict[name].asnumpy(), grad)


def test_default_subgraph_backend_trains_like_the_plain_graph(monkeypatch):
    x = np.random.default_rng(4).normal(size=(4, 6)).astype(np.float32)
    label = np.array([0, 1, 2, 0], np.float32)
    grads = []
    for backend in ("NONE", "default"):
        monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
        monkeypatch.setenv("MINIMX_SUBGRAPH_DEFAULT_OPS", "FullyConnected,Activation")
        ex = bound(mlp(), data=(4, 6))
        ex.forward(is_train=True, data=x, softmax_label=label)
        ex.backward()
        grads.append({n: g.asnumpy() for n, g in ex.grad_dict.items()})
        if backend == "default":
            assert "_subgraph_op" in ex.debug_str()
    for name, grad in grads[0].items():
        np.testing.assert_allclose(grads[1][name], grad, rtol=1e-5, atol=1e-7)


def test_monitor_sees_every_forward_output():
    seen = []
    ex = bound(mlp(), data=(2, 6))
    ex.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    ex.forward(is_train=True)
    ex.backward()
    mx.nd.waitall()
    assert seen[:4] == [("fc1_output", (2, 5)), ("act_output", (2, 5)), ("fc2_output", (2, 3)),
                        ("softmax_output", (2, 3))]
    # then the backward's (tests/executor/test_monitor_backward.py)
    assert seen[4][0] == "softmax_backward_output0"
    assert all("_backward_" in name for name, _ in seen[4:])


def test_repeated_runs_reuse_the_planned_buffers():
    ex = bound(mlp(), data=(2, 6))
    ex.forward(is_train=True)
    ex.backward()
    mx.nd.waitall()
    env = ex._runner.program(True).env
    before = [None if a is None else a.__array_interface__["data"][0] for a in env]
    ex.forward(is_train=True)
    ex.backward()
    mx.nd.waitall()
    assert [None if a is None else a.__array_interface__["data"][0] for a in env] == before


def test_debug_str_shows_storage_and_totals():
    text = bound(mlp(), data=(2, 6)).debug_str()
    assert "Op: Activation act(fc1_output) act_type=tanh -> (2, 5) float32 @s" in text
    assert "Variable: data -> (2, 6) float32 @ext" in text
    assert "_backward_FullyConnected fc1 -> (2, 6) @ext, (5, 6) @ext, (5,) @ext" in text
    assert "memory reduced from" in text and "bytes allocated" in text


def test_sgd_on_a_small_net_lowers_the_loss():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(32, 6)).astype(np.float32)
    label = (x[:, 0] > 0).astype(np.float32) + (x[:, 1] > 0)
    ex = bound(mlp(16), data=(32, 6))
    losses = []
    for _ in range(30):
        probs = ex.forward(is_train=True, data=x, softmax_label=label)[0].asnumpy()
        losses.append(-np.mean(np.log(probs[np.arange(32), label.astype(int)])))
        ex.backward()
        for name, grad in ex.grad_dict.items():
            if name not in ("data", "softmax_label"):
                ex.arg_dict[name][:] = ex.arg_dict[name].asnumpy() - 0.05 * grad.asnumpy()
    assert losses[-1] < 0.6 * losses[0]


def test_a_head_gradient_takes_its_outputs_dtype():
    # MXNet copies out_grads into the output's dtype: an int32 output truncates them.
    a = mx.sym.var("a")
    ex = (mx.sym.cast(a, dtype="int32") * 3).simple_bind(mx.cpu(), a=(4,))
    ex.forward(is_train=True, a=mx.nd.array([1, 2, 3, 4]))
    ex.backward(mx.nd.array([0.5, 0.9, 1.7, 2.5]))
    assert ex.grad_dict["a"].asnumpy().tolist() == [0, 0, 3, 6]   # MXNet 1.9.1's
