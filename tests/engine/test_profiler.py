"""The profiler: Chrome trace of engine operations and the aggregate table."""
from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from engine_support import WAIT

import minimx as mx
from minimx import profiler
from minimx.base import MinimxError
from minimx.engine import Engine
from tests.trace_schema import check_trace

DEFAULTS = dict(profile_all=False, profile_symbolic=True, profile_imperative=True,
                profile_memory=False, profile_api=False, continuous_dump=False,
                aggregate_stats=False)


@pytest.fixture
def trace_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "profile.json"
    profiler.set_config(**DEFAULTS, filename=str(path))
    yield path
    profiler.set_state("stop")
    profiler.resume()
    profiler.dump(finished=True)  # drop what this test recorded
    profiler.dumps(reset=True)
    profiler.set_config(**DEFAULTS, filename="profile.json")


def push_named(eng: Engine, names: list[str], symbolic: bool = False) -> None:
    v = eng.new_variable()
    for name in names:
        eng.push(lambda: sum(range(100)), [v], [v], name=name, symbolic=symbolic)
    eng.wait_for_all(timeout=WAIT)


def load_ops(path: Path) -> list[dict]:
    trace = json.loads(path.read_text())
    assert trace["displayTimeUnit"] == "ms"
    events = trace["traceEvents"]
    assert {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "cpu/0"}} in events
    return [e for e in events if e["ph"] in "BE"]


def op_names(path: Path) -> set[str]:
    return {e["name"] for e in load_ops(path)}


def test_dump_writes_paired_begin_end_events(any_engine: Engine, trace_file: Path) -> None:
    profiler.set_state("run")
    push_named(any_engine, ["conv0", "relu0", "conv0"])
    profiler.set_state("stop")
    profiler.dump()
    ops = load_ops(trace_file)
    assert Counter((e["name"], e["ph"]) for e in ops) == \
        {("conv0", "B"): 2, ("conv0", "E"): 2, ("relu0", "B"): 1, ("relu0", "E"): 1}
    for begin, end in zip(ops[::2], ops[1::2], strict=True):
        assert (begin["ph"], end["ph"]) == ("B", "E")
        assert begin["name"] == end["name"] and begin["tid"] == end["tid"]
        assert begin["cat"] == end["cat"] == "operator" and begin["pid"] == 0
        assert 0 <= begin["ts"] <= end["ts"]


def test_nothing_recorded_when_stopped_or_paused(threaded: Engine, trace_file: Path) -> None:
    push_named(threaded, ["before_run"])
    profiler.set_state("run")
    profiler.pause()
    push_named(threaded, ["while_paused"])
    profiler.resume()
    push_named(threaded, ["recorded"])
    profiler.set_state("stop")
    push_named(threaded, ["after_stop"])
    profiler.dump()
    assert op_names(trace_file) == {"recorded"}


def test_running_again_ends_a_pause_as_in_mxnet(threaded: Engine, trace_file: Path) -> None:
    profiler.set_state("run")
    profiler.pause()
    profiler.set_state("stop")
    profiler.set_state("run")
    push_named(threaded, ["recorded"])
    profiler.set_state("stop")
    profiler.dump()
    assert op_names(trace_file) == {"recorded"}


def test_imperative_and_symbolic_filters(threaded: Engine, trace_file: Path) -> None:
    profiler.set_config(profile_imperative=False)
    profiler.set_state("run")
    push_named(threaded, ["imperative_op"])
    push_named(threaded, ["executor_op"], symbolic=True)
    profiler.set_config(profile_all=True)
    push_named(threaded, ["both_on"])
    profiler.set_state("stop")
    profiler.dump()
    assert op_names(trace_file) == {"executor_op", "both_on"}


def test_finished_dump_starts_afresh(threaded: Engine, trace_file: Path) -> None:
    profiler.set_state("run")
    push_named(threaded, ["first"])
    profiler.dump(finished=False)
    push_named(threaded, ["second"])
    profiler.dump(finished=True)
    assert op_names(trace_file) == {"first", "second"}
    push_named(threaded, ["third"])
    profiler.dump()
    assert op_names(trace_file) == {"third"}


