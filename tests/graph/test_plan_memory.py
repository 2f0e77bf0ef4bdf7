"""The memory planner: unit cases, and properties on random schedules and networks."""
from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.graph import Graph
from minimx.graph.infer import infer_dtypes, infer_shapes
from minimx.graph.plan_memory import EXTERNAL, UNUSED, Step, graph_steps, plan_memory
from minimx.interpreter import GraphRunner
from minimx.interpreter.program import Program
from minimx.ops.registry import OpDef

from ..random_nets import input_values, networks
from .plan_check import check_plan


def chain(n: int, inplace: bool) -> list[Step]:
    """x(0) -> e1 -> e2 -> ... -> en, each step in-place-capable or not."""
    return [Step(f"s{i}", (i,), (i + 1,), ((0, 0),) if inplace else ()) for i in range(n)]


# -- unit cases -------------------------------------------------------------------------
def test_chain_reuses_two_blocks_without_inplace():
    steps = chain(6, inplace=False)
    plan = plan_memory([100] * 7, steps, external={0, 6}, enable_inplace=False)
    check_plan(steps, plan, {0, 6})
    assert plan.storage[0] == plan.storage[6] == EXTERNAL
    assert plan.storage[1:6] == [0, 1, 0, 1, 0]
    assert (plan.naive_bytes, plan.planned_bytes, plan.lower_bound) == (500, 200, 200)


def test_without_reuse_every_entry_has_a_block_of_its_own():
    steps = chain(6, inplace=True)
    plan = plan_memory([100] * 7, steps, external={0, 6}, reuse=False)
    check_plan(steps, plan, {0, 6})
    assert plan.storage[1:6] == [0, 1, 2, 3, 4] and plan.inplace == []
    assert plan.planned_bytes == plan.naive_bytes == 500


def test_chain_runs_in_one_block_in_place():
    steps = chain(6, inplace=True)
    plan = plan_memory([100] * 7, steps, external={0, 6})
    check_plan(steps, plan, {0, 6})
    # e1 cannot take over the external x; e2..e5 take over their input's block.
    assert plan.storage[1:6] == [0] * 5
    assert plan.inplace == [(1, 2), (2, 3), (3, 4), (4, 5)]
    assert plan.planned_bytes == 100


def test_inplace_refused_while_the_input_has_a_later_reader():
    # e1 -> e2 (in-place allowed), but step 2 still reads e1.
    steps = [Step("a", (0,), (1,)), Step("b", (1,), (2,), ((0, 0),)), Step("c", (1, 2), (3,))]
    plan = plan_memory([8] * 4, steps, external={0, 3})
    check_plan(steps, plan, {0, 3})
    assert plan.storage[2] != plan.storage[1] and plan.inplace == []


def test_env_switch_turns_inplace_off(monkeypatch):
    sym = mx.sym.relu(mx.sym.tanh(mx.sym.Variable("x"), name="t"), name="r")
    monkeypatch.setenv("MINIMX_EXEC_ENABLE_INPLACE", "0")
    off = sym.simple_bind(mx.cpu(), grad_req="null", x=(4, 4))._runner.program(False).plan
    monkeypatch.setenv("MINIMX_EXEC_ENABLE_INPLACE", "1")
    on = sym.simple_bind(mx.cpu(), grad_req="null", x=(4, 4))._runner.program(False).plan
    assert off.inplace == [] and on.inplace == []  # relu's output is a head: external
    sym = mx.sym.sigmoid(sym, name="s")
    monkeypatch.setenv("MINIMX_EXEC_ENABLE_INPLACE", "0")
    off = sym.simple_bind(mx.cpu(), grad_req="null", x=(4, 4))._runner.program(False).plan
    monkeypatch.delenv("MINIMX_EXEC_ENABLE_INPLACE")
    on = sym.simple_bind(mx.cpu(), grad_req="null", x=(4, 4))._runner.program(False).plan
    assert off.inplace == [] and len(on.inplace) == 1
    assert (off.planned_bytes, on.planned_bytes) == (128, 64)


