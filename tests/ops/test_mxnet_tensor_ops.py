"""Issue 15's tensor operators, and those added after it, against MXNet 1.9.1's own
outputs and gradients.

Fixture groups tensor_ops, more_ops and extra_ops (tools/mxnet_fixtures.py; their
case names differ): each case runs one operator
on fixed inputs chosen where MXNet's rules are easy to get wrong (clamped and
negative-step slices, ties in sorts and in maximum's gradient, out-of-range
and float indices, hidden outputs). Outputs must match in shape, dtype and
value; gradients (for seeded head gradients, through `backward_view`, so only
what `backward_reads` declares is read) must match in value. Shape and dtype
inference must give what the kernel gives.
"""
import json
from pathlib import Path

import numpy as np
import pytest

from minimx.ops import get_op
from minimx.ops.registry import OpContext

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GROUPS = ("tensor_ops", "more_ops", "extra_ops", "random_ops", "gap_ops")
CASES = {case: spec for group in GROUPS
         for case, spec in json.loads((FIXTURES / group / "cases.json").read_text()).items()}


@pytest.fixture(scope="module")
def recorded():
    arrays = {}
    for group in GROUPS:
        with np.load(FIXTURES / group / "cases.npz") as npz:
            arrays.update({k: npz[k] for k in npz.files})
    return arrays


def _series(recorded: dict, case: str, kind: str) -> list[np.ndarray]:
    return [recorded[f"{case}:{kind}_{i}"] for i in range(
        sum(k.startswith(f"{case}:{kind}_") for k in recorded))]


def _as_list(result) -> list[np.ndarray]:
    return result if isinstance(result, list) else [result]


@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_matches_mxnet(case, recorded):
    op = get_op(CASES[case]["op"])
    p = op.parse_params(CASES[case]["attrs"], case)
    inputs = _series(recorded, case, "in")
    outputs = _as_list(op.forward(p, OpContext(), inputs))
    visible = outputs[:op.num_visible_outputs(p)]
    want = _series(recorded, case, "out")
    assert [(o.shape, o.dtype) for o in visible] == [(w.shape, w.dtype) for w in want]
    for got, expected in zip(visible, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6, err_msg=case)
    shapes = op.infer_shape(p, [a.shape for a in inputs], [None] * len(outputs))[1]
    types = op.infer_type(p, [a.dtype for a in inputs], [None] * len(outputs))[1]
    assert shapes == [o.shape for o in outputs] and types == [o.dtype for o in outputs]


@pytest.mark.parametrize("case", sorted(c for c in CASES if CASES[c]["graded"]))
def test_gradient_matches_mxnet(case, recorded):
    op = get_op(CASES[case]["op"])
    p = op.parse_params(CASES[case]["attrs"], case)
    inputs = _series(recorded, case, "in")
    outputs = _as_list(op.forward(p, OpContext(), inputs))
    heads = _series(recorded, case, "head")
    heads += [np.zeros(o.shape, o.dtype) for o in outputs[len(heads):]]  # hidden outputs
    grads = op.backward(p, OpContext(), *op.backward_view(p, inputs, outputs), heads)
    for got, expected in zip(grads, _series(recorded, case, "grad"), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=case)
