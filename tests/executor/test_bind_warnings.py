"""Warnings of a bind point at the caller's line (not into minimx), and bind
arguments minimx accepts and ignores are named in one warning per call."""
from __future__ import annotations

import linecache
import warnings

import numpy as np
import pytest

import minimx as mx

from ..onednn_required import require_onednn

x = mx.sym.var("x")
NET = mx.sym.FullyConnected(mx.sym.relu(x, name="r"), num_hidden=2, name="fc")


class _InferenceOnly(mx.subgraph.DefaultSubgraphProperty):
    inference_only = True


mx.subgraph.register_property("TEST_WARN_INFER", _InferenceOnly, op_names=["relu"])


def _only(record, call: str = "") -> warnings.WarningMessage:
    """The one warning recorded, checked to point at this file's line holding `call`."""
    (w,) = record
    assert w.filename == __file__, f"points at {w.filename}:{w.lineno}"
    assert call in linecache.getline(w.filename, w.lineno)
    return w


def test_training_skip_points_at_simple_bind(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "TEST_WARN_INFER")
    with pytest.warns(UserWarning, match="inference-only") as record:
        NET.simple_bind(mx.cpu(), x=(3, 4))
    _only(record, "NET.simple_bind(")


def test_training_skip_points_at_bind_and_reshape(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "TEST_WARN_INFER")
    args = {"x": mx.nd.ones((3, 4)), "fc_weight": mx.nd.ones((2, 4)), "fc_bias": mx.nd.ones(2)}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    with pytest.warns(UserWarning, match="inference-only") as record:
        ex = NET.bind(mx.cpu(), args, args_grad=grads)
    _only(record, "NET.bind(")
    with pytest.warns(UserWarning, match="inference-only") as record:
        ex.reshape(x=(2, 4))
    _only(record, "ex.reshape(")


def test_dnnl_dtype_warning_points_at_the_call(monkeypatch):
    require_onednn()
    sym = mx.sym.relu(mx.sym.Convolution(x, kernel=(1, 1), num_filter=2))
    args = {"x": mx.nd.zeros((1, 2, 3, 3), dtype=np.float64)}
    with pytest.warns(UserWarning, match="DNNL: float64 is not supported") as record:
        sym.optimize_for("DNNL", args=args)
    _only(record, "sym.optimize_for(")
    with pytest.warns(UserWarning, match="DNNL: float64 is not supported") as record:
        mx.subgraph.partition(sym, "DNNL", dtypes={"x": np.float64})
    _only(record, "mx.subgraph.partition(")
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    with pytest.warns(UserWarning, match="DNNL: float16 is not supported") as record:
        sym.simple_bind(mx.cpu(), grad_req="null", type_dict={"x": np.float16}, x=(1, 2, 3, 3))
    _only(record, "sym.simple_bind(")


@pytest.mark.parametrize("kwargs, message", [
    ({"stype_dict": {"x": "csr"}}, "simple_bind ignores stype_dict (every array is dense)"),
    ({"shared_buffer": {}}, "simple_bind ignores shared_buffer (executors do not share memory)"),
    ({"stype_dict": {}, "shared_buffer": {}},
     "simple_bind ignores stype_dict (every array is dense) and shared_buffer (executors do "
     "not share memory)"),
    ({"group2ctx": {"dev1": mx.cpu()}},
     "simple_bind ignores group2ctx (everything runs on the one CPU context)"),
    ({"shared_arg_names": ["w"], "shared_exec": "EXEC"},
     "simple_bind ignores shared_arg_names (executors do not share memory) and shared_exec "
     "(executors do not share memory)"),
])
def test_simple_bind_names_the_arguments_it_ignores(kwargs, message):
    if kwargs.get("shared_exec") == "EXEC":   # MXNet's bucketing idiom: bind again, sharing
        kwargs = dict(kwargs, shared_exec=NET.simple_bind(mx.cpu(), x=(3, 4)))
    with pytest.warns(UserWarning) as record:
        ex = NET.simple_bind(mx.cpu(), x=(3, 4), **kwargs)
    assert str(_only(record).message) == message
    assert ex.arg_dict["x"].shape == (3, 4)


def test_bind_names_the_arguments_it_ignores():
    ex = NET.simple_bind(mx.cpu(), x=(3, 4), grad_req="null")
    with pytest.warns(UserWarning) as record:
        NET.bind(mx.cpu(), ex.arg_dict, group2ctx={"dev1": mx.cpu()}, shared_exec=ex)
    assert str(_only(record).message) == (
        "bind ignores group2ctx (everything runs on the one CPU context) and shared_exec "
        "(executors do not share memory)")
    with pytest.warns(UserWarning, match=r"^bind ignores shared_exec \(executors"):
        NET.bind(mx.cpu(), ex.arg_dict, shared_exec=ex)


def test_arguments_left_at_none_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ex = NET.simple_bind(mx.cpu(), x=(3, 4), stype_dict=None, shared_buffer=None)
        NET.bind(mx.cpu(), ex.arg_dict, group2ctx=None, shared_exec=None)
