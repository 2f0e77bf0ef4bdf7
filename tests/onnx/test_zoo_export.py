"""Every model-zoo net exported to ONNX gives minimx's outputs, in onnxruntime and in
ONNX's reference evaluator, and has the structure MXNet 1.9.1's exporter writes.

Weights are seeded (He-scaled, BatchNorm near identity); inputs are as small as each
net allows (its last pooling window must fit). tests/fixtures/onnx holds what MXNet's
``mx.onnx.export_model`` made of a few of the nets (tools/mxnet_fixtures.py, group onnx).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

import minimx as mx

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "onnx"
# The smallest input each family's fixed final pooling window allows.
SIZES = {"alexnet": 64, "densenet": 224, "squeezenet": 224, "inceptionv3": 299}


def input_shape(name: str, size: int | None = None) -> tuple[int, int, int, int]:
    size = size or next((s for prefix, s in SIZES.items() if name.startswith(prefix)), 32)
    return (1, 3, size, size)


def seeded(shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """He-scaled weights and BatchNorm near identity, from one fast generator (the nets
    hold up to 58M parameters)."""
    rng = np.random.default_rng(18)
    params = {}
    for name, shape in shapes.items():
        if name.endswith("running_var"):
            params[name] = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        elif name.endswith("gamma"):
            params[name] = rng.uniform(0.8, 1.2, shape).astype(np.float32)
        elif len(shape) < 2:  # betas, biases, running means
            params[name] = rng.uniform(-0.1, 0.1, shape).astype(np.float32)
        else:
            scale = np.float32(np.sqrt(2.0 / np.prod(shape[1:])))
            params[name] = rng.standard_normal(shape, dtype=np.float32) * scale
    return params


def zoo_case(name: str, classes: int = 10, size: int | None = None
             ) -> tuple[mx.sym.Symbol, dict, np.ndarray]:
    """(net, seeded parameters, input) of one zoo net (inputs `size` square, or the
    smallest the net allows)."""
    net = mx.models.get_model(name, classes=classes)
    shape = input_shape(name, size)
    args, _, aux = net.infer_shape(data=shape)
    shapes = dict(zip(net.list_arguments() + net.list_auxiliary_states(), args + aux,
                      strict=True))
    del shapes["data"]
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    return net, seeded(shapes), data


def minimx_output(net: mx.sym.Symbol, params: dict, data: np.ndarray) -> np.ndarray:
    args = {n: mx.nd.array(params[n]) for n in net.list_arguments() if n != "data"}
    aux = {n: mx.nd.array(params[n]) for n in net.list_auxiliary_states()}
    ex = net.bind(mx.cpu(), {**args, "data": mx.nd.array(data)}, aux_states=aux,
                  grad_req="null")
    return ex.forward(is_train=False)[0].asnumpy()


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("name", mx.models.list_models())
def test_zoo_net_runs_in_onnxruntime(name: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    net, params, data = zoo_case(name)
    path = mx.onnx.export_model(net, params, [data.shape], np.float32,
                                str(tmp_path / f"{name}.onnx"))
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {"data": data})
    assert_close(got, minimx_output(net, params, data))


@pytest.mark.parametrize("name", ["mobilenet0.25", "mobilenetv2_0.25", "resnet18_v2"])
def test_zoo_net_runs_in_the_reference_evaluator(name: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    net, params, data = zoo_case(name)
    path = mx.onnx.export_model(net, params, [data.shape], onnx_file_path=str(tmp_path / "m"))
    (got,) = ReferenceEvaluator(path).run(None, {"data": data})
    assert_close(got, minimx_output(net, params, data))


# -- against MXNet's exporter ---------------------------------------------------------

def structure(model: onnx.ModelProto) -> dict:
    """The fixture's view of an ONNX model (tools/mxnet_fixtures.py `_onnx_structure`)."""
    def info(value: onnx.ValueInfoProto) -> list:
        dims = value.type.tensor_type.shape.dim
        return [value.name, [d.dim_value if d.HasField("dim_value") else None for d in dims]]

    def attr(a: onnx.AttributeProto) -> object:
        value = onnx.helper.get_attribute_value(a)
        return list(value) if isinstance(value, (list, tuple)) else value

    return {"inputs": [info(v) for v in model.graph.input],
            "outputs": [info(v) for v in model.graph.output],
            "initializers": [[t.name, list(t.dims)] for t in model.graph.initializer],
            "nodes": [{"op_type": n.op_type, "inputs": list(n.input), "outputs": list(n.output),
                       "attrs": {a.name: attr(a) for a in n.attribute}}
                      for n in model.graph.node]}


def layers(nodes: list[dict]) -> list[tuple]:
    """The layer nodes (those that produce a named node output or take weights) with their
    attributes; helper constants and the names of intermediate tensors aside."""
    return [(n["op_type"], sorted(n["attrs"].items())) for n in nodes]


MXNET_EXPORTS = sorted(p.name[:-len("-onnx.json.gz")] for p in FIXTURES.glob("*-onnx.json.gz"))


@pytest.mark.parametrize("name", MXNET_EXPORTS)
def test_structure_matches_mxnet_exporter(name: str, tmp_path: Path) -> None:
    want = json.loads(gzip.decompress((FIXTURES / f"{name}-onnx.json.gz").read_bytes()))
    net = mx.models.get_model(name)
    shape = want["inputs"][0][1]
    args, _, aux = net.infer_shape(data=tuple(shape))
    params = {n: np.zeros(s, np.float32) for n, s in
              zip(net.list_arguments() + net.list_auxiliary_states(), args + aux, strict=True)
              if n != "data"}
    path = mx.onnx.export_model(net, params, [shape], onnx_file_path=str(tmp_path / "m.onnx"))
    got = structure(onnx.load(path))
    # MXNet lists the weights among the graph inputs as well; minimx leaves them
    # initializers only, the constants a runtime may fold.
    assert got["inputs"] == [i for i in want["inputs"] if i[0] not in params]
    assert got["outputs"] == want["outputs"]
    # The weights, under the same names and dims (MXNet adds a few helper constants).
    weights = {n: d for n, d in want["initializers"] if n in params}
    assert {n: d for n, d in got["initializers"] if n in params} == weights
    assert len(weights) == len(params)
    # Node for node: the same ONNX operators, attributes, and the named node outputs.
    assert layers(got["nodes"]) == layers(want["nodes"])
    assert [n["outputs"] for n in got["nodes"]] == [n["outputs"] for n in want["nodes"]]
