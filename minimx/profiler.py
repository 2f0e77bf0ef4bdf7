"""The profiler: MXNet's `mx.profiler` for engine operations.

While the state is ``'run'`` (and not paused), every engine operation that
runs is recorded with its name, thread and start/end time; imperative
operations only with ``profile_imperative``, executor operations only with
``profile_symbolic`` (``profile_all`` turns on both). `dump` writes the
records as Chrome trace JSON (chrome://tracing, Perfetto):
``{"traceEvents": [...], "displayTimeUnit": "ms"}`` with a ``process_name``
metadata event for ``cpu/0`` and a ``B``/``E`` pair (cat ``operator``, ts in
microseconds) per operation. With ``aggregate_stats``, `dumps` returns
MXNet's table of count / total / min / max / avg time per operator name.
``profile_memory`` and ``profile_api`` are accepted for compatibility; minimx
has no memory or C-API events to record. ``continuous_dump`` rewrites the file
each time profiling stops or pauses. When the profiler is off the engine pays
one global read per operation.

Example::

    from minimx import profiler
    profiler.set_config(profile_all=True, aggregate_stats=True, filename='trace.json')
    profiler.set_state('run')
    ...                      # run work, then mx.nd.waitall()
    profiler.set_state('stop')
    profiler.dump()          # trace.json
    print(profiler.dumps())  # the aggregate table
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, fields, replace

from .base import MinimxError
from .engine import set_op_recorder
from .engine.core import Recorder

_PID = 0  # the only device: cpu/0


@dataclass(frozen=True)
class _Config:
    profile_all: bool = False
    profile_symbolic: bool = True
    profile_imperative: bool = True
    profile_memory: bool = False
    profile_api: bool = False
    filename: str = "profile.json"
    continuous_dump: bool = False
    aggregate_stats: bool = False


_config = _Config()
_running = False
_paused = False
_lock = threading.Lock()
# (name, thread id, start ns, end ns) for the trace, since the last finished dump.
_events: list[tuple[str, int, int, int]] = []
_thread_names: dict[int, str] = {}
# name -> [count, total ns, min ns, max ns], since the last dumps(reset=True).
_aggregate: dict[str, list[int]] = {}


def _check_process(profile_process: str) -> None:
    if profile_process != "worker":
        raise MinimxError(f"profile_process must be 'worker' (no kvstore server in minimx), "
                          f"got {profile_process!r}")


def set_config(**kwargs: object) -> None:
    """Configure the profiler (keyword arguments only, as in MXNet).

    Keys: profile_all, profile_symbolic, profile_imperative, profile_memory,
    profile_api, filename, continuous_dump, aggregate_stats, profile_process.
    Values may be given as MXNet's strings too (``'True'``, ``'0'``).
    """
    global _config
    _check_process(str(kwargs.pop("profile_process", "worker")))
    known = [f.name for f in fields(_Config)]
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise MinimxError(f"profiler.set_config: unknown option(s) {', '.join(unknown)} "
                          f"(known: {', '.join(known)}, profile_process)")
    values = {k: str(v) if k == "filename" else _as_bool(k, v) for k, v in kwargs.items()}
    with _lock:
        _config = replace(_config, **values)  # type: ignore[arg-type]
    _install()


def _as_bool(key: str, value: object) -> bool:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise MinimxError(f"profiler.set_config: {key} must be a boolean, got {value!r}")
    return bool(value)


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """Start (``'run'``) or stop (``'stop'``) recording."""
    global _running
    _check_process(profile_process)
    if state not in ("run", "stop"):
        raise MinimxError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    was_running, _running = _running, state == "run"
    _install()
    if was_running and not _running and _config.continuous_dump:
        dump(finished=False)


def pause(profile_process: str = "worker") -> None:
    """Stop recording until `resume`, without changing the state."""
    _set_paused(True, profile_process)
    if _running and _config.continuous_dump:
        dump(finished=False)


def resume(profile_process: str = "worker") -> None:
    """Record again after `pause` (if the state is ``'run'``)."""
    _set_paused(False, profile_process)


def _set_paused(paused: bool, profile_process: str) -> None:
    global _paused
    _check_process(profile_process)
    _paused = paused
    _install()


def _install() -> None:
    """Give the engine a recorder exactly while something should be recorded."""
    cfg = _config
    imperative = cfg.profile_all or cfg.profile_imperative
    symbolic = cfg.profile_all or cfg.profile_symbolic
    on = _running and not _paused and (imperative or symbolic)
    set_op_recorder(_recorder(imperative, symbolic, cfg.aggregate_stats) if on else None)


def _recorder(imperative: bool, symbolic: bool, aggregate: bool) -> Recorder:
    def record(name: str, is_symbolic: bool, start: int, end: int) -> None:
        if not (symbolic if is_symbolic else imperative):
            return
        tid = threading.get_native_id()
        with _lock:
            _events.append((name, tid, start, end))
            if tid not in _thread_names:
                _thread_names[tid] = threading.current_thread().name
            if aggregate:
                stat = _aggregate.get(name)
                took = end - start
                if stat is None:
                    _aggregate[name] = [1, took, took, took]
                else:
                    stat[0] += 1
                    stat[1] += took
                    stat[2] = min(stat[2], took)
                    stat[3] = max(stat[3], took)
    return record


def _trace() -> dict:
    """The Chrome trace of what was recorded since the last finished dump."""
    events: list[dict] = [{"name": "process_name", "ph": "M", "pid": _PID,
                           "args": {"name": "cpu/0"}}]
    events += [{"name": "thread_name", "ph": "M", "pid": _PID, "tid": tid,
                "args": {"name": tname}} for tid, tname in _thread_names.items()]
    for name, tid, start, end in _events:
        common = {"name": name, "cat": "operator", "pid": _PID, "tid": tid}
        events.append({**common, "ph": "B", "ts": start / 1000})
        events.append({**common, "ph": "E", "ts": end / 1000})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the trace to the configured file (the whole file, valid JSON).

    With `finished`, the records written are then dropped, so the next dump
    starts afresh; otherwise they stay and the next dump rewrites them too.
    """
    _check_process(profile_process)
    with _lock:
        trace = _trace()
        if finished:
            _events.clear()
            _thread_names.clear()
        filename = _config.filename
    tmp = f"{filename}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(trace, f, indent=1)
    os.replace(tmp, filename)  # readers never see a half-written trace


