"""`mx.test_utils` against MXNet 1.9.1's (the ``test_utils`` fixture group): which pairs
almost_equal / assert_almost_equal accept and the message naming the largest violation,
check_numeric_gradient's verdict on right and wrong custom gradients, the seeded random
helpers, and check_symbolic_backward's seeded result with grad_req 'add'."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx import test_utils as tu
from tests import custom_ops  # noqa: F401  (registers tu_square, as the fixture script does)

FIXTURES = Path(__file__).parent / "fixtures" / "test_utils"
RECORD = json.loads((FIXTURES / "test_utils.json").read_text())


@pytest.fixture(scope="module")
def arrays() -> dict[str, np.ndarray]:
    with np.load(FIXTURES / "test_utils.npz") as z:
        return {k: z[k] for k in z.files}


def _same_message(got: str | None, want: str | None) -> bool:
    """Equal messages, but for the last digits of the largest violation (MXNet's numpy 1.x
    computes a 0-d array's tolerance in float64, numpy 2 in the array's dtype)."""
    if got is None or want is None:
        return got == want
    number = r"Error (\S+) "
    found, wanted = re.search(number, got), re.search(number, want)
    return (found is not None and wanted is not None
            and re.sub(number, "", got) == re.sub(number, "", want)
            and np.isclose(float(found[1]), float(wanted[1]), rtol=1e-6, equal_nan=True))


def _outcome(call) -> str | None:
    """None if `call()` passes, else its AssertionError's message up to the arrays."""
    try:
        call()
    except AssertionError as exc:
        return str(exc).split("\n ACTUAL:")[0]
    return None


@pytest.mark.parametrize("case", sorted(RECORD["almost_equal"]))
def test_almost_equal_and_its_message_match_mxnet(case: str, arrays) -> None:
    want = RECORD["almost_equal"][case]
    a, b = arrays[f"eq:{case}:a"], arrays[f"eq:{case}:b"]
    kwargs = want["kwargs"]
    assert tu.almost_equal(a, b, **kwargs) is want["almost_equal"]
    left, right = ((mx.nd.array(a, dtype=a.dtype), mx.nd.array(b, dtype=b.dtype)) if want["nd"]
                   else (a, b))
    got = _outcome(lambda: tu.assert_almost_equal(left, right, **kwargs))
    assert _same_message(got, want["assert"]), (got, want["assert"])


@pytest.mark.parametrize("case", sorted(RECORD["gradients"]))
def test_check_numeric_gradient_verdict_matches_mxnet(case: str, arrays) -> None:
    want = RECORD["gradients"][case]
    sym = mx.sym.load_json(want["symbol"])
    location = {n: arrays[f"grad:{case}:{n}"] for n in sym.list_arguments()}
    np.random.seed(3)
    message = _outcome(lambda: tu.check_numeric_gradient(sym, location, **want["kwargs"]))
    assert (message is None) is want["passed"], message
    if message is not None:
        assert "NUMERICAL_x=" in message and "BACKWARD_x=" in message


def test_random_helpers_draw_what_mxnet_draws(arrays) -> None:
    np.random.seed(5)
    shapes = RECORD["random_shapes"]
    assert tu.rand_shape_2d() == tuple(shapes["2d"])
    assert tu.rand_shape_3d(4, 5, 6) == tuple(shapes["3d"])
    assert tu.rand_shape_nd(4, 3) == tuple(shapes["nd"])
    first, second = tu.random_arrays((2, 3), (4,))
    np.testing.assert_array_equal(first, arrays["random:arrays_0"])
    np.testing.assert_array_equal(second, arrays["random:arrays_1"])
    made = tu.rand_ndarray((3, 2))
    assert isinstance(made, mx.nd.NDArray) and made.dtype == np.float32
    np.testing.assert_array_equal(made.asnumpy(), arrays["random:ndarray"])
    assert tu.random_arrays(()).shape == () and tu.random_arrays(()).dtype == np.float32


def test_check_symbolic_backward_add_matches_mxnet(arrays) -> None:
    a, b = mx.sym.var("a"), mx.sym.var("b")
    loc = {k: arrays[f"backward_in:{k}"] for k in "ab"}
    head = np.full((2, 3), 2.0, np.float32)
    np.random.seed(RECORD["symbolic_backward"]["seed"])
    got = tu.check_symbolic_backward(a * b + a, loc, [head],
                                     {"a": head * (loc["b"] + 1), "b": head * loc["a"]},
                                     grad_req="add")
    for name in "ab":
        np.testing.assert_allclose(got[name].asnumpy(), arrays[f"backward:{name}"], rtol=1e-6)


