"""How an exception inside an operation travels: stored, inherited, raised once, cleared."""
from __future__ import annotations

import time

import pytest
from engine_support import WAIT

from minimx.base import MinimxError
from minimx.engine import Engine, OperationError


class Boom(ValueError):
    pass


def failing(message: str, delay: float = 0.0):  # noqa: ANN201
    def fn() -> None:
        time.sleep(delay)
        raise Boom(message)
    return fn


def test_failure_reaches_readers_and_writers_but_not_bystanders(any_engine: Engine) -> None:
    eng = any_engine
    x, y, z, w = (eng.new_variable(n) for n in "xyzw")
    ran = []
    eng.push(failing("bad input"), [], [x], name="conv0")
    eng.push(lambda: ran.append("reader"), [x], [y], name="reader")
    eng.push(lambda: ran.append("overwrite"), [], [x], name="overwrite")
    eng.push(lambda: ran.append("chained"), [y], [w], name="chained")
    eng.push(lambda: ran.append("bystander"), [], [z], name="bystander")

    with pytest.raises(OperationError, match="conv0") as info:
        eng.wait_for_var(w, timeout=WAIT)
    err = info.value
    assert isinstance(err, MinimxError) and err.op_name == "conv0"
    assert isinstance(err.__cause__, Boom) and str(err.__cause__) == "bad input"
    # Raised once, then cleared from every variable it poisoned, as in MXNet 1.9.1
    # (there potrf's failure raises at a wait on z = (potrf(a) + 1) * 2, and then
    # neither the factor nor potrf(a) + 1 raises).
    for v in (w, y, x):
        eng.wait_for_var(v, timeout=WAIT)
    eng.wait_for_var(z, timeout=WAIT)
    assert ran == ["bystander"]
    # Skipped writes still count: the outputs must be treated as changed.
    assert (x.version, y.version, z.version, w.version) == (2, 1, 1, 1)
    eng.wait_for_all(timeout=WAIT)  # already raised: nothing pending

    eng.push(lambda: ran.append("after"), [x], [x], name="after")  # x is usable again
    eng.wait_for_var(x, timeout=WAIT)
    assert ran == ["bystander", "after"]


def test_a_variable_that_only_orders_carries_no_failure(any_engine: Engine) -> None:
    """The random generator's variable orders every draw but holds no data a failed
    draw could spoil: the next draws run, in order, and only the failed op's output
    raises."""
    eng = any_engine
    order = eng.new_variable("generator", orders_only=True)
    out, later = eng.new_variable("out"), eng.new_variable("later")
    ran = []
    eng.push(failing("bad draw"), [], [order, out], name="rnn")
    eng.push(lambda: ran.append("draw"), [], [order, later], name="uniform")
    eng.wait_for_var(later, timeout=WAIT)
    assert ran == ["draw"] and order.version == 2
    with pytest.raises(OperationError, match="rnn"):
        eng.wait_for_var(out, timeout=WAIT)
    eng.wait_for_var(order, timeout=WAIT)
    eng.wait_for_all(timeout=WAIT)


def test_all_original_exception_types_are_wrapped(any_engine: Engine) -> None:
    v = any_engine.new_variable()

    def exits() -> None:
        raise KeyError("k")

    any_engine.push(exits, [], [v], name="lookup")
    with pytest.raises(OperationError) as info:
        any_engine.wait_for_var(v, timeout=WAIT)
    assert type(info.value.__cause__) is KeyError
    assert "lookup" in str(info.value) and "KeyError" in str(info.value)


def test_system_exit_in_a_worker_is_stored_not_fatal(threaded: Engine) -> None:
    v, w = threaded.new_variable(), threaded.new_variable()

    def leave() -> None:
        raise SystemExit(3)

    threaded.push(leave, [], [v], name="leave")
    with pytest.raises(OperationError, match="leave"):
        threaded.wait_for_var(v, timeout=WAIT)
    threaded.push(lambda: None, [], [w], name="still_alive")
    threaded.wait_for_var(w, timeout=WAIT)
    assert w.version == 1


def test_wait_for_all_raises_earliest_pending_failure_then_clears(any_engine: Engine) -> None:
    eng = any_engine
    a, b, c = eng.new_variable(), eng.new_variable(), eng.new_variable()
    eng.push(failing("first", delay=0.05), [], [a], name="first")  # fails last in time
    eng.push(failing("second"), [], [b], name="second")
    with pytest.raises(OperationError, match="first") as info:
        eng.wait_for_all(timeout=WAIT)
    assert str(info.value.__cause__) == "first"
    eng.wait_for_all(timeout=WAIT)       # cleared everywhere ...
    eng.wait_for_var(a, timeout=WAIT)
    eng.wait_for_var(b, timeout=WAIT)    # ... including failures it did not raise
    ran = []
    eng.push(lambda: ran.append(1), [a, b], [c], name="reads_both")
    eng.wait_for_var(c, timeout=WAIT)
    assert ran == [1]


def test_reader_of_two_failures_carries_the_earliest_pushed(any_engine: Engine) -> None:
    eng = any_engine
    a, b, c = eng.new_variable(), eng.new_variable(), eng.new_variable()
    eng.push(failing("a", delay=0.05), [], [a], name="fail_a")
    eng.push(failing("b"), [], [b], name="fail_b")
    eng.push(lambda: None, [b, a], [c], name="reads_both")
    with pytest.raises(OperationError, match="fail_a"):
        eng.wait_for_var(c, timeout=WAIT)
    with pytest.raises(OperationError, match="fail_b"):
        eng.wait_for_var(b, timeout=WAIT)


def test_failure_of_op_without_outputs_surfaces_in_wait_for_all(any_engine: Engine) -> None:
    any_engine.push(failing("lonely"), [], [], name="no_outputs")
    with pytest.raises(OperationError, match="no_outputs"):
        any_engine.wait_for_all(timeout=WAIT)
    any_engine.wait_for_all(timeout=WAIT)


def test_ops_pushed_after_the_raise_run_normally(any_engine: Engine) -> None:
    eng = any_engine
    a, out = eng.new_variable(), eng.new_variable()
    eng.push(failing("x"), [], [a], name="fail")
    with pytest.raises(OperationError):
        eng.wait_for_var(a, timeout=WAIT)
    ran = []
    eng.push(lambda: ran.append(1), [a], [out], name="later")
    eng.wait_for_var(out, timeout=WAIT)
    assert ran == [1]


def test_unrelated_work_keeps_flowing_while_failures_pile_up(threaded: Engine) -> None:
    bad, good = threaded.new_variable(), threaded.new_variable()
    total = [0]
    for i in range(50):
        threaded.push(failing(str(i)), [bad], [bad], name=f"bad{i}")
        threaded.push(lambda: total.__setitem__(0, total[0] + 1), [good], [good], name="good")
    threaded.wait_for_var(good, timeout=WAIT)
    assert total[0] == 50
    with pytest.raises(OperationError, match="'bad0'"):  # later ones were skipped
        threaded.wait_for_var(bad, timeout=WAIT)
    assert bad.version == 50