_SORT_COLUMNS = {"count": 1, "total": 2, "min": 3, "max": 4, "avg": 5}


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total",
          ascending: bool = False) -> str:
    """The aggregate statistics (needs ``aggregate_stats=True``), as a table or JSON.

    `sort_by` is one of total, avg, min, max, count; `reset` clears the
    statistics after printing them.
    """
    if format not in ("table", "json"):
        raise MinimxError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    if sort_by not in _SORT_COLUMNS:
        raise MinimxError(f"profiler.dumps: sort_by must be one of total, avg, min, max, "
                          f"count; got {sort_by!r}")
    with _lock:
        rows = [(name, s[0], s[1] / 1e6, s[2] / 1e6, s[3] / 1e6, s[1] / s[0] / 1e6)
                for name, s in _aggregate.items()]
        if reset:
            _aggregate.clear()
    column = _SORT_COLUMNS[sort_by]
    rows.sort(key=lambda r: (r[column], r[0]), reverse=not ascending)
    if format == "json":
        return json.dumps({"Time": {"operator": {
            name: {"Count": count, "Total": total, "Min": lo, "Max": hi, "Avg": avg}
            for name, count, total, lo, hi, avg in rows}}, "Unit": {"Time": "ms"}}, indent=4)
    head = f"{'Name':<25}{'Total Count':>16} {'Time (ms)':>16} {'Min Time (ms)':>16} " \
           f"{'Max Time (ms)':>16} {'Avg Time (ms)':>16}"
    rule = f"{'----':<25}{'-----------':>16} {'---------':>16} {'-------------':>16} " \
           f"{'-------------':>16} {'-------------':>16}"
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries.",
             "operator", "=================", head, rule]
    lines += [f"{name:<25}{count:>16} {total:>16.4f} {lo:>16.4f} {hi:>16.4f} {avg:>16.4f}"
              for name, count, total, lo, hi, avg in rows]
    if not _config.aggregate_stats:
        lines.append("(aggregate_stats is off: call profiler.set_config(aggregate_stats=True) "
                     "before profiling)")
    return "\n".join(lines) + "\n"
