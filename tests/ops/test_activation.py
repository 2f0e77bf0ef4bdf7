"""Activation operators: kernels against plain references, gradients against
finite differences, SoftmaxOutput's loss gradient, Dropout's randomness, and
shape / dtype inference and parameter errors."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minimx as mx
from minimx.base import DTypeError, OperatorError, ShapeError
from minimx.ops import get_op
from minimx.ops.registry import OpContext
from minimx.ops.special import erf

from gradcheck import check_gradient
from ops_support import SHAPES, floats, nonzero, run, vectorized

SMALL_SHAPES = hnp.array_shapes(min_dims=2, max_dims=3, max_side=3)
FAST = settings(max_examples=30, deadline=None, database=None)
SELU_LAMBDA, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772


def plain_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_erf_matches_math_erf():
    x = np.concatenate([np.linspace(-7, 7, 2801), [0.0, -0.0, 1e-300, 2.5, -2.5]])
    np.testing.assert_allclose(erf(x), vectorized(math.erf)(x), rtol=1e-14, atol=1e-15)
    assert np.array_equal(erf(np.array([np.inf, -np.inf])), [1.0, -1.0])
    assert np.isnan(erf(np.array([np.nan]))[0])
    assert erf(np.ones(3, np.float32)).dtype == np.float32


ACTIVATION_REFS = {
    "relu": lambda x: x * (x > 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": vectorized(math.tanh),
    "softrelu": vectorized(lambda v: math.log1p(math.exp(v))),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


@pytest.mark.parametrize("act_type", sorted(ACTIVATION_REFS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@FAST
@given(data=st.data())
def test_activation_forward(act_type, dtype, data):
    x = data.draw(floats(dtype=dtype))
    out = run("Activation", {"act_type": act_type}, x)
    assert out.dtype == dtype and out.shape == x.shape
    np.testing.assert_allclose(out, ACTIVATION_REFS[act_type](x.astype(np.float64)),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-7)


@pytest.mark.parametrize("act_type", sorted(ACTIVATION_REFS))
@FAST
@given(x=nonzero(SMALL_SHAPES))
def test_activation_gradient(act_type, x):
    check_gradient("Activation", {"act_type": act_type}, [x])


def plain_elu(x, s):
    return np.where(x > 0, x, s * (np.exp(np.minimum(x, 0)) - 1))


LEAKY_REFS = {
    "leaky": lambda x, s: np.where(x > 0, x, s * x),
    "elu": plain_elu,
    "selu": lambda x, s: SELU_LAMBDA * plain_elu(x, SELU_ALPHA),
    "gelu": lambda x, s: 0.5 * x * (1 + vectorized(math.erf)(x / math.sqrt(2))),
}


@pytest.mark.parametrize("act_type", sorted(LEAKY_REFS))
@FAST
@given(x=nonzero(SMALL_SHAPES), slope=st.floats(0.05, 2.0))
def test_leaky_relu_family(act_type, x, slope):
    attrs = {"act_type": act_type, "slope": repr(slope)}
    np.testing.assert_allclose(run("LeakyReLU", attrs, x)[0], LEAKY_REFS[act_type](x, slope),
                               rtol=1e-12, atol=1e-15)
    check_gradient("LeakyReLU", attrs, [x])


def test_leaky_relu_defaults_and_errors():
    op = get_op("LeakyReLU")
    p = op.parse_params({})
    assert (p.act_type, p.slope, p.lower_bound, p.upper_bound) == ("leaky", 0.25, 0.125, 0.334)
    assert op.input_names(p) == ["data"] and op.output_names(p) == ["output"]
    with pytest.raises(OperatorError, match="act_type"):
        op.parse_params({"act_type": "swish"})
    with pytest.raises(OperatorError, match="act_type"):
        get_op("Activation").parse_params({})


@FAST
@given(x=nonzero(shape=hnp.array_shapes(min_dims=2, max_dims=4, max_side=3)),
       per_channel=st.booleans(), data=st.data())
def test_prelu(x, per_channel, data):
    channels = x.shape[1] if per_channel else 1
    gamma = data.draw(floats(0.05, 1.0, shape=(channels,)))
    out, = run("LeakyReLU", {"act_type": "prelu"}, x, gamma)
    g = gamma.reshape((1, channels) + (1,) * (x.ndim - 2))
    np.testing.assert_allclose(out, np.where(x > 0, x, g * x), rtol=1e-12)
    check_gradient("LeakyReLU", {"act_type": "prelu"}, [x, gamma])


def test_prelu_shape_inference():
    op = get_op("LeakyReLU")
    p = op.parse_params({"act_type": "prelu"})
    assert op.input_names(p) == ["data", "gamma"]
    assert op.infer_shape(p, [(2, 5, 4), None], [None]) == ([(2, 5, 4), (5,)], [(2, 5, 4)])
    assert op.infer_shape(p, [None, None], [(2, 5)]) == ([(2, 5), (5,)], [(2, 5)])
    assert op.infer_shape(p, [(2, 5), (1,)], [None])[0] == [(2, 5), (1,)]
    with pytest.raises(ShapeError, match="gamma"):
        op.infer_shape(p, [(2, 5), (4,)], [None])


@FAST
@given(x=nonzero(SMALL_SHAPES))
def test_rrelu(x):
    attrs = {"act_type": "rrelu", "lower_bound": "0.2", "upper_bound": "0.5"}
    op = get_op("LeakyReLU")
    p = op.parse_params(attrs)
    # Both visible, as in MXNet 1.9.1 (a symbol of it is a group of two).
    assert op.output_names(p) == ["output", "mask"] and op.num_visible_outputs(p) == 2
    out, mask = run("LeakyReLU", attrs, x)
    np.testing.assert_allclose(out, np.where(x > 0, x, 0.35 * x), rtol=1e-12)
    out, mask = run("LeakyReLU", attrs, x, is_train=True, seed=3)
    assert mask.shape == x.shape and np.all((mask >= 0.2) & (mask < 0.5))
    np.testing.assert_allclose(out, np.where(x > 0, x, mask * x), rtol=1e-12)
    check_gradient("LeakyReLU", attrs, [x], is_train=True)
    assert op.infer_shape(p, [(2, 3)], [None, None]) == ([(2, 3)], [(2, 3), (2, 3)])


@st.composite
def softmax_case(draw):
    x = draw(floats(-10.0, 10.0, shape=SHAPES))
    axis = draw(st.integers(-x.ndim, x.ndim - 1))
    temperature = draw(st.sampled_from([None, 0.5, 2.0]))
    return x, axis, temperature


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@FAST
@given(case=softmax_case())
def test_softmax_family(name, case):
    x, axis, temperature = case
    attrs = {"axis": str(axis), "temperature": str(temperature)}
    expected = plain_softmax(x / (temperature or 1.0), axis)
    if name == "log_softmax":
        expected = np.log(expected)
    np.testing.assert_allclose(run(name, attrs, x), expected, rtol=1e-10, atol=1e-12)
    check_gradient(name, attrs, [x[tuple(slice(0, 3) for _ in x.shape)]])


@FAST
@given(x=floats(shape=st.tuples(st.integers(1, 3), st.integers(1, 5))), data=st.data())
def test_softmax_with_length(x, data):
    lengths = np.array(data.draw(st.lists(st.integers(1, x.shape[1]), min_size=x.shape[0],
                                          max_size=x.shape[0])), dtype=np.int32)
    attrs = {"use_length": "True"}
    out = run("softmax", attrs, x, lengths)
    for row, n in enumerate(lengths):
        np.testing.assert_allclose(out[row, :n], plain_softmax(x[row, :n], 0),
                                   rtol=1e-10, atol=1e-12)
        assert np.all(out[row, n:] == 0)
    grads = check_gradient("softmax", attrs, [x, lengths])
    assert grads[1] is None


def test_softmax_parameters_and_inference():
    op = get_op("softmax")
    p = op.parse_params({})
    assert (p.axis, p.temperature, p.dtype, p.use_length) == (-1, None, None, False)
    p = op.parse_params({"use_length": "1", "axis": "1", "dtype": "float64"})
    assert op.input_names(p) == ["data", "length"]
    assert op.infer_shape(p, [(2, 3, 4), None], [None]) == ([(2, 3, 4), (2, 4)], [(2, 3, 4)])
    f16, f64, i32 = np.dtype(np.float16), np.dtype(np.float64), np.dtype(np.int32)
    assert op.infer_type(p, [f16, i32], [None]) == ([f16, i32], [f64])
    out = op.forward(p, OpContext(), [np.zeros((1, 2, 2), f16), np.array([[1, 2]], i32)])
    assert out.dtype == f64
    np.testing.assert_array_equal(out[0], [[1.0, 0.5], [0.0, 0.5]])
    with pytest.raises(ShapeError, match="axis 3"):
        run("softmax", {"axis": "3"}, np.zeros((2, 3)))
    with pytest.raises(OperatorError, match="dtype"):
        op.parse_params({"dtype": "int32"})


def test_softmax_lengths_as_mxnet_takes_them():
    # MXNet 1.9.1: 1-d data takes one length, of shape (1,) or 0-d; log_softmax and
    # softmin have no length input, so use_length fails.
    x = mx.nd.array([1.0, 2.0, 3.0, 4.0])
    for length in (mx.nd.array([2], dtype="int32"), mx.nd.array(2, dtype="int64")):
        np.testing.assert_allclose(mx.nd.softmax(x, length, use_length=True).asnumpy(),
                                   [0.26894143, 0.7310586, 0.0, 0.0], rtol=1e-6)
    for name in ("log_softmax", "softmin"):
        with pytest.raises(OperatorError, match="only softmax"):
            getattr(mx.nd, name)(x, use_length=True)
        assert getattr(mx.sym, name)(mx.sym.var("x"), use_length=True).list_arguments() == ["x"]


def test_softmax_refuses_lengths_of_a_float_type_naming_the_node():
    # MXNet 1.9.1: "This operation only support integer types, not float32".
    x = mx.nd.array([[1.0, 2.0, 3.0]])
    with pytest.raises(DTypeError, match=r"softmax.*length input must be of an integer type, "
                                         r"not float32"):
        mx.nd.softmax(x, mx.nd.array([2.5]), use_length=True)
    y = mx.sym.softmax(mx.sym.var("d"), mx.sym.var("n"), use_length=True, name="att")
    with pytest.raises(DTypeError, match=r"att \(softmax\): the length input .* not float64"):
        y.simple_bind(mx.cpu(), d=(1, 3), n=(1,), type_dict={"n": "float64"})
    assert y.simple_bind(mx.cpu(), d=(1, 3), n=(1,), type_dict={"n": "uint8"}) is not None


@pytest.mark.parametrize("mode, min_dims", [("instance", 2), ("channel", 3)])
@FAST
@given(data=st.data())
def test_softmax_activation(mode, min_dims, data):
    x = data.draw(floats(shape=hnp.array_shapes(min_dims=min_dims, max_dims=4, max_side=3)))
    out = run("SoftmaxActivation", {"mode": mode}, x)
    expected = plain_softmax(x, 1 if mode == "channel" else -1)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    check_gradient("SoftmaxActivation", {"mode": mode}, [x])


def test_softmax_activation_channel_mode_refuses_2d_data_as_mxnet():
    # MXNet 1.9.1: "Input need to have a least 3 dimensions when mode=channel".
    with pytest.raises(ShapeError, match=r"mode=channel needs data of at least 3 axes"):
        mx.nd.SoftmaxActivation(mx.nd.ones((2, 3)), mode="channel")


def test_softmax_activation_instance_mode_is_mxnets_last_axis():
    # MXNet 1.9.1's SoftmaxActivation of arange(12).reshape(1, 2, 3, 2) / 4, with and
    # without MKLDNN: each last-axis pair is softmax([a, a + 0.25]).
    x = np.arange(12, dtype=np.float32).reshape(1, 2, 3, 2) / 4
    out = run("SoftmaxActivation", {}, x)
    np.testing.assert_allclose(out, np.tile([0.4378, 0.5622], (1, 2, 3, 1)), atol=1e-4)


# -- SoftmaxOutput ------------------------------------------------------------------------

def softmax_output_grad(prob, label, grad_scale=1.0, ignore_label=-1.0, use_ignore=False,
                        normalization="null", smooth_alpha=0.0):
    """The cross-entropy gradient for (M, K) probabilities and M labels, row by row."""
    m, k = prob.shape
    grad = np.zeros_like(prob)
    valid = 0
    for i in range(m):
        ignored = int(label[i]) == int(ignore_label)
        valid += not ignored
        if use_ignore and ignored:
            continue
        for j in range(k):
            target = (1 - smooth_alpha) if j == int(label[i]) else smooth_alpha / max(k - 1, 1)
            grad[i, j] = prob[i, j] - target
    count = {"null": 1, "batch": m, "valid": max(valid, 1)}[normalization]
    return grad * grad_scale / count


def softmax_output_backward(attrs, x, label, out_grad=None):
    op = get_op("SoftmaxOutput")
    p = op.parse_params(attrs)
    out = op.forward(p, OpContext(), [x, label])
    g = np.ones_like(out) * 7.0 if out_grad is None else out_grad  # ignored unless out_grad
    # The data comes as backward_reads leaves it: shape and dtype only.
    return out, op.backward(p, OpContext(), *op.backward_view(p, [x, label], [out]), [g])


@st.composite
def classification(draw):
    n, k = draw(st.integers(1, 4)), draw(st.integers(2, 5))
    x = draw(floats(shape=(n, k)))
    label = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)), float)
    return x, label


@FAST
@given(case=classification(), grad_scale=st.sampled_from([1.0, 0.5]),
       normalization=st.sampled_from(["null", "batch", "valid"]),
       use_ignore=st.booleans(), smooth_alpha=st.sampled_from([0.0, 0.1]))
def test_softmax_output(case, grad_scale, normalization, use_ignore, smooth_alpha):
    x, label = case
    attrs = {"grad_scale": str(grad_scale), "normalization": normalization,
             "use_ignore": str(use_ignore), "ignore_label": "1", "smooth_alpha": str(smooth_alpha)}
    out, (dx, dlabel) = softmax_output_backward(attrs, x, label)
    np.testing.assert_allclose(out, plain_softmax(x, 1), rtol=1e-12)
    expected = softmax_output_grad(out, label, grad_scale, 1.0, use_ignore, normalization,
                                   smooth_alpha)
    np.testing.assert_allclose(dx, expected, rtol=1e-12, atol=1e-15)
    assert dlabel is None


def test_softmax_output_layouts():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 2, 2))
    out, _ = softmax_output_backward({}, x, np.zeros(2))
    np.testing.assert_allclose(out, plain_softmax(x.reshape(2, -1), 1).reshape(x.shape))
    out, _ = softmax_output_backward({"preserve_shape": "1"}, x, np.zeros((2, 3, 2)))
    np.testing.assert_allclose(out, plain_softmax(x, -1))
    # multi_output: classes on axis 1, one label per (n, h, w); null normalization
    # divides by the number of positions, as MXNet does.
    label = rng.integers(0, 3, (2, 4)).astype(float)
    out, (dx, _) = softmax_output_backward({"multi_output": "1"}, x, label)
    np.testing.assert_allclose(out, plain_softmax(x, 1))
    flat = out.transpose(0, 2, 3, 1).reshape(-1, 3)
    expected = softmax_output_grad(flat, label.reshape(-1)) / 4
    np.testing.assert_allclose(dx, expected.reshape(2, 2, 2, 3).transpose(0, 3, 1, 2))


def test_softmax_output_probability_labels_and_out_grad():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4))
    target = plain_softmax(rng.standard_normal((3, 4)), 1)
    out, (dx, _) = softmax_output_backward({"grad_scale": "2"}, x, target)
    np.testing.assert_allclose(dx, (out - target) * 2)
    g = rng.standard_normal((3, 4))
    label = np.array([0.0, 3.0, 1.0])
    out, (dx, _) = softmax_output_backward({"out_grad": "True"}, x, label, g)
    np.testing.assert_allclose(dx, softmax_output_grad(out, label) * g)


def test_softmax_output_out_grad_reads_the_head_gradient_in_an_executor():
    """out_grad=True multiplies by the head gradient; otherwise it is ignored (a loss)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    label = np.array([0.0, 2.0], np.float32)
    head = rng.uniform(1, 3, (2, 3)).astype(np.float32)
    for out_grad, scale in ((True, head), (False, 1.0)):
        sym = mx.sym.SoftmaxOutput(mx.sym.var("data"), name="sm", out_grad=out_grad)
        ex = sym.simple_bind(mx.cpu(), data=x.shape)
        out = ex.forward(is_train=True, data=x, sm_label=label)[0].asnumpy()
        ex.backward([mx.nd.array(head)])
        np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(),
                                   softmax_output_grad(out, label) * scale, rtol=1e-6)


