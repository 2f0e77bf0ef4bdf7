"""The `_linalg_` family's namespaces, potrf's (symmetric) gradient, and the refusals
of the linalg and coordinate-indexing operators; values are checked against MXNet in
test_mxnet_tensor_ops.py (fixture group more_ops)."""
import numpy as np
import pytest

import minimx as mx
from minimx.base import DTypeError, OperatorError, ShapeError
from minimx.ops import get_op
from minimx.ops.registry import OpContext

from ops_support import infer, run


def test_linalg_namespaces_hold_every_linalg_operator():
    names = [n for n in mx.ops.list_ops() if n.startswith("_linalg_")]
    assert len(names) == 13
    for name in names:
        short = name.removeprefix("_linalg_")
        assert getattr(mx.nd.linalg, short).__name__ == name
        assert getattr(mx.sym.linalg, short).__name__ == name
        assert get_op(f"linalg_{short}") is get_op(name)


def test_potrf_gradient_is_the_derivative_along_symmetric_directions():
    rng = np.random.default_rng(3)
    m = rng.normal(size=(3, 3))
    a = m @ m.T + 3 * np.eye(3)
    op = get_op("_linalg_potrf")
    p = op.parse_params({})
    head = rng.normal(size=(3, 3))

    def objective(x: np.ndarray) -> float:
        return float(np.sum(op.forward(p, OpContext(), [x])[0] * head))

    low = op.forward(p, OpContext(), [a])
    grad = op.backward(p, OpContext(), *op.backward_view(p, [a], low), [head])[0]
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
    ("gather_nd", {}, [np.zeros((2, 3)), np.array([[0, 1], [3, 0]])], OperatorError,
     "index 3 is out of bounds for axis 1 with size 3"),
    ("gather_nd", {}, [np.zeros((2, 3)), np.array([[-3], [0]])], OperatorError,
     "index -3 is out of bounds for axis 0"),
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
