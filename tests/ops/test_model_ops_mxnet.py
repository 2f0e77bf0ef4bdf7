"""Issue 15's model operators and the detection examples' contrib operators against
MXNet 1.9.1's own outputs and gradients.

Fixtures: tools/mxnet_fixtures.py, groups model_ops, detection_ops and deformable_ops -
each operator on fixed inputs with MXNet's outputs, and for some cases a head gradient and
MXNet's input gradients (one backward pass through autograd).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from minimx.ops import get_op
from minimx.ops.registry import OpContext

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# "<group>/<case>" -> the case's operator and attributes
CASES = {f"{group}/{case}": spec for group in ("model_ops", "detection_ops", "deformable_ops")
         for case, spec in json.loads((FIXTURES / group / "cases.json").read_text()).items()}
WITH_GRADS = sorted(c for c in CASES if "head_0" in np.load(FIXTURES / f"{c}.npz").files)


def arrays(npz, prefix: str) -> list[np.ndarray]:
    return [npz[f"{prefix}{i}"] for i in range(sum(k.startswith(prefix) for k in npz.files))]


def forward(case: str):
    op = get_op(CASES[case]["op"])
    params = op.parse_params(CASES[case]["attrs"], case)
    with np.load(FIXTURES / f"{case}.npz") as npz:
        inputs, want = arrays(npz, "in_"), arrays(npz, "out_")
    got = op.forward(params, OpContext(), inputs)
    return op, params, inputs, (list(got) if isinstance(got, (list, tuple)) else [got]), want


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_matches_mxnet(case):
    op, params, inputs, got, want = forward(case)
    got = got[:op.num_visible_outputs(params)]
    assert [g.shape for g in got] == [w.shape for w in want]
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=case)


@pytest.mark.parametrize("case", WITH_GRADS)
def test_gradient_matches_mxnet(case):
    op, params, inputs, outputs, _ = forward(case)
    with np.load(FIXTURES / f"{case}.npz") as npz:
        heads, want = arrays(npz, "head_"), arrays(npz, "grad_")
    visible = op.num_visible_outputs(params)
    heads += [np.zeros_like(o) for o in outputs[visible:]]
    grads = op.backward(params, OpContext(), *op.backward_view(params, inputs, outputs), heads)
    for i, (g, w) in enumerate(zip(grads, want, strict=True)):
        got = np.zeros_like(w) if g is None else g
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5, err_msg=f"{case} input {i}")
