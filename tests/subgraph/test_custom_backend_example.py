"""The Python-written backend of examples/custom_backend.py fuses conv+bn only."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest

import minimx as mx
from minimx.graph import Graph

from .invariants import check_partition, subgraph_nodes

EXAMPLE = Path(__file__).parents[2] / "examples" / "custom_backend.py"


@pytest.fixture(scope="module")
def example():
    """The example's globals; running it registers the CONV_BN backend once."""
    return runpy.run_path(str(EXAMPLE), run_name="custom_backend")


def test_conv_bn_pairs_become_one_node_and_lone_conv_stays(example):
    sym = example["network"]()
    result = mx.subgraph.partition(sym, "CONV_BN")
    check_partition(sym, result, {"Convolution", "BatchNorm"})
    (node,) = subgraph_nodes(result)
    assert node.name == "conv_bn_0"
    inner = [n.op for n in Graph(node.subgraphs[0].outputs).nodes if not n.is_variable]
    assert inner == ["Convolution", "BatchNorm"]
    assert "conv1" in [n.name for n in Graph(result.outputs).nodes]


def test_example_binds_through_the_environment_and_matches_unfused(example, capsys):
    example["main"]()
    out = capsys.readouterr().out
    assert "_subgraph_op conv_bn_0" in out
    assert float(out.rsplit("=", 1)[1]) < 1e-5
