"""Learning-rate schedules equal MXNet 1.9.1's, update by update (fixtures:
tests/fixtures/training, group training, SCHEDULER_CASES)."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

import minimx as mx
from minimx.base import MinimxError

RECORD = json.loads((Path(__file__).parent / "fixtures" / "training" / "training.json")
                    .read_text())["schedulers"]


@pytest.mark.parametrize("case", sorted(RECORD))
def test_schedule_equals_mxnets(case: str) -> None:
    spec = RECORD[case]
    sched = eval(spec["scheduler"])  # noqa: S307  (the fixture's table)
    assert [sched(n) for n in spec["updates"]] == pytest.approx(spec["lr"], rel=1e-12)


def test_poly_scheduler() -> None:
    sched = mx.lr_scheduler.PolyScheduler(max_update=4, base_lr=1.0, pwr=2, final_lr=0.2)
    # final + (base - final) * (1 - n / max) ** 2, then final
    assert [sched(n) for n in (0, 2, 4, 6)] == pytest.approx([1.0, 0.4, 0.2, 0.2])


@pytest.mark.parametrize("make, message", [
    (lambda: mx.lr_scheduler.FactorScheduler(step=0), "step=0"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, factor=1.5), "factor=1.5"),
    (lambda: mx.lr_scheduler.MultiFactorScheduler(step=[3, 2]), "increasing"),
    (lambda: mx.lr_scheduler.CosineScheduler(max_update=0), "max_update=0"),
    (lambda: mx.lr_scheduler.PolyScheduler(max_update=0), "max_update=0"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, warmup_mode="cubic"), "warmup_mode"),
    (lambda: mx.lr_scheduler.FactorScheduler(step=2, base_lr=0.1, warmup_begin_lr=0.2),
     "warmup_begin_lr"),
])
def test_refusals(make, message: str) -> None:
    with pytest.raises(MinimxError, match=message):
        make()


def test_factor_scheduler_logs_when_it_reaches_stop_factor_lr(caplog) -> None:
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.1, stop_factor_lr=0.02, base_lr=1.0)
    with caplog.at_level(logging.INFO):
        assert sched(4) == pytest.approx(0.02)
    assert [r.getMessage() for r in caplog.records] == [   # MXNet 1.9.1's lines
        "Update[4]: Change learning rate to 1.00000e-01",
        "Update[4]: now learning rate arrived at 2.00000e-02, will not change in the future",
        "Update[4]: now learning rate arrived at 2.00000e-02, will not change in the future"]
