"""Every non-convolution primitive against a naive numpy reference."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimx import BackendError, onednn
from minimx.onednn import PostOp

from . import reference
from .helpers import ATOL, RTOL, SETTINGS, random, run

shapes_4d = st.tuples(st.integers(1, 2), st.integers(1, 20), st.integers(1, 6),
                      st.integers(1, 6))


@SETTINGS
@given(src=st.sampled_from([(3, 7), (2, 5, 3, 3), (2, 16, 2, 2)]),
       hidden=st.integers(1, 12), bias=st.booleans(),
       act=st.sampled_from([None, "relu", "logistic", "tanh", "gelu_erf"]))
def test_inner_product_with_eltwise_post_op(src, hidden, bias, act):
    x = random(src, 1)
    w = random((hidden, int(np.prod(src[1:]))), 2)
    b = random((hidden,), 3) if bias else None
    op = onednn.inner_product(src, hidden, bias=bias,
                            post_ops=[PostOp.eltwise(act)] if act else [])
    out = run(op, {"src": x, "weights": w, "bias": b})
    expected = x.reshape(src[0], -1).astype(np.float64) @ w.T + (0 if b is None else b)
    if act:
        expected = reference.ELTWISE[act](expected, 0.0, 0.0)
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


def test_a_one_output_inner_product_over_channels_last_data():
    # oneDNN 3.8+ chooses, for this one, weights in channels-first order.
    x, w = random((2, 5, 3, 3), 1), random((1, 45), 2)
    op = onednn.inner_product(x.shape, 1)
    np.testing.assert_allclose(run(op, {"src": x, "weights": w}),
                               x.reshape(2, -1).astype(np.float64) @ w.T, rtol=RTOL, atol=ATOL)


@SETTINGS
@given(shape=shapes_4d, use_scale=st.booleans(), use_shift=st.booleans(),
       eps=st.sampled_from([1e-5, 1e-3, 0.1]))
def test_batch_norm_global_stats(shape, use_scale, use_shift, eps):
    c = shape[1]
    x, mean, var = random(shape, 1), random((c,), 2), random((c,), 3, 0.1, 2.0)
    scale, shift = random((c,), 4), random((c,), 5)
    op = onednn.batch_norm(shape, eps=eps, use_scale=use_scale, use_shift=use_shift)
    out = run(op, {"src": x, "mean": mean, "variance": var, "scale": scale, "shift": shift})
    expected = reference.batch_norm(x, mean, var, scale if use_scale else None,
                                    shift if use_shift else None, eps)
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


ELTWISE_PARAMS = {"relu": [(0.0, 0.0), (0.1, 0.0)], "elu": [(1.0, 0.0)],
                  "linear": [(2.0, -0.5)], "soft_relu": [(1.0, 0.0)], "swish": [(1.0, 0.0)],
                  "clip": [(0.0, 6.0), (-0.5, 0.5)]}


@pytest.mark.parametrize("alg,alpha,beta", [
    (alg, a, b) for alg in onednn.ELTWISE_ALGS for a, b in ELTWISE_PARAMS.get(alg, [(0.0, 0.0)])])
def test_eltwise(alg, alpha, beta):
    low = 0.1 if alg in reference.POSITIVE_ONLY else -3.0
    x = random((2, 5, 4, 3), 1, low, 3.0)
    out = run(onednn.eltwise(x.shape, alg, alpha, beta), {"src": x})
    np.testing.assert_allclose(out, reference.ELTWISE[alg](x.astype(np.float64), alpha, beta),
                               rtol=1e-4, atol=1e-5)


@st.composite
def pooling_cases(draw):
    nsp = draw(st.sampled_from([1, 2, 2, 3]))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    convention = draw(st.sampled_from(["valid", "full"]))
    stride = tuple(draw(st.integers(1, 3)) for _ in kernel)
    pad = tuple(draw(st.integers(0, k - 1)) for k in kernel)
    size = tuple(draw(st.integers(max(1, k - 2 * p), 6)) for k, p in zip(kernel, pad, strict=True))
    return dict(shape=(draw(st.integers(1, 2)), draw(st.integers(1, 17)), *size),
                kernel=kernel, stride=stride, pad=pad, convention=convention,
                mode=draw(st.sampled_from(["max", "avg_include", "avg_exclude"])),
                global_pool=draw(st.booleans()))


@SETTINGS
@given(pooling_cases())
def test_pooling(case):
    x = random(case["shape"], 1)
    size = case["shape"][2:]
    if case["global_pool"]:
        kernel, stride, pad_l = size, (1,) * len(size), (0,) * len(size)
    else:
        kernel, stride, pad_l = case["kernel"], case["stride"], case["pad"]
    out_size = [onednn.pool_output_size(s, k, st_, p, case["convention"])
                for s, k, st_, p in zip(size, kernel, stride, pad_l, strict=True)]
    pad_r = [max(p, (o - 1) * st_ + k - s - p)
             for o, st_, k, s, p in zip(out_size, stride, kernel, size, pad_l, strict=True)]
    build = partial(onednn.pooling, x.shape, case["kernel"], stride=case["stride"],
                    pool_type="max" if case["mode"] == "max" else "avg", pad=case["pad"],
                    global_pool=case["global_pool"], convention=case["convention"],
                    count_include_pad=case["mode"] == "avg_include")
    if any((o - 1) * st_ - p >= s
           for o, st_, p, s in zip(out_size, stride, pad_l, size, strict=True)):
        with pytest.raises(BackendError, match="wholly in the padding"):
            build()
        return
    out = run(build(), {"src": x})
    expected = reference.pooling(x, kernel, stride, pad_l, pad_r, case["mode"])
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


@SETTINGS
@given(shape=st.lists(st.integers(1, 7), min_size=1, max_size=4), data=st.data(),
       log=st.booleans())
def test_softmax_and_log_softmax(shape, data, log):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = random(shape, 1, -5.0, 5.0)
    out = run(onednn.softmax(x.shape, axis=axis, log=log), {"src": x})
    np.testing.assert_allclose(out, reference.softmax(x, axis, log), rtol=RTOL, atol=ATOL)


@SETTINGS
@given(shape=shapes_4d, nsize=st.sampled_from([1, 3, 5]),
       alpha=st.sampled_from([1e-4, 0.1]), beta=st.sampled_from([0.75, 0.5]),
       knorm=st.sampled_from([1.0, 2.0]))
def test_lrn_across_channels(shape, nsize, alpha, beta, knorm):
    x = random(shape, 1, -2.0, 2.0)
    out = run(onednn.lrn(shape, nsize, alpha=alpha, beta=beta, knorm=knorm), {"src": x})
    np.testing.assert_allclose(out, reference.lrn(x, nsize, alpha, beta, knorm),
                               rtol=RTOL, atol=ATOL)


@SETTINGS
@given(shape=shapes_4d, mask=st.lists(st.booleans(), min_size=4, max_size=4),
       drop=st.integers(0, 2), alg=st.sampled_from(["add", "mul"]))
def test_binary_with_broadcast(shape, mask, drop, alg):
    # src1 keeps a dim or broadcasts it (size 1); `drop` leading dims are left out.
    other = tuple(d if keep else 1 for d, keep in zip(shape, mask, strict=True))[drop:]
    a, b = random(shape, 1), random(other, 2)
    out = run(onednn.binary(shape, other, alg), {"src": a, "src1": b})
    np.testing.assert_allclose(out, a + b if alg == "add" else a * b, rtol=RTOL, atol=ATOL)


@SETTINGS
@given(base=shapes_4d, sizes=st.lists(st.integers(1, 9), min_size=1, max_size=3),
       axis=st.integers(0, 3))
def test_concat(base, sizes, axis):
    shapes = [base[:axis] + (n,) + base[axis + 1:] for n in sizes]
    arrays = [random(s, i) for i, s in enumerate(shapes)]
    op = onednn.concat(shapes, axis=axis)
    out = run(op, {f"src{i}": a for i, a in enumerate(arrays)})
    np.testing.assert_array_equal(out, np.concatenate(arrays, axis=axis))


def test_reorder_round_trip_through_a_blocked_layout():
    op = onednn.conv((1, 32, 8, 8), (32, 32, 3, 3), pad=1)
    w = random((32, 32, 3, 3), 1)
    memory = onednn.constant(op, "weights", w)
    assert memory.owned and not memory.desc.is_plain
    np.testing.assert_array_equal(onednn.to_numpy(memory), w)
    blocked = op.desc("src")
    x = random((1, 32, 8, 8), 2)
    there = run(onednn.reorder(x.shape, blocked), {"src": x})
    np.testing.assert_array_equal(there, x)


@SETTINGS
@given(shape=st.lists(st.integers(1, 7), min_size=1, max_size=4).map(tuple),
       alg=st.sampled_from(["max", "min"]), dtype=st.sampled_from([np.float32, np.int8]))
def test_reduction_of_a_whole_tensor(shape, alg, dtype):
    if np.prod(shape) == 1:  # oneDNN reduces over some dim of size > 1 only
        shape = shape + (2,)
    x = (random(shape, 3) * 100).astype(dtype)
    plan = onednn.Plan("reduction")
    src = plan.input(shape, dtype=dtype)
    plan.output(plan.add(onednn.reduction(src.desc, alg), src=src))
    plan.compile()
    [out] = plan.run([x])
    assert out.shape == (1,) * len(shape) and out.dtype == np.float32
    np.testing.assert_array_equal(out.reshape(-1), [getattr(x, alg)()])


def test_binary_eq_gives_one_where_equal():
    a = np.array([0.0, -0.0, 1e-45, 2.0], np.float32)
    out = run(onednn.binary(a.shape, (1,), "eq"), {"src": a, "src1": np.zeros(1, np.float32)})
    np.testing.assert_array_equal(out, [1.0, 1.0, 0.0, 0.0])
