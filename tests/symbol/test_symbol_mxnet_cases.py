"""Symbol API cases where a differential fuzz against MXNet 1.9.1 found minimx
different. Every expected value below is what MXNet 1.9.1 gives for the same code."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx


def _types(values):
    return [None if t is None else np.dtype(t).name for t in values]


def test_operator_overloads_use_mxnets_auto_names():
    # MXNet 1.9.1: the comparisons and __rpow__ call _internal._greater_scalar etc.
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    with mx.name.NameManager():
        names = [s.name for s in (x > 1, x >= 1, x < 1, x <= 1, 2 ** x, x > y, x >= y,
                                  x < y, x <= y, x ** 2, x ** y, mx.sym.power(2, x))]
    assert names == ["_greater_scalar0", "_greater_equal_scalar0", "_lesser_scalar0",
                     "_lesser_equal_scalar0", "_rpower_scalar0", "_greater0",
                     "_greater_equal0", "_lesser0", "_lesser_equal0", "_powerscalar0",
                     "_power0", "_rpowerscalar0"]


@pytest.mark.parametrize("make, text", [
    (lambda x: x + 1, "1"), (lambda x: x % -1, "-1"), (lambda x: 2 ** x, "2"),
    (lambda x: x > 0.5, "0.5"), (lambda x: x + np.float32(0.1), "0.1"),
    (lambda x: x * np.int64(3), "3"), (lambda x: -x, "-1.0"), (lambda x: x / 3.0, "3.0"),
    (lambda x: mx.sym.maximum(x, 0), "0"), (lambda x: mx.sym.maximum(1, x), "1"),
])
def test_scalar_is_written_as_the_number_given(make, text):
    # MXNet 1.9.1 writes str() of the scalar: attr_dict and tojson show it.
    assert make(mx.sym.Variable("x")).list_attr() == {"scalar": text}


def test_slice_of_outputs_is_a_group():
    parts = mx.sym.split(mx.sym.Variable("x"), num_outputs=3, name="sp")
    # MXNet 1.9.1: sym[1:], sym[::2], sym[0:2]
    assert parts[1:].list_outputs() == ["sp_output1", "sp_output2"]
    assert parts[::2].list_outputs() == ["sp_output0", "sp_output2"]
    assert parts[0:2].list_outputs() == ["sp_output0", "sp_output1"]


def test_shape_attribute_stands_for_a_partly_known_given_shape():
    x = mx.sym.Variable("x", shape=(2, 3))
    # MXNet 1.9.1: a complete given shape wins over __shape__, a partial one does not.
    assert x.infer_shape(x=(4, 5)) == ([(4, 5)], [(4, 5)], [])
    assert x.infer_shape_partial(x=(4, 0)) == ([(2, 3)], [(2, 3)], [])
    conv = mx.sym.Convolution(mx.sym.Variable("data", shape=(2, 2, 6, 4)), kernel=(1, 1),
                              num_filter=4, name="conv")
    assert conv.infer_shape(data=(0, 2, 6, 4)) == (
        [(2, 2, 6, 4), (4, 2, 1, 1), (4,)], [(2, 4, 6, 4)], [])


def test_infer_type_partial():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    args, outs, aux = (x + y).infer_type_partial(x="float16")
    assert (_types(args), _types(outs), aux) == (["float16", "float16"], ["float16"], [])
    args, outs, aux = mx.sym.BatchNorm(x, name="bn").infer_type_partial()
    assert (args, outs, aux) == ([None, None, None], [None], [None, None])


def test_variables_of_one_name_all_take_the_given_shape_and_type():
    g = mx.sym.Group([mx.sym.Variable("x") * 2, mx.sym.Variable("x") + 1])
    assert g.list_arguments() == ["x", "x"]
    # MXNet 1.9.1
    assert g.infer_shape(x=(2, 3)) == ([(2, 3), (2, 3)], [(2, 3), (2, 3)], [])
    args, outs, _ = g.infer_type(x="float16")
    assert _types(args) == _types(outs) == ["float16", "float16"]


def test_simple_bind_ignores_names_that_are_not_inputs():
    bn = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn")
    # MXNet 1.9.1 binds, ignoring junk and junk2
    ex = bn.simple_bind(mx.cpu(), data=(2, 3), junk=(1, 2),
                        type_dict={"data": "float32", "junk2": "float64"})
    assert [a.shape for a in ex.arg_arrays] == [(2, 3), (3,), (3,)]


def test_operators_give_their_input_variables_init_attributes():
    data = mx.sym.Variable("data")
    # MXNet 1.9.1's FSetInputVarAttrOnCompose of BatchNorm and LeakyReLU (prelu)
    bn = mx.sym.BatchNorm(data, name="bn")
    assert bn.attr_dict() == {"bn_moving_mean": {"__init__": '["zero", {}]'},
                              "bn_moving_var": {"__init__": '["one", {}]'}}
    mean, var = mx.sym.Variable("mm", attr={"__init__": "x"}), mx.sym.Variable("mv")
    bn = mx.sym.BatchNorm(data, moving_mean=mean, moving_var=var, name="bn")
    assert bn.attr_dict() == {"mm": {"__init__": "x"}, "mv": {"__init__": '["one", {}]'}}
    gamma = mx.sym.Variable("g")
    mx.sym.LeakyReLU(data, gamma=gamma, act_type="prelu", name="p")
    assert gamma.attr_dict() == {"g": {"__init__": '["Constant", {"value": 0.25}]'}}
    relu = mx.sym.contrib.BatchNormWithReLU(data, name="t")
    assert relu.attr_dict() == {"t_moving_mean": {"__init__": '["zero", {}]'},
                                "t_moving_var": {"__init__": '["one", {}]'}}
    assert mx.sym.LeakyReLU(data, act_type="leaky", name="l").attr_dict() == \
        {"l": {"act_type": "leaky"}}


def test_outputs_of_one_node_share_its_name_and_attributes():
    x = mx.sym.Variable("x")
    parts = mx.sym.split(x, num_outputs=2, name="sp")
    # MXNet 1.9.1
    assert (parts.name, repr(parts)) == ("sp", "<Symbol sp>")
    assert parts.attr("num_outputs") == "2"
    assert parts.list_attr() == {"num_outputs": "2"}
    parts._set_attr(__mood__="calm")
    assert parts[1].attr("__mood__") == "calm"
    assert mx.sym.Group([x, x]).name == "x"
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    group = mx.sym.Group([fc, x])
    assert (group.name, group.attr("num_hidden")) == (None, None)
    assert group.list_attr() == {"num_hidden": "3"}  # the first output's node
    assert repr(group) == "<Symbol group [fc, x]>"
    with pytest.raises(mx.MinimxError):
        group._set_attr(__mood__="calm")


def test_abs_and_broadcast_axes():
    x = mx.sym.Variable("x")
    with mx.name.NameManager():
        assert abs(x).name == "abs0"
        b = x.broadcast_axes(axis=1, size=3)
    assert (b.name, b.list_attr()) == ("broadcast_axes0", {"axis": "1", "size": "3"})


def test_variable_storage_type_is_stored_as_its_id():
    # MXNet 1.9.1
    assert mx.sym.Variable("v", stype="default").list_attr() == {"__storage_type__": "0"}
    assert mx.sym.Variable("v", stype="csr").list_attr() == {"__storage_type__": "2"}
    assert mx.sym.Variable("v", stype="row_sparse").list_attr() == {"__storage_type__": "1"}


def test_array_functions_write_mxnets_attributes():
    # MXNet 1.9.1
    assert mx.sym.zeros((2, 3)).list_attr() == {"dtype": "float32", "shape": "(2, 3)"}
    assert mx.sym.ones(2, dtype="int32").list_attr() == {"dtype": "int32", "shape": "2"}
    assert mx.sym.full((2, 3), 5).list_attr() == {"dtype": "float32", "value": "5.0",
                                                  "shape": "(2, 3)"}
    assert mx.sym.arange(5).list_attr() == {"infer_range": "False", "repeat": "1",
                                            "step": "1.0", "dtype": "float32",
                                            "stop": "None", "start": "5"}
    assert mx.sym.arange(0, 5, 2).list_attr() == {"infer_range": "False", "repeat": "1",
                                                  "step": "2", "dtype": "float32",
                                                  "stop": "5", "start": "0"}
    assert mx.sym.arange(5).infer_shape() == ([], [(5,)], [])
    assert mx.sym.ones(2, dtype="int32").infer_shape() == ([], [(2,)], [])
