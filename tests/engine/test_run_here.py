"""push(here_if_ready=True): a ready operation runs on the calling thread, with
the same ordering, versions and failures as on a worker."""
from __future__ import annotations

import threading
import time

import pytest
from engine_support import WAIT, Gate

from minimx.engine import EngineError, OperationError, ThreadedEngine


def test_ready_operation_runs_on_the_caller_before_push_returns(threaded: ThreadedEngine
                                                                 ) -> None:
    src, dst = threaded.new_variable(), threaded.new_variable()
    ran_on = []
    threaded.push(lambda: ran_on.append(threading.get_ident()), [src], [dst],
                  here_if_ready=True)
    assert ran_on == [threading.get_ident()]
    assert dst.version == 1 and src.version == 0


def test_operation_behind_a_pending_write_waits_for_it_on_a_worker(threaded: ThreadedEngine
                                                                    ) -> None:
    src, dst = threaded.new_variable(), threaded.new_variable()
    gate, log = Gate(), []
    threaded.push(lambda: (gate.wait(), log.append("write")), [], [src], name="write")
    threaded.push(lambda: log.append(("read", threading.get_ident())), [src], [dst],
                  here_if_ready=True)
    time.sleep(0.02)
    assert log == []   # push returned without running it
    gate.open()
    threaded.wait_for_var(dst, timeout=WAIT)
    assert log[0] == "write" and log[1][1] != threading.get_ident()


def test_operations_pushed_behind_it_run_after_it(threaded: ThreadedEngine) -> None:
    v = threaded.new_variable()
    log = []

    def first() -> None:
        # Pushed from inside the caller-run operation: must wait for it to finish.
        threaded.push(lambda: log.append("second"), [v], [], name="second")
        time.sleep(0.02)
        log.append("first")

    threaded.push(first, [], [v], here_if_ready=True)
    threaded.wait_for_all(timeout=WAIT)
    assert log == ["first", "second"]


def test_failure_is_stored_on_the_outputs_not_raised_by_push(threaded: ThreadedEngine) -> None:
    v = threaded.new_variable()

    def fail() -> None:
        raise ValueError("bad forward")

    threaded.push(fail, [], [v], name="fwd", here_if_ready=True)
    with pytest.raises(OperationError, match="bad forward"):
        threaded.wait_for_var(v, timeout=WAIT)
    threaded.wait_for_var(v, timeout=WAIT)   # raised once, as on a worker


def test_ctrl_c_stops_the_caller_and_marks_the_outputs_failed(threaded: ThreadedEngine) -> None:
    v = threaded.new_variable()

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        threaded.push(interrupted, [], [v], name="fwd", here_if_ready=True)
    with pytest.raises(OperationError):
        threaded.wait_for_var(v, timeout=WAIT)
    threaded.push(lambda: None, [], [v], here_if_ready=True)   # the engine still works
    assert v.version == 2


def test_a_wait_inside_it_is_refused_not_a_hang(threaded: ThreadedEngine) -> None:
    v = threaded.new_variable()
    errors = []

    def waits_for_itself() -> None:
        try:
            threaded.wait_for_var(v, timeout=WAIT)
        except EngineError as exc:
            errors.append(exc)

    threaded.push(waits_for_itself, [], [v], here_if_ready=True)
    assert len(errors) == 1 and "inside an engine operation" in str(errors[0])
    threaded.wait_for_var(v, timeout=WAIT)   # and after it, waits work


def test_a_push_inside_it_goes_to_the_workers(threaded: ThreadedEngine) -> None:
    outer, inner = threaded.new_variable(), threaded.new_variable()
    ran_on = []
    threaded.push(lambda: threaded.push(lambda: ran_on.append(threading.get_ident()), [], [inner],
                                        here_if_ready=True),
                  [], [outer], here_if_ready=True)
    threaded.wait_for_var(inner, timeout=WAIT)
    assert ran_on and ran_on[0] != threading.get_ident()
