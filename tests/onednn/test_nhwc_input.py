"""nhwc_input (minimx's kernel for a three-channel NCHW input written NHWC):
numpy's transpose in float32, ml_dtypes' rounding in bfloat16, and where
`Plan.reorder` runs it."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimx import BackendError, onednn
from minimx.onednn import nhwc

from .helpers import SETTINGS

BF16 = np.dtype(ml_dtypes.bfloat16)
# The kernel is built where the CPU has AVX-512.
kernel = pytest.mark.skipif(onednn.available() and not nhwc.nhwc_input_available(),
                            reason="this CPU has no AVX-512: the build has no kernel")


def run(x: np.ndarray, dtype: np.dtype, own_kernels: bool = True) -> tuple[np.ndarray, str]:
    """x (NCHW float32) through `Plan.reorder` to NHWC in `dtype`, returned as an
    (N, H, W, C) array of dtype, and the step's implementation."""
    plan = onednn.Plan("nhwc", own_kernels=own_kernels)
    y = plan.reorder(plan.input(x.shape), onednn.MemoryDesc.ordered(x.shape, "acdb", dtype))
    n, c, h, w = x.shape
    # The NHWC bytes out as bytes: oneDNN's copy of bfloat16 data would flush
    # denormals to zero.
    plan.output(plan.view(y, onednn.MemoryDesc.plain((n, h, w, c * dtype.itemsize), np.uint8)))
    (out,) = plan.run([x])
    return out.view(dtype), plan.step_names()[0][1]


@kernel
@SETTINGS
@given(n=st.integers(1, 3), h=st.integers(1, 80), w=st.integers(2, 80), seed=st.integers(0, 99))
def test_float32_is_the_transpose(n, h, w, seed):
    # Sizes cover pixels left over from whole vectors (h * w % 16) and from a task (4096);
    # at 1x1 NCHW is NHWC, and there is nothing to convert.
    x = np.random.default_rng(seed).standard_normal((n, 3, h, w)).astype(np.float32)
    out, impl = run(x, np.dtype(np.float32))
    assert impl.startswith("reorder[nhwc_input")
    np.testing.assert_array_equal(out, x.transpose(0, 2, 3, 1))


def special_values() -> np.ndarray:
    """float32s whose bfloat16 rounding has a case of its own: ties to even both
    ways, just off a tie, carries into the exponent, the largest finite values
    (which round to infinity), infinities, NaNs of both signs with payloads,
    denormals, signed zeros."""
    bits = [0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x3FFF8000, 0x7F7FFFFF,
            0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFA00001, 0x7F800001,
            0x00000001, 0x80008000, 0x00018000, 0x00000000, 0x80000000]
    return np.array(bits, np.uint32).view(np.float32)


@kernel
@pytest.mark.parametrize("h, w", [(7, 7), (16, 21), (64, 65)])
def test_bfloat16_rounds_as_ml_dtypes(h, w):
    rng = np.random.default_rng(h * w)
    with np.errstate(over="ignore"):   # some beyond float32's range: infinities
        x = (rng.standard_normal((2, 3, h, w)) * 10.0 ** rng.integers(-45, 40, (2, 3, h, w))
             ).astype(np.float32)
    special = special_values()
    x.reshape(-1)[:special.size] = special   # in the vector part of the first image
    x.reshape(-1)[-special.size:] = special  # and in the pixels after it (w = 7, 21, 65)
    out, impl = run(x, BF16)
    assert impl.startswith("reorder[nhwc_input")
    with np.errstate(invalid="ignore"):
        expected = x.transpose(0, 2, 3, 1).astype(BF16)
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


@kernel
def test_plan_reorder_takes_it_only_where_it_applies():
    x = np.random.default_rng(0).standard_normal((2, 3, 9, 11)).astype(np.float32)
    own, impl = run(x, np.dtype(np.float32))
    theirs, their_impl = run(x, np.dtype(np.float32), own_kernels=False)
    assert impl.startswith("reorder[nhwc_input") and "nhwc_input" not in their_impl
    np.testing.assert_array_equal(own, theirs)
    four = np.zeros((1, 4, 8, 8), np.float32)
    assert "nhwc_input" not in run(four, np.dtype(np.float32))[1]   # not three channels
    plan = onednn.Plan("blocked")
    plan.reorder(plan.input(x.shape), onednn.MemoryDesc.with_layout(x.shape, "aBcd16b"))
    assert "nhwc_input" not in str(plan)   # not NHWC
    desc = onednn.MemoryDesc.plain
    assert not nhwc.nhwc_input_supports(desc(x.shape, np.float32), desc(x.shape, np.float32))
    assert not nhwc.nhwc_input_supports(
        desc(x.shape, BF16), onednn.MemoryDesc.ordered(x.shape, "acdb", np.float32))


@kernel
def test_refuses_what_it_does_not_take():
    with pytest.raises(BackendError, match=r"nhwc_input: takes \(N, 3, H, W\)"):
        nhwc.nhwc_input((1, 4, 8, 8))
    with pytest.raises(BackendError, match="uint8"):
        nhwc.nhwc_input((1, 3, 8, 8), np.uint8)
