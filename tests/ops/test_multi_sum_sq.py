"""multi_sum_sq bit for bit as MXNet 1.9.1's CPU kernel: a float32 running sum, in
element order, of squares taken in the input's dtype (float16 squares rounded to
float16); float64 squares added in float64 and the sum rounded to float32 each step.

MXNET_SUMS holds MXNet 1.9.1's outputs (printed with repr) for
``mx.nd.multi_sum_sq(a, b, num_arrays=2)`` on the arrays `_arrays` makes, computed
with /work/venvs/mxnet191's python; each first value differs from the float32 of
the exact sum."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx

MXNET_SUMS = [   # (dtype, size of a, scale, MXNet's sum for a, for b)
    ("float16", 7, 1.0, 14.592285, 5.5371704),
    ("float16", 1000, 1.0, 963.8643, 9.224609),
    ("float16", 4097, 30.0, 3777727.5, 6566.5),
    ("float16", 100000, 1.0, 99342.61, 3.1009521),
    ("float32", 3, 1.0, 1.2443423, 2.014836),
    ("float32", 1000, 30.0, 882888.25, 1781.3636),
    ("float32", 100000, 1.0, 99525.44, 7.691895),
    ("float64", 100, 1.0, 103.79758, 3.8535922),
    ("float64", 16, 30.0, 31472.33, 3641.9058),
    ("float64", 1000, 1.0, 1040.1161, 7.7952943),
]


def _arrays(seed: int, dtype: str, size: int, scale: float) -> list[np.ndarray]:
    return [(np.random.RandomState(s).standard_normal(n) * scale).astype(dtype)
            for s, n in ((seed, size), (seed + 100, 5))]


@pytest.mark.parametrize("seed, case", list(enumerate(MXNET_SUMS)),
                         ids=[f"{c[0]}-{c[1]}" for c in MXNET_SUMS])
def test_sums_as_mxnet_bit_for_bit(seed, case):
    dtype, size, scale, *want = case
    arrays = _arrays(seed, dtype, size, scale)
    got = mx.nd.multi_sum_sq(*[mx.nd.array(a, dtype=dtype) for a in arrays], num_arrays=2)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.asnumpy(), np.array(want, np.float32))
    exact = np.float32(np.sum(np.square(arrays[0].astype(np.float64))))
    assert got.asnumpy()[0] != exact   # the case tells MXNet's arithmetic from exact sums


def test_float16_square_overflows_and_empty_array_sums_to_zero():
    # As MXNet 1.9.1: [inf, 0.] (300^2 is past float16's largest value).
    got = mx.nd.multi_sum_sq(mx.nd.array([300, 1], dtype="float16"),
                             mx.nd.array(np.zeros(0), dtype="float16"), num_arrays=2)
    np.testing.assert_array_equal(got.asnumpy(), [np.inf, 0])
