"""A DNNL subgraph's oneDNN plan is planned by minimx's one memory planner,
and debug_str shows its memory line under the node."""
from __future__ import annotations

import re

import pytest

import minimx as mx

from .helpers import assert_close, bind, outputs, partitioned, random_arrays

data = mx.sym.var("data")
SHAPE = {"data": (2, 4, 8, 8)}
# conv + relu fuse; the pooling and the sigmoid after it are steps of their own,
# and the sigmoid may write over the pooling's output.
NET = mx.sym.sigmoid(mx.sym.Pooling(
    mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="c"),
                name="r"), kernel=(2, 2), stride=(2, 2), name="p"), name="s")
MEMORY = (r"memory reduced from [\d.]+ K?B to [\d.]+ K?B in \d+ blocks "
          r"\(lower bound [\d.]+ K?B, (\d+) in-place; [\d.]+ K?B external\)")


@pytest.mark.parametrize("inplace", ["1", "0"])
def test_debug_str_shows_the_onednn_plans_memory(monkeypatch, inplace):
    monkeypatch.setenv("MINIMX_EXEC_ENABLE_INPLACE", inplace)
    part = partitioned(NET, SHAPE)
    args, aux = random_arrays(NET, SHAPE)
    lines = bind(part, args, aux).debug_str().splitlines()
    inner = [m for line in lines if (m := re.fullmatch(r"  \| Memory: " + MEMORY, line))]
    assert len(inner) == 1 and inner[0].group(1) == ("1" if inplace == "1" else "0")
    assert any(re.fullmatch("Memory: " + MEMORY, line) for line in lines)
    assert_close(outputs(part, args, aux), outputs(NET, args, aux))
