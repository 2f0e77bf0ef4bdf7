"""minimx.models against what MXNet 1.9.1's gluon model zoo exports.

Structure: for every zoo net, the symbol `get_model` builds must equal the one
``net.hybridize(); net(x); net.export()`` wrote (tests/fixtures/structure): the same
nodes in the same order - op, name, operator attributes, inputs - so the argument and
auxiliary names come out identical and in the same order, and MXNet's inferred shapes.
Numbers: the small nets of tests/fixtures/models, rebuilt by the generic builders, bound
to MXNet's exported .params, must reproduce MXNet's outputs.
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.models import densenet, mobilenet, resnet
from minimx.symbol import Symbol

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STRUCTURE = FIXTURES / "structure"
ZOO = sorted(p.name[:-len("-info.json.gz")] for p in STRUCTURE.glob("*-info.json.gz"))

# The fixture nets of tests/fixtures/models, as tools/mxnet_fixtures.py constructs them.
SMALL_NETS: dict[str, Callable[[], Symbol]] = {
    "mobilenet0.125_c10": lambda: mobilenet.mobilenet(0.125, classes=10),
    "mobilenetv2_0.25_c10": lambda: mx.models.get_model("mobilenetv2_0.25", classes=10),
    "resnet18_v1_narrow": lambda: resnet.resnet_v1("basic_block", [2, 2, 2, 2],
                                                   [4, 4, 8, 16, 32], classes=10),
    "resnet18_v1_wide16": lambda: resnet.resnet_v1("basic_block", [2, 2, 2, 2],
                                                   [16, 16, 24, 32, 40], classes=10),
    "resnet50_v2_narrow": lambda: resnet.resnet_v2("bottle_neck", [1, 1, 1, 1],
                                                   [8, 16, 32, 48, 64], classes=10),
    "densenet_narrow": lambda: densenet.densenet_net(8, 4, [2, 2], classes=10),
}


def graph_of(graph: dict) -> dict:
    """What must match: every node but the variables' attributes (gluon's init hints,
    e.g. ``__init__``, ``__lr_mult__``, that binding ignores), heads and arg_nodes.
    node_row_ptr is left out: it counts the hidden outputs of MXNet's ops."""
    nodes = [(n["op"], n["name"], n.get("attrs", {}) if n["op"] != "null" else {},
              n["inputs"]) for n in graph["nodes"]]
    return {"nodes": nodes, "heads": graph["heads"], "arg_nodes": graph["arg_nodes"]}


def assert_same_graph(got: Symbol, want: dict) -> None:
    got_graph, want_graph = graph_of(json.loads(got.tojson())), graph_of(want)
    # Name the first node that differs; the comparison after it catches extra nodes.
    for i, (g, w) in enumerate(zip(got_graph["nodes"], want_graph["nodes"], strict=False)):
        assert g == w, f"node {i} differs"
    assert got_graph == want_graph


def load_gz(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def test_fixtures_cover_every_model() -> None:
    assert ZOO == mx.models.list_models()
    assert len(ZOO) == 34


@pytest.mark.parametrize("name", ZOO)
def test_structure_matches_mxnet_export(name: str) -> None:
    info = load_gz(STRUCTURE / f"{name}-info.json.gz")
    net = mx.models.get_model(name)
    assert_same_graph(net, load_gz(STRUCTURE / f"{name}-symbol.json.gz"))
    assert net.list_arguments() == info["list_arguments"]
    assert net.list_auxiliary_states() == info["list_auxiliary_states"]
    assert net.list_outputs() == info["list_outputs"]
    arg_shapes, out_shapes, aux_shapes = net.infer_shape(data=tuple(info["input_shape"]))
    assert dict(zip(net.list_arguments(), map(list, arg_shapes), strict=True)) == info["arg_shapes"]
    assert (dict(zip(net.list_auxiliary_states(), map(list, aux_shapes), strict=True))
            == info["aux_shapes"])
    assert [list(s) for s in out_shapes] == info["output_shapes"]


@pytest.mark.parametrize("name", sorted(SMALL_NETS))
def test_small_net_reproduces_mxnet_output(name: str) -> None:
    prefix = FIXTURES / "models" / name
    net = SMALL_NETS[name]()
    exported, arg_params, aux_params = mx.model.load_checkpoint(str(prefix), 0)
    assert_same_graph(net, json.loads(exported.tojson()))
    io = np.load(f"{prefix}-io.npz")
    args = {**arg_params, "data": mx.nd.array(io["data"])}
    out = net.bind(mx.cpu(), args, aux_states=aux_params, grad_req="null").forward()[0]
    np.testing.assert_allclose(out.asnumpy(), io["output"], rtol=1e-4, atol=1e-4)


def test_get_model_options() -> None:
    net = mx.models.get_model("ResNet18_V2", classes=10, thumbnail=True, prefix="r_")
    assert net.list_arguments()[:3] == ["data", "r_batchnorm0_gamma", "r_batchnorm0_beta"]
    assert net.infer_shape(data=(1, 3, 32, 32))[1] == [(1, 10)]
    internals = mx.models.get_model("densenet121", dropout=0.1).get_internals()
    assert "densenet0_stage1_dropout0_fwd_output" in internals.list_outputs()


def test_names_ignore_callers_name_scope() -> None:
    with mx.name.Prefix("outer_"):
        net = mx.models.get_model("squeezenet1.1")
    assert net.name == "squeezenet0_flatten0_flatten0"
    assert net.list_arguments()[1] == "squeezenet0_conv0_weight"


def test_unknown_model() -> None:
    with pytest.raises(mx.models.ModelError, match="available: alexnet") as err:
        mx.models.get_model("resnet19_v1")
    assert isinstance(err.value, mx.MinimxError) and isinstance(err.value, ValueError)
    with pytest.raises(mx.models.ModelError, match="no 12-layer"):
        mx.models.vgg.vgg(12)
    with pytest.raises(mx.models.ModelError, match="no block 'bottleneck'"):
        resnet.resnet_v2("bottleneck", [1], [8, 16])
    with pytest.raises(mx.models.ModelError, match="2 stages need 3 channel counts"):
        resnet.resnet_v1("basic_block", [1, 1], [8, 16])


def test_pretrained_says_weights_are_not_downloaded_and_how_to_load_them() -> None:
    with pytest.raises(mx.models.ModelError) as err:
        mx.models.get_model("resnet18_v1", pretrained=True)
    text = str(err.value)
    assert "does not download weights" in text
    assert "net.export('resnet18_v1')" in text
    assert "mx.model.load_checkpoint('resnet18_v1', 0)" in text
    assert mx.models.get_model("resnet18_v1", pretrained=False).list_outputs() == \
        mx.models.get_model("resnet18_v1").list_outputs()
