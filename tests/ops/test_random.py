"""The random operators (minimx/ops/random.py) and `mx.nd.random` / `mx.sym.random`.

Draws cannot equal MXNet's, so these check what MXNet's draws share: shapes, dtypes,
parameter handling, the distributions' moments over many samples, and seeded
determinism. The densities and modulo are checked value for value against MXNet's
fixtures in test_mxnet_tensor_ops.py; here, how `%` maps onto them.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import minimx as mx
from minimx.ops.random import DISTRIBUTIONS

N = 200_000

# (mx.nd.random function, its arguments, mean, variance)
MOMENTS = {
    "uniform": ((2.0, 5.0), 3.5, 0.75),
    "normal": ((1.0, 2.0), 1.0, 4.0),
    "gamma": ((2.0, 3.0), 6.0, 18.0),             # beta is the scale
    "exponential": ((4.0,), 4.0, 16.0),            # MXNet's function takes the scale
    "poisson": ((3.0,), 3.0, 3.0),
    "negative_binomial": ((3, 0.4), 4.5, 11.25),   # failures before the 3rd success
    "generalized_negative_binomial": ((2.0, 0.5), 2.0, 4.0),  # var mu + alpha mu^2
}


def _assert_moments(x: np.ndarray, mean: float, var: float, what: str) -> None:
    x = x.astype(np.float64)
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / x.size), (what, x.mean(), mean)
    assert x.var() == pytest.approx(var, rel=0.04), what


@pytest.mark.parametrize("dist", sorted(MOMENTS))
def test_scalar_samplers_have_their_distributions_moments(dist):
    args, mean, var = MOMENTS[dist]
    mx.random.seed(11)
    x = getattr(mx.nd.random, dist)(*args, shape=(N,), dtype="float64")
    assert x.shape == (N,) and x.dtype == np.float64
    _assert_moments(x.asnumpy(), mean, var, dist)


@pytest.mark.parametrize("dist", sorted(MOMENTS))
def test_array_samplers_draw_each_row_from_its_own_parameters(dist):
    args, mean, var = MOMENTS[dist]
    # row 0 with the parameters of MOMENTS, row 1 with the first one doubled (uniform:
    # its bounds shifted by one)
    second = (args[0] + 1, args[1] + 1) if dist == "uniform" else (args[0] * 2, *args[1:])
    rows = [mx.nd.array([a, b], dtype="float64") for a, b in zip(args, second, strict=True)]
    mx.random.seed(12)
    x = getattr(mx.nd.random, dist)(*rows, shape=(N // 4,)).asnumpy()
    assert x.shape == (2, N // 4) and x.dtype == np.float32   # dtype None: float32
    _assert_moments(x[0], mean, var, dist)
    mx.random.seed(13)
    want = getattr(mx.nd.random, dist)(*second, shape=(N // 4,)).asnumpy()
    _assert_moments(x[1], float(want.mean()), float(want.var()), f"{dist} row 1")


def test_randint_is_uniform_over_its_integers():
    mx.random.seed(5)
    x = mx.nd.random.randint(-2, 3, shape=(N,)).asnumpy()
    assert x.dtype == np.int32
    counts = np.bincount(x + 2, minlength=5) / N
    np.testing.assert_allclose(counts, 0.2, atol=0.005)
    assert mx.nd.random.randint(0, 4, shape=(3,), dtype="int64").dtype == np.int64


def test_the_same_seed_gives_the_same_draws_and_another_seed_others():
    def draws(seed: int) -> list[np.ndarray]:
        mx.random.seed(seed)
        out = [getattr(mx.nd.random, d)(*MOMENTS[d][0], shape=(50,)) for d in DISTRIBUTIONS]
        out += [mx.nd.random.randint(0, 100, shape=(50,)),
                mx.nd.random.shuffle(mx.nd.arange(50)),
                mx.nd.random.multinomial(mx.nd.full((50, 4), 0.25)),
                mx.nd.Dropout(mx.nd.ones((50,)), p=0.5, mode="always")]
        return [a.asnumpy() for a in out]
    first, again, other = draws(3), draws(3), draws(4)
    for a, b, c in zip(first, again, other, strict=True):
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)
    # Any integer seeds, wrapped to 32 bits as MXNet's C int takes it.
    for a, b in zip(draws(-1), draws(2 ** 32 - 1), strict=True):
        np.testing.assert_array_equal(a, b)


def test_dtypes_shapes_and_defaults_are_mxnets():
    assert mx.nd.random.uniform().shape == (1,)          # one sample, as MXNet's
    assert mx.nd.random.normal(shape=(2, 3)).dtype == np.float32
    assert mx.nd.random.gamma(shape=4, dtype="float16").dtype == np.float16
    assert mx.nd.random.randn(2, 3, loc=5.0).shape == (2, 3)
    like = mx.nd.random.uniform_like(mx.nd.zeros((2, 3), dtype="float64"), low=1, high=2)
    assert like.shape == (2, 3) and like.dtype == np.float64
    assert 1 <= like.asnumpy().min() and like.asnumpy().max() < 2
    sampled = mx.nd.random.poisson(mx.nd.array([[1.0, 2.0]]), shape=(2, 2), dtype="float64")
    assert sampled.shape == (1, 2, 2, 2) and sampled.dtype == np.float64
    # MXNet's exponential functions take the scale; the operator takes the rate.
    mx.random.seed(0)
    assert mx.nd._random_exponential(lam=4.0, shape=(N,)).asnumpy().mean() == \
        pytest.approx(0.25, rel=0.02)
    out = mx.nd.zeros((3, 2))
    mx.nd.random.uniform(5, 6, out=out)
    assert out.asnumpy().min() >= 5


@pytest.mark.parametrize("call, error, match", [
    (lambda: mx.nd.random.uniform(3, 2), mx.OperatorError, r"low=3 must not exceed high=2"),
    (lambda: mx.nd.random.normal(0, -1), mx.OperatorError, r"scale=-1 must not be negative"),
    (lambda: mx.nd.random.gamma(0, 1), mx.OperatorError, r"alpha=0 must be positive"),
    (lambda: mx.nd.random.gamma(1, -2), mx.OperatorError, r"beta=-2 must be positive"),
    (lambda: mx.nd._random_exponential(lam=0), mx.OperatorError, r"lam=0 must be positive"),
    (lambda: mx.nd.random.poisson(-1), mx.OperatorError, r"lam=-1 must not be negative"),
    (lambda: mx.nd.random.negative_binomial(2, 1.5), mx.OperatorError,
     r"p=1.5 must be in \(0, 1\]"),
    (lambda: mx.nd.random.generalized_negative_binomial(1, -1), mx.OperatorError,
     r"alpha=-1 must not be negative"),
    (lambda: mx.nd.random.uniform(float("inf"), 1), mx.OperatorError,
     r"low=inf must be a finite number"),
    (lambda: mx.nd.random.uniform_like(mx.nd.zeros(2), low=1, high=0), mx.OperatorError,
     r"_random_uniform_like: low=1 must not exceed high=0"),
    (lambda: mx.nd.random.uniform_like(mx.nd.zeros(2, dtype="int32")), mx.DTypeError,
     r"_random_uniform_like: samples a float distribution; the input is int32"),
    (lambda: mx.nd.random.uniform(mx.nd.zeros(2), 1.0), mx.OperatorError,
     r"mx.nd.random.uniform: the parameters must be all numbers or all NDArrays"),
    (lambda: mx.nd.random.normal(mx.nd.zeros(2), mx.nd.zeros(3)), mx.ShapeError, r"\(3,\)"),
    (lambda: mx.nd.random.uniform(0, 1, (2,), "float32", None, None, 7), mx.MinimxError,
     r"at most 6 positional arguments"),
    (lambda: mx.nd.random.shuffle(mx.nd.array(1.0)), mx.ShapeError,
     r"cannot shuffle a scalar"),
])
def test_bad_parameters_are_refused_naming_the_operator_and_values(call, error, match):
    with pytest.raises(error, match=match):
        call().asnumpy()


def test_bad_parameter_arrays_are_refused_naming_the_node_and_element():
    lo, hi = mx.sym.var("lo"), mx.sym.var("hi")
    ex = mx.sym.random.uniform(lo, hi, shape=(2,), name="u").simple_bind(
        mx.cpu(), grad_req="null", lo=(3,), hi=(3,))
    with pytest.raises(mx.MinimxError, match=r"u \(_sample_uniform\): low=2 must not exceed "
                                             r"high=1 \(element 1\)"):
        ex.forward(lo=mx.nd.array([0, 2, 0]), hi=mx.nd.array([1, 1, 1]))
        mx.nd.waitall()


def test_a_bad_scalar_parameter_fails_at_inference_naming_the_node():
    sym = mx.sym.random.uniform(2, 1, shape=(2,), name="u") * 2
    with pytest.raises(mx.OperatorError, match=r"u \(_random_uniform\): low=2 must not "
                                               r"exceed high=1"):
        sym.infer_shape()


def test_a_vae_style_graph_infers_the_noise_shape_and_trains():
    """z = mu + exp(logvar / 2) * eps, eps drawn in the graph without a shape: the
    sampler takes it from the graph, as MXNet's; the noise gets no gradient, so mu's
    gradient is the head gradient."""
    data = mx.sym.var("data")
    mu = mx.sym.FullyConnected(data, num_hidden=3, name="mu")
    logvar = mx.sym.FullyConnected(data, num_hidden=3, name="logvar")
    eps = mx.sym.random.normal(0, 1, name="eps")
    z = mu + mx.sym.exp(0.5 * logvar) * eps
    _, out_shapes, _ = z.infer_shape(data=(4, 5))
    assert out_shapes == [(4, 3)]
    ex = z.simple_bind(mx.cpu(), data=(4, 5))
    for arr in ex.arg_dict.values():
        arr[:] = np.random.default_rng(0).normal(size=arr.shape)
    mx.random.seed(1)
    first = ex.forward(is_train=True)[0].asnumpy()
    mx.random.seed(1)
    np.testing.assert_array_equal(ex.forward(is_train=True)[0].asnumpy(), first)
    head = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    ex.backward(mx.nd.array(head))
    np.testing.assert_allclose(ex.grad_dict["mu_bias"].asnumpy(), head.sum(0), rtol=1e-5)
    nodes = json.loads(z.tojson())["nodes"]
    assert [n["attrs"] for n in nodes if n["op"] == "_random_normal"] == [
        {"loc": "0", "scale": "1"}]


def test_the_symbol_namespace_chooses_the_operator_by_the_parameters():
    lo = mx.sym.var("lo")
    ops = {name: json.loads(sym.tojson())["nodes"][-1]["op"] for name, sym in {
        "numbers": mx.sym.random.uniform(0, 1, shape=(2,)),
        "arrays": mx.sym.random.uniform(lo, lo + 1),
        "like": mx.sym.random.gamma_like(lo),
        "randint": mx.sym.random.randint(0, 5, shape=(2,)),
        "multinomial": mx.sym.random.multinomial(lo),
        "shuffle": mx.sym.random.shuffle(lo)}.items()}
    assert ops == {"numbers": "_random_uniform", "arrays": "_sample_uniform",
                   "like": "_random_gamma_like", "randint": "_random_randint",
                   "multinomial": "_sample_multinomial", "shuffle": "_shuffle"}
    # symbols' multinomial gives the log-probabilities by default, as MXNet's
    assert mx.sym.random.multinomial(lo, name="m").list_outputs() == ["m_output0", "m_output1"]
    # MXNet's aliases name the same operators
    assert {json.loads(f(shape=(2,)).tojson())["nodes"][-1]["op"] for f in (
        mx.sym.uniform, mx.sym.random_uniform, mx.sym._random_uniform)} == {"_random_uniform"}


def test_multinomial_follows_its_probabilities_and_differentiates_its_log_likelihood():
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32)
    mx.random.seed(2)
    data = mx.nd.array(probs)
    samples, logp = mx.nd.random.multinomial(data, shape=(N // 4,), get_prob=True)
    s = samples.asnumpy()
    assert s.shape == (2, N // 4) and s.dtype == np.int32
    for row in range(2):
        np.testing.assert_allclose(np.bincount(s[row], minlength=3) / s.shape[1], probs[row],
                                   atol=0.01)
    np.testing.assert_allclose(logp.asnumpy(), np.log(np.take_along_axis(probs, s, 1)),
                               rtol=1e-6)
    # The gradient of sum(head * log p[sample]): head / p summed per category.
    op = mx.ops.get_op("_sample_multinomial")
    p = op.parse_params({"shape": "(4,)", "get_prob": "True"})
    picked = np.array([[2, 2, 0, 2], [1, 0, 0, 0]], np.int32)
    head = np.arange(8, dtype=np.float32).reshape(2, 4)
    (grad,) = op.backward(p, mx.ops.OpContext(), [probs], [picked, None],
                          [np.zeros((2, 4)), head])
    want = np.array([[2 / 0.1, 0, (0 + 1 + 3) / 0.7], [(5 + 6 + 7) / 0.5, 4 / 0.25, 0]])
    np.testing.assert_allclose(grad, want, rtol=1e-6)
    # A category of probability 0 is never drawn: its gradient is 0, not 0 / 0.
    (grad,) = op.backward(p, mx.ops.OpContext(), [np.array([[0.0, 0.5, 0.5]], np.float32)],
                          [np.array([[1, 2, 2, 1]], np.int32), None],
                          [np.zeros((1, 4)), np.ones((1, 4))])
    assert grad.tolist() == [[0, 4, 4]]
    assert mx.nd.random.multinomial(mx.nd.array([0.5, 0.5]), dtype="uint8").shape == (1,)


def test_shuffle_permutes_whole_rows():
    x = np.arange(40, dtype=np.float32).reshape(10, 2, 2)
    mx.random.seed(9)
    y = mx.nd.random.shuffle(mx.nd.array(x)).asnumpy()
    assert not np.array_equal(x, y)
    order = y[:, 0, 0].astype(int) // 4
    np.testing.assert_array_equal(np.sort(order), np.arange(10))
    np.testing.assert_array_equal(y, x[order])
    assert mx.nd.random.shuffle(mx.nd.array(x, dtype="int32")).dtype == np.int32


# -- modulo: `%` as MXNet maps it ---------------------------------------------------------------
A = [-7.0, 7.0, -7.0, 7.0, 5.5, -5.5, 0.0, 3.0]
B = [3.0, -3.0, -3.0, 3.0, 2.0, 2.0, 3.0, 0.0]


@pytest.mark.parametrize("dtype, want", [
    # MXNet 1.9.1's values: the divisor's sign (Python's %), 0 for a zero divisor
    ("float32", [2.0, -2.0, -1.0, 1.0, 1.5, 0.5, 0.0, 0.0]),
    ("int32", [2, -2, -1, 1, 1, 1, 0, 0]),
])
def test_ndarray_percent_is_mxnets_modulo(dtype, want):
    a, b = mx.nd.array(A, dtype=dtype), mx.nd.array(B, dtype=dtype)
    assert (a % b).asnumpy().tolist() == want
    assert (7 % b).asnumpy().tolist() == [1, -2, -2, 1, 1, 1, 1, 0]
    assert (a % 3).asnumpy().tolist() == ([2, 1, 2, 1, 2.5, 0.5, 0, 0] if dtype == "float32"
                                          else [2, 1, 2, 1, 2, 1, 0, 0])
    a %= -3
    assert a.asnumpy().tolist() == ([-1, -2, -1, -2, -0.5, -2.5, 0, 0] if dtype == "float32"
                                    else [-1, -2, -1, -2, -1, -2, 0, 0])
    rows = mx.nd.array([[5, -5]], dtype=dtype) % mx.nd.array([[3], [-3]], dtype=dtype)
    assert rows.asnumpy().tolist() == [[2, 1], [-1, -2]]


def test_symbol_percent_builds_mxnets_operators():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    ops = [json.loads(s.tojson())["nodes"][-1]["op"] for s in (a % b, a % 2, 2 % a)]
    assert ops == ["_mod", "_mod_scalar", "_rmod_scalar"]
    out = (a % b).eval(a=mx.nd.array(A), b=mx.nd.array(B))[0]
    assert out.asnumpy().tolist() == [2.0, -2.0, -1.0, 1.0, 1.5, 0.5, 0.0, 0.0]
