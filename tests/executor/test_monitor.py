"""set_monitor_callback: operator outputs, and with monitor_all the inputs too,
under MXNet 1.9's names (GraphExecutor::ExecuteMonInputCallback): before each
operator, a variable input under its own name, then every input as
``<node>_<input name>``."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx import engine


def _seen(monitor_all: bool, bulk: str, monkeypatch) -> list[tuple[str, np.ndarray]]:
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", bulk)
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    net = mx.sym.Activation(fc, act_type="relu", name="act")
    ex = net.simple_bind(mx.cpu(), grad_req="null", data=(1, 3))
    ex.copy_params_from({"fc_weight": np.array([[1, 0, 0], [0, -1, 0]]),
                         "fc_bias": np.array([0.5, 0.25])})
    seen: list[tuple[str, mx.nd.NDArray]] = []
    # The callback runs inside the forward's engine operation: it keeps the arrays
    # (copies) and the test reads them after.
    ex.set_monitor_callback(lambda name, arr: seen.append((name, arr)), monitor_all)
    ex.forward(data=np.array([[1, 2, 3]]))
    mx.nd.waitall()
    return [(name, arr.asnumpy()) for name, arr in seen]


@pytest.mark.parametrize("bulk", ["1", "0"])
def test_monitor_all_reports_inputs_before_outputs(bulk, monkeypatch):
    seen = _seen(True, bulk, monkeypatch)
    assert [name for name, _ in seen] == [
        "data", "fc_data", "fc_weight", "fc_weight", "fc_bias", "fc_bias", "fc_output",
        "act_input0", "act_output"]   # MXNet gives Activation no input names
    values = dict(seen)
    np.testing.assert_array_equal(values["fc_data"], [[1, 2, 3]])
    np.testing.assert_array_equal(values["fc_bias"], [0.5, 0.25])
    np.testing.assert_array_equal(values["act_input0"], [[1.5, -1.75]])
    np.testing.assert_array_equal(values["act_output"], [[1.5, 0]])


def test_without_monitor_all_only_outputs(monkeypatch):
    seen = _seen(False, "1", monkeypatch)
    assert [name for name, _ in seen] == ["fc_output", "act_output"]


@pytest.mark.parametrize("bulk", ["1", "0"])
@pytest.mark.parametrize("is_train", [False, True])
def test_the_callback_may_read_and_compute_with_its_array(bulk, is_train, monkeypatch):
    # It runs inside an engine operation (on a worker, or on this thread for a
    # bulk inference forward): waiting for the threaded engine there would be refused.
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", bulk)
    if not isinstance(engine.get_engine(), engine.ThreadedEngine):
        monkeypatch.setattr(engine, "_engine", engine.create_engine("ThreadedEngine"))
    net = mx.sym.Activation(mx.sym.Variable("data"), act_type="relu", name="act")
    ex = net.simple_bind(mx.cpu(), grad_req="write" if is_train else "null", data=(1, 2))
    stats: dict[str, float] = {}
    ex.set_monitor_callback(
        lambda name, arr: stats.update({name: float((arr * 2).sum().asnumpy()[0])}))
    ex.forward(is_train=is_train, data=np.array([[1.0, -3.0]]))
    mx.nd.waitall()
    assert stats == {"act_output": 2.0}


# -- names, as MXNet 1.9.1 reports them (its lists, hard-coded) ------------------------
# Every output, hidden ones too, with or without monitor_all; with monitor_all an
# operator MXNet gives no input names (FListInputNames) has ``<node>_input<k>``.

def _names(net: mx.sym.Symbol, shape: tuple, monitor_all: bool, is_train: bool) -> list[str]:
    shapes = {a: shape for a in net.list_arguments() if a in ("data", "b")}
    ex = net.simple_bind(mx.cpu(), grad_req="null", **shapes)
    names: list[str] = []
    ex.set_monitor_callback(lambda name, arr: names.append(name), monitor_all)
    ex.forward(is_train=is_train)
    mx.nd.waitall()
    return names


D, B = mx.sym.var("data"), mx.sym.var("b")
MXNET_NAMES = [
    ("bn", lambda: mx.sym.BatchNorm(D, name="bn"), (2, 3, 2, 2), False,
     ["bn_output", "bn_mean", "bn_var"]),
    ("bn", lambda: mx.sym.BatchNorm(D, name="bn"), (2, 3, 2, 2), True,
     ["data", "bn_data", "bn_gamma", "bn_gamma", "bn_beta", "bn_beta", "bn_moving_mean",
      "bn_moving_mean", "bn_moving_var", "bn_moving_var", "bn_output", "bn_mean", "bn_var"]),
    ("fc", lambda: mx.sym.FullyConnected(D, num_hidden=3, name="fc"), (2, 4), True,
     ["data", "fc_data", "fc_weight", "fc_weight", "fc_bias", "fc_bias", "fc_output"]),
    ("dropout", lambda: mx.sym.Dropout(D, p=0.5, name="drop"), (2, 3), False,
     ["drop_output", "drop_mask"]),
    ("dropout", lambda: mx.sym.Dropout(D, p=0.5, name="drop"), (2, 3), True,
     ["data", "drop_data", "drop_output", "drop_mask"]),
    ("relu", lambda: mx.sym.relu(D, name="relu0"), (2, 3), True,
     ["data", "relu0_input0", "relu0_output"]),
    ("activation", lambda: mx.sym.Activation(D, act_type="relu", name="act"), (2, 3), True,
     ["data", "act_input0", "act_output"]),
    ("elementwise", lambda: mx.sym.elemwise_mul(D + B, D - B, name="mul"), (2, 3), True,
     ["data", "_plus0_lhs", "b", "_plus0_rhs", "_plus0_output", "data", "_minus0_lhs", "b",
      "_minus0_rhs", "_minus0_output", "mul_lhs", "mul_rhs", "mul_output"]),
    ("scalar", lambda: mx.sym.exp(2 * D + 1) ** 2, (2, 3), True,
     ["data", "_mulscalar0_input0", "_mulscalar0_output", "_plusscalar0_input0",
      "_plusscalar0_output", "exp0_input0", "exp0_output", "_powerscalar0_input0",
      "_powerscalar0_output"]),
    ("concat", lambda: mx.sym.Concat(D, mx.sym.relu(D), B, dim=1, name="cat"), (2, 3), True,
     ["data", "relu0_input0", "relu0_output", "data", "cat_arg0", "cat_arg1", "b", "cat_arg2",
      "cat_output"]),
    ("slice", lambda: mx.sym.SliceChannel(D, num_outputs=3, axis=1, name="sc")[1] * 2,
     (2, 3), True,
     ["data", "sc_data", "sc_output0", "sc_output1", "sc_output2", "_mulscalar0_input0",
      "_mulscalar0_output"]),
    ("reshape", lambda: mx.sym.Reshape(mx.sym.flatten(mx.sym.sum(D, axis=0)), shape=(-1,)),
     (2, 3), True,
     ["data", "sum0_input0", "sum0_output", "flatten0_input0", "flatten0_output",
      "reshape0_input0", "reshape0_output"]),
]


@pytest.mark.parametrize("is_train", [False, True])
@pytest.mark.parametrize("case, make, shape, monitor_all, want", MXNET_NAMES,
                         ids=[f"{c[0]}-all={c[3]}" for c in MXNET_NAMES])
def test_names_and_order_as_mxnet(case, make, shape, monitor_all, want, is_train):
    with mx.name.NameManager():   # fresh automatic names (relu0, _mulscalar0, ...)
        net = make()
    assert _names(net, shape, monitor_all, is_train) == want
