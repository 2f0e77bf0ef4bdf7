"""What the operator tests share: one registered operator called directly
(`run`, `infer`) and the hypothesis strategies for float arrays.

    from ops_support import run
    out = run("Convolution", dict(kernel=(3, 3), num_filter=4), x, w, b)

Parameters may be given as Python values or as MXNet's strings; both become
the string attributes a graph node carries.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minimx.ops import get_op
from minimx.ops.registry import OpContext

SHAPES = hnp.array_shapes(min_dims=1, max_dims=4, max_side=4)


def attrs_of(**params):
    return {k: str(v) for k, v in params.items()}


def run(name, params, *inputs, is_train=False, seed=0):
    """`name`'s forward on `inputs`; random operators draw from a generator seeded `seed`."""
    op = get_op(name)
    ctx = OpContext(is_train=is_train, rng=np.random.default_rng(seed))
    return op.forward(op.parse_params(attrs_of(**params)), ctx, list(inputs))


def infer(name, params, in_shapes, out_shapes=None):
    op = get_op(name)
    return op.infer_shape(op.parse_params(attrs_of(**params)), list(in_shapes),
                          list(out_shapes or [None]))


def floats(low=-5.0, high=5.0, dtype=np.float64, shape=SHAPES):
    width = 32 if dtype == np.float32 else 64
    return hnp.arrays(dtype, shape, elements=st.floats(low, high, width=width))


@st.composite
def nonzero(draw, shape, low=0.1, high=3.0):
    """float64 arrays whose elements keep |x| >= low (away from kinks and poles)."""
    magnitude = draw(floats(low, high, shape=shape))
    negative = draw(hnp.arrays(np.bool_, magnitude.shape))
    return np.where(negative, -magnitude, magnitude)


def vectorized(fn):
    """A scalar math function applied elementwise, in float64 (for references)."""
    return np.vectorize(fn, otypes=[np.float64])
