"""VarSet: variables checked once for an operation pushed again and again; the
engine takes them as they are, and they schedule like the lists they hold."""
from __future__ import annotations

import pytest
from engine_support import WAIT

from minimx.engine import Engine, EngineError, Var, VarSet
from minimx.engine.var import split_vars


def test_a_var_set_is_checked_once_and_passed_through() -> None:
    a, b, c = Var("a"), Var("b"), Var("c")
    reads, writes = VarSet([a, b, a]), VarSet([c])
    assert reads == (a, b)
    assert split_vars(reads, writes) == (reads, writes)
    assert split_vars(reads, writes)[0] is reads
    with pytest.raises(EngineError, match="Var objects"):
        VarSet([a, "b"])  # type: ignore[list-item]


def test_a_var_set_read_and_written_counts_as_written() -> None:
    a, b = Var("a"), Var("b")
    assert split_vars(VarSet([a, b]), VarSet([b])) == ((a,), (b,))


def test_var_sets_order_operations_as_lists_do(any_engine: Engine) -> None:
    eng = any_engine
    weights, out = VarSet(eng.new_variable(f"w{i}") for i in range(3)), VarSet([Var("out")])
    seen: list[str] = []
    eng.push(lambda: seen.append("set weight"), [], [weights[1]], name="write")
    eng.push(lambda: seen.append("forward"), weights, out, name="forward")
    eng.push(lambda: seen.append("next weight"), [], [weights[1]], name="write")
    eng.wait_for_var(weights[1], timeout=WAIT)
    assert seen == ["set weight", "forward", "next weight"]
    assert [w.version for w in weights] == [0, 2, 0] and out[0].version == 1
