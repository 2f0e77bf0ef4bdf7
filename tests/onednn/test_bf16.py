"""bfloat16 primitives against the float64 references on bf16-rounded inputs.

A bf16 primitive reads bf16 data (rounded from float32 to nearest even),
accumulates in float32 and rounds its result to bf16 once: each output is
within half a bf16 step (2**-9 relative) of the exact result on the rounded
inputs, plus float32 accumulation error. The tolerance below allows one
step (softmax, which rounds its exponentials too, two).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimx import BackendError, onednn
from minimx.onednn import BFLOAT16, MemoryDesc, PostOp

from . import reference
from .helpers import SETTINGS, random, run

STEP = 2.0 ** -8   # one bf16 step, relative


def bf16(x: np.ndarray) -> np.ndarray:
    """`x` rounded to bfloat16, as float64."""
    return np.asarray(x, np.float32).astype(BFLOAT16).astype(np.float64)


def assert_bf16_close(out: np.ndarray, expected: np.ndarray, steps: float = 1.0) -> None:
    assert out.dtype == BFLOAT16
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=steps * STEP,
                               atol=steps * STEP * 1e-2 * scale)


def plain(shape) -> MemoryDesc:
    return MemoryDesc.plain(shape, BFLOAT16)


@SETTINGS
@given(n=st.integers(1, 3), c=st.integers(1, 40), o=st.integers(1, 24),
       size=st.integers(3, 9), kernel=st.sampled_from([1, 3]), bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_conv(n, c, o, size, kernel, bias, seed):
    x, w = random((n, c, size, size), seed), random((o, c, kernel, kernel), seed + 1)
    b = random((o,), seed + 2) if bias else None
    op = onednn.conv(x.shape, w.shape, pad=kernel // 2, bias=bias, dtype=BFLOAT16,
                     post_ops=[PostOp.eltwise("relu")])
    assert op.desc("src").dtype == op.desc("weights").dtype == BFLOAT16
    assert op.desc("dst").dtype == BFLOAT16
    out = run(op, {"src": x, "weights": w, "bias": b})
    pad = (kernel // 2,) * 2
    expected = reference.conv(bf16(x), bf16(w), b, (1, 1), pad, (1, 1), 1)
    assert_bf16_close(out, np.maximum(expected, 0))


def test_conv_bias_stays_float32():
    """The bias is added in float32 (but see the depthwise case below): a bf16
    bias would round 1 + 2**-10 to 1."""
    op = onednn.conv((1, 1, 1, 1), (1, 1, 1, 1), bias=True, dtype=BFLOAT16)
    assert op.desc("bias").dtype == np.float32
    x, w = np.full((1, 1, 1, 1), 256.0, np.float32), np.ones((1, 1, 1, 1), np.float32)
    out = run(op, {"src": x, "weights": w, "bias": np.array([1.5], np.float32)})
    assert float(out.astype(np.float32)[0, 0, 0, 0]) == 258.0   # 257.5 rounds to even


def test_depthwise_conv_runs_the_fast_kernel_bias_rounded_only_if_it_must():
    """A bf16 depthwise convolution runs oneDNN's brdgmm kernel where the CPU
    has bf16 instructions; oneDNN 3.2 has it only for a bf16 bias, and then
    the bias is rounded to bf16 (as MXNet's AMP rounds it), else it stays
    float32."""
    x, w, b = random((2, 32, 9, 9), 1), random((32, 1, 3, 3), 2), random((32,), 3)
    op = onednn.conv(x.shape, w.shape, pad=1, num_group=32, bias=True, dtype=BFLOAT16)
    if onednn.bf16_native():
        assert op.impl.startswith("brdgmm")
    rounded = op.desc("bias").dtype == BFLOAT16
    assert not rounded or op.impl.startswith("brdgmm")
    out = run(op, {"src": x, "weights": w, "bias": b})
    expected = reference.conv(bf16(x), bf16(w), bf16(b) if rounded else b, (1, 1), (1, 1),
                              (1, 1), 32)
    assert_bf16_close(out, expected)


def test_conv_with_sum_post_op_reads_a_bf16_addend():
    x, w, addend = random((2, 16, 5, 5), 1), random((32, 16, 3, 3), 2), random((2, 32, 5, 5), 3)
    op = onednn.conv(x.shape, w.shape, pad=1, dtype=BFLOAT16,
                     post_ops=[PostOp.sum(), PostOp.eltwise("relu")])
    out = run(op, {"src": x, "weights": w}, dst=addend)
    expected = reference.conv(bf16(x), bf16(w), None, (1, 1), (1, 1), (1, 1), 1) + bf16(addend)
    assert_bf16_close(out, np.maximum(expected, 0))


@SETTINGS
@given(src=st.sampled_from([(3, 70), (2, 5, 3, 3), (4, 32, 2, 2)]),
       hidden=st.integers(1, 40), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_inner_product(src, hidden, bias, seed):
    x, w = random(src, seed), random((hidden, int(np.prod(src[1:]))), seed + 1)
    b = random((hidden,), seed + 2) if bias else None
    op = onednn.inner_product(src, hidden, bias=bias, dtype=BFLOAT16)
    out = run(op, {"src": x, "weights": w, "bias": b})
    expected = bf16(x).reshape(src[0], -1) @ bf16(w).T + (0 if b is None else b)
    assert_bf16_close(out, expected)


def test_deconv():
    x, w, b = random((2, 16, 4, 4), 1), random((16, 8, 3, 3), 2), random((8,), 3)
    op = onednn.deconv(x.shape, w.shape, stride=2, pad=1, adj=1, bias=True, dtype=BFLOAT16)
    out = run(op, {"src": x, "weights": w, "bias": b})
    expected = reference.deconv(bf16(x), bf16(w), b, (2, 2), (1, 1), (1, 1), (1, 1), 1)
    assert_bf16_close(out, expected)


@pytest.mark.parametrize("mode", ["max", "avg_include", "avg_exclude"])
def test_pooling(mode):
    x = random((2, 16, 7, 7), 1)
    op = onednn.pooling(plain(x.shape), (3, 3), stride=2, pad=1, pool_type=mode[:3],
                        count_include_pad=mode == "avg_include")
    expected = reference.pooling(bf16(x), (3, 3), (2, 2), (1, 1), (1, 1), mode)
    assert_bf16_close(run(op, {"src": x}), expected)


@pytest.mark.parametrize("alg", ["relu", "tanh", "logistic", "gelu_erf", "clip"])
def test_eltwise(alg):
    x = random((2, 16, 5, 5), 1, -3.0, 3.0)
    alpha, beta = (0.0, 6.0) if alg == "clip" else (0.0, 0.0)
    op = onednn.eltwise(plain(x.shape), alg, alpha, beta)
    assert_bf16_close(run(op, {"src": x}), reference.ELTWISE[alg](bf16(x), alpha, beta))


def test_batch_norm():
    x, mean, var = random((2, 16, 5, 5), 1), random((16,), 2), random((16,), 3, 0.1, 2.0)
    scale, shift = random((16,), 4), random((16,), 5)
    op = onednn.batch_norm(plain(x.shape), eps=1e-3)
    assert op.desc("mean").dtype == np.float32
    out = run(op, {"src": x, "mean": mean, "variance": var, "scale": scale, "shift": shift})
    assert_bf16_close(out, reference.batch_norm(bf16(x), mean, var, scale, shift, 1e-3))


def test_binary_add_and_concat_keep_bf16():
    a, b = random((2, 16, 4, 4), 1), random((2, 16, 4, 4), 2)
    add = onednn.binary(plain(a.shape), plain(b.shape), "add")
    assert add.desc("dst").dtype == BFLOAT16
    assert_bf16_close(run(add, {"src": a, "src1": b}), bf16(a) + bf16(b))
    cat = onednn.concat([plain(a.shape), plain(b.shape)], axis=1)
    out = run(cat, {"src0": a, "src1": b})
    np.testing.assert_array_equal(out.astype(np.float64),
                                  np.concatenate([bf16(a), bf16(b)], 1))


def test_softmax_and_lrn():
    """Softmax rounds its exponentials to bf16 too (two steps; the DNNL lowering
    runs softmax in float32)."""
    x = random((4, 10), 1, -4.0, 4.0)
    op = onednn.softmax(plain(x.shape), axis=1)
    assert_bf16_close(run(op, {"src": x}), reference.softmax(bf16(x), 1), steps=2)
    y = random((2, 16, 3, 3), 2)
    op = onednn.lrn(plain(y.shape), 5, alpha=1e-2, beta=0.75, knorm=2.0)
    assert_bf16_close(run(op, {"src": y}), reference.lrn(bf16(y), 5, 1e-2, 0.75, 2.0))


def test_weights_round_to_nearest_even_once():
    """The weight cache's conversion: float32 weights become bf16 by round to nearest
    even (1 + 2**-8 is a tie, kept at 1; 1 + 3 * 2**-8 rounds up to 1 + 2**-6)."""
    op = onednn.conv((1, 2, 1, 1), (1, 2, 1, 1), dtype=BFLOAT16)
    w = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8], np.float32).reshape(1, 2, 1, 1)
    got = onednn.to_numpy(onednn.constant(op, "weights", w))
    np.testing.assert_array_equal(got.astype(np.float64).ravel(), [1.0, 1 + 2.0 ** -6])


def test_float_primitive_refuses_an_integer_dtype():
    with pytest.raises(BackendError, match="float32 or bfloat16"):
        onednn.conv((1, 2, 3, 3), (1, 2, 1, 1), dtype=np.int8)
