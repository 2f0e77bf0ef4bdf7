"""BatchNorm, InstanceNorm, LayerNorm, L2Normalization and LRN: kernels against
per-channel loop references, gradients against finite differences, shape / dtype
inference, hidden outputs and errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minimx as mx
from minimx.base import OperatorError, ShapeError
from minimx.ops import get_op
from minimx.ops.registry import OpContext

from gradcheck import check_gradient
from ops_support import attrs_of, run

FAST = settings(max_examples=25, deadline=None)


def parse(name, **params):
    op = get_op(name)
    return op, op.parse_params(attrs_of(**params))


# -- BatchNorm -----------------------------------------------------------------------

def bn_reference(x, gamma, beta, mean, var, eps, axis):
    """Channel by channel, the textbook formula."""
    out = np.empty_like(x)
    for c in range(x.shape[axis]):
        xc = np.take(x, c, axis=axis)
        idx = [slice(None)] * x.ndim
        idx[axis] = c
        out[tuple(idx)] = (xc - mean[c]) / np.sqrt(var[c] + eps) * gamma[c] + beta[c]
    return out


def bn_inputs(rng, shape, axis):
    c = shape[axis]
    return [rng.standard_normal(shape), rng.standard_normal(c) + 1.5, rng.standard_normal(c),
            rng.standard_normal(c), rng.random(c) + 0.5]


@FAST
@given(hnp.array_shapes(min_dims=2, max_dims=4, min_side=2, max_side=4), st.data())
def test_batch_norm_training_uses_batch_stats_and_updates_moving_stats(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    fix_gamma = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x, gamma, beta, mm, mv = bn_inputs(rng, shape, axis)
    old_mm, old_mv = mm.copy(), mv.copy()
    params = dict(axis=axis, fix_gamma=fix_gamma, eps=1e-3, momentum=0.8)
    out, mean, inv_std = run("BatchNorm", params, x, gamma, beta, mm, mv, is_train=True)
    others = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    batch_mean, batch_var = x.mean(axis=others), x.var(axis=others)  # biased variance
    g = np.ones_like(gamma) if fix_gamma else gamma
    np.testing.assert_allclose(out, bn_reference(x, g, beta, batch_mean, batch_var, 1e-3,
                                                 axis % x.ndim), atol=1e-12)
    np.testing.assert_allclose(mean, batch_mean, atol=1e-12)
    np.testing.assert_allclose(inv_std, 1 / np.sqrt(batch_var + 1e-3))
    np.testing.assert_allclose(mm, 0.8 * old_mm + 0.2 * batch_mean)
    np.testing.assert_allclose(mv, 0.8 * old_mv + 0.2 * batch_var)


@pytest.mark.parametrize("is_train, global_stats", [(False, False), (True, True)])
def test_batch_norm_moving_stats_without_update(is_train, global_stats):
    rng = np.random.default_rng(0)
    x, gamma, beta, mm, mv = bn_inputs(rng, (3, 4, 2, 2), 1)
    before = mm.copy(), mv.copy()
    out, mean, inv_std = run("BatchNorm", dict(fix_gamma=False, use_global_stats=global_stats),
                             x, gamma, beta, mm, mv, is_train=is_train)
    np.testing.assert_allclose(out, bn_reference(x, gamma, beta, mm, mv, 1e-3, 1), atol=1e-12)
    np.testing.assert_array_equal(mm, before[0])
    np.testing.assert_array_equal(mv, before[1])
    np.testing.assert_allclose(inv_std, 1 / np.sqrt(mv + 1e-3))


def numeric_gradient(f, a, eps=1e-6):
    grad = np.zeros_like(a)
    for j in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[j] += eps
        down[j] -= eps
        grad[j] = (f(up) - f(down)) / (2 * eps)
    return grad


@settings(max_examples=15, deadline=None)
@given(hnp.array_shapes(min_dims=2, max_dims=3, min_side=2, max_side=3), st.booleans(),
       st.integers(0, 2**16))
def test_batch_norm_training_gradients(shape, fix_gamma, seed):
    # check_gradient asserts that inputs stay untouched, which training BatchNorm's moving
    # statistics do not; here each evaluation gets fresh copies of them.
    rng = np.random.default_rng(seed)
    inputs = bn_inputs(rng, shape, 1)
    op, p = parse("BatchNorm", fix_gamma=fix_gamma)
    dy = rng.standard_normal(shape)

    def objective(i):
        def f(a):
            args = [b.copy() for b in inputs]
            args[i] = a
            return np.sum(op.forward(p, OpContext(is_train=True), args)[0] * dy)
        return f

    outputs = op.forward(p, OpContext(is_train=True), [a.copy() for a in inputs])
    grads = op.backward(p, OpContext(is_train=True), inputs, outputs,
                        [dy, np.zeros_like(outputs[1]), np.zeros_like(outputs[2])])
    assert grads[3] is None and grads[4] is None
    for i in range(3):
        np.testing.assert_allclose(grads[i], numeric_gradient(objective(i), inputs[i]),
                                   rtol=1e-5, atol=1e-6)
    if fix_gamma:
        np.testing.assert_array_equal(grads[1], 0)


def test_batch_norm_inference_gradients():
    rng = np.random.default_rng(1)
    check_gradient("BatchNorm", dict(fix_gamma=False, axis=-1), bn_inputs(rng, (3, 2, 4), -1))


def test_batch_norm_declaration_shapes_and_types():
    op, p = parse("BatchNorm")
    assert dict(p) == dict(eps=1e-3, momentum=0.9, fix_gamma=True, use_global_stats=False,
                           output_mean_var=False, axis=1, cudnn_off=False,
                           min_calib_range=None, max_calib_range=None)
    assert op.input_names(p)[3:] == ["moving_mean", "moving_var"]
    assert op.aux_indices(p) == [3, 4]
    assert op.output_names(p) == ["output", "mean", "var"]
    assert op.num_visible_outputs(p) == 1
    assert op.num_visible_outputs(op.parse_params({"output_mean_var": "True"})) == 3
    assert op.infer_shape(p, [(2, 5, 3), None, None, None, None], [None] * 3) == (
        [(2, 5, 3)] + [(5,)] * 4, [(2, 5, 3), (5,), (5,)])
    with pytest.raises(ShapeError, match="gamma"):
        op.infer_shape(p, [(2, 5, 3), (4,), None, None, None], [None] * 3)
    with pytest.raises(ShapeError, match="axis"):
        op.infer_shape(op.parse_params({"axis": "3"}), [(2, 5, 3), None, None, None, None],
                       [None] * 3)
    f16, f32 = np.dtype(np.float16), np.dtype(np.float32)
    assert op.infer_type(p, [f16, None, None, None, None], [None] * 3) == (
        [f16] + [f32] * 4, [f16, f32, f32])


def test_batch_norm_float16_data_keeps_float32_statistics():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 2)).astype(np.float16)
    params = [np.ones(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32),
              np.ones(3, np.float32)]
    out, mean, inv_std = run("BatchNorm", {}, x, *params, is_train=True)
    assert out.dtype == np.float16 and mean.dtype == np.float32
    np.testing.assert_allclose(out, bn_reference(x.astype(np.float64), np.ones(3), np.zeros(3),
                                                 x.astype(np.float64).mean((0, 2)),
                                                 x.astype(np.float64).var((0, 2)), 1e-3, 1),
                               atol=2e-3)


# -- InstanceNorm and LayerNorm ---------------------------------------------------------

@FAST
@given(hnp.array_shapes(min_dims=3, max_dims=4, min_side=2, max_side=4), st.integers(0, 2**16))
def test_instance_norm_matches_reference(shape, seed):
    rng = np.random.default_rng(seed)
    x, gamma, beta = rng.standard_normal(shape), rng.standard_normal(shape[1]), rng.standard_normal(
        shape[1])
    out, mean, var = run("InstanceNorm", dict(eps=1e-3), x, gamma, beta)
    for n in range(shape[0]):
        for c in range(shape[1]):
            xc = x[n, c]
            np.testing.assert_allclose(
                out[n, c], gamma[c] * (xc - xc.mean()) / np.sqrt(xc.var() + 1e-3) + beta[c],
                atol=1e-12)
            np.testing.assert_allclose([mean[n, c], var[n, c]], [xc.mean(), xc.var()])
    op, p = parse("InstanceNorm")
    assert op.infer_shape(p, [shape, None, None], [None] * 3) == (
        [shape, shape[1:2], shape[1:2]], [shape, shape[:2], shape[:2]])
    assert op.num_visible_outputs(p) == 1 and p.eps == 1e-3


@FAST
@given(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4), st.data())
def test_layer_norm_matches_reference(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape)
    gamma, beta = rng.standard_normal(shape[axis]), rng.standard_normal(shape[axis])
    out, mean, std = run("LayerNorm", dict(axis=axis, eps=1e-5), x, gamma, beta)
    moved = np.moveaxis(x, axis, -1)
    expected = (moved - moved.mean(-1, keepdims=True)) / np.sqrt(moved.var(-1, keepdims=True)
                                                                 + 1e-5) * gamma + beta
    np.testing.assert_allclose(out, np.moveaxis(expected, -1, axis), atol=1e-12)
    moments = tuple(1 if i == axis % len(shape) else d for i, d in enumerate(shape))
    assert mean.shape == moments and std.shape == moments
    op, p = parse("LayerNorm", axis=axis)
    assert op.infer_shape(p, [shape, None, None], [None] * 3)[1] == [shape, moments, moments]


@settings(max_examples=10, deadline=None)
@given(hnp.array_shapes(min_dims=3, max_dims=4, min_side=2, max_side=3), st.integers(0, 2**16))
def test_instance_and_layer_norm_gradients(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    check_gradient("InstanceNorm", dict(eps=1e-3),
                   [x, rng.standard_normal(shape[1]), rng.standard_normal(shape[1])])
    check_gradient("LayerNorm", dict(axis=1),
                   [x, rng.standard_normal(shape[1]), rng.standard_normal(shape[1])])


# (operator, parameters, data shape, axes of the statistics, axes of gamma's gradient, eps)
MANY_ROWS = [
    ("LayerNorm", dict(axis=-1), (4096, 512), (1,), (0,), 1e-5),
    ("BatchNorm", dict(fix_gamma=False), (4096, 512, 1), (0, 2), (0, 2), 1e-3),
    ("InstanceNorm", dict(), (4096, 512, 1), (2,), (0, 2), 1e-3),
]


@pytest.mark.parametrize("op_name, params, shape, stat_axes, grad_axes, eps", MANY_ROWS)
def test_parameter_gradients_accumulate_exactly_over_many_rows(op_name, params, shape,
                                                               stat_axes, grad_axes, eps):
    """gamma/beta gradients summed over 4096 rows of float32 match a float64
    reference to float32 precision (row-by-row float32 sums were 3e-4 off)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    c = 512
    ins = [x, np.ones(c, np.float32), np.zeros(c, np.float32)]
    if op_name == "BatchNorm":
        ins += [np.zeros(c, np.float32), np.ones(c, np.float32)]
    op, p = parse(op_name, **params)
    ctx = OpContext(is_train=True)
    outs = op.forward(p, ctx, ins)
    grads = op.backward(p, ctx, ins, outs, [g, *[np.zeros_like(o) for o in outs[1:]]])
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    xhat = (x64 - x64.mean(axis=stat_axes, keepdims=True)) / np.sqrt(
        x64.var(axis=stat_axes, keepdims=True) + eps)
    np.testing.assert_allclose(grads[1], (g64 * xhat).sum(axis=grad_axes), rtol=2e-6, atol=1e-5)
    np.testing.assert_allclose(grads[2], g64.sum(axis=grad_axes), rtol=2e-6, atol=1e-5)


