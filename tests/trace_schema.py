"""The Chrome trace event format, as far as minimx's profiler writes it."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema

# The Chrome trace event format (the parts minimx writes): metadata, duration
# begin/end and counter events, as chrome://tracing and Perfetto read them.
TRACE_SCHEMA = {
    "type": "object",
    "required": ["traceEvents", "displayTimeUnit"],
    "properties": {
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "traceEvents": {"type": "array", "items": {"oneOf": [
            {"type": "object", "required": ["name", "ph", "pid", "args"],
             "properties": {"ph": {"const": "M"},
                            "name": {"enum": ["process_name", "thread_name"]},
                            "pid": {"type": "integer"}, "tid": {"type": "integer"},
                            "args": {"type": "object", "required": ["name"],
                                     "properties": {"name": {"type": "string"}}}}},
            {"type": "object", "required": ["name", "cat", "ph", "ts", "pid", "tid"],
             "properties": {"ph": {"enum": ["B", "E"]}, "name": {"type": "string"},
                            "cat": {"type": "string"}, "ts": {"type": "number"},
                            "pid": {"type": "integer"}, "tid": {"type": "integer"},
                            "args": {"type": "object"}}},
            {"type": "object", "required": ["name", "ph", "ts", "pid", "args"],
             "properties": {"ph": {"const": "C"}, "ts": {"type": "number"},
                            "pid": {"type": "integer"},
                            "args": {"type": "object",
                                     "additionalProperties": {"type": "number"}}}},
            # MXNet's annotations: async task pairs, frame pairs, instant markers
            {"type": "object", "required": ["name", "cat", "ph", "ts", "pid", "tid", "id"],
             "properties": {"ph": {"enum": ["b", "e"]}, "id": {"type": "integer"}}},
            {"type": "object", "required": ["name", "cat", "ph", "ts", "pid", "tid"],
             "properties": {"ph": {"enum": ["(", ")"]}}},
            {"type": "object", "required": ["name", "cat", "ph", "ts", "pid", "tid", "s"],
             "properties": {"ph": {"const": "n"}, "s": {"enum": ["g", "p", "t"]}}},
        ]}},
    },
}


def check_trace(path: Path) -> list[dict]:
    """The trace's events, after checking it against the schema and that every
    thread's B/E events nest."""
    trace = json.loads(path.read_text())
    jsonschema.validate(trace, TRACE_SCHEMA)
    open_by_thread: dict[tuple[int, int], list[str]] = {}
    for e in trace["traceEvents"]:
        stack = open_by_thread.setdefault((e["pid"], e.get("tid", 0)), [])
        if e["ph"] == "B":
            stack.append(e["name"])
        elif e["ph"] == "E":
            assert stack and stack.pop() == e["name"]
    assert all(not stack for stack in open_by_thread.values())
    return trace["traceEvents"]
