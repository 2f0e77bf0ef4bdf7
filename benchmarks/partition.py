"""Partitioner speed on large graphs: chains, wide graphs, ResNet-152-sized graphs.

Prints the time of `mx.subgraph.partition` with the `default` backend (best of
three) and how many subgraphs it made. Run: python benchmarks/partition.py
"""
from __future__ import annotations

import time

import minimx as mx
from minimx.graph import Graph


def chain(n: int, every_other: bool):
    """relu/tanh alternating; with `every_other` only relu is selected (n/2 subgraphs)."""
    x = mx.sym.Variable("x")
    for i in range(n):
        x = (mx.sym.relu if i % 2 == 0 else mx.sym.tanh)(x, name=f"n{i}")
    return x, ["relu"] if every_other else ["relu", "tanh"]


def wide(branches: int, depth: int):
    """`branches` parallel chains of `depth` ops, joined pairwise by elemwise_add."""
    x = mx.sym.Variable("x")
    level = []
    for b in range(branches):
        y = x
        for d in range(depth):
            y = (mx.sym.relu if d % 2 == 0 else mx.sym.sigmoid)(y, name=f"b{b}_{d}")
        level.append(y)
    while len(level) > 1:
        level = [level[i] + level[i + 1] if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0], ["relu", "elemwise_add"]


def resnet_like(stages: int = 4, blocks: tuple[int, ...] = (3, 8, 36, 3)):
    """A ResNet-152 v1 layout: bottleneck blocks of conv-bn-relu with residual adds."""
    x = mx.sym.Variable("data")
    k = 0
    def cbr(y, filters, kernel, relu=True):
        nonlocal k
        k += 1
        y = mx.sym.Convolution(y, kernel=(kernel, kernel), pad=(kernel // 2,) * 2,
                               num_filter=filters, no_bias=True, name=f"conv{k}")
        y = mx.sym.BatchNorm(y, name=f"bn{k}")
        return mx.sym.Activation(y, act_type="relu", name=f"relu{k}") if relu else y
    x = cbr(x, 64, 7)
    for s in range(stages):
        for b in range(blocks[s]):
            width = 64 * 2 ** s
            y = cbr(cbr(cbr(x, width, 1), width, 3), width * 4, 1, relu=False)
            shortcut = cbr(x, width * 4, 1, relu=False) if b == 0 else x
            x = mx.sym.Activation(y + shortcut, act_type="relu", name=f"out{s}_{b}")
    return x, ["Convolution", "BatchNorm", "Activation", "elemwise_add"]


def measure(label: str, sym, op_names) -> None:
    nodes = len(Graph(sym.outputs).nodes)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        result = mx.subgraph.partition(sym, "default", op_names=op_names)
        best = min(best, time.perf_counter() - start)
    n_sub = sum(1 for n in Graph(result.outputs).nodes if n.subgraphs)
    print(f"{label:<38} {nodes:>7} nodes {best * 1000:>9.1f} ms  {n_sub:>6} subgraphs")


def main() -> None:
    print(f"{'graph':<38} {'size':>13} {'time':>12}  {'result':>16}")
    measure("chain 10000, all selected", *chain(10000, every_other=False))
    measure("chain 10000, every other selected", *chain(10000, every_other=True))
    measure("wide 1000 x 10", *wide(1000, 10))
    measure("ResNet-152-sized, conv/bn/relu/add", *resnet_like())


if __name__ == "__main__":
    main()
