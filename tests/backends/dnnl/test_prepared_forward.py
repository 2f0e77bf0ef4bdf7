"""An inference forward of a graph that is one DNNL subgraph runs as a prepared
C call (no engine operation, no runner) when the engine is idle, and gives
what the usual path gives in every case where it steps aside."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import minimx as mx
from minimx import engine

from .helpers import assert_close, bind, outputs, partitioned, random_arrays

SHAPE = {"data": (2, 3, 6, 6)}


def net():
    data = mx.sym.var("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="c")
    x = mx.sym.Activation(mx.sym.BatchNorm(x, fix_gamma=False, name="bn"), act_type="relu")
    return mx.sym.FullyConnected(x, num_hidden=3, name="fc")


@pytest.fixture
def threaded(monkeypatch):
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", "1")
    if not isinstance(engine.get_engine(), engine.ThreadedEngine):
        monkeypatch.setattr(engine, "_engine", engine.create_engine("ThreadedEngine"))
    engine.wait_for_all()


def bound():
    """(executor of the partitioned net, its args and aux as numpy, the usual
    path's call count): the executor ran one forward."""
    sym = net()
    args, aux = random_arrays(sym, SHAPE)
    ex = bind(partitioned(sym, SHAPE), args, aux)
    ex.forward()[0].wait_to_read()
    return ex, args, aux


def count_usual(ex, monkeypatch) -> list:
    calls: list = []
    usual = ex._runner.forward
    monkeypatch.setattr(ex._runner, "forward", lambda *a: (calls.append(1), usual(*a))[1])
    return calls


def test_it_runs_without_the_runner_and_gives_the_same_outputs(threaded, monkeypatch):
    ex, args, aux = bound()
    calls = count_usual(ex, monkeypatch)
    out = ex.outputs[0]
    before = out.version
    for seed in range(3):
        args["data"] = np.random.default_rng(seed).standard_normal(SHAPE["data"]).astype(
            np.float32)
        assert_close([ex.forward(data=args["data"])[0].asnumpy()],
                     outputs(net(), args, aux))
    assert calls == [] and out.version == before + 3


def test_a_moved_weight_takes_the_usual_path_once(threaded, monkeypatch):
    ex, args, aux = bound()
    calls = count_usual(ex, monkeypatch)
    args["fc_weight"] = args["fc_weight"] * -2
    ex.arg_dict["fc_weight"][:] = args["fc_weight"]
    for _ in range(3):
        assert_close([ex.forward()[0].asnumpy()], outputs(net(), args, aux))
    assert calls == [1]   # refreshed the weight cache; then prepared again


def test_it_waits_for_a_pending_write_to_its_input(threaded, monkeypatch):
    ex, args, aux = bound()
    calls = count_usual(ex, monkeypatch)
    data = ex.arg_dict["data"]
    new = np.full(SHAPE["data"], 0.5, np.float32)
    # A slow write pushed before the forward: the forward must see what it wrote.
    engine.push(lambda: (time.sleep(0.05), np.copyto(data._data, new)), [], [data._var],
                name="slow write")
    args["data"] = new
    assert_close([ex.forward()[0].asnumpy()], outputs(net(), args, aux))
    assert calls == [1]


def test_a_monitor_sees_every_forward(threaded):
    ex, args, aux = bound()
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name))
    ex.forward()[0].wait_to_read()
    assert seen


def test_a_replaced_argument_array_is_the_one_read(threaded):
    ex, args, aux = bound()
    args["data"] = np.ones(SHAPE["data"], np.float32)
    ex.arg_arrays[ex._arg_names.index("data")] = mx.nd.array(args["data"])
    assert_close([ex.forward()[0].asnumpy()], outputs(net(), args, aux))


def test_writes_to_a_replaced_weight_reach_the_weight_cache(threaded):
    # The versions the cache checks must be the replacing array's, not the
    # array bound first (whose version never moves again).
    ex, args, aux = bound()
    ex.arg_arrays[ex._arg_names.index("fc_weight")] = mx.nd.array(args["fc_weight"])
    ex.forward()[0].wait_to_read()
    for scale in (2.0, -3.0):
        args["fc_weight"] = args["fc_weight"] * scale
        ex.arg_dict["fc_weight"][:] = args["fc_weight"]
        assert_close([ex.forward()[0].asnumpy()], outputs(net(), args, aux))


def test_a_failing_plan_run_takes_the_usual_path(threaded, monkeypatch):
    ex, args, aux = bound()
    calls = count_usual(ex, monkeypatch)
    monkeypatch.setattr("minimx.backends.dnnl.state.run_bound", lambda run: False)
    ex._prepared = None   # prepared again, with the failing run
    assert_close([ex.forward()[0].asnumpy()], outputs(net(), args, aux))
    assert calls == [1]


def test_forwards_from_two_threads_each_get_their_own_outputs(threaded):
    runs = [bound() for _ in range(2)]
    errors: list = []

    def loop(ex, args, aux) -> None:
        try:
            expected = outputs(net(), args, aux)
            for _ in range(50):
                assert_close([ex.forward()[0].asnumpy()], expected)
        except AssertionError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=run) for run in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and not any(t.is_alive() for t in threads)
