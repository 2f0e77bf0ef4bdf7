"""The profiler: MXNet's `mx.profiler` for engine operations, layers and memory.

While the state is ``'run'`` (and not paused), every engine operation that
runs is recorded with its name, thread and start/end time; imperative
operations only with ``profile_imperative``, executor operations only with
``profile_symbolic`` (``profile_all`` turns on both). While executor
operations are recorded, an executor runs one engine operation per node
(bulk inference switches itself off), so each layer is an event of its own,
named after the node, with its operator in ``args``; inside a DNNL subgraph,
each oneDNN step is an event (cat ``onednn``) named after the fused node it
belongs to and the kernel oneDNN chose (``sg_dnnl_conv_bn_act_0
convolution[brg:avx512_core_amx]``), timed in C. With ``profile_memory``,
each buffer an NDArray or an executor allocates is counted while it lives:
a ``Memory: cpu/0`` counter of the bytes in use.

`dump` writes the records as Chrome trace JSON (chrome://tracing, Perfetto):
``{"traceEvents": [...], "displayTimeUnit": "ms"}`` with ``process_name``
metadata for ``cpu/0`` (pid 0) and ``Device Storage`` (pid 1), a ``B``/``E``
pair (ts in microseconds) per operation and a ``C`` event per change of the
memory in use. With ``aggregate_stats``, `dumps` returns MXNet's table: per
operator (a node's operator; a oneDNN step's primitive and kernel) the count
and total / min / max / avg time, and the memory in use (min / max / avg).
``profile_api`` is accepted for compatibility (minimx has no C API).
MXNet's annotations (`Domain`, `Task`, `Frame`, `Event`, `Counter`, `Marker`)
go into the same trace while recording, with MXNet's event phases.
``continuous_dump`` dumps (unfinished) each time profiling stops or pauses; an
unfinished dump appends to the file what was recorded since the one before.
When the profiler is off the engine pays one global read per operation, a
DNNL subgraph one per run, and an allocation one call.

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

import atexit
import json
import os
import threading
import warnings
import weakref
from dataclasses import dataclass, fields, replace
from time import perf_counter_ns

import numpy as np

from .base import MinimxError
from .engine import set_op_recorder
from .engine.core import Recorder

_PID, _MEMORY_PID = 0, 1     # the only device, cpu/0; its memory counter
MEMORY = "Memory: cpu/0"


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


@dataclass(frozen=True, slots=True)
class _Event:
    name: str
    kind: str        # the operator it runs, which the table groups by ('': the name)
    category: str    # 'operator', or 'onednn' for a step inside a DNNL plan
    tid: int
    start: int       # ns
    end: int


_config = _Config()
_running = False
_paused = False
_symbolic = False     # executor operations are being recorded
_memory = False       # allocations are being recorded
_lock = threading.RLock()   # a finalizer counting a free may run while it is held
# Since the last finished dump: the events, the threads' names, and the
# memory in use after each change (ns, bytes).
_events: list[_Event] = []
_thread_names: dict[int, str] = {}
_memory_samples: list[tuple[int, int]] = []
_in_use = 0
# Since the last dumps(reset=True): operator -> [count, total ns, min ns, max ns],
# and the memory in use -> [count, total, min, max] bytes.
_aggregate: dict[str, list[int]] = {}
_memory_stats: list[int] = []
# Since the last finished dump: the trace events of Counters and Markers.
_annotations: list[dict] = []


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
    """Start (``'run'``) or stop (``'stop'``) recording; ``'run'`` ends a `pause`, as
    in MXNet."""
    global _running, _paused
    _check_process(profile_process)
    if state not in ("run", "stop"):
        raise MinimxError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    was_running, _running = _running, state == "run"
    if _running:
        _paused = False
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
    global _symbolic, _memory
    cfg = _config
    imperative = cfg.profile_all or cfg.profile_imperative
    symbolic = cfg.profile_all or cfg.profile_symbolic
    on = _running and not _paused
    _symbolic = on and symbolic
    _memory = on and cfg.profile_memory
    recording = on and (imperative or symbolic)
    set_op_recorder(_recorder(imperative, symbolic) if recording else None)


def _recorder(imperative: bool, symbolic: bool) -> Recorder:
    def record(name: str, kind: str, is_symbolic: bool, start: int, end: int) -> None:
        if symbolic if is_symbolic else imperative:
            _record([_Event(name, kind, "operator", threading.get_native_id(), start, end)])
    return record


def _record(events: list[_Event]) -> None:
    """Keep `events` (all from the calling thread) for the trace and the table."""
    aggregate = _config.aggregate_stats
    with _lock:
        _events.extend(events)
        tid = events[0].tid
        if tid not in _thread_names:
            _thread_names[tid] = threading.current_thread().name
        if not aggregate:
            return
        for e in events:
            took = e.end - e.start
            stat = _aggregate.get(e.kind or e.name)
            if stat is None:
                _aggregate[e.kind or e.name] = [1, took, took, took]
            else:
                stat[0] += 1
                stat[1] += took
                stat[2] = min(stat[2], took)
                stat[3] = max(stat[3], took)


def recording_layers() -> bool:
    """Whether executor operations are being recorded now: an executor then runs
    one engine operation per node, and DNNL plans time their steps."""
    return _symbolic


def record_steps(names: list[tuple[str, str]], times: np.ndarray) -> None:
    """Record the steps of one oneDNN plan run on this thread: per step, its
    (owner node, primitive and kernel) and, in `times`, its start and end."""
    tid = threading.get_native_id()
    ends = times.tolist()
    _record([_Event(f"{owner} {kernel}", kernel, "onednn", tid, ends[2 * i], ends[2 * i + 1])
             for i, (owner, kernel) in enumerate(names)])


def track_allocation(array: np.ndarray) -> None:
    """Count `array`'s buffer as memory in use until it is freed (while
    ``profile_memory`` records; views own no buffer and are not counted)."""
    if not _memory or array.base is not None or array.nbytes == 0:
        return
    _memory_change(array.nbytes)
    weakref.finalize(array, _memory_change, -array.nbytes)


def _memory_change(nbytes: int) -> None:
    global _in_use
    with _lock:
        _in_use += nbytes
        _memory_samples.append((perf_counter_ns(), _in_use))
        if _config.aggregate_stats:
            if not _memory_stats:
                _memory_stats.extend([0, 0, _in_use, _in_use])
            _memory_stats[0] += 1
            _memory_stats[1] += _in_use
            _memory_stats[2] = min(_memory_stats[2], _in_use)
            _memory_stats[3] = max(_memory_stats[3], _in_use)


def _records_after(written: _Written | None) -> list[dict]:
    """The Chrome trace events recorded since the last finished dump and not yet in
    the file `written` describes (all of them without one)."""
    events, samples, notes, named = ((0, 0, 0, frozenset()) if written is None else
                                     (written.events, written.samples, written.annotations,
                                      written.threads))
    out: list[dict] = []
    if written is None:
        out += [{"name": "process_name", "ph": "M", "pid": _PID, "args": {"name": "cpu/0"}},
                {"name": "process_name", "ph": "M", "pid": _MEMORY_PID,
                 "args": {"name": "Device Storage"}}]
    out += [{"name": "thread_name", "ph": "M", "pid": _PID, "tid": tid,
             "args": {"name": tname}} for tid, tname in _thread_names.items() if tid not in named]
    for e in _events[events:]:
        common = {"name": e.name, "cat": e.category, "pid": _PID, "tid": e.tid}
        args = {"args": {"op": e.kind}} if e.kind else {}
        out.append({**common, "ph": "B", "ts": e.start / 1000, **args})
        out.append({**common, "ph": "E", "ts": e.end / 1000})
    out += [{"name": MEMORY, "cat": "Device Storage", "ph": "C", "pid": _MEMORY_PID,
             "tid": 0, "ts": ts / 1000, "args": {MEMORY: in_use}}
            for ts, in_use in _memory_samples[samples:]]
    return out + _annotations[notes:]


@dataclass(frozen=True)
class _Written:
    """What the trace file holds of the records since the last finished dump, so that
    the next dump appends what is new (MXNet's continuous dump) rather than
    serializing every record again; `size` tells whether the file is still ours."""
    filename: str
    size: int
    events: int
    samples: int
    annotations: int
    threads: frozenset[int]


_written: _Written | None = None
_dumping = threading.Lock()
_HEAD, _TAIL = '{"displayTimeUnit": "ms", "traceEvents": [\n', "\n]}\n"


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the trace to the configured file (valid JSON after every dump).

    With `finished`, the records written are then dropped, so the next dump
    starts a new file; otherwise the next dump appends what was recorded since.
    """
    global _written
    _check_process(profile_process)
    with _dumping:   # one dump at a time; recording waits only for the records' copy
        with _lock:
            filename = _config.filename
            written = _written
            if written is not None and (written.filename != filename or not
                                        os.path.isfile(filename) or
                                        os.path.getsize(filename) != written.size):
                written = None   # the file is another one now: write every record again
            records = _records_after(written)
            counts = (len(_events), len(_memory_samples), len(_annotations),
                      frozenset(_thread_names))
            if finished:
                _events.clear()
                _thread_names.clear()
                _memory_samples.clear()
                _annotations.clear()
        _write(filename, written, [json.dumps(r) for r in records])
        _written = None if finished else _Written(filename, os.path.getsize(filename), *counts)


def _write(filename: str, written: _Written | None, lines: list[str]) -> None:
    """The trace file with `lines` appended to what `written` says it holds, or
    written whole (a new file, or one no longer as the last dump left it)."""
    if written is None:
        tmp = f"{filename}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(_HEAD + ",\n".join(lines) + _TAIL)
        os.replace(tmp, filename)  # readers never see a half-written trace
    elif lines:  # the file's list holds its process names at least: append after them
        with open(filename, "r+b") as f:   # json.dumps writes ASCII: bytes = chars
            f.seek(written.size - len(_TAIL))
            f.write((",\n" + ",\n".join(lines) + _TAIL).encode("ascii"))


@atexit.register
def _dump_at_exit() -> None:
    """What was recorded and not dumped goes to the configured file when the process
    ends, as MXNet's profiler writes it then."""
    with _lock:
        pending = bool(_events or _memory_samples or _annotations)
    if pending:
        try:
            dump()
        except OSError as exc:   # the file's directory may be gone by now
            warnings.warn(f"profiler: the trace could not be written at exit: {exc}",
                          stacklevel=1)


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
        memory = list(_memory_stats)
        if reset:
            _aggregate.clear()
            _memory_stats.clear()
    column = _SORT_COLUMNS[sort_by]
    rows.sort(key=lambda r: (r[column], r[0]), reverse=not ascending)
    # (count, min, max, avg) kB of memory in use
    storage = (memory[0], memory[2] / 1e3, memory[3] / 1e3, memory[1] / memory[0] / 1e3) \
        if memory else None
    if format == "json":
        stats: dict = {"Time": {"operator": {
            name: {"Count": count, "Total": total, "Min": lo, "Max": hi, "Avg": avg}
            for name, count, total, lo, hi, avg in rows}}, "Unit": {"Time": "ms"}}
        if storage is not None:
            count, lo, hi, avg = storage
            stats["Memory"] = {"Device Storage": {MEMORY: {
                "Count": count, "Min": lo, "Max": hi, "Avg": avg}}}
            stats["Unit"]["Memory"] = "kB"
        return json.dumps(stats, indent=4)
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    if storage is not None:
        lines += _section("Device Storage", ("Min Use  (kB)", "Max Use  (kB)",
                                             "Avg Use  (kB)"), [(MEMORY, *storage)])
    lines += _section("operator", ("Time (ms)", "Min Time (ms)", "Max Time (ms)",
                                   "Avg Time (ms)"),
                      [(name, count, total, lo, hi, avg)
                       for name, count, total, lo, hi, avg in rows])
    if not _config.aggregate_stats:
        lines.append("(aggregate_stats is off: call profiler.set_config(aggregate_stats=True) "
                     "before profiling)")
    return "\n".join(lines) + "\n"


def _section(title: str, columns: tuple[str, ...], rows: list[tuple]) -> list[str]:
    """One of MXNet's tables: name and count, then `columns` of 4-decimal values."""
    head = f"{'Name':<30}{'Total Count':>11}" + "".join(f"{c:>17}" for c in columns)
    rule = f"{'----':<30}{'-----------':>11}" + "".join(f"{'-' * len(c):>17}" for c in columns)
    body = [f"{name:<30}{count:>11}" + "".join(f"{v:>17.4f}" for v in values)
            for name, count, *values in rows]
    return [title, "=================", head, rule, *body, ""]


# -- MXNet's annotations ----------------------------------------------------------------------
# Their trace events are MXNet's: a task is an async pair (b/e, with an id), a frame a
# context pair ("(" / ")"), an event a B/E pair, a counter a C event per value, a marker
# an instant "n" event.

def _annotate(name: str, category: str, phase: str, **extra: object) -> None:
    if _running and not _paused:
        with _lock:
            _annotations.append({"name": name, "cat": category, "ph": phase, "pid": _PID,
                                 "tid": threading.get_native_id(),
                                 "ts": perf_counter_ns() / 1000, **extra})


class Domain:
    """A named group of annotations (the category of its tasks, frames, counters, markers)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name

    def new_task(self, name: str) -> Task:
        return Task(self, name)

    def new_frame(self, name: str) -> Frame:
        return Frame(self, name)

    def new_counter(self, name: str, value: int | None = None) -> Counter:
        return Counter(self, name, value)

    def new_marker(self, name: str) -> Marker:
        return Marker(self, name)


class _Range:
    """A stretch of time from `start` to `stop`: two trace events."""

    PHASES = ("B", "E")

    def __init__(self, category: str, name: str) -> None:
        self.category, self.name = category, name

    def __str__(self) -> str:
        return self.name

    def _extra(self) -> dict:
        return {}

    def start(self) -> None:
        _annotate(self.name, self.category, self.PHASES[0], **self._extra())

    def stop(self) -> None:
        _annotate(self.name, self.category, self.PHASES[1], **self._extra())


class Task(_Range):
    """A task of `domain`: ``start()``, ``stop()``."""

    PHASES = ("b", "e")

    def __init__(self, domain: Domain, name: str) -> None:
        super().__init__(domain.name, name)

    def _extra(self) -> dict:
        return {"id": id(self)}


class Frame(_Range):
    """A frame (a repeated stretch, such as an iteration) of `domain`."""

    PHASES = ("(", ")")

    def __init__(self, domain: Domain, name: str) -> None:
        super().__init__(f"{domain.name},frame", name)


class Event(_Range):
    """A stretch of time outside any domain."""

    def __init__(self, name: str) -> None:
        super().__init__("event", name)


class Counter:
    """A value in `domain`, traced at each change (``+=`` and ``-=`` too)."""

    def __init__(self, domain: Domain, name: str, value: int | None = None) -> None:
        self.domain, self.name, self._value = domain, name, 0
        if value is not None:
            self.set_value(value)

    def __str__(self) -> str:
        return self.name

    def set_value(self, value: int) -> None:
        self._value = int(value)
        _annotate(self.name, self.domain.name, "C", args={self.name: self._value})

    def increment(self, delta: int = 1) -> None:
        self.set_value(self._value + delta)

    def decrement(self, delta: int = 1) -> None:
        self.set_value(self._value - delta)

    def __iadd__(self, delta: int) -> Counter:
        self.increment(delta)
        return self

    def __isub__(self, delta: int) -> Counter:
        self.decrement(delta)
        return self


_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


class Marker:
    """An instant in `domain`: ``mark(scope)``, scope global, process, thread, task or
    marker."""

    def __init__(self, domain: Domain, name: str) -> None:
        self.domain, self.name = domain, name

    def mark(self, scope: str = "process") -> None:
        if scope not in _SCOPES:
            raise MinimxError(f"profiler: Marker {self.name!r}: scope must be one of "
                              f"{', '.join(_SCOPES)}, got {scope!r}")
        _annotate(self.name, f"{self.domain.name},instant_marker", "n", s=_SCOPES[scope])


# -- MXNet's deprecated names -----------------------------------------------------------------
def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """Deprecated in MXNet: `set_config` with ``profile_<mode>=True``."""
    warnings.warn("profiler.profiler_set_config() is deprecated. Please use "
                  "profiler.set_config() instead", stacklevel=2)
    set_config(**{f"profile_{mode}": True, "filename": filename})


def profiler_set_state(state: str = "stop") -> None:
    """Deprecated in MXNet: `set_state`."""
    warnings.warn("profiler.profiler_set_state() is deprecated. Please use "
                  "profiler.set_state() instead", stacklevel=2)
    set_state(state)


def dump_profile() -> None:
    """Deprecated in MXNet: `dump`."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() instead",
                  stacklevel=2)
    dump(True)

