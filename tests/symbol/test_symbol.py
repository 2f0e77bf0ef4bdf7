"""Symbol composition, naming, listing, attributes and arithmetic, as in MXNet 1.9."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx


def _net():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv0")
    x = mx.sym.BatchNorm(x, name="bn0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.FullyConnected(x, num_hidden=3, name="fc0")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def test_lists_follow_mxnet_order():
    net = _net()
    assert net.list_arguments() == ["data", "conv0_weight", "conv0_bias", "bn0_gamma",
                                    "bn0_beta", "fc0_weight", "fc0_bias", "softmax_label"]
    assert net.list_auxiliary_states() == ["bn0_moving_mean", "bn0_moving_var"]
    assert net.list_outputs() == ["softmax_output"]
    assert net.list_inputs() == ["data", "conv0_weight", "conv0_bias", "bn0_gamma", "bn0_beta",
                                 "bn0_moving_mean", "bn0_moving_var", "fc0_weight", "fc0_bias",
                                 "softmax_label"]


def test_auto_created_inputs_carry_the_op_attributes():
    fc = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=7, name="fc")
    weight = fc.get_internals()["fc_weight"]
    assert weight.attr("num_hidden") == "7"


def test_auto_names_count_per_operator():
    with mx.name.NameManager():
        a = mx.sym.relu(mx.sym.Variable("x"))
        b = mx.sym.relu(a)
        c = mx.sym.FullyConnected(b, num_hidden=2)
    assert (a.name, b.name, c.name) == ("relu0", "relu1", "fullyconnected0")
    assert c.list_arguments()[1:] == ["fullyconnected0_weight", "fullyconnected0_bias"]


def test_prefix_applies_to_given_and_automatic_names():
    with mx.name.Prefix("p_"):
        a = mx.sym.relu(mx.sym.Variable("x"), name="r")
        b = mx.sym.relu(a)
    assert a.name == "p_r"
    assert b.name.startswith("p_relu")


def test_group_indexing_internals_children():
    x = mx.sym.Variable("x")
    a, b = mx.sym.relu(x, name="a"), mx.sym.tanh(x, name="b")
    g = mx.sym.Group([a, b])
    assert len(g) == 2 and g.list_outputs() == ["a_output", "b_output"]
    assert g[1].name == "b" and g["a_output"].name == "a"
    assert [s.name for s in g] == ["a", "b"]
    internals = mx.sym.elemwise_add(a, b, name="s").get_internals()
    assert internals.list_outputs() == ["x", "a_output", "b_output", "s_output"]
    assert mx.sym.elemwise_add(a, b).get_children().list_outputs() == ["a_output", "b_output"]
    assert x.get_children() is None
    with pytest.raises(mx.MinimxError, match="not found"):
        g["nope"]


def test_batchnorm_hides_mean_and_var_from_its_outputs_and_the_internals():
    # As MXNet 1.9.1: its internals list each node's visible outputs only.
    bn = mx.sym.BatchNorm(mx.sym.Variable("x"), name="bn")
    assert bn.list_outputs() == ["bn_output"]
    assert bn.get_internals().list_outputs() == [
        "x", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var", "bn_output"]
    assert len(mx.sym.BatchNorm(mx.sym.Variable("x"), output_mean_var=True)) == 3


def test_an_operator_without_parameters_keeps_any_attribute_as_mxnet_does():
    # MXNet 1.9.1 keeps them on relu and Flatten (no parameter struct), and
    # refuses them on FullyConnected as an unknown parameter.
    x = mx.sym.Variable("x")
    with mx.AttrScope(group="4"):
        r = mx.sym.relu(x, bogus=1, name="r1")
        with pytest.raises(mx.OperatorError, match="unknown parameter group"):
            mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    assert r.attr_dict() == {"r1": {"group": "4", "bogus": "1"}}
    again = mx.sym.load_json(r.tojson())
    assert again.attr_dict() == r.attr_dict()
    np.testing.assert_array_equal(again.eval(x=mx.nd.array([-1.0, 2.0]))[0].asnumpy(), [0, 2])
    np.testing.assert_array_equal(mx.nd.relu(mx.nd.array([-1.0, 2.0]), bogus=3).asnumpy(), [0, 2])


def test_namespace_functions_name_their_nodes_by_the_short_name_as_mxnet():
    # MXNet 1.9.1: box_nms0, gemm20, deformableconvolution0_weight.
    x = mx.sym.Variable("x")
    with mx.name.NameManager():
        assert mx.sym.contrib.box_nms(x).name == "box_nms0"
        assert mx.sym.linalg.gemm2(x, x).name == "gemm20"
        conv = mx.sym.contrib.DeformableConvolution(x, x, num_filter=2, kernel=(3, 3))
    assert conv.list_arguments() == ["x", "deformableconvolution0_weight",
                                     "deformableconvolution0_bias"]


def test_nodes_of_one_name_share_an_attr_dict_entry_as_in_mxnet():
    # MXNet 1.9.1: {'x': {'p': '3', 'q': '2'}}
    x = mx.sym.var("x", attr={"p": "1"})
    y = mx.sym.relu(mx.sym.relu(x, name="x", attr={"q": "2"}), name="x", attr={"p": "3"})
    assert y.attr_dict() == {"x": {"p": "3", "q": "2"}}


def test_split_has_one_output_per_piece():
    parts = mx.sym.split(mx.sym.Variable("x"), num_outputs=3, axis=1, name="sp")
    assert parts.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"]


def test_attributes():
    x = mx.sym.Variable("x", shape=(2, 3), dtype="float64", lr_mult=2.0)
    assert x.attr("__shape__") == "(2, 3)" and x.attr("__dtype__") == "1"
    # One number is a 1-D shape, as MXNet reads `shape=(5)`.
    assert mx.sym.var("b", shape=5).infer_shape()[0] == [(5,)]
    assert x.list_attr()["__lr_mult__"] == "2.0"
    r = mx.sym.relu(x, name="r", attr={"__ctx_group__": "dev1"})
    r._set_attr(__mood__="calm")
    assert r.attr_dict()["r"] == {"__ctx_group__": "dev1", "ctx_group": "dev1",
                                  "__mood__": "calm"}
    assert r.attr("missing") is None
    with pytest.raises(mx.OperatorError, match="num_hidden"):
        mx.sym.FullyConnected(x, num_hidden=3, name="f")._set_attr(num_hidden="many")


@pytest.mark.parametrize("expr, op", [
    (lambda a, b: a + b, "elemwise_add"), (lambda a, b: a - b, "elemwise_sub"),
    (lambda a, b: a * b, "elemwise_mul"), (lambda a, b: a / b, "elemwise_div"),
    (lambda a, b: a + 2, "_plus_scalar"), (lambda a, b: 2 - a, "_rminus_scalar"),
    (lambda a, b: a * 3, "_mul_scalar"), (lambda a, b: 1 / a, "_rdiv_scalar"),
    (lambda a, b: -a, "_mul_scalar"),
])
def test_python_operators_map_to_mxnet_ops(expr, op):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    result = expr(a, b)
    assert result.outputs[0].node.op == op
    av, bv = np.array([1.0, 2.0, 4.0]), np.array([2.0, 5.0, 8.0])
    args = {n: mx.nd.array(v) for n, v in (("a", av), ("b", bv)) if n in result.list_arguments()}
    np.testing.assert_allclose(result.eval(**args)[0].asnumpy(), expr(av, bv), rtol=1e-6)


def test_wrappers_have_generated_docstrings():
    doc = mx.sym.Convolution.__doc__
    assert "num_filter : int, required" in doc and "stride" in doc
    assert mx.nd.Pooling.__doc__ == mx.sym.Pooling.__doc__


def test_bad_calls_name_the_node():
    x = mx.sym.Variable("x")
    with pytest.raises(mx.OperatorError, match=r"fc1 \(FullyConnected\).*num_hidden"):
        mx.sym.FullyConnected(x, name="fc1")
    with pytest.raises(mx.OperatorError, match=r"c1 \(Convolution\).*kernel.*'\(3, x\)'"):
        mx.sym.Convolution(x, kernel="(3, x)", num_filter=2, name="c1")
    with pytest.raises(mx.OperatorError, match=r"fc2 \(FullyConnected\): unknown parameter bogus"):
        mx.sym.FullyConnected(x, num_hidden=2, bogus=1, name="fc2")
    with pytest.raises(mx.OperatorError, match="unknown input 'wieght'"):
        mx.sym.FullyConnected(x, wieght=x, num_hidden=2)
    with pytest.raises(AttributeError):
        _ = mx.sym.NoSuchOp


def test_gpu_is_refused():
    with pytest.raises(mx.MinimxError, match="CPU only"):
        mx.gpu()


@pytest.mark.parametrize("call, builtin", [
    (lambda sp, fc: sp["nope"], ValueError),
    (lambda sp, fc: sp[5], IndexError),
    (lambda sp, fc: sp["0"], ValueError),
    (lambda sp, fc: sp[1.5], TypeError),
    (lambda sp, fc: mx.sym.Group([]), TypeError),
    (lambda sp, fc: mx.sym.Variable(5), TypeError),
    (lambda sp, fc: mx.sym.Variable("z", foo=1), ValueError),
    (lambda sp, fc: fc(data=3), TypeError),
    (lambda sp, fc: mx.sym.load_json(5), TypeError),
], ids=["name", "index", "digit-name", "float", "Group", "Variable-name", "Variable-kwarg",
        "compose", "load_json"])
def test_refusals_are_the_builtin_classes_mxnets_python_raises(call, builtin):
    # MXNet 1.9.1's classes (a differential fuzz of the Symbol API), still MinimxErrors
    d = mx.sym.Variable("data")
    sp = mx.sym.split(d, num_outputs=3, name="sp")
    fc = mx.sym.FullyConnected(d, num_hidden=2, name="fc")
    with pytest.raises(builtin) as info:
        call(sp, fc)
    assert isinstance(info.value, mx.MinimxError)
