"""run_if_idle: work run on the caller's thread without a push, only when nothing
is pending or failed anywhere, counted as a write of what it names."""
from __future__ import annotations

import threading
import time

import pytest
from engine_support import WAIT, Gate

from minimx.engine import Engine, OperationError, ThreadedEngine, VarSet, set_op_recorder


def test_it_runs_here_and_counts_as_one_write(any_engine: Engine) -> None:
    read, written = any_engine.new_variable(), any_engine.new_variable()
    ran_on = []
    assert any_engine.run_if_idle(lambda: ran_on.append(threading.get_ident()) or True,
                                  VarSet([written]))
    assert ran_on == [threading.get_ident()]
    assert written.version == 1 and read.version == 0


def test_work_that_says_it_did_nothing_counts_as_no_write(any_engine: Engine) -> None:
    v = any_engine.new_variable()
    assert not any_engine.run_if_idle(lambda: False, VarSet([v]))
    assert v.version == 0


def test_nothing_runs_while_an_operation_is_pending(threaded: ThreadedEngine) -> None:
    v, other = threaded.new_variable(), threaded.new_variable()
    gate = Gate()
    threaded.push(gate.wait, [], [other], name="slow")   # unrelated: still pending
    ran = []
    assert not threaded.run_if_idle(lambda: ran.append(1) or True, VarSet([v]))
    gate.open()
    threaded.wait_for_all(timeout=WAIT)
    assert ran == [] and v.version == 0
    assert threaded.run_if_idle(lambda: ran.append(1) or True, VarSet([v]))
    assert ran == [1]


def test_nothing_runs_while_a_failure_is_stored(any_engine: Engine) -> None:
    failed, v = any_engine.new_variable(), any_engine.new_variable()

    def fail() -> None:
        raise ValueError("broken")

    any_engine.push(fail, [], [failed], name="fail")
    with pytest.raises(OperationError):
        any_engine.wait_for_var(failed, timeout=WAIT)   # raised, but not yet cleared
    assert not any_engine.run_if_idle(lambda: True, VarSet([v]))
    any_engine.wait_for_all(timeout=WAIT)   # clears every failure
    assert any_engine.run_if_idle(lambda: True, VarSet([v]))


def test_nothing_runs_while_the_profiler_records_operations(any_engine: Engine) -> None:
    v = any_engine.new_variable()
    set_op_recorder(lambda *event: None)
    try:
        assert not any_engine.run_if_idle(lambda: True, VarSet([v]))
    finally:
        set_op_recorder(None)
    assert v.version == 0


def test_nothing_runs_after_shutdown(any_engine: Engine) -> None:
    v = any_engine.new_variable()
    any_engine.shutdown()
    assert not any_engine.run_if_idle(lambda: True, VarSet([v]))


def test_a_push_from_another_thread_waits_for_it(threaded: ThreadedEngine) -> None:
    v = threaded.new_variable()
    log = []

    def reader() -> None:
        threaded.push(lambda: log.append(("read", v.version)), [v], [], name="read")

    def work() -> bool:
        other = threading.Thread(target=reader)
        other.start()
        time.sleep(0.05)   # the other thread's push is blocked meanwhile
        log.append("work")
        pushers.append(other)
        return True

    pushers: list[threading.Thread] = []
    assert threaded.run_if_idle(work, VarSet([v]))
    pushers[0].join(WAIT)
    threaded.wait_for_all(timeout=WAIT)
    assert log == ["work", ("read", 1)]
