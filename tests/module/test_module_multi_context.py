"""`mx.mod.Module` over several CPU contexts equals MXNet 1.9.1's data parallelism.

Each case is the MXNet script of tools/mxnet_multi_context_fixtures.py, run unchanged
with minimx: 1, 2 and 3 contexts (uneven splits, work loads), SGD with momentum and
Adam on an MLP and on a CNN with BatchNorm, a regression net's per-slice metrics,
`fit` / `score` / `predict` and a checkpoint loaded again, input gradients, states,
BucketingModule and SequentialModule. Fixtures: tests/fixtures/multi_context.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError, ShapeError
from minimx.module.executor_group import split_input_slice

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "multi_context"
RECORD = json.loads((FIXTURES / "cases.json").read_text())
ARRAYS = np.load(FIXTURES / "arrays.npz")

_spec = importlib.util.spec_from_file_location(
    "mxnet_multi_context_fixtures", ROOT / "tools" / "mxnet_multi_context_fixtures.py")
assert _spec is not None and _spec.loader is not None
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


@pytest.mark.parametrize("case", cases.CASES)
def test_the_mxnet_script_gives_mxnets_numbers(case: str, tmp_path: Path) -> None:
    record, arrays = cases.run_case(mx, case, tmp_path)
    assert cases.as_json(record).keys() == RECORD[case].keys()
    for key, want in RECORD[case].items():
        got = cases.as_json(record)[key]
        if key in ("metric", "score", "batch_metrics"):
            np.testing.assert_allclose(_values(got), _values(want), rtol=1e-5, err_msg=key)
            assert _names(got) == _names(want), key
        else:
            assert got == want, key
    want_names = sorted(k.split(":", 1)[1] for k in ARRAYS.files if k.startswith(f"{case}:"))
    assert sorted(arrays) == want_names
    for name, value in arrays.items():
        np.testing.assert_allclose(value, ARRAYS[f"{case}:{name}"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{case}:{name}")


def _values(pairs: list) -> list[float]:
    """The numbers of (name, value) pairs, nested in lists of them too."""
    if pairs and isinstance(pairs[0], str):
        return [pairs[1]]
    return [v for p in pairs for v in _values(p)]


def _names(pairs: list) -> list[str]:
    if pairs and isinstance(pairs[0], str):
        return [pairs[0]]
    return [n for p in pairs for n in _names(p)]


def two_context_mlp(**kwargs) -> mx.mod.Module:
    mod = mx.mod.Module(cases.build_net(mx, "mlp"), context=[mx.cpu(0), mx.cpu(1)], **kwargs)
    mod.bind(data_shapes=[("data", (5, 4))], label_shapes=[("softmax_label", (5,))])
    mod.init_params(mx.init.Xavier())
    return mod


def test_each_context_has_its_executor_and_its_slice() -> None:
    mod = two_context_mlp()
    group = mod._exec_group
    assert [e.outputs[0].context for e in group.execs] == [mx.cpu(0), mx.cpu(1)]
    assert [e.arg_dict["data"].shape for e in group.execs] == [(2, 4), (3, 4)]
    assert group.batch_size == 5 and [len(p) for p in group.param_arrays] == [2] * 4
    data, label = cases.inputs("mlp")
    batch = mx.io.DataBatch([mx.nd.array(data[:5])], [mx.nd.array(label[:5])])
    mod.forward(batch, is_train=False)
    merged = mod.get_outputs()[0].asnumpy()
    parts = [o.asnumpy() for o in mod.get_outputs(merge_multi_context=False)[0]]
    np.testing.assert_array_equal(np.concatenate(parts), merged)
    # A list of batches (of one shape) gives each context one, whole: the same as the
    # batch they make, sliced.
    mod.forward(mx.io.DataBatch([mx.nd.array(data[:4])], [mx.nd.array(label[:4])]),
                is_train=False)
    merged = mod.get_outputs()[0].asnumpy()
    mod.forward([mx.io.DataBatch([mx.nd.array(data[:2])], [mx.nd.array(label[:2])]),
                 mx.io.DataBatch([mx.nd.array(data[2:4])], [mx.nd.array(label[2:4])])],
                is_train=False)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), merged)
    metric = mx.metric.create("acc")
    mod.update_metric(metric, [[mx.nd.array(label[:2])], [mx.nd.array(label[2:4])]],
                      pre_sliced=True)
    assert metric.num_inst == 4
    mon = mx.mon.Monitor(1)
    mod.install_monitor(mon)
    # New executors, which keep the callback; the monitor lists the first two, as MXNet's.
    mod.reshape([("data", (3, 4))], [("softmax_label", (3,))])
    assert len(mon.exes) == 2 and mod.output_shapes == [("softmax_output", (3, 3))]
    assert all(e._monitor_callback is not None for e in mod._exec_group.execs)


def test_work_loads_split_as_mxnets_split_input_slice() -> None:
    # Python's rounding (half to even), the remainder to the last, a surplus cut.
    assert [(s.start, s.stop) for s in split_input_slice(7, [1, 2, 1])] == \
        [(0, 2), (2, 6), (6, 7)]
    assert [(s.start, s.stop) for s in split_input_slice(5, [1, 1, 1])] == \
        [(0, 2), (2, 4), (4, 5)]
    with pytest.raises(ShapeError, match="Too many slices"):
        split_input_slice(3, [1, 2, 1])


def test_update_without_a_kvstore_leaves_the_contexts_apart() -> None:
    # kvstore=None over two contexts: each context steps on its own slice's gradient,
    # as in MXNet, and get_params gives their mean.
    mod = two_context_mlp()
    mod.init_optimizer(kvstore=None, optimizer_params={"learning_rate": 0.5})
    assert mod._kvstore is None and not mod._update_on_kvstore
    data, label = cases.inputs("mlp")
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(data[:5])], [mx.nd.array(label[:5])]))
    mod.update()
    first, second = (w.asnumpy() for w in mod._exec_group.param_arrays[0])
    assert not np.allclose(first, second)
    np.testing.assert_allclose(mod.get_params()[0]["fc1_weight"].asnumpy(),
                               (first + second) / 2, rtol=1e-6)


def test_a_local_kvstore_is_made_for_several_contexts_only() -> None:
    mod = two_context_mlp()
    mod.init_optimizer()
    assert mod._kvstore is not None and mod._kvstore.type == "local" and mod._update_on_kvstore
    one = mx.mod.Module(cases.build_net(mx, "mlp"))
    one.bind(data_shapes=[("data", (5, 4))], label_shapes=[("softmax_label", (5,))])
    one.init_params()
    one.init_optimizer()
    assert one._kvstore is None and not one._update_on_kvstore


def test_saved_optimizer_states_load_into_the_store(tmp_path: Path) -> None:
    mod = two_context_mlp()
    mod.init_optimizer(optimizer="adam")
    data, label = cases.inputs("mlp")
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(data[:5])], [mx.nd.array(label[:5])]))
    mod.update()
    mod.save_optimizer_states(str(tmp_path / "states"))
    other = two_context_mlp()
    other.init_optimizer(optimizer="adam")
    other.load_optimizer_states(str(tmp_path / "states"))
    mine, theirs = (m._kvstore._optimizer_updater("test").states for m in (mod, other))
    assert mine.keys() == theirs.keys() == {"fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"}


@pytest.mark.parametrize("make, error, message", [
    (lambda: mx.mod.Module(cases.build_net(mx, "mlp"), context=[mx.cpu(0), mx.cpu(1)],
                           work_load_list=[1, 2, 3]), MinimxError, "3 entries for 2 contexts"),
    (lambda: mx.mod.Module(cases.build_net(mx, "mlp"), context=[mx.cpu(0), mx.cpu(1)],
                           work_load_list=[0, 0]), MinimxError, "not all 0"),
    (lambda: mx.mod.Module(cases.build_net(mx, "mlp"), context=[mx.cpu(0), mx.cpu(1)],
                           work_load_list=[float("inf"), 1]), MinimxError, "finite"),
    (lambda: mx.mod.Module(cases.build_net(mx, "mlp"), context=[]), MinimxError, "non-empty"),
    (lambda: mx.mod.Module(cases.build_net(mx, "mlp"), context=[mx.cpu(0), mx.cpu(1)],
                           group2ctxs={"dev": mx.cpu(1)}), MinimxError, "group2ctxs"),
    (lambda: mx.mod.BucketingModule(lambda k: None, 5, context=[mx.cpu(0)],
                                    compression_params={"type": "2bit"}), MinimxError,
     "compression_params"),
    (lambda: two_context_mlp().forward(mx.io.DataBatch([mx.nd.ones((1, 4))])), ShapeError,
     "Too many slices"),
    (lambda: two_context_mlp().init_optimizer(kvstore="dist_sync"), MinimxError, "dist_sync"),
    (lambda: two_context_mlp().init_optimizer(kvstore="nccl"), MinimxError, "nccl"),
    (lambda: two_context_mlp().get_states(), MinimxError, "merge_multi_context"),
    (lambda: two_context_mlp().set_states(), MinimxError, "exactly one"),
    (lambda: two_context_mlp().get_input_grads(), MinimxError, "inputs_need_grad"),
])
def test_refusals(make, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        make()


def test_a_bucket_cannot_share_a_module_on_fewer_contexts() -> None:
    one = mx.mod.Module(cases.build_net(mx, "mlp"))
    one.bind(data_shapes=[("data", (5, 4))], label_shapes=[("softmax_label", (5,))])
    one.init_params()
    mod = mx.mod.Module(cases.build_net(mx, "mlp"), context=[mx.cpu(0), mx.cpu(1)])
    with pytest.raises(MinimxError, match="fewer than this module's 2"):
        mod.bind(data_shapes=[("data", (5, 4))], label_shapes=[("softmax_label", (5,))],
                 shared_module=one)


def test_a_local_store_of_large_parameters_leaves_the_updates_to_the_contexts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # MXNet's 'local' store only sums when a parameter has over 16M values; each
    # context then updates its copy (states of their own), to the same weights.
    data, label = cases.inputs("mlp")
    batch = mx.io.DataBatch([mx.nd.array(data[:5])], [mx.nd.array(label[:5])])
    trained = []
    for limit in (mx.module.module.KVSTORE_UPDATE_LIMIT, 10):
        monkeypatch.setattr(mx.module.module, "KVSTORE_UPDATE_LIMIT", limit)
        mx.random.seed(1)
        mod = two_context_mlp()
        mod.init_optimizer(optimizer="adam")
        for _ in range(2):
            mod.forward_backward(batch)
            mod.update()
        trained.append(mod)
    on_store, on_devices = trained
    assert on_store._update_on_kvstore and not on_devices._update_on_kvstore
    assert sorted(on_devices._updater_or_fail("test").states) == list(range(8))
    for name, value in on_store.get_params()[0].items():
        np.testing.assert_allclose(on_devices.get_params()[0][name].asnumpy(), value.asnumpy(),
                                   rtol=1e-6, atol=1e-7, err_msg=name)
