"""Ordering, versions, priorities, timeouts and misuse of the engines."""
from __future__ import annotations

import os
import threading
import time

import pytest
from engine_support import WAIT, Gate, close

from minimx import engine
from minimx.base import MinimxError
from minimx.engine import (
    Engine,
    EngineError,
    EngineTimeout,
    NaiveEngine,
    ThreadedEngine,
    create_engine,
)


def test_read_waits_for_earlier_write(threaded: ThreadedEngine) -> None:
    v, out = threaded.new_variable(), threaded.new_variable()
    gate, log = Gate(), []
    threaded.push(lambda: (gate.wait(), log.append("write")), [], [v], name="write")
    threaded.push(lambda: log.append("read"), [v], [out], name="read")
    time.sleep(0.02)
    assert log == []  # the read has not jumped the blocked write
    gate.open()
    threaded.wait_for_var(out, timeout=WAIT)
    assert log == ["write", "read"]


def test_write_waits_for_earlier_reads(threaded: ThreadedEngine) -> None:
    v = threaded.new_variable()
    gate, log = Gate(), []
    for i in range(2):
        threaded.push(lambda i=i: (gate.wait(), log.append(f"read{i}")), [v], [], name="read")
    threaded.push(lambda: log.append("write"), [], [v], name="write")
    time.sleep(0.02)
    assert log == []
    gate.open()
    threaded.wait_for_var(v, timeout=WAIT)
    assert sorted(log[:2]) == ["read0", "read1"] and log[2] == "write"


def test_reads_of_one_variable_run_concurrently(threaded: ThreadedEngine) -> None:
    v = threaded.new_variable()
    both = threading.Barrier(2, timeout=WAIT)  # breaks (fails the op) if serialized
    for _ in range(2):
        threaded.push(both.wait, [v], [], name="read")
    threaded.wait_for_all(timeout=WAIT)


def test_read_and_write_of_same_var(any_engine: Engine) -> None:
    v = any_engine.new_variable()
    box = [0]

    def inc() -> None:
        value = box[0]
        time.sleep(0)  # invite a race, should the engine allow one
        box[0] = value + 1

    for _ in range(200):
        any_engine.push(inc, [v], [v], name="inc")
    any_engine.wait_for_var(v, timeout=WAIT)
    assert box[0] == 200 and v.version == 200


def test_duplicate_vars_count_once_and_as_writes(any_engine: Engine) -> None:
    v, r = any_engine.new_variable(), any_engine.new_variable()
    any_engine.push(lambda: None, [v, v, r], [v, v], name="dup")
    any_engine.wait_for_all(timeout=WAIT)
    assert v.version == 1 and r.version == 0


def test_op_without_vars_runs(any_engine: Engine) -> None:
    ran = []
    any_engine.push(lambda: ran.append(1), [], [], name="free")
    any_engine.wait_for_all(timeout=WAIT)
    assert ran == [1]


def test_reads_do_not_bump_version(any_engine: Engine) -> None:
    v, w = any_engine.new_variable(), any_engine.new_variable()
    any_engine.push(lambda: None, [], [v], name="w")
    any_engine.push(lambda: None, [v], [w], name="r")
    any_engine.wait_for_all(timeout=WAIT)
    assert (v.version, w.version) == (1, 1)


def test_pushed_writes_count_at_the_push_and_versions_when_done(threaded: ThreadedEngine
                                                               ) -> None:
    v, w = threaded.new_variable(), threaded.new_variable()
    gate = Gate()
    threaded.push(gate.wait, [], [v], name="slow_write")
    threaded.push(lambda: None, [v], [w], name="read")
    assert engine.pushed_writes([v, w]) == [1, 1] and (v.version, w.version) == (0, 0)
    assert threaded.run_if_idle(lambda: True, [v]) is False   # busy: nothing counted
    gate.open()
    threaded.wait_for_all(timeout=WAIT)
    assert threaded.run_if_idle(lambda: True, [v]) is True
    assert engine.pushed_writes([v, w]) == [2, 1] and (v.version, w.version) == (2, 1)


def test_wait_for_var_waits_for_writes_only(threaded: ThreadedEngine) -> None:
    v = threaded.new_variable()
    gate = Gate()
    threaded.push(lambda: None, [], [v], name="w")
    threaded.push(gate.wait, [v], [], name="slow_read")
    threaded.wait_for_var(v, timeout=WAIT)  # returns although the read is blocked
    assert v.version == 1
    gate.open()


def test_ready_ops_run_by_priority_then_push_order() -> None:
    eng = ThreadedEngine(num_workers=1)
    try:
        gate, order = Gate(), []
        eng.push(gate.wait, [], [], name="blocker")
        for i, prio in enumerate([0, 5, -1, 5, 2]):
            eng.push(lambda i=i: order.append(i), [], [], priority=prio, name=f"op{i}")
        gate.open()
        eng.wait_for_all(timeout=WAIT)
        assert order == [1, 3, 4, 0, 2]
    finally:
        close(eng)


def test_ops_made_ready_together_run_by_priority() -> None:
    eng = ThreadedEngine(num_workers=1)
    try:
        v, gate, order = eng.new_variable(), Gate(), []
        eng.push(gate.wait, [], [v], name="writer")
        for i, prio in enumerate([1, 3, 2]):  # all wait for the writer, then become ready
            eng.push(lambda i=i: order.append(i), [v], [], priority=prio, name=f"read{i}")
        gate.open()
        eng.wait_for_all(timeout=WAIT)
        assert order == [1, 2, 0]
    finally:
        close(eng)


