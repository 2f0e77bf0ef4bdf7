"""An array put in place of a bound one (``ex.arg_arrays[i] = new``) is the one
a forward reads, and the engine orders the forward after the writes to it."""
from __future__ import annotations

import time

import numpy as np
import pytest

import minimx as mx
from minimx import engine


def _net():
    data = mx.sym.var("data")
    return mx.sym.FullyConnected(data, num_hidden=3, no_bias=True, name="fc")


@pytest.fixture
def threaded(monkeypatch):
    if not isinstance(engine.get_engine(), engine.ThreadedEngine):
        monkeypatch.setattr(engine, "_engine", engine.create_engine("ThreadedEngine"))
    engine.wait_for_all()


def _slow_fill(arr: mx.nd.NDArray, value: float) -> None:
    """A write of `value` into `arr` that finishes well after it is pushed."""
    dst = arr._data
    engine.push(lambda: (time.sleep(0.05), dst.fill(value)), [], [arr._var], name="slow fill")


@pytest.mark.parametrize("bulk", ["1", "0"])
@pytest.mark.parametrize("is_train", [False, True])
def test_a_forward_waits_for_a_write_to_a_replaced_weight(threaded, monkeypatch, bulk, is_train):
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", bulk)
    grad_req = "write" if is_train else "null"
    ex = _net().simple_bind(mx.cpu(), grad_req=grad_req, data=(2, 4))
    ex.arg_dict["data"][:] = 1.0
    ex.forward(is_train=is_train)[0].wait_to_read()
    weight = mx.nd.zeros((3, 4))
    ex.arg_arrays[ex._arg_names.index("fc_weight")] = weight
    for value in (1.0, 2.0):
        _slow_fill(weight, value)
        out = ex.forward(is_train=is_train)[0].asnumpy()
        np.testing.assert_array_equal(out, np.full((2, 3), 4 * value, np.float32))


def test_a_forward_writes_a_replaced_output_in_order(threaded, monkeypatch):
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", "1")
    ex = _net().simple_bind(mx.cpu(), grad_req="null", data=(2, 4))
    ex.arg_dict["data"][:] = 1.0
    ex.arg_dict["fc_weight"][:] = 1.0
    out = mx.nd.zeros((2, 3))
    ex.outputs[0] = out
    _slow_fill(out, -1.0)   # pushed first: the forward must write after it
    ex.forward()
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 4.0, np.float32))
