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
        "act_data", "act_output"]
    values = dict(seen)
    np.testing.assert_array_equal(values["fc_data"], [[1, 2, 3]])
    np.testing.assert_array_equal(values["fc_bias"], [0.5, 0.25])
    np.testing.assert_array_equal(values["act_data"], [[1.5, -1.75]])
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