def test_layer_norm_declaration():
    op, p = parse("LayerNorm")
    assert dict(p) == dict(axis=-1, eps=1e-5, output_mean_var=False)
    assert op.output_names(p) == ["output", "mean", "std"]
    assert op.num_visible_outputs(op.parse_params({"output_mean_var": "1"})) == 3
    with pytest.raises(ShapeError, match="gamma"):
        op.infer_shape(p, [(2, 3), (2,), None], [None] * 3)


# -- L2Normalization and LRN ------------------------------------------------------------

@pytest.mark.parametrize("mode, norm_shape", [
    ("instance", (2,)), ("channel", (2, 1, 4, 2)), ("spatial", (2, 3))])
def test_l2_normalization_modes(mode, norm_shape):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4, 2))
    out, norm = run("L2Normalization", dict(mode=mode), x)
    assert norm.shape == norm_shape
    for n in range(2):
        if mode == "instance":
            np.testing.assert_allclose(out[n], x[n] / np.sqrt(np.sum(x[n] ** 2) + 1e-10))
        for c in range(3):
            if mode == "spatial":
                np.testing.assert_allclose(out[n, c], x[n, c] / np.sqrt(np.sum(x[n, c] ** 2)
                                                                        + 1e-10))
        if mode == "channel":
            np.testing.assert_allclose(out[n], x[n] / np.sqrt((x[n] ** 2).sum(0) + 1e-10))
    op, p = parse("L2Normalization", mode=mode)
    assert op.infer_shape(p, [x.shape], [None, None]) == ([x.shape], [x.shape, norm_shape])
    check_gradient("L2Normalization", dict(mode=mode), [x[:, :2, :2]])