def test_priority_never_overrides_dependencies() -> None:
    eng = ThreadedEngine(num_workers=1)
    try:
        v, order = eng.new_variable(), []
        eng.push(lambda: order.append("first"), [], [v], priority=-10, name="first")
        eng.push(lambda: order.append("second"), [v], [], priority=10, name="second")
        eng.wait_for_all(timeout=WAIT)
        assert order == ["first", "second"]
    finally:
        close(eng)


def test_nested_push_from_inside_an_op(any_engine: Engine) -> None:
    v, inner = any_engine.new_variable(), any_engine.new_variable()
    ran = []
    any_engine.push(lambda: any_engine.push(lambda: ran.append("inner"), [v], [inner],
                                            name="inner"), [], [v], name="outer")
    any_engine.wait_for_all(timeout=WAIT)
    assert ran == ["inner"] and inner.version == 1


def test_wait_timeouts_raise_then_engine_recovers(threaded: ThreadedEngine) -> None:
    v = threaded.new_variable()
    gate = Gate()
    threaded.push(gate.wait, [], [v], name="stuck")
    with pytest.raises(EngineTimeout, match="timed out") as info:
        threaded.wait_for_var(v, timeout=0.05)
    assert isinstance(info.value, TimeoutError) and isinstance(info.value, MinimxError)
    with pytest.raises(EngineTimeout, match="1 operations pending"):
        threaded.wait_for_all(timeout=0.05)
    gate.open()
    threaded.wait_for_var(v, timeout=WAIT)
    threaded.wait_for_all(timeout=WAIT)
    assert v.version == 1


def test_waiting_inside_an_op_is_refused_not_deadlocked(threaded: ThreadedEngine) -> None:
    v, out = threaded.new_variable(), threaded.new_variable()
    threaded.push(lambda: threaded.wait_for_var(v), [], [out], name="waits_inside")
    with pytest.raises(MinimxError, match="waits_inside") as info:
        threaded.wait_for_var(out, timeout=WAIT)
    assert isinstance(info.value.__cause__, EngineError)
    assert "inside an engine operation" in str(info.value.__cause__)


@pytest.mark.parametrize("bad", [lambda e: e.push(42, [], []),
                                 lambda e: e.push(lambda: None, [object()], []),
                                 lambda e: e.push(lambda: None, [], [[1]]),
                                 lambda e: e.push(lambda: None, [], 7),
                                 lambda e: e.wait_for_var("x")])
def test_misuse_raises_engine_error(any_engine: Engine, bad) -> None:  # noqa: ANN001
    with pytest.raises(EngineError):
        bad(any_engine)
    any_engine.wait_for_all(timeout=WAIT)  # and nothing was left half-pushed


def test_push_after_shutdown_is_refused(any_engine: Engine) -> None:
    v = any_engine.new_variable()
    any_engine.push(lambda: None, [], [v], name="before")
    close(any_engine)
    with pytest.raises(EngineError, match="shut down"):
        any_engine.push(lambda: None, [], [v], name="after")
    any_engine.wait_for_var(v, timeout=WAIT)  # waits still work
    assert v.version == 1


def test_engine_type_and_workers_come_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINIMX_ENGINE_TYPE", "NaiveEngine")
    assert isinstance(create_engine(), NaiveEngine)
    monkeypatch.setenv("MINIMX_ENGINE_TYPE", "ThreadedEnginePerDevice")
    monkeypatch.setenv("MINIMX_CPU_WORKER_NTHREADS", "3")
    eng = create_engine()
    try:
        assert isinstance(eng, ThreadedEngine) and eng.num_workers == 3
    finally:
        close(eng)
    monkeypatch.setenv("MINIMX_ENGINE_TYPE", "WarpEngine")
    with pytest.raises(EngineError, match="WarpEngine.*NaiveEngine"):
        create_engine()


def test_set_engine_type_switches_the_process_engine() -> None:
    before = type(engine.get_engine()).__name__
    v = engine.new_variable()
    engine.push(lambda: None, [], [v], name="on_old")
    try:
        assert isinstance(engine.set_engine_type("NaiveEngine"), NaiveEngine)
        assert v.version == 1  # the old engine finished its work before leaving
        engine.push(lambda: None, [v], [v], name="on_new")
        assert v.version == 2 and isinstance(engine.get_engine(), NaiveEngine)
    finally:
        engine.set_engine_type(before)


# Forking a threaded process is what these tests are about; Python 3.12+ warns of it.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_gets_a_working_engine() -> None:
    v = engine.new_variable()
    gate = Gate()
    engine.push(gate.wait, [], [v], name="pending_at_fork")
    threading.Timer(0.05, gate.open).start()  # the fork waits for this op to finish
    status: list[int] = []

    def fork_and_reap() -> None:
        pid = os.fork()
        if pid == 0:  # child: the parent's worker threads are gone
            try:
                engine.push(lambda: None, [v], [v], name="in_child")
                engine.wait_for_var(v, timeout=WAIT)
                os._exit(0 if v.version == 2 else 1)
            except BaseException:
                os._exit(2)
        status.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))

    # In a thread, so that a fork or child that hangs fails the test instead.
    runner = threading.Thread(target=fork_and_reap, daemon=True)
    runner.start()
    runner.join(WAIT)
    assert status == [0], "forked child hung or failed"
