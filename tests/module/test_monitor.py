"""mx.mon.Monitor: MXNet's statistics of an executor's arrays every `interval`
batches, alone and through Module.fit."""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest

import minimx as mx


def _net() -> mx.sym.Symbol:
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def test_a_monitor_reports_outputs_and_arguments_every_interval():
    # A training bind: an inference one may fuse fc into a DNNL subgraph, whose
    # inner outputs are not seen (as with MXNet's MKLDNN backend).
    ex = _net().simple_bind(mx.cpu(), data=(2, 4))
    ex.arg_dict["fc_weight"][:] = np.arange(12.0).reshape(3, 4)
    mon = mx.mon.Monitor(2, pattern="fc_.*", sort=True)
    mon.install(ex)
    seen = []
    for _ in range(3):
        mon.tic()
        ex.forward(is_train=True, data=np.ones((2, 4)))
        seen.append(mon.toc())
    assert seen[1] == []                          # batch 2: not collected
    assert [(step, name) for step, name, _ in seen[0]] == \
        [(1, "fc_bias"), (1, "fc_output"), (1, "fc_weight")]
    assert [step for step, _, _ in seen[2]] == [3, 3, 3]
    weight = np.arange(12.0)
    assert float(seen[0][2][2]) == pytest.approx(np.linalg.norm(weight) / math.sqrt(12))
    output = np.ones((2, 4)) @ weight.reshape(3, 4).T
    assert float(seen[0][1][2]) == pytest.approx(np.linalg.norm(output) / math.sqrt(6), rel=1e-6)
    assert seen[0][0][2] == "0.0\t"                # MXNet's form: a tab after each value


def test_fit_with_a_monitor_logs_each_interval(caplog):
    it = mx.io.NDArrayIter(np.random.default_rng(0).random((8, 4)), np.zeros(8), batch_size=4)
    mod = mx.mod.Module(_net())
    with caplog.at_level(logging.INFO):
        mod.fit(it, num_epoch=1, monitor=mx.mon.Monitor(2, pattern="fc_weight"))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Batch:")]
    assert len(lines) == 1 and lines[0].split()[:3] == ["Batch:", "1", "fc_weight"]
    # As in MXNet, the reshaped executor keeps the callback; the monitor still lists the
    # arguments once (those of the executor it was installed on, which share them).
    mon = mx.mon.Monitor(1, pattern=".*")
    mod.install_monitor(mon)
    mod.reshape(data_shapes=[("data", (2, 4))])
    mon.tic()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 4))], [mx.nd.zeros(2)]), is_train=False)
    names = [name for _, name, _ in mon.toc()]
    assert "fc_output" in names and names.count("fc_weight") == 1


def test_statistics_print_as_float32_as_mxnet_does(caplog):
    ex = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc").simple_bind(
        mx.cpu(), data=(2, 4))
    ex.arg_dict["fc_weight"][:] = np.arange(12.0).reshape(3, 4) / 7
    ex.arg_dict["fc_bias"][:] = 0.1
    mon = mx.mon.Monitor(1, pattern="fc_[ob]")
    mon.install(ex)
    mon.tic()
    ex.forward(data=np.ones((2, 4)))
    # MXNet 1.9.1's rows (not 0.10000000149011612, the float32's float64 digits)
    assert mon.toc() == [(1, "fc_output", "3.741539\t"), (1, "fc_bias", "0.1\t")]
    mon = mx.mon.Monitor(1, stat_func=lambda x: [mx.nd.min(x), mx.nd.max(x, axis=0)],
                         pattern="fc_b")
    mon.install(ex)
    mon.tic()
    ex.forward(data=np.ones((2, 4)))
    with caplog.at_level(logging.INFO):
        mon.toc_print()
    assert [r.getMessage() for r in caplog.records] == [
        "Batch:       1 fc_bias                        0.1\t0.1\t"]


def test_monitor_names_as_mxnet():
    """MXNet 1.9.1's names and order for a training forward: BatchNorm's mean and var
    even without monitor_all; relu's and the scalar op's inputs as ``_input0``."""
    with mx.name.NameManager():
        net = mx.sym.BatchNorm(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3,
                                                     name="fc"), name="bn")
        net = mx.sym.SoftmaxOutput(mx.sym.relu(net) * 2, name="softmax")
    params = ["data", "fc_weight", "fc_bias", "bn_gamma", "bn_beta", "softmax_label",
              "bn_moving_mean", "bn_moving_var"]
    want = {
        False: ["fc_output", "bn_output", "bn_mean", "bn_var", "relu0_output",
                "_mulscalar0_output", "softmax_output", *params],
        True: ["data", "fc_data", "fc_weight", "fc_weight", "fc_bias", "fc_bias", "fc_output",
               "bn_data", "bn_gamma", "bn_gamma", "bn_beta", "bn_beta", "bn_moving_mean",
               "bn_moving_mean", "bn_moving_var", "bn_moving_var", "bn_output", "bn_mean",
               "bn_var", "relu0_input0", "relu0_output", "_mulscalar0_input0",
               "_mulscalar0_output", "softmax_data", "softmax_label", "softmax_label",
               "softmax_output", *params]}
    for monitor_all in (False, True):
        mod = mx.mod.Module(net)
        mod.bind([("data", (2, 4))], [("softmax_label", (2,))])
        mod.init_params()
        mon = mx.mon.Monitor(1, pattern=".*", monitor_all=monitor_all)
        mod.install_monitor(mon)
        mon.tic()
        mod.forward(mx.io.DataBatch([mx.nd.ones((2, 4))], [mx.nd.zeros((2,))]), is_train=True)
        assert [name for _, name, _ in mon.toc()] == want[monitor_all]
