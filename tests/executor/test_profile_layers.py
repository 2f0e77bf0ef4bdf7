"""Profiling a bound graph: one event per layer, one per oneDNN step inside DNNL subgraphs."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx import profiler
from minimx.backends.dnnl import batch_parts
from tests.onednn_required import require_onednn
from tests.small_cnn import small_cnn
from tests.trace_schema import check_trace

SHAPE = (2, 3, 8, 8)
FORWARDS = 3


@pytest.fixture
def trace_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "profile.json"
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(path))
    yield path
    profiler.set_state("stop")
    profiler.dump(finished=True)
    profiler.dumps(reset=True)
    profiler.set_config(profile_all=False, aggregate_stats=False, filename="profile.json")


def bound(monkeypatch: pytest.MonkeyPatch, backend: str) -> mx.Executor:
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
    monkeypatch.setenv("MINIMX_EXEC_BULK_EXEC_INFERENCE", "1")
    ex = small_cnn(16).simple_bind(mx.cpu(), grad_req="null", data=SHAPE)
    rng = np.random.default_rng(0)
    for name, arr in sorted({**ex.arg_dict, **ex.aux_dict}.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if name != "data" else 0
    return ex


def profiled(ex: mx.Executor, trace_file: Path) -> tuple[list[dict], np.ndarray]:
    data = np.random.default_rng(1).normal(size=SHAPE).astype(np.float32)
    profiler.set_state("run")
    for _ in range(FORWARDS):
        out = ex.forward(data=data)[0].asnumpy()
    profiler.set_state("stop")
    profiler.dump()
    return check_trace(trace_file), out


def begins(events: list[dict], category: str) -> list[dict]:
    return [e for e in events if e["ph"] == "B" and e["cat"] == category]


def test_each_layer_is_an_event_under_bulk_inference(monkeypatch, trace_file) -> None:
    ex = bound(monkeypatch, "NONE")
    expected = ex.forward(data=np.ones(SHAPE, np.float32))[0].asnumpy()
    events, _ = profiled(ex, trace_file)
    layers = Counter((e["name"], e["args"]["op"]) for e in begins(events, "operator")
                     if "args" in e)
    assert layers == {(name, op): FORWARDS for name, op in [
        ("conv0", "Convolution"), ("bn0", "BatchNorm"), ("relu0", "Activation"),
        ("pool0", "Pooling"), ("fc0", "FullyConnected")]}
    table = profiler.dumps()
    for op in ("Convolution", "BatchNorm", "Activation", "Pooling", "FullyConnected"):
        assert any(line.split()[:2] == [op, str(FORWARDS)] for line in table.splitlines())
    # profiling off: one bulk operation again, same numbers
    assert not profiler.recording_layers()
    np.testing.assert_array_equal(ex.forward(data=np.ones(SHAPE, np.float32))[0].asnumpy(),
                                  expected)


def test_dnnl_steps_are_events_named_after_node_and_kernel(monkeypatch, trace_file) -> None:
    require_onednn()
    ex = bound(monkeypatch, "DNNL")
    events, out = profiled(ex, trace_file)
    np.testing.assert_allclose(out, bound(monkeypatch, "NONE").forward(
        data=np.random.default_rng(1).normal(size=SHAPE).astype(np.float32))[0].asnumpy(),
        rtol=1e-4, atol=1e-4)
    subgraphs = [e for e in events if e.get("cat") == "operator" and e["name"] == "sg_dnnl_0"]
    assert len(subgraphs) == 2 * FORWARDS
    steps = begins(events, "onednn")
    assert len(steps) % FORWARDS == 0 and steps
    owners = Counter(e["name"].split(" ")[0] for e in steps)
    # the fused conv-bn-relu, the pooling and the fully connected layer each own steps
    assert {"sg_dnnl_conv_bn_act_0", "pool0", "fc0"} <= set(owners)
    for e in steps:
        owner, kernel = e["name"].split(" ")
        assert kernel == e["args"]["op"] and kernel.endswith("]") and "[" in kernel
    conv = [e for e in steps if e["name"].startswith("sg_dnnl_conv_bn_act_0 ")]
    assert {e["args"]["op"].split("[")[0] for e in conv} & {"conv", "convolution", "wino_conv"}
    # each forward's steps lie inside that forward's subgraph event
    spans = [(b["ts"], e["ts"]) for b, e in zip(subgraphs[::2], subgraphs[1::2], strict=True)]
    step_ends = [e for e in events if e["ph"] == "E" and e["cat"] == "onednn"]
    for begin, end in zip(steps, step_ends, strict=True):   # one thread runs them in turn
        assert begin["name"] == end["name"]
        assert any(lo <= begin["ts"] <= end["ts"] <= hi for lo, hi in spans)
    kernels = Counter(e["args"]["op"] for e in steps)
    table = profiler.dumps()
    for kernel, count in kernels.items():
        assert any(line.split()[:2] == [kernel, str(count)] for line in table.splitlines())


def test_a_batch_loop_shows_each_part_of_its_steps(monkeypatch, trace_file) -> None:
    """The first layers run once per image (batch_parts forced on this small
    net): each run of a looped step is its own event, none overlapping."""
    require_onednn()
    for threshold in ("PART_BYTES", "MIN_PIXELS", "ACTIVATION_TO_WEIGHT"):
        monkeypatch.setattr(batch_parts, threshold, 0)
    events, _ = profiled(bound(monkeypatch, "DNNL"), trace_file)
    steps = begins(events, "onednn")
    runs = Counter(e["args"]["op"].split("[")[0] for e in steps)
    assert runs["conv"] == SHAPE[0] * FORWARDS            # once per image
    assert runs["inner_product"] == FORWARDS              # the whole batch
    ends = [e for e in events if e["ph"] == "E" and e["cat"] == "onednn"]
    spans = sorted((b["ts"], e["ts"]) for b, e in zip(steps, ends, strict=True))
    assert all(end <= next_begin
               for (_, end), (next_begin, _) in zip(spans, spans[1:], strict=False))
