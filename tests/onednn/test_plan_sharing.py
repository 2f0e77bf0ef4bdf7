"""A plan's temporaries placed by minimx's memory planner: `Plan.schedule`
describes the steps by slot, `Plan.compile` takes the caller's plan."""
from __future__ import annotations

import numpy as np
import pytest

from minimx import onednn
from minimx.base import BackendError
from minimx.graph.plan_memory import Step, plan_memory

from .helpers import ATOL, RTOL, random
from .test_plan import build_conv_relu_pool_fc


def planned(plan: onednn.Plan, enable_inplace: bool = True):
    sizes, steps, external = plan.schedule()
    memory = plan_memory(sizes, [Step(*s) for s in steps], external, enable_inplace)
    plan.compile(memory.storage, memory.block_bytes)
    return memory


def test_schedule_names_each_step_by_slot():
    plan, _, _ = build_conv_relu_pool_fc()
    sizes, steps, external = plan.schedule()
    index = {s.name: k for k, s in enumerate(plan.slots)}
    kinds = [name.split()[0] for name, *_ in steps]
    assert kinds == ["reorder", "conv", "eltwise", "pooling", "inner_product"]
    assert external == {k for k, s in enumerate(plan.slots) if s.kind != "temp"}
    assert sizes == [s.desc.nbytes for s in plan.slots]
    # relu reads the convolution's output and may write over it (same layout);
    # no other step may write in place.
    conv_out = steps[1][2][0]
    assert steps[2][1] == (conv_out,) and steps[2][3] == ((0, 0),)
    assert [s[3] for k, s in enumerate(steps) if k != 2] == [()] * 4
    assert steps[4][2] == (index["scores"],)


def test_planned_temporaries_share_buffers_and_compute_the_same():
    plan, expected, _ = build_conv_relu_pool_fc()
    memory = planned(plan)
    temps = [s for s in plan.slots if s.kind == "temp"]
    conv_out, relu_out = temps[1], temps[2]
    assert relu_out.memory.array is conv_out.memory.array  # relu in place
    assert len({id(s.memory.array) for s in temps}) == len(memory.block_bytes)
    assert memory.planned_bytes < memory.naive_bytes
    data = random((2, 16, 8, 8), 5)
    np.testing.assert_allclose(plan.run([data])[0], expected(data), rtol=RTOL, atol=ATOL)


def test_without_inplace_no_step_writes_over_what_it_reads():
    plan, expected, _ = build_conv_relu_pool_fc()
    memory = planned(plan, enable_inplace=False)
    assert memory.inplace == []
    temps = [s for s in plan.slots if s.kind == "temp"]
    assert temps[2].memory.array is not temps[1].memory.array
    data = random((2, 16, 8, 8), 6)
    np.testing.assert_allclose(plan.run([data])[0], expected(data), rtol=RTOL, atol=ATOL)


def test_a_sum_addend_is_read_by_the_step_that_writes_into_it():
    a = onednn.conv((1, 8, 6, 6), (8, 8, 3, 3), pad=1)
    b = onednn.conv(a.desc("src"), (8, 8, 1, 1), post_ops=[onednn.PostOp.sum()])
    plan = onednn.Plan()
    x = plan.reorder(plan.input((1, 8, 6, 6)), a.desc("src"))
    h = plan.add(a, src=x, weights=plan.constant(onednn.constant(a, "weights",
                                                                 random((8, 8, 3, 3), 1))))
    plan.add(b, src=x, weights=plan.constant(onednn.constant(b, "weights",
                                                             random((8, 8, 1, 1), 2))), dst=h)
    plan.output(h)
    _, steps, _ = plan.schedule()
    h_slot = plan.slots.index(h)
    (_, reads, writes, _) = steps[2]
    assert h_slot in reads and writes == ()


def test_a_plan_for_other_slots_is_refused():
    plan, _, _ = build_conv_relu_pool_fc()
    with pytest.raises(BackendError, match=r"a memory plan for 2 slots, the plan has \d+"):
        plan.compile([0, 0], [64])


def test_a_binary_reading_one_tensor_twice_writes_elsewhere():
    # oneDNN's binary may write over src, never over src1: for add(y, y) the
    # planner must not be offered src, which is src1 too (bf16 blocked layouts
    # read src1 after writing dst and gave zeros).
    desc = onednn.MemoryDesc.ordered((1, 8, 5, 5), "abcd", np.float32)
    plan = onednn.Plan()
    x = plan.input((1, 8, 5, 5))
    y = plan.add(onednn.eltwise(desc, "abs"), src=x)
    plan.output(plan.add(onednn.binary(desc, desc, "add"), src=y, src1=y))
    _, steps, _ = plan.schedule()
    assert steps[1][3] == ()   # the eltwise before it may write over its src
    memory = planned(plan)
    assert memory.inplace == []
    data = random((1, 8, 5, 5), 7)
    np.testing.assert_array_equal(plan.run([data])[0], 2 * np.abs(data))
