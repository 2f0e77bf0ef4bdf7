"""`minimx info`, `minimx summary` and `minimx partition`: what there is, and what a bind makes."""
from __future__ import annotations

import argparse
import platform
from collections import Counter

import numpy as np

from .. import __version__, onednn, subgraph, viz
from ..executor import Executor
from ..ops import canonical_ops
from ..subgraph.report import SHOWN
from .model_files import bind, data_shapes, load_model, parse_shapes


def info(args: argparse.Namespace) -> int:
    print(f"minimx {__version__}, Python {platform.python_version()}, numpy {np.__version__}")
    if onednn.available():
        bf16 = "in hardware" if onednn.bf16_native() else "not in hardware: DNNL runs it in float32"
        print(f"oneDNN {onednn.version()}, dispatching to {onednn.isa()} (bfloat16 {bf16})")
    else:
        print(f"oneDNN: unavailable ({onednn.unavailable_reason()})")
    print(f"subgraph backends: {', '.join(subgraph.list_backends())}")
    print(f"operators: {len(canonical_ops())}")
    return 0


def summary(args: argparse.Namespace) -> int:
    m = load_model(args.model, args.epoch)
    shapes = parse_shapes(args.shape)
    if not shapes and "data" in m.symbol.list_arguments():  # the default --shape says
        shapes = data_shapes(m, shapes)
    viz.print_summary(m.symbol, shape=shapes or None, line_length=args.line_length)
    return 0


def partition(args: argparse.Namespace) -> int:
    m = load_model(args.model, args.epoch)
    shapes = data_shapes(m, parse_shapes(args.shape))
    part = subgraph.partition(m.symbol, args.backend, shapes=shapes)
    # A bind compiles the subgraphs: how they run is known only then.
    ex = bind(m, shapes, args.backend)
    print(f"{m.name}, inputs {shapes}, backend {args.backend}:")
    print(ex._partition_report)   # the bind's own report, with how its plans run
    for line in _plan_lines(ex):
        print(line)
    if args.output:
        part.save(args.output)
        print(f"partitioned symbol written to {args.output}")
    if args.dot:
        viz.plot_network(part, title=m.name, shape=shapes).save(args.dot)
        print(f"graph (subgraphs as clusters) written to {args.dot}")
    return 0


def _plan_lines(ex: Executor) -> list[str]:
    """The oneDNN steps of the executor's compiled plans: the layout conversions
    (reorders, by the node they belong to) and the kernels oneDNN chose."""
    steps = [step for state in ex._runner.operator_states().values()
             if getattr(state, "compiled", None) is not None
             for step in state.compiled.plan.step_names()]
    if not steps:
        return []
    reorders = [owner for owner, kernel in steps if kernel.startswith("reorder[")]
    shown = ", ".join(reorders[:SHOWN]) + (f", ... (+{len(reorders) - SHOWN} more)"
                                           if len(reorders) > SHOWN else "")
    kernels = Counter(kernel for _, kernel in steps)
    return [f"oneDNN steps: {len(steps)}",
            f"layout conversions (reorders): {len(reorders)}" + (f" ({shown})" if shown else ""),
            "kernels: " + ", ".join(f"{k} x{n}" for k, n in sorted(kernels.items()))]


def add_parsers(commands: argparse._SubParsersAction, *parents: argparse.ArgumentParser
                ) -> None:
    p = commands.add_parser("info", help="versions, the ISA oneDNN uses, the backends")
    p.set_defaults(run=info)
    p = commands.add_parser("summary", parents=list(parents),
                            help="each layer's output shape and parameters (mx.viz.print_summary)")
    p.add_argument("--line-length", type=int, default=120, help="width of the table")
    p.set_defaults(run=summary)
    p = commands.add_parser("partition", parents=list(parents),
                            help="what a backend makes of the graph: subgraphs, fusions, "
                                 "operators left out and why, layout conversions, Winograd")
    p.add_argument("--backend", default="DNNL",
                   help="subgraph backend to partition with (default DNNL)")
    p.add_argument("-o", "--output", metavar="OUT-symbol.json",
                   help="write the partitioned symbol there")
    p.add_argument("--dot", metavar="OUT.dot",
                   help="write its graph there as DOT (render with graphviz's dot)")
    p.set_defaults(run=partition)