def test_largest_first_each_into_the_first_block_free_while_it_lives():
    # Entries of 400, 100 and 250 bytes live together at steps a-b; a 1000-byte
    # entry (d-e) opens the first block, which the 400-byte one can share; the
    # 200-byte one (c-d) overlaps the 1000-byte one and joins the 250-byte one.
    steps = [Step("a", (0,), (1, 2, 3)), Step("b", (1, 2, 3), (4,)),
             Step("c", (4,), (5,)), Step("d", (5,), (6,)), Step("e", (6,), (7,))]
    sizes = [8, 400, 100, 250, 8, 200, 1000, 8]
    plan = plan_memory(sizes, steps, external={0, 7})
    check_plan(steps, plan, {0, 7})
    assert plan.storage[1:7] == [0, 2, 1, 3, 1, 0]
    assert plan.block_bytes == [1000, 250, 100, 8]


def test_small_entries_do_not_take_the_blocks_large_ones_need():
    # A (100 bytes) dies at b; S (10) is made after that and lives to the end,
    # with C (100). Allocating as it walks, a planner gives S the block A left
    # and then needs a second 100-byte block for C (200 bytes in all); knowing
    # every interval first, C takes A's block and S a small one of its own.
    steps = [Step("a", (0,), (1,)), Step("b", (1,), (2,)), Step("c", (2,), (3,)),
             Step("d", (3,), (4,)), Step("e", (3, 4), (5,))]
    sizes = [8, 100, 10, 10, 100, 8]
    plan = plan_memory(sizes, steps, external={0, 5})
    check_plan(steps, plan, {0, 5})
    assert plan.storage[1] == plan.storage[4] and plan.planned_bytes == 120
    assert plan.lower_bound == 110


def test_an_inplace_hand_over_counts_once_in_the_lower_bound():
    plan = plan_memory([100] * 4, chain(3, inplace=True), external={0, 3})
    assert (plan.inplace, plan.lower_bound, plan.planned_bytes) == ([(1, 2)], 100, 100)


def test_unread_outputs_are_freed_at_once_and_unwritten_entries_unused():
    steps = [Step("bn", (0,), (1, 2, 3)), Step("f", (1,), (4,))]
    plan = plan_memory([64, 64, 8, 8, 64, 32], steps, external={0, 4})
    check_plan(steps, plan, {0, 4})
    assert plan.storage[5] == UNUSED
    assert plan.lower_bound == 64 + 8 + 8


def test_str_lists_blocks_and_totals():
    plan = plan_memory([100] * 4, chain(3, inplace=False), external={0, 3},
                       enable_inplace=False)
    text = str(plan)
    assert text.splitlines()[0] == ("memory reduced from 200 B to 200 B in 2 blocks "
                                    "(lower bound 200 B, 0 in-place; 200 B external)")
    assert "block 0: 100 bytes <- entries 1" in text


# -- properties ---------------------------------------------------------------------------
@st.composite
def schedules(draw):
    """(sizes, steps, external) for a random schedule of multi-output steps."""
    n_ext = draw(st.integers(1, 3))
    sizes = [draw(st.sampled_from([8, 16, 24, 64, 200])) for _ in range(n_ext)]
    external = set(range(n_ext))
    steps = []
    for t in range(draw(st.integers(1, 25))):
        reads = tuple(draw(st.lists(st.integers(0, len(sizes) - 1), min_size=1, max_size=3)))
        writes = tuple(range(len(sizes), len(sizes) + draw(st.integers(1, 2))))
        for _ in writes:
            sizes.append(draw(st.sampled_from([8, 16, 24, 64, 200])))
        pairs = draw(st.lists(st.tuples(st.integers(0, len(reads) - 1),
                                        st.integers(0, len(writes) - 1)), max_size=2))
        steps.append(Step(f"s{t}", reads, writes, tuple(pairs)))
    external |= set(draw(st.lists(st.integers(0, len(sizes) - 1), max_size=3)))
    return sizes, steps, external