def test_check_symbolic_backward_refuses_wrong_gradients_and_null_writes() -> None:
    x = mx.sym.var("x")
    loc = [np.array([[1.0, -2.0]], np.float32)]
    tu.check_symbolic_backward(x * 3, loc, [np.ones((1, 2))], [np.full((1, 2), 3.0)])
    with pytest.raises(AssertionError, match="EXPECTED_x"):
        tu.check_symbolic_backward(x * 3, loc, [np.ones((1, 2))], [np.full((1, 2), 2.0)])
    # 'null': the gradient array keeps its starting values, whatever `expected` says
    tu.check_symbolic_backward(x * 3, loc, [np.ones((1, 2))], {"x": np.zeros((1, 2))},
                               grad_req="null")


def test_check_symbolic_forward_returns_outputs_and_names_the_output() -> None:
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs")
    mat1, mat2 = np.array([[1, 2], [3, 4]]), np.array([[5, 6], [7, 8]])
    out = tu.check_symbolic_forward(mx.sym.dot(lhs, rhs, name="d"), [mat1, mat2],
                                    [np.array([[19, 22], [43, 50]])])
    np.testing.assert_array_equal(out[0].asnumpy(), [[19, 22], [43, 50]])
    with pytest.raises(AssertionError, match="EXPECTED_d_output"):
        tu.check_symbolic_forward(mx.sym.dot(lhs, rhs, name="d"), {"lhs": mat1, "rhs": mat2},
                                  {"d_output": np.zeros((2, 2))})


def test_check_numeric_gradient_grad_nodes_with_requests() -> None:
    x, w = mx.sym.var("x"), mx.sym.var("w")
    sym = mx.sym.FullyConnected(x, w, num_hidden=2, no_bias=True, name="fc")
    loc = {"x": np.random.uniform(-1, 1, (3, 4)), "w": np.random.uniform(-1, 1, (2, 4))}
    tu.check_numeric_gradient(sym, loc, grad_nodes={"x": "add", "w": "null"})
    tu.check_numeric_gradient(mx.sym.tanh(x), [np.array([[0.5, -1.0]])], dtype=np.float64,
                              numeric_eps=1e-6, rtol=1e-6)
    # None: MXNet 1.9.1's step for the dtype (2 ** -14 in float64)
    tu.check_numeric_gradient(mx.sym.tanh(x), [np.array([[0.5, -1.0]])], dtype=np.float64,
                              numeric_eps=None, rtol=1e-6)


def test_assert_almost_equal_broadcasts_and_checks_shapes_when_asked() -> None:
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))
    with pytest.raises(AssertionError, match=r"Location of maximum error: \(1, 2\)"):
        tu.assert_almost_equal(np.array([[1.0, 1, 1], [1, 1, 5]]), np.ones(3))
    with pytest.raises(AssertionError, match="are not equal"):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True, False]), np.array([True, True]))
    tu.assert_almost_equal(mx.nd.array([1, 2]), np.array([1, 2.0005], np.float32))


def test_same_assert_exception_and_np_reduce() -> None:
    assert tu.same(mx.nd.array([1, 2]), np.array([1, 2], np.float32))
    assert not tu.same(np.array([1, 2]), np.array([1, 3]))
    tu.assert_exception(mx.nd.array, mx.MinimxError, [1.0], ctx="cpu")
    with pytest.raises(AssertionError, match="did not raise"):
        tu.assert_exception(lambda: None, ValueError)
    data = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.np_reduce(data, (0, 2), True, np.sum),
                                  data.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(tu.np_reduce(data, None, False, np.max), data.max())
    assert tu.np_reduce(data, 1, False, np.sum).shape == (2, 4)


