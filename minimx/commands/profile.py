"""`minimx profile`: a Chrome trace and MXNet's aggregate table of a few forwards."""
from __future__ import annotations

import argparse

from .. import profiler
from ..base import MinimxError
from .model_files import bind, data_shapes, fill_inputs, load_model, parse_shapes


def profile(args: argparse.Namespace) -> int:
    if args.forwards < 1:
        raise MinimxError("profile: --forwards must be at least 1")
    m = load_model(args.model, args.epoch)
    shapes = data_shapes(m, parse_shapes(args.shape))
    # Memory is recorded from the bind on (its buffers are most of it); operators
    # from after a first forward, which fills the weight caches.
    profiler.set_config(profile_symbolic=False, profile_imperative=False,
                        profile_memory=args.memory, aggregate_stats=True,
                        filename=args.output)
    profiler.set_state("run")
    try:
        ex = bind(m, shapes, args.backend)
        fill_inputs(ex, shapes)
        ex.forward()[0].wait_to_read()
        profiler.set_config(profile_symbolic=True)
        for _ in range(args.forwards):
            ex.forward()[0].wait_to_read()
    finally:
        profiler.set_state("stop")
    profiler.dump()
    print(profiler.dumps(sort_by=args.sort_by, reset=True), end="")
    print(f"trace written to {args.output} (open it in Perfetto or chrome://tracing)")
    return 0


def add_parsers(commands: argparse._SubParsersAction, *parents: argparse.ArgumentParser
                ) -> None:
    p = commands.add_parser("profile", parents=list(parents),
                            help="per-layer (and per-oneDNN-step) profile of a few forwards")
    p.add_argument("--backend", default="DNNL",
                   help="subgraph backend (NONE, DNNL, ...; default DNNL)")
    p.add_argument("--forwards", type=int, default=3, help="forwards profiled (default 3)")
    p.add_argument("--memory", action="store_true",
                   help="also record the memory in use (profile_memory)")
    p.add_argument("--sort-by", default="total", choices=["total", "avg", "min", "max", "count"],
                   help="column the table is sorted by (default total)")
    p.add_argument("-o", "--output", default="profile.json", metavar="TRACE.json",
                   help="where the Chrome trace goes (default profile.json)")
    p.set_defaults(run=profile)