def test_softmax_output_shape_inference():
    op = get_op("Softmax")
    assert op.name == "SoftmaxOutput" and op.input_names(op.parse_params({})) == ["data", "label"]
    p = op.parse_params({})
    assert op.infer_shape(p, [(4, 10), None], [None]) == ([(4, 10), (4,)], [(4, 10)])
    assert op.infer_shape(p, [None, None], [(4, 10)]) == ([(4, 10), (4,)], [(4, 10)])
    assert op.infer_shape(p, [(4, 10), (4, 10)], [None])[0] == [(4, 10), (4, 10)]
    with pytest.raises(ShapeError):
        op.infer_shape(p, [(4, 10), (5,)], [None])
    p = op.parse_params({"multi_output": "true"})
    data = (2, 3, 4, 5)
    assert op.infer_shape(p, [data, None], [None])[0] == [data, (2, 20)]
    for label in [(2, 4, 5), (2, 1, 4, 5), data]:
        assert op.infer_shape(p, [data, label], [None])[0] == [data, label]
    with pytest.raises(ShapeError, match="label"):
        op.infer_shape(p, [data, (2, 7)], [None])
    with pytest.raises(OperatorError, match="normalization"):
        op.parse_params({"normalization": "mean"})


# -- Dropout --------------------------------------------------------------------------------