def test_tolerances_and_context() -> None:
    assert (tu.get_rtol(), tu.get_atol()) == (1e-5, 1e-20)
    assert (tu.get_rtol(dtype=np.float16), tu.get_atol(dtype=np.float32)) == (1e-2, 1e-3)
    assert tu.get_tols(np.float16(1), np.float32(1), None, None) == (1e-2, 1e-1)
    assert tu.get_tols(np.float32(1), np.float32(1), {np.dtype(np.float32): 0.5}, 0.25) == \
        (0.5, 0.25)
    with pytest.raises(mx.DTypeError, match="no default rtol for dtype complex64"):
        tu.get_rtol(dtype=np.complex64)
    assert tu.default_context() == mx.cpu() and tu.default_dtype() is np.float32
    with pytest.raises(mx.MinimxError, match="must be a Context"):
        tu.set_default_context("cpu")


def test_tolerances_are_returned_as_mxnet_returns_them() -> None:
    """Numbers as given (numpy scalars too), and integers' defaults the int 0."""
    ints = np.int32([1])
    assert tu.get_tols(ints, ints, None, None) == (0, 0)
    assert all(isinstance(t, int) for t in tu.get_tols(ints, ints, None, None))
    assert tu.get_tols(np.ones(1), np.ones(1), np.float32(0.5), None) == (0.5, 1e-20)


def test_np_reduce_keeps_negative_axes() -> None:
    data = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(tu.np_reduce(data, -1, True, np.sum), [[3.0], [12.0]])


def test_mismatch_message_computes_in_the_arrays_own_dtypes() -> None:
    """MXNet 1.9.1's message, verbatim: float16 data against int8 divides by a float64
    tolerance; a number is shown as given."""
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(np.float16([0.6763, 0.5]), np.int8([0, 0]), rtol=0)
    assert str(info.value) == (
        "\nItems are not equal:\nError 6.762695 exceeds tolerance rtol=0.000000e+00, "
        "atol=1.000000e-01 (mismatch 100.000000%).\nLocation of maximum error: (0,), "
        "a=0.67626953, b=0.00000000\n ACTUAL: array([0.6763, 0.5   ], dtype=float16)\n "
        "DESIRED: array([0, 0], dtype=int8)")
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(np.array(1.0, dtype=np.float32), 3.0)
    assert str(info.value).endswith("\n ACTUAL: array(1., dtype=float32)\n DESIRED: 3.0")


def test_bad_arguments_raise_minimx_errors(tmp_path: Path) -> None:
    x = mx.sym.var("x")
    with pytest.raises(mx.MinimxError, match="stype='csr'"):
        tu.rand_ndarray((2, 2), stype="csr")
    with pytest.raises(mx.MinimxError, match=r"location names \['y'\] do not match"):
        tu.check_numeric_gradient(mx.sym.tanh(x), {"y": np.ones(2)})
    with pytest.raises(mx.MinimxError, match="list of 1 arrays"):
        tu.check_symbolic_forward(mx.sym.tanh(x), [np.ones(2), np.ones(2)], [np.ones(2)])
    with pytest.raises(mx.MinimxError, match="it must have one"):
        tu.check_numeric_gradient(mx.sym.split(x, num_outputs=2), [np.ones((2, 2))])
    with pytest.raises(mx.MinimxError, match="numeric_eps=1e-06 is too small for float32"):
        tu.check_numeric_gradient(mx.sym.tanh(x), [np.ones(2)], numeric_eps=1e-6)
    with pytest.raises(mx.DTypeError, match="dtype='int32'"):
        tu.check_numeric_gradient(mx.sym.tanh(x), [np.ones(2)], dtype="int32")
    with pytest.raises(mx.MinimxError, match=r"grad_nodes \['w'\] are not arguments"):
        tu.check_numeric_gradient(mx.sym.tanh(x), [np.ones(2)], grad_nodes=["w"])
    with pytest.raises(mx.MinimxError, match="does not use the network"):
        tu.download("https://example.com/data/mnist.zip", dirname=str(tmp_path))
    there = tmp_path / "mnist.zip"
    there.write_bytes(b"zip")
    assert tu.download("https://example.com/data/mnist.zip", dirname=str(tmp_path)) == str(there)


def test_simple_forward() -> None:
    x = mx.sym.var("x")
    np.testing.assert_array_equal(tu.simple_forward(mx.sym.relu(x), x=np.array([-1.0, 2.0])),
                                  [0.0, 2.0])
    outs = tu.simple_forward(mx.sym.Group([x * 2, x + 1]), x=np.array([1.0]))
    assert [o.tolist() for o in outs] == [[2.0], [2.0]]
