"""The executor on the engine: bulk and per-node pushes give the same results."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minimx as mx
from minimx import engine


def _net():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="c")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn")
    a = mx.sym.Activation(x, act_type="relu", name="r")
    b = mx.sym.sigmoid(x, name="s")
    return mx.sym.Group([mx.sym.FullyConnected(a + b, num_hidden=3, name="fc"), x])


def _run(bulk: bool, is_train: bool, monkeypatch):
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", "1" if bulk else "0")
    ex = _net().simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 5, 5))
    rng = np.random.default_rng(3)
    for _name, arr in sorted({**ex.arg_dict, **ex.aux_dict}.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape)
    outs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
    return outs, ex.aux_dict["bn_moving_mean"].asnumpy()


@pytest.mark.parametrize("is_train", [False, True])
def test_per_node_pushes_match_bulk(is_train, monkeypatch):
    bulk_outs, bulk_mean = _run(True, is_train, monkeypatch)
    node_outs, node_mean = _run(False, is_train, monkeypatch)
    for a, b in zip(bulk_outs, node_outs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(bulk_mean, node_mean, rtol=1e-6)


def test_per_node_forward_records_one_engine_op_per_node(monkeypatch):
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", "0")
    ex = _net().simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 5, 5))
    names = []
    engine.wait_for_all()
    engine.set_op_recorder(lambda name, kind, symbolic, start, end: names.append(name))
    try:
        ex.forward()
        engine.wait_for_all()
    finally:
        engine.set_op_recorder(None)
    assert names.count("outputs") == 1
    assert {"c", "bn", "r", "s", "fc"} <= set(names)


@pytest.mark.parametrize("bulk", ["1", "0"])
def test_inference_leaves_auxiliary_versions_alone_training_moves_them(bulk, monkeypatch):
    # Stateful operators cache what they derive from auxiliary states (a folded
    # BatchNorm) by version: an inference forward must not count as a write.
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", bulk)
    ex = _net().simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 5, 5))
    mean = ex.aux_dict["bn_moving_mean"]
    mean.wait_to_read()
    before = mean.version
    ex.forward()
    mx.nd.waitall()
    assert mean.version == before
    ex.forward(is_train=True)
    mx.nd.waitall()
    assert mean.version == before + 1


@pytest.mark.parametrize("given", ["numpy", "NDArray"])
def test_inference_forward_with_inputs_runs_on_the_calling_thread(given, monkeypatch):
    # The inputs' copies run here when nothing is pending on them, so that the
    # bulk forward pushed after them is not held back to run on a worker.
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", "1")
    if not isinstance(engine.get_engine(), engine.ThreadedEngine):
        monkeypatch.setattr(engine, "_engine", engine.create_engine("ThreadedEngine"))
    ex = _net().simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 5, 5))
    engine.wait_for_all()
    ran_on = []
    forward = ex._runner.forward
    monkeypatch.setattr(ex._runner, "forward",
                        lambda *a: (ran_on.append(threading.get_ident()), forward(*a))[1])
    data = np.ones((2, 3, 5, 5), np.float32)
    for _ in range(3):
        ex.forward(data=data if given == "numpy" else mx.nd.array(data))[0].wait_to_read()
    assert ran_on == [threading.get_ident()] * 3


def _threaded_bind(monkeypatch):
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", "1")
    if not isinstance(engine.get_engine(), engine.ThreadedEngine):
        monkeypatch.setattr(engine, "_engine", engine.create_engine("ThreadedEngine"))
    ex = _net().simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 5, 5))
    rng = np.random.default_rng(5)
    for arr in (*ex.arg_arrays, *ex.aux_arrays):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape)
    engine.wait_for_all()
    return ex


@pytest.mark.parametrize("given", ["numpy", "NDArray", "list"])
def test_an_input_copied_with_the_engine_idle_is_one_write(given, monkeypatch):
    ex = _threaded_bind(monkeypatch)
    data = ex.arg_dict["data"]
    before = data.version
    value = np.arange(150, dtype=np.float64).reshape(2, 3, 5, 5) / 7   # cast on the way in
    ex.forward(data={"numpy": value, "NDArray": mx.nd.array(value),
                     "list": value.tolist()}[given])
    engine.wait_for_all()
    np.testing.assert_array_equal(data.asnumpy(), value.astype(np.float32))
    assert data.version == before + 1


def test_an_input_is_copied_at_the_call_while_the_engine_is_busy(monkeypatch):
    ex = _threaded_bind(monkeypatch)
    expected = [o.asnumpy() for o in ex.forward(data=np.ones((2, 3, 5, 5)))]
    gate, busy = threading.Event(), engine.new_variable("busy")
    # A pending read of the data array: the copy into it must wait for it.
    engine.push(lambda: gate.wait(10), [ex.arg_dict["data"]._var], [busy], name="busy")
    buf = np.ones((2, 3, 5, 5), np.float32)
    outs = ex.forward(data=buf)
    buf[...] = 7   # the caller reuses its buffer at once
    gate.set()
    for got, want in zip(outs, expected, strict=True):
        np.testing.assert_array_equal(got.asnumpy(), want)
