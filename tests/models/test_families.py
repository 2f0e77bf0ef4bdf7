"""GluonCV / GluonNLP models beyond classification against MXNet 1.9.1's outputs.

tests/fixtures/families holds each model's exported graph, its inputs and MXNet's outputs
(tools/mxnet_fixtures.py, group ``families``); the weights are not stored but made again
from their names and shapes by tools/seeded_weights.py, as the fixture script made them.
Each model runs with no subgraph backend and with DNNL. Detectors end in NMS, whose output
reorders under near-ties in random-weight scores; the NMS inputs are compared as well.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from tests.onednn_required import require_onednn
from tools.seeded_weights import seeded_weights

FAMILIES = Path(__file__).resolve().parents[1] / "fixtures" / "families"
MODELS = sorted(p.name[:-len(".json")] for p in FAMILIES.glob("*.json")
                if not p.name.endswith("symbol.json"))
# Random weights drive Faster R-CNN's box regressions through exp to 1e11: exp turns the
# absolute rounding error of its argument (about 25) into a relative one, so float32 sums
# taken in another order (another CPU's kernels) differ in the third digit of a box.
# Mask R-CNN's masks are sigmoids of logits in the thousands: the same in another order.
TOLERANCE = {"faster_rcnn_resnet50_v1b_voc": 5e-3, "mask_rcnn_resnet50_v1b_coco": 5e-3}


def load(name: str) -> tuple[mx.sym.Symbol, dict, dict[str, np.ndarray]]:
    """(graph, spec, inputs and MXNet's values) of one fixture model."""
    sym = mx.sym.load_json(gzip.decompress((FAMILIES / f"{name}-symbol.json.gz").read_bytes()))
    spec = json.loads((FAMILIES / f"{name}.json").read_text())
    with np.load(FAMILIES / f"{name}-io.npz") as npz:
        values = {k: npz[k] for k in npz.files}
    return sym, spec, values


def run(name: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list, dict]:
    """minimx's outputs and internal outputs (by name) of one model, bound with `backend`."""
    sym, spec, values = load(name)
    weights = seeded_weights({k: tuple(v) for k, v in spec["params"].items()}, spec["seed"],
                             spec.get("gain", 1.0))
    internals = spec["internals"]
    group = mx.sym.Group([sym] + [sym.get_internals()[n] for n in internals])
    args = {n: mx.nd.array(weights[n] if n in weights else values[n])
            for n in group.list_arguments()}
    auxs = {n: mx.nd.array(weights[n]) for n in group.list_auxiliary_states()}
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
    ex = group.bind(mx.cpu(), args, aux_states=auxs, grad_req="null")
    outs = [y.asnumpy() for y in ex.forward(is_train=False)]
    heads = len(sym.list_outputs())
    return outs[:heads], dict(zip(internals, outs[heads:], strict=True))


def test_fixtures_hold_the_twenty_three_models() -> None:
    assert len(MODELS) == 23


@pytest.mark.parametrize("backend", ["NONE", "DNNL"])
@pytest.mark.parametrize("name", MODELS)
def test_model_matches_mxnet(name: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if backend == "DNNL":
        require_onednn()
    _, spec, values = load(name)
    outputs, internals = run(name, backend, monkeypatch)
    tol = TOLERANCE.get(name, 1e-4)
    for key, got in internals.items():
        want = values[f"internal:{key}"]
        assert_close(got, want, max(tol, 2e-3) if want.dtype == np.float16 else tol,
                     f"{name}: {key}")
    for i, got in enumerate(outputs):
        assert_close(got, values[f"output{i}"], tol, f"{name}: output {i}")


def assert_close(got: np.ndarray, want: np.ndarray, tol: float, what: str) -> None:
    """Equal up to `tol` of the largest value: random weights leave some outputs in the
    thousands, where float32 sums in another order differ in the fourth digit."""
    scale = max(1.0, float(np.abs(want[np.isfinite(want)]).max(initial=0.0)))
    np.testing.assert_allclose(got, want.astype(got.dtype), rtol=tol, atol=tol * scale,
                               err_msg=what)
