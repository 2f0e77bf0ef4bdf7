"""MXNet's hidden attribute keys and AttrScope.

MXNet stores lr_mult, wd_mult, ctx_group, force_mirroring and mirror_stage as
``__key__`` and reads them back under both names; cases follow MXNet 1.9's
tests/python/unittest/test_attr.py.
"""
from __future__ import annotations

import json

import pytest

import minimx as mx


def test_variable_keywords_are_stored_as_hidden_keys():
    w = mx.sym.Variable("w", lr_mult=2.0, wd_mult=0.5, ctx_group="dev1", mirror_stage="True")
    assert w.attr("lr_mult") == "2.0" and w.attr("__lr_mult__") == "2.0"
    assert w.attr("wd_mult") == "0.5" and w.attr("ctx_group") == "dev1"
    assert w.list_attr() == {"__lr_mult__": "2.0", "lr_mult": "2.0", "__wd_mult__": "0.5",
                             "wd_mult": "0.5", "__ctx_group__": "dev1", "ctx_group": "dev1",
                             "__mirror_stage__": "True", "mirror_stage": "True"}


def test_variable_attr_dict_keys():
    data = mx.sym.Variable("data", attr={"dtype": "data", "group": "1",
                                         "force_mirroring": "True"}, lr_mult=1)
    assert data.attr("group") == "1" and data.attr("dtype") == "data"
    assert data.attr("lr_mult") == "1" and data.attr("__lr_mult__") == "1"
    assert data.attr("force_mirroring") == "True"
    assert data.attr("__force_mirroring__") == "True"
    with pytest.raises(mx.MinimxError, match="'mood' must be of the form __key__"):
        mx.sym.Variable("v", mood="angry")


def test_operator_keywords_and_attr_are_attributes_not_parameters():
    data = mx.sym.Variable("data", attr={"mood": "angry"})
    conv = mx.sym.Convolution(data=data, name="conv", kernel=(1, 1), num_filter=1,
                              attr={"__mood__": "so so", "wd_mult": "x"}, lr_mult=1)
    assert conv.list_attr() == {"kernel": "(1, 1)", "num_filter": "1", "__mood__": "so so",
                                "__wd_mult__": "x", "wd_mult": "x", "__lr_mult__": "1",
                                "lr_mult": "1"}
    assert conv.attr("lr_mult") == "1" and conv.attr("wd_mult") == "x"
    attrs = conv.attr_dict()
    assert attrs["data"] == {"mood": "angry"}
    # the variables an operator creates carry its attributes, as in MXNet
    assert attrs["conv_weight"]["lr_mult"] == "1" and attrs["conv_bias"]["__mood__"] == "so so"
    fc = mx.sym.FullyConnected(data, num_hidden=2, attr={"lr_mult": "2"}, ctx_group="dev2")
    assert (fc.attr("lr_mult"), fc.attr("ctx_group")) == ("2", "dev2")
    assert fc.infer_shape(data=(3, 5))[1] == [(3, 2)]


def test_input_attributes_given_to_the_operator_are_refused_as_in_mxnet():
    with pytest.raises(mx.MinimxError, match="weight_lr_mult is deprecated.*lr_mult"):
        mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2, weight_lr_mult=2)


def test_set_attr_stores_hidden_keys():
    x = mx.sym.Variable("x")
    x._set_attr(ctx_group="dev3")
    assert x.list_attr() == {"__ctx_group__": "dev3", "ctx_group": "dev3"}


def test_attr_scope_applies_to_variables_and_operators_and_nests():
    data = mx.sym.Variable("data")
    with mx.AttrScope(ctx_group="dev1", __data__="great"):
        w = mx.sym.Variable("w", attr={"__data__": "mine"})
        act = mx.sym.Activation(data, act_type="relu", name="act")
        with mx.attribute.AttrScope(__init_bias__="0.0"):
            fc = mx.sym.FullyConnected(act, weight=w, num_hidden=10, name="fc")
    after = mx.sym.relu(data, name="after")
    assert (w.attr("ctx_group"), w.attr("__data__")) == ("dev1", "mine")
    assert act.attr("ctx_group") == "dev1" and act.attr("__data__") == "great"
    assert fc.attr("__ctx_group__") == "dev1" and fc.attr("__init_bias__") == "0.0"
    assert fc.get_internals()["fc_bias"].attr("__init_bias__") == "0.0"
    assert data.list_attr() == {} and after.list_attr() == {}
    with pytest.raises(mx.MinimxError, match="must be a string"):
        mx.AttrScope(ctx_group=1)


def test_a_value_that_is_not_a_string_is_a_value_error_as_in_mxnet():
    with pytest.raises(ValueError, match="must be a string"):
        mx.AttrScope(lr_mult=2.0)


def test_hidden_keys_survive_json_and_pickle_of_the_json():
    with mx.AttrScope(ctx_group="dev1"):
        w = mx.sym.Variable("w", lr_mult=2.0)
        fc = mx.sym.FullyConnected(mx.sym.Variable("x"), weight=w, num_hidden=2, name="fc",
                                   mirror_stage="True")
    back = mx.sym.load_json(fc.tojson())
    assert back.tojson() == fc.tojson()
    assert back.attr_dict() == fc.attr_dict()
    assert back.attr("ctx_group") == "dev1" and back.attr("mirror_stage") == "True"
    assert back.get_internals()["w"].attr("lr_mult") == "2.0"
    node = json.loads(fc.tojson())["nodes"][-1]
    assert node["attrs"]["__ctx_group__"] == "dev1" and "ctx_group" not in node["attrs"]


def test_legacy_json_hidden_keys_read_back_by_plain_name():
    legacy = {"nodes": [
        {"op": "null", "name": "data", "inputs": []},
        {"op": "FullyConnected", "name": "fc", "param": {"num_hidden": "4"},
         "attr": {"lr_mult": "0.5", "ctx_group": "dev1", "weight_wd_mult": "0"},
         "inputs": [[0, 0]]}], "arg_nodes": [0], "heads": [[1, 0]]}
    fc = mx.sym.load_json(json.dumps(legacy))
    assert fc.attr("lr_mult") == "0.5" and fc.attr("ctx_group") == "dev1"
    assert fc.list_attr()["ctx_group"] == "dev1"
    assert fc.attr_dict()["fc_weight"]["wd_mult"] == "0"
