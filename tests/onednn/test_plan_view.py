"""Plan.view: a temporary's bytes read through another descriptor, with no copy,
kept alive by the memory planner as long as its views are read."""
from __future__ import annotations

import numpy as np
import pytest

from minimx import onednn
from minimx.base import BackendError
from minimx.onednn import MemoryDesc


def _relu(plan: onednn.Plan, slot: onednn.Slot) -> onednn.Slot:
    return plan.add(onednn.eltwise(slot.desc, "relu"), src=slot)


def test_a_reshaping_view_and_a_transposing_view():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    plan = onednn.Plan("views")
    t = _relu(plan, plan.reorder(plan.input(x.shape), copy=True))
    flat = plan.view(t, MemoryDesc.plain((6, 4)))
    swapped = plan.view(t, MemoryDesc.strided((2, 4, 3), (12, 1, 4)))
    # A later step that could reuse t's buffer must not, while the views are read.
    _relu(plan, plan.reorder(plan.input(x.shape), copy=True))
    outs = [plan.output(plan.add(onednn.softmax(flat.desc, axis=1), src=flat)),
            plan.output(plan.reorder(swapped))]
    assert all(o.kind == "output" for o in outs)
    softmax, transposed = plan.run([x, x])
    r = np.maximum(x, 0)
    e = np.exp(r.reshape(6, 4) - r.reshape(6, 4).max(1, keepdims=True))
    np.testing.assert_allclose(softmax, e / e.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(transposed, r.transpose(0, 2, 1))


def test_an_input_cannot_be_viewed():
    plan = onednn.Plan("input")
    x = plan.input((2, 3))
    with pytest.raises(BackendError, match=r"not a written temporary.*plan.reorder"):
        plan.view(x, MemoryDesc.plain((3, 2)))


def test_a_view_must_have_the_same_size():
    plan = onednn.Plan("size")
    t = plan.reorder(plan.input((2, 3)), copy=True)
    with pytest.raises(BackendError, match="cannot view"):
        plan.view(t, MemoryDesc.plain((7,)))


def test_a_view_is_never_written():
    plan = onednn.Plan("write")
    t = plan.reorder(plan.input((2, 3)), copy=True)
    v = plan.view(t, MemoryDesc.plain((3, 2)))
    with pytest.raises(BackendError, match="is a view, which steps only read"):
        plan.add(onednn.eltwise(v.desc, "relu"), src=v, dst=v)


def test_a_part_is_read_in_place():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    plan = onednn.Plan("part")
    t = plan.reorder(plan.input(x.shape), copy=True)
    plan.output(plan.reorder(plan.part(t, (2, 2, 4), (0, 1, 0))))
    np.testing.assert_array_equal(plan.run([x])[0], x[:, 1:3])


def test_a_matmul_reads_two_parts_of_one_buffer():
    # Each part starts at its first element (newer oneDNN's matmul ignores a
    # descriptor's offset and would read both from the buffer's start).
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    plan = onednn.Plan("parts")
    t = plan.reorder(plan.input(x.shape), copy=True)
    a = plan.part(t, (2, 3, 2), (0, 0, 0))
    b_t = plan.permute(plan.part(t, (2, 3, 2), (0, 0, 2)), (0, 2, 1))
    plan.output(plan.add(onednn.matmul(a.desc, b_t.desc), src=a, weights=b_t))
    np.testing.assert_array_equal(plan.run([x])[0], x[..., :2] @ x[..., 2:].transpose(0, 2, 1))


def test_a_part_of_a_blocked_layout_is_refused():
    blocked = onednn.conv((1, 16, 4, 4), (16, 16, 3, 3)).desc("weights")
    plan = onednn.Plan("blocked")
    t = plan.reorder(plan.input(blocked.shape), blocked)
    with pytest.raises(BackendError, match="only a strided layout has parts"):
        plan.part(t, (8, 16, 3, 3), (0, 0, 0, 0))


def test_a_part_outside_its_slot_is_refused():
    plan = onednn.Plan("outside")
    t = plan.reorder(plan.input((2, 3)), copy=True)
    with pytest.raises(BackendError, match=r"not inside \(2, 3\)"):
        plan.part(t, (2, 2), (0, 2))


def test_a_sum_accumulates_into_a_whole_view_in_place():
    """A sum post-op may write into a view of all of a temporary (here a reshape):
    the step reads and writes the temporary, which the planner keeps alive."""
    rng = np.random.default_rng(1)
    x, w = (rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (6, 3)))
    addend = rng.standard_normal((2, 6)).astype(np.float32)
    plan = onednn.Plan("summed view")
    t = plan.reorder(plan.input(addend.shape), copy=True)
    flat = plan.view(t, MemoryDesc.plain((4, 3)))
    op = onednn.matmul(MemoryDesc.plain(x.shape), MemoryDesc.plain(w.shape),
                       post_ops=[onednn.PostOp.sum()])
    y = plan.add(op, src=plan.input(x.shape), weights=plan.input(w.shape), dst=flat)
    assert y is flat
    plan.output(plan.reorder(y, copy=True))
    np.testing.assert_allclose(plan.run([addend, x, w])[0], x @ w + addend.reshape(4, 3),
                               rtol=1e-5)


def test_a_sum_into_a_part_is_refused():
    plan = onednn.Plan("summed part")
    t = plan.reorder(plan.input((8, 3)), copy=True)
    half = plan.part(t, (4, 3), (0, 0))
    op = onednn.matmul(MemoryDesc.plain((4, 6)), MemoryDesc.plain((6, 3)),
                       post_ops=[onednn.PostOp.sum()])
    with pytest.raises(BackendError, match="is a view, which steps only read"):
        plan.add(op, src=plan.input((4, 6)), weights=plan.input((6, 3)), dst=half)
