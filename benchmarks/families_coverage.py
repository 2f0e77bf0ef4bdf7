"""How much of each GluonCV / GluonNLP graph the DNNL backend runs, and what it leaves out.

For each model of tests/fixtures/families (the graphs MXNet 1.9.1 exported; see
tools/mxnet_fixtures.py, group ``families``) this partitions the graph with DNNL for
the fixture's input shapes and prints the operator nodes, how many the oneDNN
subgraphs hold, and the operators left outside with their counts. Whether the
results match MXNet's is tests/models/test_families.py's job.

Run: python benchmarks/families_coverage.py [MODEL ...]
"""
from __future__ import annotations

import gzip
import json
import sys
import warnings
from collections import Counter
from pathlib import Path

import minimx as mx
from minimx.graph import Graph

FAMILIES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "families"


def coverage(name: str) -> tuple[int, Counter]:
    """(operator nodes of the fixture's graph, operators left outside DNNL subgraphs by name)."""
    sym = mx.sym.load_json(gzip.decompress((FAMILIES / f"{name}-symbol.json.gz").read_bytes()))
    spec = json.loads((FAMILIES / f"{name}.json").read_text())
    return dnnl_coverage(sym, {k: tuple(v) for k, v in spec["inputs"].items()})


def dnnl_coverage(sym: mx.sym.Symbol, shapes: dict[str, tuple[int, ...]]) -> tuple[int, Counter]:
    """(operator nodes of `sym`, operators left outside DNNL subgraphs by name) for
    inputs of `shapes`."""
    with warnings.catch_warnings():   # the dtype warning names what the table shows
        warnings.simplefilter("ignore")
        part = mx.subgraph.partition(sym, "DNNL", shapes=shapes)
    total = sum(not n.is_variable for n in Graph(sym.outputs).nodes)
    outside = Counter(n.op for n in Graph(part.outputs).nodes
                      if not n.is_variable and n.op != "_sg_dnnl")
    return total, outside


def main(names: list[str]) -> None:
    names = names or sorted(p.name[:-len(".json")] for p in FAMILIES.glob("*.json"))
    print("| model | operator nodes | in oneDNN | left outside |")
    print("|---|---:|---:|---|")
    for name in names:
        total, outside = coverage(name)
        inside = total - sum(outside.values())
        left = ", ".join(f"{op} {n}" for op, n in outside.most_common()) or "-"
        print(f"| {name} | {total} | {inside} ({100 * inside / total:.0f}%) | {left} |")


if __name__ == "__main__":
    main(sys.argv[1:])