@given(schedules(), st.booleans())
@settings(max_examples=300, deadline=None)
def test_live_entries_never_share_storage(schedule, inplace):
    sizes, steps, external = schedule
    written = {e for s in steps for e in s.writes}
    external |= {e for s in steps for e in s.reads if e not in written}
    plan = plan_memory(sizes, steps, external, enable_inplace=inplace)
    check_plan(steps, plan, external)
    assert plan.lower_bound <= plan.naive_bytes
    if not inplace:
        assert plan.lower_bound <= plan.planned_bytes


def run(sym, reqs, args, aux, head_grads, share_memory=True):
    """Outputs and gradients (twice, so 'add' accumulates) of a runner over `sym`."""
    g = Graph(sym.outputs)
    values = {**args, **aux}
    shapes = infer_shapes(g, {g.entry_ptr[n]: values[g.nodes[n].name].shape
                              for n in g.input_ids})
    dtypes = infer_dtypes(g, {g.entry_ptr[n]: np.float64 for n in g.input_ids})
    names = [g.nodes[n].name for n in g.input_ids]
    runner = GraphRunner(g, shapes, dtypes, [reqs.get(n, "null") for n in names],
                         share_memory=share_memory)
    inputs = [values[n].copy() for n in names]
    grads = [np.ones_like(values[n]) for n in names]
    for _ in range(2):
        outs = [o.copy() for o in runner.forward(inputs, is_train=True)]
        runner.backward(head_grads, grads)
    prog = runner.program(True)
    steps = graph_steps(g) + (prog.backward.steps() if prog.backward else [])
    external = {e for e, s in enumerate(prog.plan.storage) if s == EXTERNAL}
    check_plan(steps, prog.plan, external)
    return outs, grads, inputs


@given(networks())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_networks_compute_the_same_with_and_without_planning(net):
    sym, reqs = net
    args, aux = input_values(sym)
    rng = np.random.default_rng(1)
    out_shapes = sym.infer_shape(**{k: v.shape for k, v in args.items()})[1]
    head_grads = [rng.normal(size=s) for s in out_shapes]
    reference = run(sym, reqs, args, aux, head_grads, share_memory=False)
    for flag in ("1", "0"):
        # (hypothesis runs the body many times per test: no monkeypatch fixture)
        with pytest.MonkeyPatch.context() as env:
            env.setenv("MINIMX_EXEC_ENABLE_INPLACE", flag)
            result = run(sym, reqs, args, aux, head_grads)
        for want, got in zip(reference, result, strict=True):
            for a, b in zip(want, got, strict=True):
                np.testing.assert_array_equal(a, b)


def training_program(sym, reqs) -> Program:
    g = Graph(sym.outputs)
    args, aux = input_values(sym)
    values = {**args, **aux}
    shapes = infer_shapes(g, {g.entry_ptr[n]: values[g.nodes[n].name].shape
                              for n in g.input_ids})
    dtypes = infer_dtypes(g, {g.entry_ptr[n]: np.float64 for n in g.input_ids})
    return Program(g, shapes, dtypes, [reqs.get(g.nodes[n].name, "null") for n in g.input_ids])


def read_everything(self, p, label=""):
    return [True] * len(self.input_names(p)), [True] * len(self.output_names(p))


@given(networks())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_training_plans_free_what_backward_does_not_read(net):
    """A training plan keeps every entry some backward step reads (the token check),
    and declaring reads only ever lowers the bytes live at once."""
    sym, reqs = net
    prog = training_program(sym, reqs)
    if prog.backward is None:
        return
    steps = graph_steps(prog.graph) + prog.backward.steps()
    external = {e for e, s in enumerate(prog.plan.storage) if s == EXTERNAL}
    check_plan(steps, prog.plan, external)
    with mock.patch.object(OpDef, "grad_reads", read_everything):
        keep_all = training_program(sym, reqs).plan
    assert prog.plan.lower_bound <= keep_all.lower_bound
    assert prog.plan.naive_bytes == keep_all.naive_bytes