def test_l2_normalization_needs_3d_for_channel_and_spatial():
    op, p = parse("L2Normalization", mode="channel")
    with pytest.raises(ShapeError, match="3-D"):
        op.infer_shape(p, [(2, 3)], [None, None])
    assert dict(parse("L2Normalization")[1]) == dict(eps=1e-10, mode="instance")


def lrn_reference(x, nsize, alpha, beta, knorm):
    out = np.empty_like(x)
    half = nsize // 2
    for c in range(x.shape[1]):
        lo, hi = max(0, c - half), min(x.shape[1], c + half + 1)
        norm = knorm + alpha / nsize * np.sum(x[:, lo:hi] ** 2, axis=1)
        out[:, c] = x[:, c] * norm ** -beta
    return out


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.sampled_from([1, 3, 5]), st.integers(0, 2**16))
def test_lrn_matches_reference_and_gradients(channels, nsize, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, channels, 2, 3))
    params = dict(nsize=nsize, alpha=0.5, beta=0.75, knorm=2.0)
    out, tmp_norm = run("LRN", params, x)
    np.testing.assert_allclose(out, lrn_reference(x, nsize, 0.5, 0.75, 2.0), atol=1e-12)
    assert tmp_norm.shape == x.shape
    check_gradient("LRN", params, [x[:1, :, :1]])


def test_lrn_declaration_and_errors():
    op, p = parse("LRN", nsize=5)
    assert dict(p) == dict(alpha=1e-4, beta=0.75, knorm=2.0, nsize=5)
    assert op.output_names(p) == ["output", "tmp_norm"] and op.num_visible_outputs(p) == 1
    even, q = parse("LRN", nsize=4)   # refused by shape inference, so at bind
    with pytest.raises(OperatorError, match="nsize=4 must be odd"):
        even.infer_shape(q, [(1, 4, 2, 2)], [None, None])
    with pytest.raises(OperatorError, match="nsize"):
        get_op("LRN").parse_params({})


def test_batchnorm_refuses_integer_data_as_mxnet():
    # MXNet 1.9.1: "only support floating point types"; its integers would be wrong here.
    bn = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    with pytest.raises(mx.DTypeError, match="bn \\(BatchNorm\\): BatchNorm takes floating"):
        bn.simple_bind(mx.cpu(), data=(1, 1, 1, 4), type_dict={"data": "uint8"},
                       grad_req="null")
