"""Engine fixtures: a fresh engine per test, shut down (with a timeout) afterwards."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine_support import close

from minimx.engine import Engine, NaiveEngine, ThreadedEngine


@pytest.fixture
def threaded() -> Iterator[ThreadedEngine]:
    eng = ThreadedEngine(num_workers=4)
    yield eng
    close(eng)


@pytest.fixture(params=["NaiveEngine", "ThreadedEngine"])
def any_engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    eng: Engine = NaiveEngine() if request.param == "NaiveEngine" else ThreadedEngine(4)
    yield eng
    close(eng)
