"""Plan.batch_loop: the first steps run once per part of the batch, on one
part's shapes, and give the later steps whole-batch temporaries - the same
numbers as the steps run on the whole batch."""
from __future__ import annotations

import numpy as np
import pytest

from minimx import onednn
from minimx.backends.dnnl.lower import compile_planned
from minimx.base import BackendError
from minimx.onednn import MemoryDesc, PostOp

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 16, 10, 10)).astype(np.float32)
W3 = RNG.standard_normal((32, 16, 3, 3)).astype(np.float32)
W1 = RNG.standard_normal((32, 32, 1, 1)).astype(np.float32)
HEAD = RNG.standard_normal((8, 32, 1, 1)).astype(np.float32)


def _conv(plan: onednn.Plan, x: onednn.Slot, w: np.ndarray, **kw) -> onednn.Slot:
    op = onednn.conv(x.shape, w.shape, pad=w.shape[2] // 2, **kw)
    return plan.add(op, src=plan.reorder(x, op.desc("src")),
                    weights=plan.constant(onednn.constant(op, "weights", w)))


def _network(count: int, planned: bool = True) -> onednn.Plan:
    """conv 3x3 + relu, relu, conv 1x1 (in the loop when count > 1), then a
    1x1 head over the whole batch reading both convolutions' outputs."""
    plan = onednn.Plan(f"{count} parts")
    x = plan.input(X.shape)
    src = plan.batch_part(x, count) if count > 1 else x
    a = _conv(plan, src, W3, post_ops=[PostOp.eltwise("relu")])
    r = plan.add(onednn.eltwise(a.desc, "relu", alpha=0.5), src=a)
    b = _conv(plan, r, W1)
    looped = len(plan.steps)   # the reorder of the input, conv, relu, conv
    if count > 1:
        a, b = plan.batch_loop(count, [a, b])
        assert (plan.loop_end, plan.loop_count) == (looped, count) and looped >= 4
    s = plan.add(onednn.binary(b.desc, plan.reorder(a, b.desc).desc, "add"), src=b,
                 src1=plan.reorder(a, b.desc))
    plan.output(_conv(plan, s, HEAD))
    if planned:
        compile_planned(plan)
    return plan


@pytest.mark.parametrize("count", [2, 4])
def test_parts_give_the_whole_batch_numbers(count):
    (want,) = _network(1).run([X])
    (got,) = _network(count).run([X])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_the_memory_plan_keeps_the_whole_results_from_the_first_step_on():
    # Each pass rewrites the loop's temporaries; a whole result sharing a block
    # with one of them would lose the earlier parts. Planned and unplanned agree.
    (unplanned,) = _network(4, planned=False).run([X])
    (planned,) = _network(4).run([X])
    np.testing.assert_array_equal(planned, unplanned)


def test_a_whole_view_of_a_result_is_read_through_the_same_view_of_the_whole():
    plan = onednn.Plan("view")
    x = plan.batch_part(plan.input(X.shape), 2)
    t = plan.reorder(x, copy=True)
    as_int = plan.view(t, MemoryDesc.plain(t.shape, np.int32))
    (whole,) = plan.batch_loop(2, [as_int])
    assert whole.kind == "view" and whole.shape == X.shape and whole.desc.dtype == np.int32
    plan.output(plan.reorder(whole, copy=True))
    (got,) = plan.run([X])
    np.testing.assert_array_equal(got, X.view(np.int32))


def test_a_timed_run_times_each_part_of_a_looped_step():
    plan = _network(4)
    looped, rest = plan.loop_end, len(plan.steps) - plan.loop_end
    assert plan.step_runs == 4 * looped + rest
    names = plan.run_names()
    assert names == plan.step_names()[:looped] * 4 + plan.step_names()[looped:]
    times = np.zeros(2 * plan.step_runs, np.int64)
    plan.run([X], times=times)
    assert (np.diff(times) >= 0).all()   # one after the other, in the order run
    with pytest.raises(BackendError, match=rf"shape \({2 * plan.step_runs},\)"):
        plan.run([X], times=np.zeros(2 * len(plan.steps), np.int64))


def test_only_an_input_splits_into_parts():
    plan = onednn.Plan("parts")
    x = plan.input((4, 3))
    t = plan.reorder(x, copy=True)
    with pytest.raises(BackendError, match="not an input whose batch splits into 2"):
        plan.batch_part(t, 2)
    with pytest.raises(BackendError, match="splits into 3 parts"):
        plan.batch_part(x, 3)


def test_the_loop_reads_inputs_by_parts_only():
    plan = onednn.Plan("whole input")
    plan.reorder(plan.input((4, 3)), copy=True)
    with pytest.raises(BackendError, match="reads input in0 whole"):
        plan.batch_loop(2, [])


def test_a_result_must_be_a_temporary_with_the_batch_outermost():
    plan = onednn.Plan("layout")
    x = plan.batch_part(plan.input((4, 3)), 2)
    t = plan.reorder(x, MemoryDesc.ordered((2, 3), "ba"))
    with pytest.raises(BackendError, match="not its outermost, dense axis"):
        plan.batch_loop(2, [t])
    plan = onednn.Plan("constant")
    c = plan.constant(np.zeros((2, 3), np.float32))
    plan.reorder(plan.batch_part(plan.input((4, 3)), 2), copy=True)
    with pytest.raises(BackendError, match="not a temporary"):
        plan.batch_loop(2, [c])


def test_what_holds_one_part_is_not_read_after_the_loop():
    for read in ("temporary", "part"):
        plan = onednn.Plan(read)
        x = plan.batch_part(plan.input((4, 3)), 2)
        t = plan.reorder(x, copy=True)
        u = plan.add(onednn.eltwise(t.desc, "relu"), src=t)
        plan.batch_loop(2, [u])
        plan.output(plan.reorder(t if read == "temporary" else u, copy=True))
        with pytest.raises(BackendError, match="after the batch loop reads .* one part"):
            plan.compile()


def test_a_part_is_not_viewed_after_the_loop():
    plan = onednn.Plan("view")
    t = plan.reorder(plan.batch_part(plan.input((4, 3)), 2), copy=True)
    plan.batch_loop(2, [t])
    with pytest.raises(BackendError, match="part of the batch loop"):
        plan.view(t, MemoryDesc.plain((3, 2)))


def test_one_loop_a_plan():
    plan = onednn.Plan("twice")
    t = plan.reorder(plan.batch_part(plan.input((4, 3)), 2), copy=True)
    plan.batch_loop(2, [t])
    with pytest.raises(BackendError, match="has a loop already"):
        plan.batch_loop(2, [])