def test_unfinished_dumps_append_what_is_new(threaded: Engine, trace_file: Path) -> None:
    # as MXNet's continuous dump: a long run's dumps do not rewrite (and re-serialize)
    # every record each time, and the file is whole JSON after each
    profiler.set_state("run")
    push_named(threaded, ["first"])
    profiler.dump(finished=False)
    before = trace_file.read_text()
    push_named(threaded, ["second"])
    profiler.dump(finished=False)
    after = trace_file.read_text()
    assert after.startswith(before.rsplit("]", 1)[0].rstrip())
    assert [e["name"] for e in load_ops(trace_file)] == ["first"] * 2 + ["second"] * 2
    check_trace(trace_file)
    trace_file.unlink()   # not the file the dumps wrote any more: all is written again
    push_named(threaded, ["third"])
    profiler.dump(finished=True)
    assert op_names(trace_file) == {"first", "second", "third"}
    assert len(load_ops(trace_file)) == 6


def test_continuous_dump_writes_on_stop(threaded: Engine, trace_file: Path) -> None:
    profiler.set_config(continuous_dump=True)
    profiler.set_state("run")
    push_named(threaded, ["op"])
    profiler.set_state("stop")
    assert op_names(trace_file) == {"op"}


def test_dumps_aggregates_per_name(threaded: Engine, trace_file: Path) -> None:
    profiler.set_config(aggregate_stats=True)
    profiler.set_state("run")
    push_named(threaded, ["add"] * 3 + ["mul"])
    profiler.set_state("stop")
    table = profiler.dumps(sort_by="count")
    assert "Total Count" in table and "Avg Time (ms)" in table
    rows = [line.split() for line in table.splitlines() if line.startswith(("add", "mul"))]
    assert [(r[0], r[1]) for r in rows] == [("add", "3"), ("mul", "1")]
    for _, _, total, lo, hi, avg in rows:
        assert float(lo) <= float(avg) <= float(hi) <= float(total)
    stats = json.loads(profiler.dumps(format="json", reset=True))["Time"]["operator"]
    assert stats["add"]["Count"] == 3
    assert "add" not in profiler.dumps()  # reset cleared it


def test_dumps_says_when_aggregation_is_off(trace_file: Path) -> None:
    assert "aggregate_stats is off" in profiler.dumps()


def test_bad_profiler_arguments(trace_file: Path) -> None:
    with pytest.raises(MinimxError, match="unknown option.*profile_everything"):
        profiler.set_config(profile_everything=True)
    with pytest.raises(MinimxError, match="boolean"):
        profiler.set_config(profile_all="maybe")
    with pytest.raises(MinimxError, match="'run' or 'stop'"):
        profiler.set_state("go")
    with pytest.raises(MinimxError, match="sort_by"):
        profiler.dumps(sort_by="median")
    profiler.set_config(profile_all="True", aggregate_stats="0")  # MXNet passes strings


def test_trace_follows_the_chrome_trace_schema(threaded: Engine, trace_file: Path) -> None:
    profiler.set_config(profile_memory=True)
    profiler.set_state("run")
    push_named(threaded, ["conv0", "relu0"])
    kept = mx.nd.zeros((10,))
    mx.nd.waitall()
    profiler.set_state("stop")
    profiler.dump()
    events = check_trace(trace_file)
    assert {e["ph"] for e in events} == {"M", "B", "E", "C"}
    del kept


def test_dumps_table_is_mxnets_layout(threaded: Engine, trace_file: Path) -> None:
    profiler.set_config(aggregate_stats=True)
    profiler.set_state("run")
    push_named(threaded, ["a_rather_long_operator_name"] * 2)
    profiler.set_state("stop")
    lines = profiler.dumps().splitlines()
    # MXNet 1.9.1's header, rule and row widths, as its dumps() prints them
    assert lines[1:6] == ["Profile Statistics:",
                          "\tNote the difference in units for different entries.",
                          "operator", "=================",
                          "Name                          Total Count        Time (ms)    "
                          "Min Time (ms)    Max Time (ms)    Avg Time (ms)"]
    assert lines[6] == ("----                          -----------        ---------    "
                        "-------------    -------------    -------------")
    row = lines[7]
    assert row.startswith("a_rather_long_operator_name   ") and row[30:41] == " " * 10 + "2"
    assert len(row) == 41 + 4 * 17


