"""The loss heads (regression outputs, SVMOutput, MakeLoss) against MXNet 1.9.1.

Fixture group loss_ops (tools/mxnet_fixtures.py): each case binds one loss head
with gradients for every input, runs a training forward and a backward without
head gradients, and records the output and the input gradients. Here the same
bind must give the same values, the same gradients when head gradients are
given (they are ignored), MXNet's label names and label shapes, and MXNet's
refusals.
"""
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import ShapeError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "loss_ops"
CASES = json.loads((FIXTURES / "cases.json").read_text())


@pytest.fixture(scope="module")
def recorded():
    with np.load(FIXTURES / "cases.npz") as npz:
        return {k: npz[k] for k in npz.files}


def _bind(case: str, recorded: dict) -> mx.executor.Executor:
    spec = CASES[case]
    names = ["data", "label"][:len(spec["label"])]
    inputs = [recorded[f"{case}:in_{i}"] for i in range(len(names))]
    sym = getattr(mx.sym, spec["op"])(*[mx.sym.var(n) for n in names], name=case,
                                      **spec["attrs"])
    return sym.bind(mx.cpu(), {n: mx.nd.array(a) for n, a in zip(names, inputs, strict=True)},
                    args_grad={n: mx.nd.zeros(a.shape) for n, a in zip(names, inputs,
                                                                        strict=True)})


@pytest.mark.parametrize("case", sorted(CASES))
def test_output_and_gradients_match_mxnet(case, recorded):
    ex = _bind(case, recorded)
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), recorded[f"{case}:out_0"],
                               rtol=1e-6, atol=1e-7)
    for i, name in enumerate(["data", "label"][:len(CASES[case]["label"])]):
        np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), recorded[f"{case}:grad_{i}"],
                                   rtol=1e-6, atol=1e-7, err_msg=f"{case} {name}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_head_gradients_are_ignored(case, recorded):
    ex = _bind(case, recorded)
    ex.forward(is_train=True)
    ex.backward(mx.nd.full(ex.outputs[0].shape, 7.0))
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), recorded[f"{case}:grad_0"],
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op", ["LinearRegressionOutput", "LogisticRegressionOutput",
                                "MAERegressionOutput", "SVMOutput"])
def test_label_is_named_and_shaped_as_in_mxnet(op):
    head = getattr(mx.sym, op)(mx.sym.var("data"), name="h")
    assert head.list_arguments() == ["data", "h_label"]
    assert head.list_outputs() == ["h_output"]
    column = (4,) if op == "SVMOutput" else (4, 3)
    assert head.infer_shape(data=(4, 3))[0] == [(4, 3), column]
    assert head.infer_shape(data=(4, 1))[0] == [(4, 1), (4,)]
    with pytest.raises(ShapeError, match="h"):
        head.infer_shape(data=(4, 3), h_label=(2, 6))


def test_make_loss_has_no_label():
    loss = mx.sym.MakeLoss(mx.sym.square(mx.sym.var("x")), name="l2")
    assert loss.list_arguments() == ["x"] and loss.list_outputs() == ["l2_output"]


def test_bad_normalization_is_refused_naming_the_node():
    with pytest.raises(mx.MinimxError, match=r"ml \(MakeLoss\).*normalization"):
        mx.sym.MakeLoss(mx.sym.var("x"), normalization="sum", name="ml")


def test_make_loss_of_a_square_trains_through_the_graph():
    # d/dx sum(x^2) * grad_scale / batch: the loss's gradient flows back into the square.
    x = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    loss = mx.sym.MakeLoss(mx.sym.square(mx.sym.var("x")), grad_scale=3.0,
                           normalization="batch")
    ex = loss.bind(mx.cpu(), {"x": mx.nd.array(x)}, args_grad={"x": mx.nd.zeros((2, 2))})
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 2 * x * 3.0 / 2)


def test_module_fit_learns_a_linear_map_with_linear_regression_output():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (64, 3)).astype(np.float32)
    w_true = np.array([[2.0, -1.0, 0.5]], np.float32)
    y = (x @ w_true.T + 0.3).reshape(-1)
    it = mx.io.NDArrayIter(x, y, batch_size=16, label_name="lin_reg_label")
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc")
    net = mx.sym.LinearRegressionOutput(fc, name="lin_reg")
    mod = mx.mod.Module(net, label_names=("lin_reg_label",))
    mod.fit(it, num_epoch=60, optimizer="sgd", optimizer_params={"learning_rate": 0.5},
            initializer=mx.init.Zero(), eval_metric="mse")
    args, _ = mod.get_params()
    np.testing.assert_allclose(args["fc_weight"].asnumpy(), w_true, atol=1e-3)
    np.testing.assert_allclose(args["fc_bias"].asnumpy(), [0.3], atol=1e-3)
    assert mod.score(it, "mse")[0][1] < 1e-6


