"""The upgrades MXNet 1.9.1 applies to JSON from older MXNet versions
(``src/nnvm/legacy_json_util.cc``), each checked against what MXNet 1.9.1 made
of the same file."""
from __future__ import annotations

import json

import numpy as np
import pytest

import minimx as mx
from minimx.base import GraphOperatorError

X = np.array([[[0, 1, 2, 3], [4, 5, 6, 0], [1, 2, 3, 4]],
              [[5, 6, 0, 1], [2, 3, 4, 5], [6, 0, 1, 2]]], np.float32)


def graph(nodes: list[dict], version: int | None) -> str:
    """A graph whose variables are its arg_nodes and whose last node is the head."""
    obj = {"nodes": nodes, "arg_nodes": [i for i, n in enumerate(nodes) if n["op"] == "null"],
           "heads": [[len(nodes) - 1, 0]]}
    if version is not None:
        obj["attrs"] = {"mxnet_version": ["int", version]}
    return json.dumps(obj)


def argmax_graph(axis: str, version: int | None) -> str:
    return graph([{"op": "null", "name": "x", "inputs": []},
                  {"op": "argmax", "name": "am", "param": {"axis": axis}, "inputs": [[0, 0]]}],
                 version)


def run(sym: mx.sym.Symbol, **arrays: np.ndarray) -> np.ndarray:
    args = {k: mx.nd.array(v) for k, v in arrays.items()}
    return sym.bind(mx.cpu(), args, grad_req="null").forward()[0].asnumpy()


@pytest.mark.parametrize("version", [None, 800, 904])
def test_argmax_axis_minus_one_before_0_9_5_reduces_everything(version: int | None) -> None:
    # MXNet 1.9.1 drops the axis: the index of the maximum in the flattened array.
    sym = mx.sym.load_json(argmax_graph("-1", version))
    assert "axis" not in sym.attr_dict().get("am", {})
    np.testing.assert_array_equal(run(sym, x=X), [6.0])


@pytest.mark.parametrize("version", [905, 10901])
def test_argmax_axis_minus_one_from_0_9_5_on_is_the_last_axis(version: int) -> None:
    np.testing.assert_array_equal(run(mx.sym.load_json(argmax_graph("-1", version)), x=X),
                                  [[3, 2, 3], [1, 3, 0]])


def test_argmax_other_axes_are_kept_in_old_files() -> None:
    np.testing.assert_array_equal(run(mx.sym.load_json(argmax_graph("1", 800)), x=X),
                                  [[1, 1, 1, 2], [2, 0, 1, 1]])


def stats_graph(version: int) -> str:
    """BatchNorm and a prelu LeakyReLU, their variables without ``__init__``
    except bn_moving_var, which has its own."""
    names = ["x", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var", "alpha"]
    nodes: list[dict] = [{"op": "null", "name": n, "inputs": []} for n in names]
    nodes[4]["attrs"] = {"__init__": '["zero", {}]'}
    nodes.append({"op": "BatchNorm", "name": "bn", "inputs": [[i, 0] for i in range(5)]})
    nodes.append({"op": "LeakyReLU", "name": "pr", "attrs": {"act_type": "prelu"},
                  "inputs": [[6, 0], [5, 0]]})
    return graph(nodes, version)


def test_input_initializers_are_added_to_files_before_0_9_4() -> None:
    attrs = mx.sym.load_json(stats_graph(903)).attr_dict()
    assert attrs["bn_moving_mean"] == {"__init__": '["zero", {}]'}
    assert attrs["bn_moving_var"] == {"__init__": '["zero", {}]'}   # its own is kept
    assert attrs["alpha"] == {"__init__": '["Constant", {"value": 0.25}]'}
    assert "bn_gamma" not in attrs


def test_input_initializers_are_left_alone_from_0_9_4_on() -> None:
    attrs = mx.sym.load_json(stats_graph(904)).attr_dict()
    assert "bn_moving_mean" not in attrs and "alpha" not in attrs


def fc_graph(fc_attrs: dict[str, str], data_attrs: dict[str, str]) -> str:
    return graph([{"op": "null", "name": "data", "attr": data_attrs, "inputs": []},
                  {"op": "null", "name": "fc_weight", "inputs": []},
                  {"op": "FullyConnected", "name": "fc", "inputs": [[0, 0], [1, 0]],
                   "param": {"num_hidden": "2", "no_bias": "True"}, "attr": fc_attrs}], None)


def test_an_input_key_on_a_variable_stays_as_it_is() -> None:
    sym = mx.sym.load_json(fc_graph({}, {"lr_mult": "0.5", "weight_lr_mult": "2"}))
    assert sym.attr_dict()["data"] == {"__lr_mult__": "0.5", "lr_mult": "0.5",
                                       "weight_lr_mult": "2"}


def test_an_input_key_on_an_operator_moves_to_the_input_variable() -> None:
    attrs = mx.sym.load_json(fc_graph({"weight_lr_mult": "3", "ctx_group": "g"}, {})).attr_dict()
    assert attrs["fc_weight"] == {"__lr_mult__": "3", "lr_mult": "3"}
    assert attrs["fc"]["__ctx_group__"] == "g" and "weight_lr_mult" not in attrs["fc"]


@pytest.mark.parametrize("key", ["gamma_wd_mult", "data_lr_mult"])
def test_an_input_key_naming_no_variable_input_is_refused_as_mxnet_does(key: str) -> None:
    # gamma: FullyConnected has no such input; data: the input is an operator's output.
    nodes = json.loads(fc_graph({key: "4"}, {}))
    nodes["nodes"].insert(1, {"op": "relu", "name": "r", "inputs": [[0, 0]]})
    nodes["nodes"][3]["inputs"] = [[1, 0], [2, 0]]
    nodes["arg_nodes"] = [0, 2]
    nodes["heads"] = [[3, 0]]
    with pytest.raises(GraphOperatorError, match=f"unknown parameter {key}"):
        mx.sym.load_json(json.dumps(nodes))
