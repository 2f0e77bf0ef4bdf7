"""The `_linalg_` family's namespaces, the (symmetric) gradients of potrf and syevd, the
factorizations and triangles, and the refusals of the linalg and coordinate-indexing
operators; values are checked against MXNet in test_mxnet_tensor_ops.py (fixture groups
more_ops and extra_ops)."""
import numpy as np
import pytest

import minimx as mx
from minimx.base import DTypeError, OperatorError, ShapeError
from minimx.ops import get_op
from minimx.ops.registry import OpContext

from ops_support import infer, run


def test_linalg_namespaces_hold_every_linalg_operator():
    names = [n for n in mx.ops.list_ops() if n.startswith("_linalg_")]
    assert len(names) == 17
    for name in names:
        short = name.removeprefix("_linalg_")
        assert getattr(mx.nd.linalg, short).__name__ == short   # as MXNet names them
        assert getattr(mx.sym.linalg, short).__name__ == short
        if short != "syevd":   # MXNet 1.9.1 registers no linalg_syevd
            assert get_op(f"linalg_{short}") is get_op(name)
    assert "linalg_syevd" not in mx.ops.list_ops()


def test_potrf_and_potri_take_the_upper_triangle_with_lower_false():
    # MXNet 1.9.1's values, its gradients included (a one-off run in its venv).
    a = mx.nd.array([[4.0, 1.5], [0.7, 3.0]])
    upper = mx.nd.linalg.potrf(mx.nd.array([[4.0, 2.0], [2.0, 3.0]]), lower=False)
    np.testing.assert_allclose(upper.asnumpy(), [[2, 1], [0, np.sqrt(2)]], rtol=1e-6)
    np.testing.assert_allclose(mx.nd.linalg.potri(upper, lower=False).asnumpy(),
                               [[0.375, -0.25], [-0.25, 0.5]], rtol=1e-5)
    weights = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    for op, x, want in (
            (mx.nd.linalg.potrf, a, [[0.2426, 0.0196], [0.0196, 1.281]]),
            (mx.nd.linalg.potri, mx.nd.array([[2.0, 0.3], [0.5, 1.5]]),
             [[-0.0933, -1.0444], [0.0, -1.9393]])):
        x.attach_grad()
        with mx.autograd.record():
            loss = (op(x, lower=False) * weights).sum()
        loss.backward()
        np.testing.assert_allclose(x.grad.asnumpy(), want, atol=1e-4)
    with pytest.raises(OperatorError, match="foo"):
        mx.nd.linalg.potrf(a, foo=1)


@pytest.mark.parametrize("name", ["_linalg_potrf", "_linalg_syevd"])
def test_gradient_is_the_derivative_along_symmetric_directions(name):
    rng = np.random.default_rng(3)
    m = rng.normal(size=(3, 3))
    a = m @ m.T + 3 * np.eye(3)
    op = get_op(name)
    p = op.parse_params({})
    outputs = op.forward(p, OpContext(), [a])
    heads = [rng.normal(size=o.shape) for o in outputs]

    def objective(x: np.ndarray) -> float:
        return sum(float(np.sum(o * h)) for o, h in zip(
            op.forward(p, OpContext(), [x]), heads, strict=True))

    grad = op.backward(p, OpContext(), *op.backward_view(p, [a], outputs), heads)[0]
    np.testing.assert_allclose(grad, grad.T)
    for i, j in [(0, 0), (1, 0), (2, 1), (2, 2)]:
        step = np.zeros((3, 3))
        step[i, j] = step[j, i] = 1e-6
        numeric = (objective(a + step) - objective(a - step)) / 2e-6
        assert np.sum(grad * step) / 1e-6 == pytest.approx(numeric, rel=1e-6)


@pytest.mark.parametrize("name, params, inputs, error, match", [
    ("_linalg_potrf", {}, [-np.eye(2)], OperatorError, "positive definite"),
    ("_linalg_inverse", {}, [np.zeros((2, 2))], OperatorError, "invertible"),
    ("_linalg_det", {}, [np.zeros((2, 3))], ShapeError, "square matrices"),
    ("_linalg_extractdiag", {"offset": 2}, [np.zeros((2, 2))], ShapeError, "offset=2"),
    ("_linalg_extracttrian", {"offset": -2}, [np.zeros((2, 2))], ShapeError, "offset=-2"),
    ("_linalg_maketrian", {}, [np.zeros(4)], ShapeError, "not the size of a triangle"),
    ("_linalg_gelqf", {}, [np.zeros((3, 2))], ShapeError, "no more rows than columns"),
    ("gather_nd", {}, [np.zeros((2, 3)), np.array([[0, 1], [3, 0]])], OperatorError,
     "index 3 is out of bounds for axis 1 with size 3"),
    ("gather_nd", {}, [np.zeros((2, 3)), np.array([[-3], [0]])], OperatorError,
     "index -3 is out of bounds for axis 0"),
    # MXNet 1.9.1: "gather_nd requires index tensor to have at least 2 dimensions"
    ("gather_nd", {}, [np.zeros((3, 4)), np.array([2.0])], ShapeError, "at least two axes"),
    ("scatter_nd", {"shape": (4,)}, [np.ones(1), np.array([2.0])], ShapeError,
     "at least two axes"),
    ("_contrib_index_copy", {}, [np.zeros((3, 2)), np.array([-1.0]), np.ones((1, 2))],
     OperatorError, "index -1.0 is out of bounds"),
    ("batch_take", {}, [np.zeros((2, 3, 4)), np.zeros(6)], ShapeError, "must be 2-D"),
    ("reshape_like", {}, [np.zeros((2, 3)), np.zeros((5,))], ShapeError, "cannot reshape"),
    ("all_finite", {"init_output": False}, [np.zeros(2)], OperatorError, "init_output=False"),
])
def test_bad_input_is_refused(name, params, inputs, error, match):
    with pytest.raises(error, match=match):
        run(name, params, *inputs)


