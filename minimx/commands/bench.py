"""`minimx bench`: throughput and latency per backend and batch size.

Each (backend, batch) binds the model once, runs `warmup` forwards, then
`iterations` forwards one at a time (each waited for), timing each. The
table gives img/s (batch / mean latency) and the latency percentiles; the
header names the machine, oneDNN's ISA and the threads.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .. import __version__, onednn
from ..base import MinimxError, settings
from .model_files import Model, bind, data_shapes, fill_inputs, load_model, parse_list, parse_shapes

PERCENTILES = (50, 90, 99)


@dataclass
class Result:
    backend: str
    batch: int
    images_per_second: float
    latency_ms: dict[str, float]   # mean and the percentiles (p50, p90, p99)


def machine() -> dict[str, str | int]:
    """What the figures were measured on."""
    return {
        "cpu": _cpu_model(), "cores": os.cpu_count() or 0,
        "onednn": f"{onednn.version()} ({onednn.isa()})" if onednn.available()
        else f"unavailable ({onednn.unavailable_reason()})",
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "unset (all cores)"),
        "engine_workers": settings().cpu_worker_nthreads,
        "minimx": __version__, "python": platform.python_version(),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure(m: Model, shapes: dict[str, tuple[int, ...]], backend: str, batch: int | None,
            warmup: int, iterations: int, progress: tqdm) -> Result:
    """Latencies of `iterations` forwards at `batch` (put on the first axis of every
    input; None: the shapes as given, the first input's first axis the batch)."""
    batched = shapes if batch is None else \
        {name: (batch, *shape[1:]) for name, shape in shapes.items()}
    batch = next(iter(batched.values()))[0]
    ex = bind(m, batched, backend)
    fill_inputs(ex, batched)
    took = []
    for i in range(warmup + iterations):
        start = time.perf_counter()
        ex.forward()[0].wait_to_read()
        if i >= warmup:
            took.append(time.perf_counter() - start)
        progress.update()
    ms = np.array(took) * 1e3
    latency = {"mean": float(ms.mean()),
               **{f"p{q}": float(np.percentile(ms, q)) for q in PERCENTILES}}
    return Result(backend, batch, batch / (ms.mean() / 1e3), latency)


def table(results: list[Result], about: dict[str, str | int]) -> str:
    head = [f"machine: {about['cpu']}, {about['cores']} cores; oneDNN {about['onednn']}",
            f"threads: OMP_NUM_THREADS={about['omp_num_threads']}, "
            f"engine workers {about['engine_workers']}", "",
            f"{'backend':<10}{'batch':>6}{'img/s':>10}{'mean ms':>10}"
            + "".join(f"{f'p{q} ms':>10}" for q in PERCENTILES)]
    rows = [f"{r.backend:<10}{r.batch:>6}{r.images_per_second:>10.1f}"
            f"{r.latency_ms['mean']:>10.2f}"
            + "".join(f"{r.latency_ms[f'p{q}']:>10.2f}" for q in PERCENTILES)
            for r in results]
    return "\n".join(head + rows)


def bench(args: argparse.Namespace) -> int:
    m = load_model(args.model, args.epoch)
    shapes = data_shapes(m, parse_shapes(args.shape))
    backends = parse_list(args.backend, "--backend")
    # Without --batch the shapes stay as given: a time-major input's first axis is
    # not its batch.
    batches: list[int | None] = [None] if args.batch is None else [
        int(b) for b in parse_list(args.batch, "--batch")]
    if args.iterations < 1 or args.warmup < 0 or min(b or 1 for b in batches) < 1:
        raise MinimxError("bench: --iterations and every --batch must be at least 1, "
                          "--warmup at least 0")
    about = machine()
    results = []
    total = len(backends) * len(batches) * (args.warmup + args.iterations)
    with tqdm(total=total, desc=m.name, unit="forward", disable=args.quiet) as progress:
        for backend in backends:
            for batch in batches:
                progress.set_postfix_str(backend if batch is None else f"{backend}, batch {batch}")
                results.append(measure(m, shapes, backend, batch, args.warmup,
                                       args.iterations, progress))
    print(table(results, about))
    if args.json:
        record = {"model": m.name, "shapes": shapes, "machine": about,
                  "warmup": args.warmup, "iterations": args.iterations,
                  "results": [asdict(r) for r in results]}
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    return 0


def add_parsers(commands: argparse._SubParsersAction, *parents: argparse.ArgumentParser
                ) -> None:
    p = commands.add_parser("bench", parents=list(parents),
                            help="throughput and latency per backend and batch size")
    p.add_argument("--backend", default="NONE,DNNL" if onednn.available() else "NONE",
                   help="comma-separated subgraph backends (default NONE,DNNL)")
    p.add_argument("--batch", default=None,
                   help="comma-separated batch sizes, put on the first axis of every input "
                        "(default: the shapes as given)")
    p.add_argument("--warmup", type=int, default=5, help="untimed forwards first (default 5)")
    p.add_argument("--iterations", type=int, default=20,
                   help="timed forwards per backend and batch (default 20)")
    p.add_argument("--json", metavar="OUT.json", help="also write the results there")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=bench)
