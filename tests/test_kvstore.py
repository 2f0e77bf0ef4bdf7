"""mx.kv: MXNet's single-process store (local, device), and Module taking one."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx


def test_push_sums_and_pull_copies_out():
    kv = mx.kv.create("local")
    assert (kv.type, kv.rank, kv.num_workers) == ("local", 0, 1)
    kv.init([3, 4], [mx.nd.ones((2, 2)), mx.nd.zeros((3,))])
    kv.push(3, [mx.nd.ones((2, 2)) * 2, mx.nd.ones((2, 2)) * 5])
    outs = [mx.nd.zeros((2, 2)), mx.nd.zeros((2, 2))]
    kv.pull(3, out=outs)
    for out in outs:
        np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), 7.0))
    kv.push([4], [mx.nd.array([1.0, 2.0, 3.0])])
    w = mx.nd.zeros((3,))
    kv.pull(4, out=w)
    np.testing.assert_array_equal(w.asnumpy(), [1, 2, 3])


def test_with_an_optimizer_a_push_is_an_update():
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.ones((2,)))
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.5))
    kv.push(0, [mx.nd.ones((2,)), mx.nd.ones((2,))])   # gradient 2: w = 1 - 0.5 * 2
    out = mx.nd.zeros((2,))
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), [0.0, 0.0])


@pytest.mark.parametrize("call, match", [
    (lambda kv: kv.init(1, mx.nd.ones(2)), "key 1 is already initialised"),
    (lambda kv: kv.push(2, mx.nd.ones(2)), "KVStore.push: key 2 is not initialised"),
    (lambda kv: kv.push(1, mx.nd.ones(3)), r"key 1 holds shape \(2,\), got \(3,\)"),
    (lambda kv: kv.pull(1), "give the arrays to pull into as out="),
    (lambda kv: kv.push([1, 2], [mx.nd.ones(2)]), "2 keys for 1 values"),
    (lambda kv: kv.init("w", mx.nd.ones(2)), "key 'w': a store takes keys of one type"),
    (lambda kv: kv.save_optimizer_states("never-written.states"), "no optimizer is set"),
])
def test_misuse_is_named(call, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kv = mx.kv.create()
    kv.init(1, mx.nd.ones(2))
    with pytest.raises(mx.MinimxError, match=match):
        call(kv)
    assert list(tmp_path.iterdir()) == []   # a refused save writes no file


def test_module_fit_takes_a_local_store_and_refuses_a_distributed_one():
    with pytest.raises(mx.MinimxError, match="kvstore 'dist_sync' is not supported"):
        mx.kv.create("dist_sync")
    # MXNet 1.9.1 makes these single-process types on a CPU too.
    for name in ("local_allreduce_cpu", "local_allreduce_device"):
        assert mx.kv.create(name).type == name
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2,
                                                     name="fc"), name="softmax")
    it = mx.io.NDArrayIter(np.random.default_rng(0).random((8, 3)), np.zeros(8), batch_size=4)
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=1, kvstore=mx.kv.create("local"))
    assert mod.optimizer_initialized


def test_pushpull_and_broadcast():
    # MXNet 1.9.1: pushpull writes the sum into the values themselves when out is None.
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones(2))
    values = [mx.nd.ones(2) * 2, mx.nd.ones(2) * 3]
    kv.pushpull(3, values)
    assert [v.asnumpy().tolist() for v in values] == [[5.0, 5.0], [5.0, 5.0]]
    out = mx.nd.zeros(2)
    kv.broadcast(7, mx.nd.ones(2) * 7, out=out)
    assert out.asnumpy().tolist() == [7.0, 7.0]


def test_updates_go_in_mxnets_key_order():
    # MXNet 1.9.1 updates int keys in increasing order, str keys in their order of init,
    # whatever the order of the push.
    def order(keys, pushed):
        kv, seen = mx.kv.create("local"), []
        kv.init(keys, [mx.nd.zeros(1) for _ in keys])
        kv._set_updater(lambda key, grad, weight: seen.append(key))
        kv.push(pushed, [mx.nd.ones(1) for _ in pushed])
        return seen
    assert order([5, 2], [5, 2]) == [2, 5]
    assert order(["b", "a"], ["a", "b"]) == ["b", "a"]


def test_optimizer_on_str_keys_and_its_saved_states(tmp_path):
    # MXNet 1.9.1: a str key is the optimizer's index, so lr_mult by that name applies.
    kv = mx.kv.create("local")
    kv.init(["w", "v"], [mx.nd.ones(2), mx.nd.ones(2)])
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    opt.set_lr_mult({"w": 0.5})
    kv.set_optimizer(opt)
    ones = [mx.nd.ones(2), mx.nd.ones(2)]
    kv.pushpull(["w", "v"], ones)
    kv.save_optimizer_states(str(tmp_path / "kv.states"))
    kv.pushpull(["w", "v"], [mx.nd.ones(2), mx.nd.ones(2)])
    kv.load_optimizer_states(str(tmp_path / "kv.states"))
    out = [mx.nd.zeros(2), mx.nd.zeros(2)]
    kv.pushpull(["w", "v"], [mx.nd.ones(2), mx.nd.ones(2)], out=out)
    np.testing.assert_allclose(out[0].asnumpy(), [0.76, 0.76], rtol=1e-6)
    np.testing.assert_allclose(out[1].asnumpy(), [0.52, 0.52], rtol=1e-6)
