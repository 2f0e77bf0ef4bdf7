"""Property: any program of reads and writes ends as sequential push-order execution would.

A program is a list of steps over a few variables. An op step reads some
variables, writes some (possibly the same ones) and computes each new value
from what it reads and the old value of what it writes; a wait step waits for
one variable and checks its value against the sequential run at that point.
While running, each op also checks that nothing conflicting runs beside it.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from engine_support import WAIT, close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minimx.engine import Engine, EngineTimeout, NaiveEngine, ThreadedEngine, Var

NVARS = 4


@dataclass(frozen=True)
class OpStep:
    reads: frozenset[int]
    writes: frozenset[int]
    priority: int
    yields: bool  # release the GIL mid-op, to invite interleavings


@dataclass(frozen=True)
class WaitStep:
    var: int


var_sets = st.frozensets(st.integers(0, NVARS - 1), max_size=3)
steps = st.one_of(
    st.builds(OpStep, var_sets, var_sets, st.integers(-3, 3), st.booleans()),
    st.builds(WaitStep, st.integers(0, NVARS - 1)),
)
programs = st.lists(steps, max_size=40)


def new_values(k: int, step: OpStep, state: list[int]) -> dict[int, int]:
    """What op number `k` writes: a deterministic mix of its inputs."""
    seen = sum((i + 2) * state[r] for i, r in enumerate(sorted(step.reads)))
    return {w: (seen * 31 + state[w] * 7 + k * 13 + w) % 1_000_003 for w in step.writes}


def sequential(program: list) -> tuple[list[int], list[list[int]]]:
    """Final state and, per wait step, the state at that point."""
    state = list(range(1, NVARS + 1))
    snapshots = []
    for k, step in enumerate(program):
        if isinstance(step, OpStep):
            for w, value in new_values(k, step, state).items():
                state[w] = value
        else:
            snapshots.append(list(state))
    return state, snapshots


class ExclusionCheck:
    """Counts who is inside each variable; records any read/write overlap."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.readers = [0] * NVARS
        self.writers = [0] * NVARS
        self.violations: list[str] = []

    def enter(self, k: int, reads: set[int], writes: frozenset[int]) -> None:
        with self.lock:
            for r in reads:
                if self.writers[r]:
                    self.violations.append(f"op {k} read var {r} during a write")
                self.readers[r] += 1
            for w in writes:
                if self.writers[w] or self.readers[w]:
                    self.violations.append(f"op {k} wrote var {w} during other access")
                self.writers[w] += 1

    def leave(self, reads: set[int], writes: frozenset[int]) -> None:
        with self.lock:
            for r in reads:
                self.readers[r] -= 1
            for w in writes:
                self.writers[w] -= 1


class Deadlock(BaseException):
    """Raised on a timed-out wait. Not an Exception, so Hypothesis stops at once
    instead of shrinking through one more timeout per attempt."""


def run(eng: Engine, program: list) -> None:
    try:
        run_checked(eng, program)
    except EngineTimeout as exc:
        raise Deadlock(f"engine stalled on {program}") from exc


def run_checked(eng: Engine, program: list) -> None:
    state = list(range(1, NVARS + 1))
    variables: list[Var] = [eng.new_variable(f"v{i}") for i in range(NVARS)]
    check = ExclusionCheck()
    expected_final, expected_snapshots = sequential(program)
    snapshots = []

    def make_op(k: int, step: OpStep):  # noqa: ANN202
        only_read = set(step.reads - step.writes)  # the engine treats both as a write

        def op() -> None:
            check.enter(k, only_read, step.writes)
            values = new_values(k, step, state)
            if step.yields:
                time.sleep(0)
            for w, value in values.items():
                state[w] = value
            check.leave(only_read, step.writes)
        return op

    for k, step in enumerate(program):
        if isinstance(step, OpStep):
            eng.push(make_op(k, step), [variables[r] for r in step.reads],
                     [variables[w] for w in step.writes], priority=step.priority, name=f"op{k}")
        else:
            eng.wait_for_var(variables[step.var], timeout=WAIT)
            snapshots.append(state[step.var])
    eng.wait_for_all(timeout=WAIT)

    assert check.violations == []
    assert state == expected_final
    assert snapshots == [snap[s.var] for snap, s in
                         zip(expected_snapshots, [s for s in program if isinstance(s, WaitStep)],
                             strict=True)]
    writes = [sum(w in s.writes for s in program if isinstance(s, OpStep)) for w in range(NVARS)]
    assert [v.version for v in variables] == writes


@pytest.fixture(scope="module", params=["ThreadedEngine", "NaiveEngine"])
def shared_engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    # One engine for all examples: it must also stay correct across programs.
    eng: Engine = ThreadedEngine(num_workers=4) if request.param == "ThreadedEngine" \
        else NaiveEngine()
    yield eng
    close(eng)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs)
def test_random_programs_match_sequential_execution(shared_engine: Engine, program: list) -> None:
    run(shared_engine, program)
