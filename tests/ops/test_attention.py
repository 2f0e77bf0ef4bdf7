"""The interleaved multi-head attention products and div_sqrt_dim against per-head
loop references (from the layouts MXNet's transformer.cc documents), their gradients
and shapes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minimx.base import ShapeError

from gradcheck import check_gradient
from ops_support import infer, run

FAST = settings(max_examples=40, deadline=None)


def head(x, b, h, part, parts, dim):
    """Sequence of head h, part `part` (q/k/v) of batch entry b: (T, dim)."""
    return x[:, b, (h * parts + part) * dim:(h * parts + part + 1) * dim]


@FAST
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4),
       st.integers(1, 4), st.integers(0, 2**16))
def test_attention_products_match_per_head_loops(heads, dim, batch, tq, tk, seed):
    rng = np.random.default_rng(seed)
    qkv = rng.standard_normal((tq, batch, 3 * heads * dim))
    att = rng.standard_normal((batch * heads, tq, tq))
    q = rng.standard_normal((tq, batch, heads * dim))
    kv = rng.standard_normal((tk, batch, 2 * heads * dim))
    att_ed = rng.standard_normal((batch * heads, tq, tk))
    params = dict(heads=heads)
    qk = run("_contrib_interleaved_matmul_selfatt_qk", params, qkv)
    valatt = run("_contrib_interleaved_matmul_selfatt_valatt", params, qkv, att)
    ed_qk = run("_contrib_interleaved_matmul_encdec_qk", params, q, kv)
    ed_valatt = run("_contrib_interleaved_matmul_encdec_valatt", params, kv, att_ed)
    scale = 1 / np.sqrt(dim)
    for b in range(batch):
        for h in range(heads):
            k = b * heads + h
            np.testing.assert_allclose(
                qk[k], head(qkv, b, h, 0, 3, dim) @ head(qkv, b, h, 1, 3, dim).T * scale)
            np.testing.assert_allclose(valatt[:, b, h * dim:(h + 1) * dim],
                                       att[k] @ head(qkv, b, h, 2, 3, dim))
            np.testing.assert_allclose(
                ed_qk[k], head(q, b, h, 0, 1, dim) @ head(kv, b, h, 0, 2, dim).T * scale)
            np.testing.assert_allclose(ed_valatt[:, b, h * dim:(h + 1) * dim],
                                       att_ed[k] @ head(kv, b, h, 1, 2, dim))


def test_attention_gradients():
    rng = np.random.default_rng(6)
    qkv, att = rng.standard_normal((3, 2, 12)), rng.standard_normal((4, 3, 3))
    q, kv = rng.standard_normal((3, 2, 4)), rng.standard_normal((5, 2, 8))
    check_gradient("_contrib_interleaved_matmul_selfatt_qk", dict(heads=2), [qkv])
    check_gradient("_contrib_interleaved_matmul_selfatt_valatt", dict(heads=2), [qkv, att])
    check_gradient("_contrib_interleaved_matmul_encdec_qk", dict(heads=2), [q, kv])
    check_gradient("_contrib_interleaved_matmul_encdec_valatt", dict(heads=2),
                   [kv, rng.standard_normal((4, 3, 5))])
    x = rng.standard_normal((2, 3, 9))
    np.testing.assert_allclose(run("_contrib_div_sqrt_dim", {}, x), x / 3)
    check_gradient("_contrib_div_sqrt_dim", {}, [x])


def test_attention_shapes_and_errors():
    assert infer("_contrib_interleaved_matmul_selfatt_qk", dict(heads=4), [(7, 2, 96)]) == \
        ([(7, 2, 96)], [(8, 7, 7)])
    assert infer("_contrib_interleaved_matmul_selfatt_valatt", dict(heads=4),
                 [(7, 2, 96), (8, 7, 7)])[1] == [(7, 2, 32)]
    assert infer("_contrib_interleaved_matmul_encdec_qk", dict(heads=4),
                 [(7, 2, 32), (5, 2, 64)])[1] == [(8, 7, 5)]
    assert infer("_contrib_interleaved_matmul_encdec_valatt", dict(heads=4),
                 [(5, 2, 64), (8, 7, 5)])[1] == [(7, 2, 32)]
    with pytest.raises(ShapeError, match="3 parts"):
        infer("_contrib_interleaved_matmul_selfatt_qk", dict(heads=4), [(7, 2, 30)])
    with pytest.raises(ShapeError, match="attention"):
        infer("_contrib_interleaved_matmul_selfatt_valatt", dict(heads=4),
              [(7, 2, 96), (8, 6, 7)])
