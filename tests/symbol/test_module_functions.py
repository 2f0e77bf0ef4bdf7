"""`mx.sym`'s module-level functions against MXNet 1.9.1's (the ``module_functions`` fixture
group): `eye`, `linspace`, `hypot`, `maximum`, `minimum`, `power` / `pow`, `cast_storage`
and `mx.sym.contrib.rand_zipfian` make MXNet's nodes (op, name, attributes) and values;
two numbers give MXNet's Python result; bad operands raise; `mx.sym.op`."""
from __future__ import annotations

import json

import numpy as np
import pytest

import minimx as mx
from minimx.ops import list_ops
from tests.ndarray.test_module_functions import CASES, check_outcome, check_value, decode

SYMBOL_DATA = [[3, -4, 0.5], [1.5, 2, -0.25]]   # the fixture script's x
GRAPHS = [c for c in CASES["symbol"] if "nodes" in c]
CALLS = [c for c in CASES["symbol"] if "outcome" in c]


def _nodes(sym: mx.sym.Symbol) -> list:
    return [[n["op"], n["name"], n.get("attrs", {})] for n in json.loads(sym.tojson())["nodes"]]


def test_graphs_and_values():
    x = mx.sym.var("x")
    with mx.name.NameManager():   # the automatic names count from 0, as in the fixture
        built = [eval(case["call"], {"mx": mx, "np": np, "x": x})  # noqa: S307
                 for case in GRAPHS]
    for case, sym in zip(GRAPHS, built, strict=True):
        assert _nodes(sym) == case["nodes"], case["call"]
        if "infer_type" in case:   # rand_zipfian draws: only its kinds can be MXNet's
            assert [np.dtype(d).name for d in sym.infer_type(x="float32")[1]] == \
                case["infer_type"]
            assert [list(s) for s in sym.infer_shape(x=(3,))[1]] == case["infer_shape"]
            continue
        inputs = {"x": mx.nd.array(SYMBOL_DATA)} if sym.list_arguments() else {}
        check_value(sym.eval(**inputs)[0], case["values"], case["call"])


@pytest.mark.parametrize("case", CALLS, ids=[f"{c['call']}-{i}" for i, c in enumerate(CALLS)])
def test_calls(case):
    function = mx.sym.contrib.rand_zipfian if case["call"] == "contrib.rand_zipfian" \
        else getattr(mx.sym, case["call"])
    args = [decode(a) for a in case["args"]]
    check_outcome(lambda: function(*args), case)


def test_cast_storage_refuses_sparse_and_unknown_stypes_naming_the_node():
    x = mx.sym.var("x")
    for stype, message in [("csr", "no sparse storage"), ("row_sparse", "no sparse storage"),
                           ("bogus", "valid values are")]:
        with pytest.raises(mx.base.OperatorError, match=message) as err:
            mx.sym.cast_storage(x, stype, name="dense").infer_type(x="float32")
        assert "dense (cast_storage)" in str(err.value)
    with pytest.raises(mx.base.OperatorError, match="stype"):
        mx.sym.cast_storage(x)


def test_op_module():
    record = CASES["op_modules"]
    assert mx.sym.op.__name__ == record["module_names"][1].replace("mxnet", "minimx")
    assert mx.sym.op.Convolution is mx.sym.Convolution
    ours = {n for n in dir(mx.sym.op) if not n.startswith("__")}
    assert ours == {n for n in list_ops() if not n.startswith("_")}
    assert ours - set(record["sym"]) <= ours - set(record["nd"])   # the same names as mx.nd.op
