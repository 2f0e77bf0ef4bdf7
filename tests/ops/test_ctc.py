"""CTCLoss against a brute-force sum over every alignment (values and MXNet's gradient,
softmax minus the label posteriors), its symbol interface and its refusals; MXNet's own
outputs and gradients are compared in test_mxnet_tensor_ops.py (fixture group extra_ops)."""
import itertools

import numpy as np
import pytest

import minimx as mx
from minimx.base import OperatorError, ShapeError

from ops_support import infer, run


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _collapse(path: tuple[int, ...], blank: int) -> tuple[int, ...]:
    return tuple(k for i, k in enumerate(path) if k != blank and (i == 0 or path[i - 1] != k))


def _brute_force(data: np.ndarray, labels: list[tuple[int, ...]], blank: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Loss per sequence and d(loss)/d(activations) by enumerating every path."""
    steps, batch, alphabet = data.shape
    probs = _softmax(data)
    loss, grad = np.zeros(batch), np.zeros(data.shape)
    for n, label in enumerate(labels):
        total, posterior = 0.0, np.zeros((steps, alphabet))
        for path in itertools.product(range(alphabet), repeat=steps):
            if _collapse(path, blank) == label:
                weight = np.prod(probs[np.arange(steps), n, path])
                total += weight
                posterior[np.arange(steps), path] += weight
        loss[n] = -np.log(total)
        grad[:, n] = probs[:, n] - posterior / total
    return loss, grad


@pytest.mark.parametrize("blank_label, label, expected", [
    ("first", [[1, 1, 0], [2, 1, 2], [0, 0, 0]], [(1, 1), (2, 1, 2), ()]),
    ("last", [[0, 0, -1], [1, 0, 1], [-1, 0, 1]], [(0, 0), (1, 0, 1), ()]),
])
def test_loss_and_gradient_match_every_alignment(blank_label, label, expected):
    data = np.random.default_rng(0).normal(size=(5, 3, 3))
    loss, grad = run("CTCLoss", {"blank_label": blank_label}, data, np.array(label, float))
    want_loss, want_grad = _brute_force(data, expected, 0 if blank_label == "first" else 2)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, atol=1e-12)


def test_lengths_cut_the_data_and_the_labels():
    rng = np.random.default_rng(1)
    data = rng.normal(size=(5, 2, 4))
    label = np.array([[3, 1, 2], [2, 2, 3]], float)
    params = {"use_data_lengths": True, "use_label_lengths": True}
    loss, grad = run("CTCLoss", params, data, label, np.array([3.0, 5.0]), np.array([2.0, 3.0]))
    want0, grad0 = _brute_force(data[:3, :1], [(3, 1)], 0)
    want1, grad1 = _brute_force(data[:, 1:], [(2, 2, 3)], 0)
    np.testing.assert_allclose(loss, [want0[0], want1[0]], rtol=1e-12)
    np.testing.assert_allclose(grad[:3, :1], grad0, atol=1e-12)
    np.testing.assert_array_equal(grad[3:, 0], 0.0)
    np.testing.assert_allclose(grad[:, 1:], grad1, atol=1e-12)


def test_labels_that_cannot_fit_give_zero_as_mxnet():
    loss, grad = run("CTCLoss", {}, np.ones((3, 1, 4)), np.array([[1.0, 1.0, 2.0]]))
    assert loss.tolist() == [0.0] and not grad.any()


def test_a_sequence_of_no_time_steps_has_loss_and_gradient_zero_as_mxnet():
    data = np.array([[[0.1, 0.5, -0.3], [0.2, -0.1, 0.4]],
                     [[-0.2, 0.3, 0.1], [0.5, 0.0, -0.4]]], np.float32)
    loss, grad = run("CTCLoss", {"use_data_lengths": True}, data,
                     np.array([[1.0, 2.0], [2.0, 0.0]], np.float32), np.array([0.0, 1.0]))
    # MXNet 1.9.1's numbers.
    np.testing.assert_allclose(loss, [0.0, 0.885939], rtol=1e-5)
    np.testing.assert_allclose(grad[0], [[0, 0, 0], [0.337584, 0.250089, -0.587673]],
                               rtol=1e-5)
    np.testing.assert_array_equal(grad[1], 0.0)


def test_symbol_has_mxnets_inputs_and_one_visible_output():
    data, label = mx.sym.var("data"), mx.sym.var("label")
    sym = mx.sym.ctc_loss(data, label, use_label_lengths=True, name="ctc")
    assert sym.list_arguments() == ["data", "label", "ctc_label_lengths"]
    assert sym.list_outputs() == ["ctc_output0"]
    assert mx.sym.contrib.ctc_loss is not None and mx.nd.contrib.CTCLoss is not None
    _, out_shapes, _ = sym.infer_shape(data=(7, 2, 5), label=(2, 3), ctc_label_lengths=(2,))
    assert out_shapes == [(2,)]


@pytest.mark.parametrize("params, inputs, error, match", [
    ({}, [np.zeros((3, 1, 4)), np.array([[5.0]])], OperatorError, r"labels \[5.0\]"),
    ({"blank_label": "last"}, [np.zeros((3, 1, 4)), np.array([[-2.0]])], OperatorError,
     "outside the alphabet"),
    ({"use_data_lengths": True}, [np.zeros((3, 1, 4)), np.array([[1.0]]), np.array([4.0])],
     OperatorError, r"data_lengths \[4.0\] must lie in \[0, 3\]"),
    ({"use_label_lengths": True}, [np.zeros((3, 1, 4)), np.array([[1.0]]), np.array([2.0])],
     OperatorError, "label_lengths"),
])
def test_bad_values_are_refused(params, inputs, error, match):
    with pytest.raises(error, match=match):
        run("CTCLoss", params, *inputs)


@pytest.mark.parametrize("shapes, match", [
    ([(3, 2, 4), (3, 2)], "different batch sizes"),
    ([(2, 2, 4), (2, 3)], "cannot fit 2 time steps"),
    ([(2, 4), (2, 3)], "must be"),
])
def test_bad_shapes_are_refused(shapes, match):
    with pytest.raises(ShapeError, match=match):
        infer("CTCLoss", {}, shapes, [None, None])