def test_scatter_nd_refuses_a_coordinate_mxnet_would_write_outside_the_output():
    # MXNet 1.9.1 corrupts its heap here; negative coordinates are not wrapped either.
    for coordinate in (2, -1):
        with pytest.raises(OperatorError, match=f"index {coordinate} is out of bounds"):
            run("scatter_nd", {"shape": (2, 2)}, np.ones(1), np.array([[coordinate], [0]]))


@pytest.mark.parametrize("name, params, shapes, match", [
    ("GroupNorm", {"num_groups": 3}, [(2, 4, 5), None, None], "does not divide"),
    ("Crop", {"num_args": 1, "h_w": (3, 2), "offset": (3, 0)}, [(1, 1, 5, 5)],
     "does not fit"),
    ("_linalg_gemm2", {}, [(2, 3), (2, 3)], "do not multiply"),
    ("_linalg_trsm", {"rightside": True}, [(3, 3), (3, 2)], "does not fit"),
    ("_unravel_index", {"shape": (2, 3)}, [(2, 2)], "must be 1-D"),
])
def test_bad_shapes_are_refused_by_inference(name, params, shapes, match):
    with pytest.raises(ShapeError, match=match):
        infer(name, params, shapes, [None] * get_op(name).num_outputs(
            get_op(name).parse_params({k: str(v) for k, v in params.items()})))


def test_linalg_takes_float32_and_float64_only():
    x = mx.sym.var("x")
    assert mx.sym.linalg.det(x).infer_type(x="float64")[1] == [np.float64]
    with pytest.raises(DTypeError, match="float32 or float64"):
        mx.sym.linalg.det(x).infer_type(x="float16")


def test_gelqf_and_syevd_give_factors_that_rebuild_their_input():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(2, 3, 5))
    q, low = run("_linalg_gelqf", {}, a)
    np.testing.assert_allclose(low @ q, a, atol=1e-12)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(3), (2, 3, 3)),
                               atol=1e-12)
    assert np.all(np.triu(low, 1) == 0)
    # syevd reads the lower triangle only, as MXNet's LAPACK call does.
    s = np.tril(rng.normal(size=(4, 4)))
    u, lam = run("_linalg_syevd", {}, s + np.triu(rng.normal(size=(4, 4)), 1))
    full = s + np.tril(s, -1).T
    np.testing.assert_allclose(u @ full, lam[:, None] * u, atol=1e-12)
    assert np.all(np.diff(lam) > 0)
    rows = np.arange(4)
    assert np.all(u[rows, np.argmax(np.abs(u), axis=1)] > 0)   # MXNet's sign rule


@pytest.mark.parametrize("offset, lower", [(0, True), (0, False), (2, True), (-1, False)])
def test_maketrian_inverts_extracttrian(offset, lower):
    a = np.arange(50.0).reshape(2, 5, 5)
    params = {"offset": offset, "lower": lower}
    [tri] = run("_linalg_extracttrian", params, a)
    [made] = run("_linalg_maketrian", params, tri)
    keep = (np.tril if offset < 0 or (offset == 0 and lower) else np.triu)(np.ones((5, 5)),
                                                                         offset)
    np.testing.assert_array_equal(made, a * keep)
    assert tri.shape == (2, int(keep.sum()))


def _forward_backward(name, a, heads):
    x = mx.sym.var("a")
    grad = mx.nd.zeros(a.shape)
    exe = getattr(mx.sym.linalg, name)(x).bind(mx.cpu(), {"a": mx.nd.array(a)}, {"a": grad})
    outs = exe.forward(is_train=True)
    exe.backward([mx.nd.array(h) for h in heads])
    return [o.asnumpy() for o in outs], grad.asnumpy()


def test_det_and_slogdet_of_a_singular_matrix_give_it_no_gradient():
    # MXNet 1.9.1 stops the gradient of a matrix whose det is 0 (its numbers).
    a = np.array([[[1, 2], [1, 2]], [[2, 1], [1, 3]]], np.float32)
    (det,), grad = _forward_backward("det", a, [np.ones(2)])
    np.testing.assert_allclose(det, [0.0, 5.0], atol=1e-6)
    np.testing.assert_allclose(grad, [[[0, 0], [0, 0]], [[3, -1], [-1, 2]]], rtol=1e-6)
    (sign, logdet), grad = _forward_backward("slogdet", a, [np.zeros(2), np.ones(2)])
    np.testing.assert_array_equal(logdet, np.float32([-np.inf, 1.609438]))
    np.testing.assert_allclose(grad, [[[0, 0], [0, 0]], [[0.6, -0.2], [-0.2, 0.4]]], rtol=1e-6)


def test_gather_nd_gradient_reaches_the_rows_read_through_negative_coordinates():
    # MXNet 1.9.1's backward drops these (docs/api.md): its forward reads row 2 for -1.
    data = mx.nd.array(np.arange(6).reshape(3, 2))
    data.attach_grad()
    with mx.autograd.record():
        y = mx.nd.gather_nd(data, mx.nd.array([[-1, 0, -1]]))
    np.testing.assert_array_equal(y.asnumpy(), [[4, 5], [0, 1], [4, 5]])
    y.backward(mx.nd.array([[10, 20], [30, 40], [1, 2]]))
    np.testing.assert_array_equal(data.grad.asnumpy(), [[30, 40], [0, 0], [11, 22]])
