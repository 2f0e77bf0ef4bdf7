"""Plans: several primitives over blocked layouts, run by one call."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from minimx import onednn
from minimx.base import BackendError
from minimx.onednn import PostOp

from . import reference
from .helpers import ATOL, RTOL, random


def build_conv_relu_pool_fc():
    """conv(3x3, pad 1) -> relu -> max pool 2x2 -> fc, blocked layouts inside."""
    conv = onednn.conv((2, 16, 8, 8), (32, 16, 3, 3), pad=1, bias=True)
    relu = onednn.eltwise(conv.desc("dst"), "relu")
    pool = onednn.pooling(relu.desc("dst"), (2, 2), stride=(2, 2))
    fc = onednn.inner_product(pool.desc("dst"), 10, bias=True)
    w1, b1 = random((32, 16, 3, 3), 1, -0.3, 0.3), random((32,), 2)
    w2, b2 = random((10, 32 * 4 * 4), 3, -0.1, 0.1), random((10,), 4)
    plan = onednn.Plan("conv-relu-pool-fc")
    x = plan.input((2, 16, 8, 8), "data")
    h = plan.add(conv, src=plan.reorder(x, conv.desc("src")),
                 weights=plan.constant(onednn.constant(conv, "weights", w1)),
                 bias=plan.constant(b1))
    h = plan.add(relu, src=h)
    h = plan.add(pool, src=h)
    y = plan.add(fc, src=h, weights=plan.constant(onednn.constant(fc, "weights", w2)),
                 bias=plan.constant(b2))
    plan.output(y, "scores")

    def expected(data):
        h = np.maximum(reference.conv(data, w1, b1, (1, 1), (1, 1), (1, 1), 1), 0)
        h = reference.pooling(h, (2, 2), (2, 2), (0, 0), (0, 0), "max")
        return h.reshape(2, -1) @ w2.T + b2

    return plan, expected, (conv, relu, pool, fc)


def test_conv_relu_pool_fc_in_one_run():
    plan, expected, ops = build_conv_relu_pool_fc()
    assert ops[0].desc("dst").layout != "abcd"  # the chain really stays blocked
    for seed in (1, 2):  # a second run rebinds the io buffers
        data = random((2, 16, 8, 8), 10 + seed)
        out = np.full((2, 10), np.nan, np.float32)
        (result,) = plan.run([data], [out])
        assert result is out
        np.testing.assert_allclose(out, expected(data), rtol=RTOL, atol=ATOL)
    text = str(plan)
    assert "conv-relu-pool-fc" in text and "scores" in text
    assert all(f"{op.kind}[{op.impl}]" in text for op in ops)


def test_a_bound_run_served_on_the_onednn_thread_reads_its_arrays_each_time():
    from minimx.backends.dnnl.thread import run_bound  # starts the thread it runs on

    plan, expected, _ = build_conv_relu_pool_fc()
    data, out = random((2, 16, 8, 8), 1), np.full((2, 10), np.nan, np.float32)
    run = plan.bind([data], [out])
    for seed in (2, 3):   # new values in the same arrays
        data[...] = random((2, 16, 8, 8), seed)
        assert run_bound(run)
        np.testing.assert_allclose(out, expected(data), rtol=RTOL, atol=ATOL)


def test_bind_refuses_arrays_that_do_not_fit():
    plan, _, _ = build_conv_relu_pool_fc()
    data, out = random((2, 16, 8, 8), 1), np.empty((2, 10), np.float32)
    with pytest.raises(BackendError, match="scores"):
        plan.bind([data], [out[:, :5]])
    with pytest.raises(BackendError, match="data"):
        plan.bind([data.astype(np.float64)], [out])
    with pytest.raises(BackendError, match="1 inputs and 1 outputs expected"):
        plan.bind([data, data], [out])


def test_in_place_residual_sum_and_weight_refresh():
    """Two convs where the second adds into the first's output (sum post-op),
    then new weights loaded into the same memory without rebuilding the plan."""
    a = onednn.conv((1, 8, 6, 6), (8, 8, 3, 3), pad=1)
    b = onednn.conv(a.desc("src"), (8, 8, 1, 1), post_ops=[PostOp.sum(), PostOp.eltwise("relu")])
    wa, wb = random((8, 8, 3, 3), 1), random((8, 8, 1, 1), 2)
    plan = onednn.Plan()
    x = plan.reorder(plan.input((1, 8, 6, 6)), a.desc("src"))
    mem_b = onednn.constant(b, "weights", wb)
    h = plan.add(a, src=x, weights=plan.constant(onednn.constant(a, "weights", wa)))
    y = plan.add(b, src=x, weights=plan.constant(mem_b), dst=h)
    assert y is h
    plan.output(y)
    data = random((1, 8, 6, 6), 3)
    conv_a = reference.conv(data, wa, None, (1, 1), (1, 1), (1, 1), 1)

    def expected(w):
        return np.maximum(conv_a + reference.conv(data, w, None, (1, 1), (0, 0), (1, 1), 1), 0)

    np.testing.assert_allclose(plan.run([data])[0], expected(wb), rtol=RTOL, atol=ATOL)
    wb2 = random((8, 8, 1, 1), 4)
    assert onednn.constant(b, "weights", wb2, into=mem_b) is mem_b
    np.testing.assert_allclose(plan.run([data])[0], expected(wb2), rtol=RTOL, atol=ATOL)


def test_outputs_inputs_and_plain_temporaries():
    """Two outputs: one written straight into the caller's buffer (plain
    temporary), one an input passed through (copied)."""
    add = onednn.binary((2, 3), (2, 3))
    plan = onednn.Plan()
    a, b = plan.input((2, 3)), plan.input((2, 3))
    plan.output(plan.add(add, src=a, src1=b))
    plan.output(a)
    assert plan.scratchpad_nbytes >= 0
    x, y = random((2, 3), 1), random((2, 3), 2)
    total, copy = plan.run([x, y])
    np.testing.assert_array_equal(total, x + y)
    np.testing.assert_array_equal(copy, x)
    assert len(plan.steps) == 2  # the add, and the copy of `a`


def test_one_plan_from_many_threads():
    plan, expected, _ = build_conv_relu_pool_fc()
    data = [random((2, 16, 8, 8), seed) for seed in range(4)]
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        for _ in range(5):
            results[i] = plan.run([data[i]])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        np.testing.assert_allclose(results[i], expected(data[i]), rtol=RTOL, atol=ATOL)


def test_timed_run_gives_each_step_its_span_and_the_same_outputs():
    plan, expected, _ = build_conv_relu_pool_fc()
    data = random((2, 16, 8, 8), 5)
    times = np.zeros(2 * len(plan.steps), np.int64)
    before = time.perf_counter_ns()
    (timed,) = plan.run([data], times=times)
    after = time.perf_counter_ns()
    np.testing.assert_allclose(timed, expected(data), rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(timed, plan.run([data])[0])
    # the profiler's clock, each step after the one before it
    assert before <= times[0] and times[-1] <= after
    assert (np.diff(times) >= 0).all()
    owners_and_kernels = plan.step_names()
    assert len(owners_and_kernels) == len(plan.steps)
    assert [k.split("[")[0] for _, k in owners_and_kernels] == \
        [op.kind for op, _ in plan.steps]
    assert all(k.endswith(f"[{op.impl}]")
               for (_, k), (op, _) in zip(owners_and_kernels, plan.steps, strict=True))


def test_timed_run_refuses_a_wrong_times_array():
    plan, _, _ = build_conv_relu_pool_fc()
    data = random((2, 16, 8, 8), 5)
    for bad in (np.zeros(2 * len(plan.steps), np.int32), np.zeros(3, np.int64)):
        with pytest.raises(BackendError, match="times must be a writable int64 array"):
            plan.run([data], times=bad)


def test_steps_belong_to_the_owner_set_when_they_were_added():
    plan = onednn.Plan("owned")
    x = plan.input((1, 4))
    plan.owner = "first"
    y = plan.add(onednn.eltwise(x.desc, "relu"), src=plan.reorder(x, copy=True))
    plan.owner = "second"
    plan.output(plan.add(onednn.eltwise(y.desc, "tanh"), src=y))
    assert [owner for owner, _ in plan.step_names()] == ["first", "first", "second"]