def test_softmax_cross_entropy_is_mxnets():
    # MXNet 1.9.1: the loss summed over the batch, shape (1,), and its data gradient
    # times the head gradient (2 here); labels are truncated to classes.
    x = np.array([[1, 2, 3, 4], [0, 0, 0, 0], [-1, 2, 0.5, 3]], np.float32)
    data, label = mx.sym.var("d"), mx.sym.var("l")
    ex = mx.sym.softmax_cross_entropy(data, label).simple_bind(
        mx.cpu(), d=(3, 4), l=(3,), grad_req={"d": "write", "l": "null"})
    ex.arg_dict["d"][:], ex.arg_dict["l"][:] = x, [3, 0, 1.7]
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), [3.2105756], rtol=1e-6)
    ex.backward(mx.nd.array([2.0]))
    np.testing.assert_allclose(ex.grad_dict["d"].asnumpy(), [
        [0.06411721, 0.17428865, 0.47376567, -0.71217144], [-1.5, 0.5, 0.5, 0.5],
        [0.02494843, -1.4988974, 0.11181109, 1.3621379]], rtol=1e-5, atol=1e-7)


def test_softmax_cross_entropy_refuses_what_mxnet_reads_past():
    x = mx.nd.ones((2, 3))
    with pytest.raises(mx.MinimxError, match="labels \\[3\\] are not among the 3 classes"):
        mx.nd.softmax_cross_entropy(x, mx.nd.array([0, 3])).asnumpy()
    with pytest.raises(ShapeError, match="2-D"):
        mx.nd.softmax_cross_entropy(mx.nd.ones((3,)), mx.nd.array([0]))



def _input_gradient(sym: mx.sym.Symbol, data: np.ndarray, label: np.ndarray | None = None
                    ) -> np.ndarray:
    args = {"x": mx.nd.array(data)} | ({"l": mx.nd.array(label)} if label is not None else {})
    ex = sym.bind(mx.cpu(), args, args_grad={"x": mx.nd.zeros(data.shape)},
                  grad_req={"x": "write", "l": "null"} if label is not None else "write")
    ex.forward(is_train=True)
    ex.backward()
    return ex.grad_dict["x"].asnumpy()


@pytest.mark.parametrize("shape, want", [((2, 3, 4), 0.5), ((4,), 3.0), ((1, 3, 2), 1.0),
                                         ((3, 2), 1.0)])
def test_make_loss_batch_normalization_divides_by_every_axis_but_the_last(shape, want):
    """MXNet 1.9.1's kernel flattens data to 2-D and divides by its rows (grad_scale 3;
    values from MXNet's venv), which the batch size is for 2-D data only."""
    loss = mx.sym.MakeLoss(mx.sym.var("x"), normalization="batch", grad_scale=3.0)
    np.testing.assert_array_equal(_input_gradient(loss, np.ones(shape, np.float32)),
                                  np.full(shape, want, np.float32))


def test_softmax_output_of_an_unflattened_label_takes_its_first_values_as_mxnet():
    """Data (N, C, d) without multi_output: shape inference takes a label (N, d) and the
    rows are the flattened (N, C*d) ones. MXNet 1.9.1's backward gives row i the label's
    i-th value and counts the whole label for 'batch' and 'valid' (its values, from its
    venv, to 4 places)."""
    data = (np.arange(12).reshape(2, 2, 3) / 4).astype(np.float32)
    sym = mx.sym.SoftmaxOutput(mx.sym.var("x"), mx.sym.var("l"), normalization="valid",
                               use_ignore=True, ignore_label=-1)
    grad = _input_gradient(sym, data, np.array([[-1, 0], [4, -1]], np.float32))
    np.testing.assert_allclose(grad.reshape(2, 6), [
        [0, 0, 0, 0, 0, 0],
        [-0.4592, 0.0524, 0.0672, 0.0863, 0.1109, 0.1424]], atol=1e-4)
    batch = mx.sym.SoftmaxOutput(mx.sym.var("x"), mx.sym.var("l"), normalization="batch")
    grad = _input_gradient(batch, data, np.array([[1, 0], [4, 2]], np.float32))
    np.testing.assert_allclose(grad.reshape(2, 6)[0], [0.0204, -0.2238, 0.0336, 0.0432,
                                                        0.0554, 0.0712], atol=1e-4)
