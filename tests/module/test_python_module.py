"""`mx.mod.PythonModule` / `PythonLossModule` as MXNet 1.9.1's: the numbers are
MXNet's for a SequentialModule [FC Module, PythonLossModule(grad_func=softmax
cross-entropy)] trained with SGD from the same parameters."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError

RNG = np.random.RandomState(5)
X = RNG.randn(6, 4).astype(np.float32)
Y = RNG.randint(0, 3, 6).astype(np.float32)
W = RNG.uniform(-0.5, 0.5, (3, 4)).astype(np.float32)
B = RNG.uniform(-0.5, 0.5, (3,)).astype(np.float32)


def softmax_grad(scores: mx.nd.NDArray, labels: mx.nd.NDArray) -> np.ndarray:
    """The gradient of the mean softmax cross-entropy, as a numpy array."""
    s = scores.asnumpy()
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(p)), labels.asnumpy().astype(int)] -= 1
    return p / len(p)


def fc_with_python_loss() -> mx.mod.SequentialModule:
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    return mx.mod.SequentialModule().add(mx.mod.Module(fc, label_names=None)).add(
        mx.mod.PythonLossModule(grad_func=softmax_grad), take_labels=True, auto_wiring=True)


def test_trains_in_a_sequential_module_as_mxnet() -> None:
    seq = fc_with_python_loss()
    seq.bind(data_shapes=[("data", (3, 4))], label_shapes=[("softmax_label", (3,))])
    seq.init_params()
    seq.set_params({"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(B)}, {})
    seq.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    acc = mx.metric.create("acc")
    for step in range(4):
        rows = slice((step % 2) * 3, (step % 2) * 3 + 3)
        batch = mx.io.DataBatch([mx.nd.array(X[rows])], [mx.nd.array(Y[rows])])
        seq.forward_backward(batch)
        seq.update()
        seq.update_metric(acc, batch.label)
    args, auxs = seq.get_params()
    np.testing.assert_allclose(args["fc_weight"].asnumpy(), [
        [-0.0347, 0.12723, 0.50093, 0.05737],
        [-0.05605, -0.17883, 0.20092, 0.26976],
        [0.55699, -0.38959, 0.05302, 0.27222]], atol=2e-5)
    np.testing.assert_allclose(args["fc_bias"].asnumpy(), [-0.2399, 0.14714, 0.06461],
                               atol=2e-5)
    np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(), [
        [-1.1692, -0.33436, -0.63448],
        [-0.84755, -0.06315, -0.15432],
        [-0.86043, 0.00337, -0.16164]], atol=2e-5)
    assert auxs == {}
    assert acc.get() == ("accuracy", pytest.approx(7 / 12))
    assert seq.output_names == ["pyloss_output"]
    assert seq.output_shapes == [("pyloss_output", (3, 3))]


def test_fit_and_score_as_mxnet() -> None:
    seq = fc_with_python_loss()
    data = mx.io.NDArrayIter(X, Y, batch_size=3)
    seq.fit(data, num_epoch=2, optimizer_params={"learning_rate": 0.5},
            arg_params={"fc_weight": mx.nd.array(W), "fc_bias": mx.nd.array(B)})
    np.testing.assert_allclose(seq.get_params()[0]["fc_bias"].asnumpy(),
                               [-0.2399, 0.14714, 0.06461], atol=2e-5)
    assert seq.score(data, "acc") == [("accuracy", pytest.approx(5 / 6))]
    np.testing.assert_allclose(seq.predict(data).asnumpy()[:2], [
        [0.9059, 0.602, 0.4995], [-0.5318, -0.4843, -0.7001]], atol=2e-4)


def test_loss_module_alone() -> None:
    """MXNet's defaults: no parameters, `bind` records shapes (and, as MXNet's,
    leaves `binded` False), backward without grad_func is not implemented."""
    loss = mx.mod.PythonLossModule()
    loss.bind([("data", (2, 3))], [("softmax_label", (2,))])
    assert (loss.binded, loss.data_names, loss.output_names) == (False, ["data"],
                                                                 ["pyloss_output"])
    assert loss.output_shapes == [("pyloss_output", (2, 3))]
    assert loss.get_params() == ({}, {})
    scores = mx.nd.ones((2, 3))
    loss.forward(mx.io.DataBatch([scores], [mx.nd.zeros((2,))]))
    assert loss.get_outputs()[0] is scores
    with pytest.raises(NotImplementedError):
        loss.backward()
    with pytest.raises(MinimxError, match="out_grads"):
        loss.backward(out_grads=[scores])


def test_bind_checks_names() -> None:
    with pytest.raises(MinimxError, match="data shapes"):
        mx.mod.PythonLossModule().bind([("x", (2, 3))], [("softmax_label", (2,))])
    with pytest.raises(MinimxError, match="one data"):
        mx.mod.PythonLossModule(data_names=("a", "b"))


def test_python_module_subclass() -> None:
    """A PythonModule subclass fills in the computation; metrics need labels bound."""

    class Double(mx.mod.PythonModule):
        def _compute_output_shapes(self):  # type: ignore[no-untyped-def]
            return [("double_output", self.data_shapes[0][1])]

        def forward(self, data_batch, is_train=None):  # type: ignore[no-untyped-def]
            self._out = data_batch.data[0] * 2

        def get_outputs(self, merge_multi_context=True):  # type: ignore[no-untyped-def]
            return [self._out]

    double = Double(("data",), None, ["double_output"])
    double.bind([("data", (1, 2))])
    double.forward(mx.io.DataBatch([mx.nd.array([[1, 2]])]))
    assert double.get_outputs()[0].asnumpy().tolist() == [[2.0, 4.0]]
    acc = mx.metric.create("acc")
    double.update_metric(acc, [mx.nd.array([1])])
    assert acc.num_inst == 0


def test_a_monitor_on_a_chain_ending_in_a_python_loss_watches_the_other_modules() -> None:
    # The Python loss runs no operators: it has nothing to watch (MXNet's raises).
    seq = fc_with_python_loss()
    seq.bind(data_shapes=[("data", (3, 4))], label_shapes=[("softmax_label", (3,))])
    seq.init_params()
    mon = mx.mon.Monitor(1, pattern="fc_output")
    seq.install_monitor(mon)
    mon.tic()
    seq.forward(mx.io.DataBatch([mx.nd.array(X[:3])], [mx.nd.array(Y[:3])]))
    assert [name for _, name, _ in mon.toc()] == ["fc_output"]
