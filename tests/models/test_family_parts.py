"""The parts of the GluonCV / GluonNLP fixture graphs that minimx's operators can run,
against the values MXNet 1.9.1 recorded there.

tests/fixtures/families holds each model's graph, inputs, MXNet's outputs and some
internal values (tools/mxnet_fixtures.py, group ``families``). Here every recorded
value whose whole producing subgraph uses registered operators is run alone - its
ancestors cut out of the graph - with no backend and with DNNL. YOLOv3's boxes before
NMS, for one, exercise _arange, tile, repeat, slice_like, broadcast_axis and the
comparisons on a real graph. Whole models are compared by the families test.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import OperatorError
from minimx.ops import get_op
from tests.onednn_required import require_onednn
from tools.seeded_weights import seeded_weights

FAMILIES = Path(__file__).resolve().parents[1] / "fixtures" / "families"


def _registered(op: str) -> bool:
    try:
        get_op(op)
    except OperatorError:
        return False
    return True


def ancestors(nodes: list[dict], head: int) -> list[int]:
    """The nodes `head` depends on (itself included), in graph order."""
    seen, stack = set(), [head]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack += [e[0] for e in nodes[i]["inputs"]]
    return sorted(seen)


def cut(graph: dict, head: int) -> dict:
    """The graph of `head` and its ancestors, renumbered, with `head` as its one output."""
    keep = ancestors(graph["nodes"], head)
    new = {old: k for k, old in enumerate(keep)}
    nodes = [{**graph["nodes"][old], "inputs": [[new[e[0]], e[1], 0]
                                                for e in graph["nodes"][old]["inputs"]]}
             for old in keep]
    return {"nodes": nodes, "arg_nodes": [k for k, n in enumerate(nodes) if n["op"] == "null"],
            "heads": [[new[head], 0, 0]], "attrs": graph.get("attrs", {})}


def runnable_parts() -> list[tuple[str, str]]:
    """(model, internal value) pairs whose producing subgraph minimx can run."""
    parts = []
    for spec_path in sorted(FAMILIES.glob("*.json")):
        model = spec_path.name[:-len(".json")]
        graph = json.loads(gzip.decompress((FAMILIES / f"{model}-symbol.json.gz").read_bytes()))
        by_name = {n["name"]: i for i, n in enumerate(graph["nodes"])}
        for internal in json.loads(spec_path.read_text())["internals"]:
            head = by_name[internal.removesuffix("_output")]
            if all(_registered(graph["nodes"][i]["op"]) for i in ancestors(graph["nodes"], head)
                   if graph["nodes"][i]["op"] != "null"):
                parts.append((model, internal))
    return parts


@pytest.mark.parametrize("backend", ["NONE", "DNNL"])
@pytest.mark.parametrize("model, internal", runnable_parts())
def test_part_matches_mxnet(model: str, internal: str, backend: str,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    if backend == "DNNL":
        require_onednn()
    graph = json.loads(gzip.decompress((FAMILIES / f"{model}-symbol.json.gz").read_bytes()))
    spec = json.loads((FAMILIES / f"{model}.json").read_text())
    by_name = {n["name"]: i for i, n in enumerate(graph["nodes"])}
    sym = mx.sym.load_json(json.dumps(cut(graph, by_name[internal.removesuffix("_output")])))
    with np.load(FAMILIES / f"{model}-io.npz") as npz:
        values = {k: npz[k] for k in npz.files}
    weights = seeded_weights({k: tuple(v) for k, v in spec["params"].items()}, spec["seed"])
    args = {n: mx.nd.array(weights[n] if n in weights else values[n])
            for n in sym.list_arguments()}
    auxs = {n: mx.nd.array(weights[n]) for n in sym.list_auxiliary_states()}
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
    got = sym.bind(mx.cpu(), args, aux_states=auxs, grad_req="null").forward()[0].asnumpy()
    want = values[f"internal:{internal}"]
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)