@FAST
@given(x=floats(dtype=np.float32), p=st.sampled_from([0.1, 0.5, 0.9]))
def test_dropout(x, p):
    attrs = {"p": str(p)}
    out, mask = run("Dropout", attrs, x)
    assert np.array_equal(out, x) and out is not x and np.all(mask == 1)
    out, mask = run("Dropout", attrs, x, is_train=True, seed=5)
    scale = np.float32(1 / (1 - p))
    assert out.dtype == np.float32 and mask.dtype == np.float32
    assert np.all((mask == 0) | (mask == scale))
    np.testing.assert_allclose(out, x * mask, rtol=1e-6)
    out2, _ = run("Dropout", {"p": str(p), "mode": "always"}, x, seed=5)
    np.testing.assert_array_equal(out, out2)
    check_gradient("Dropout", attrs, [x.astype(np.float64)], is_train=True)


def test_backward_uses_the_last_forwards_draws_and_values():
    # MXNet's Dropout(mode='always') backward uses the mask of the last forward, also an
    # inference one, which minimx's backward re-runs for training; so do random operators
    data = mx.sym.var("data")
    net = mx.sym.Group([mx.sym.Dropout(data, p=0.5, mode="always"),
                        data * mx.sym.random.uniform(shape=(2, 8))])
    exe = net.simple_bind(mx.cpu(), data=(2, 8))
    exe.arg_arrays[0][:] = 1
    for _ in range(2):
        dropped, noise = (o.asnumpy().copy() for o in exe.forward(is_train=False))
        exe.backward([mx.nd.ones((2, 8)), mx.nd.zeros((2, 8))], is_train=False)
        np.testing.assert_array_equal(exe.grad_arrays[0].asnumpy(), dropped)
        exe.backward([mx.nd.zeros((2, 8)), mx.nd.ones((2, 8))])
        np.testing.assert_array_equal(exe.grad_arrays[0].asnumpy(), noise)
    first = dropped
    dropped, noise = (o.asnumpy() for o in exe.forward(is_train=True))  # new draws
    assert not np.array_equal(dropped, first)
    # backward again after one forward reads the same forward values (the memory plan
    # keeps them: the second used to find the mask where the noise was)
    for heads, want in (((1, 0), dropped), ((0, 1), noise), ((1, 1), dropped + noise)):
        exe.backward([mx.nd.full((2, 8), h) for h in heads])
        np.testing.assert_allclose(exe.grad_arrays[0].asnumpy(), want, rtol=1e-6)


def test_dropout_rate_axes_and_inference():
    x = np.ones((50, 4, 40))
    out, mask = run("Dropout", {"p": "0.25", "axes": "(1,)"}, x, is_train=True)
    assert mask.shape == (50, 1, 40)
    assert np.all(out == mask)  # the same mask for every element along axis 1
    assert abs(np.mean(mask == 0) - 0.25) < 0.05
    out, mask = run("Dropout", {"p": "1"}, x, is_train=True)
    assert not out.any()
    op = get_op("Dropout")
    p = op.parse_params({"axes": "(0, -1)"})
    assert op.output_names(p) == ["output", "mask"] and op.num_visible_outputs(p) == 1
    assert op.infer_shape(p, [None], [(3, 4, 5), None]) == ([(3, 4, 5)], [(3, 4, 5), (1, 4, 1)])
    dx = op.backward(p, OpContext(), [x], [out, mask], [np.full(x.shape, 2.0), np.zeros(x.shape)])
    np.testing.assert_array_equal(dx[0], 2.0 * mask)
    with pytest.raises(OperatorError, match="mode"):
        op.parse_params({"mode": "sometimes"})
    with pytest.raises(OperatorError, match="p=1.5"):
        run("Dropout", {"p": "1.5"}, x, is_train=True)
