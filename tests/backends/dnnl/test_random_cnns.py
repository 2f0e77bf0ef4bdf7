"""Random small CNNs give the same outputs with the DNNL backend as on numpy.

Graphs mix convolutions (dense and depthwise, with and without bias), BatchNorm
(fix_gamma either way), activations, pooling, Concat and residual adds whose
addend may also be read elsewhere, with one or two outputs - the places where
fusion (BN folding, sum post-ops) and layouts could go wrong.
Each also with the first layers run image by image (`batch_parts`).
fp32 tolerance: rtol 1e-3, atol 1e-3 x the largest output magnitude.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.backends.dnnl import batch_parts

DATA = (2, 4, 6, 6)


@st.composite
def cnns(draw):
    """A Group of one or two entries of a random CNN over `data` (4 channels)."""
    entries = [(mx.sym.Variable("data"), DATA[1])]
    pick = lambda: entries[draw(st.integers(0, len(entries) - 1))]  # noqa: E731
    for i in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["conv", "add", "concat", "pool", "act"]))
        src, c = pick()
        name = f"n{i}"
        if kind == "conv":
            k = draw(st.sampled_from([1, 3]))
            groups = draw(st.sampled_from([1, c]))
            out_c = c if groups > 1 else draw(st.sampled_from([4, 8]))
            y = mx.sym.Convolution(src, kernel=(k, k), pad=(k // 2, k // 2), num_filter=out_c,
                                   num_group=groups, no_bias=draw(st.booleans()), name=name)
            if draw(st.booleans()):
                y = mx.sym.BatchNorm(y, fix_gamma=draw(st.booleans()), name=f"{name}bn")
            if draw(st.booleans()):
                y = mx.sym.Activation(y, act_type="relu", name=f"{name}r")
            entries.append((y, out_c))
        elif kind == "add":
            same = [e for e, ec in entries if ec == c]
            other = same[draw(st.integers(0, len(same) - 1))]
            entries.append((mx.sym.elemwise_add(src, other, name=name), c))
        elif kind == "concat":
            other, other_c = pick()
            entries.append((mx.sym.Concat(src, other, dim=1, name=name), c + other_c))
        elif kind == "pool":
            pool_type = draw(st.sampled_from(["max", "avg"]))
            entries.append((mx.sym.Pooling(src, kernel=(3, 3), pad=(1, 1), pool_type=pool_type,
                                           name=name), c))
        else:
            act = draw(st.sampled_from(["relu", "sigmoid", "clip", "leaky"]))
            y = (mx.sym.clip(src, a_min=0.0, a_max=6.0, name=name) if act == "clip" else
                 mx.sym.LeakyReLU(src, act_type="leaky", slope=0.1, name=name) if act == "leaky"
                 else getattr(mx.sym, act)(src, name=name))
            entries.append((y, c))
    heads = [entries[draw(st.integers(1, len(entries) - 1))][0]
             for _ in range(draw(st.integers(1, 2)))]
    return mx.sym.Group(heads)


def _outputs(sym, values: dict, backend: str, monkeypatch) -> list[np.ndarray]:
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
    return [o.asnumpy() for o in sym.eval(**{k: mx.nd.array(v) for k, v in values.items()})]


@pytest.mark.parametrize("parts", [False, True])
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cnns(), st.integers(0, 2**31 - 1))
def test_dnnl_matches_numpy_on_random_cnns(monkeypatch, parts, sym, seed):
    """parts: every per-image prefix of the graph runs once per image (the
    thresholds of `batch_parts` that would keep such small nets whole off)."""
    for threshold in ("PART_BYTES", "MIN_PIXELS", "ACTIVATION_TO_WEIGHT") if parts else ():
        monkeypatch.setattr(batch_parts, threshold, 0)
    rng = np.random.default_rng(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=DATA)
    values = {n: rng.normal(0, 0.5, s)
              for n, s in zip(sym.list_arguments(), arg_shapes, strict=True)}
    values.update({n: rng.uniform(0.5, 1.5, s)
                   for n, s in zip(sym.list_auxiliary_states(), aux_shapes, strict=True)})
    want = _outputs(sym, values, "NONE", monkeypatch)
    got = _outputs(sym, values, "DNNL", monkeypatch)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(w).max()))