def test_profile_memory_counts_buffers_while_they_live(trace_file: Path) -> None:
    profiler.set_config(profile_memory=True, aggregate_stats=True)
    profiler.set_state("run")
    a = mx.nd.zeros((1000,))            # 4000 bytes
    b = mx.nd.zeros((250,), dtype="float64")   # 2000 more
    view = a[10:20]                     # a view: no new buffer
    mx.nd.waitall()
    del a, view
    gc.collect()
    profiler.set_state("stop")
    profiler.dump()
    events = check_trace(trace_file)
    in_use = [e["args"][profiler.MEMORY] for e in events if e["ph"] == "C"]
    assert in_use == [4000, 6000, 2000]   # a freed when its last reference went
    table = profiler.dumps()
    assert "Device Storage" in table and "Min Use  (kB)" in table
    stats = json.loads(profiler.dumps(format="json"))["Memory"]["Device Storage"]
    assert stats[profiler.MEMORY] == {"Count": 3, "Min": 2.0, "Max": 6.0, "Avg": 4.0}
    del b


def test_memory_is_not_counted_unless_asked(trace_file: Path) -> None:
    profiler.set_state("run")
    kept = mx.nd.zeros((1000,))
    mx.nd.waitall()
    profiler.set_state("stop")
    profiler.dump()
    assert not [e for e in check_trace(trace_file) if e["ph"] == "C"]
    del kept


def test_annotations_are_traced_as_mxnet_traces_them(trace_file: Path) -> None:
    # MXNet 1.9.1's trace for the same calls (phases and categories).
    domain = profiler.Domain("dom")
    task, frame = domain.new_task("task1"), domain.new_frame("fr")
    counter, marker = domain.new_counter("ctr", 1), domain.new_marker("mk")
    task.start()   # not recorded: the profiler is stopped
    profiler.set_state("run")
    task.start()
    task.stop()
    counter = domain.new_counter("ctr", 5)
    counter += 2
    counter.decrement(3)
    marker.mark("process")
    event = profiler.Event("ev")
    event.start()
    event.stop()
    frame.start()
    frame.stop()
    profiler.set_state("stop")
    profiler.dump()
    got = [(e["name"], e["cat"], e["ph"], e.get("args"), e.get("s"))
           for e in check_trace(trace_file) if e["name"] in ("task1", "ctr", "mk", "ev", "fr")]
    assert got == [("task1", "dom", "b", None, None), ("task1", "dom", "e", None, None),
                   ("ctr", "dom", "C", {"ctr": 5}, None), ("ctr", "dom", "C", {"ctr": 7}, None),
                   ("ctr", "dom", "C", {"ctr": 4}, None),
                   ("mk", "dom,instant_marker", "n", None, "p"),
                   ("ev", "event", "B", None, None), ("ev", "event", "E", None, None),
                   ("fr", "dom,frame", "(", None, None), ("fr", "dom,frame", ")", None, None)]
    assert (str(domain), str(task), str(counter)) == ("dom", "task1", "ctr")
    with pytest.raises(MinimxError, match="scope must be one of"):
        marker.mark("galaxy")


def test_mxnets_deprecated_names_warn_and_work(trace_file: Path) -> None:
    with pytest.warns(UserWarning, match="profiler_set_state\\(\\) is deprecated"):
        profiler.profiler_set_state("run")
    with pytest.warns(UserWarning, match="profiler_set_state\\(\\) is deprecated"):
        profiler.profiler_set_state("stop")
    with pytest.warns(UserWarning, match="dump_profile\\(\\) is deprecated"):
        profiler.dump_profile()
    assert trace_file.exists()


def test_what_was_not_dumped_is_written_when_the_process_ends(tmp_path: Path) -> None:
    # As MXNet's profiler: a script that never calls dump still leaves its trace.
    trace = tmp_path / "exit.json"
    code = ("import minimx as mx\n"
            f"mx.profiler.set_config(profile_all=True, filename={str(trace)!r})\n"
            "mx.profiler.set_state('run')\n"
            "mx.nd.sqrt(mx.nd.ones((2, 2))).asnumpy()\n"
            "mx.profiler.set_state('stop')\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert "sqrt" in {e.get("name") for e in json.loads(trace.read_text())["traceEvents"]}
