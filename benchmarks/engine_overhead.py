"""Engine overhead: operations per second through each engine vs a plain loop.

Four workloads, each N operations:
- chain / no-op:       every op reads and writes one variable (fully serial)
- independent / no-op: every op writes its own variable (no dependencies)
- chain / add16:       ``np.add(c, a, out=c)`` on 16x16 float32, one variable
- independent / add16: ``np.add(a, b, out=c_i)``, each op its own output
Timing runs from the first push to the return of wait_for_all; the plain loop
calls the same functions directly. The best of --repeat runs is reported.

    python benchmarks/engine_overhead.py [--ops 20000] [--workers 1 2 4] [--repeat 3]
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from minimx.base import settings
from minimx.engine import Engine, NaiveEngine, ThreadedEngine

Op = tuple[Callable[[], object], list, list]  # fn, const vars, mutable vars


def workloads(n: int, eng: Engine) -> dict[str, list[Op]]:
    """Each workload as the list of (fn, reads, writes) to push, with fresh variables."""
    def noop() -> None:
        pass

    chain_var = eng.new_variable()
    a, b = np.ones((16, 16), np.float32), np.ones((16, 16), np.float32)
    acc = np.zeros((16, 16), np.float32)
    va, vb, vacc = eng.new_variable(), eng.new_variable(), eng.new_variable()
    outs = np.zeros((n, 16, 16), np.float32)

    def add_into(i: int) -> Callable[[], object]:
        out = outs[i]
        return lambda: np.add(a, b, out=out)

    return {
        "chain / no-op": [(noop, [chain_var], [chain_var])] * n,
        "independent / no-op": [(noop, [], [eng.new_variable()]) for _ in range(n)],
        "chain / add16": [(lambda: np.add(acc, a, out=acc), [va], [vacc])] * n,
        "independent / add16": [(add_into(i), [va, vb], [eng.new_variable()]) for i in range(n)],
    }


def time_engine(eng: Engine, ops: list[Op]) -> float:
    push = eng.push
    start = time.perf_counter()
    for fn, reads, writes in ops:
        push(fn, reads, writes)
    eng.wait_for_all()
    return time.perf_counter() - start


def time_loop(ops: list[Op]) -> float:
    start = time.perf_counter()
    for fn, _, _ in ops:
        fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--workers", type=int, nargs="+",
                        default=sorted({1, settings().cpu_worker_nthreads, 4}))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    makers: dict[str, Callable[[], Engine]] = {"NaiveEngine": NaiveEngine}
    for w in args.workers:
        makers[f"Threaded({w})"] = lambda w=w: ThreadedEngine(num_workers=w)
    columns = ["plain loop", *makers]
    rates: dict[str, dict[str, float]] = {}
    for label, make in [("plain loop", None), *makers.items()]:
        eng = make() if make else NaiveEngine()  # the loop only needs variables
        for _ in range(args.repeat):
            for name, ops in workloads(args.ops, eng).items():
                took = time_loop(ops) if make is None else time_engine(eng, ops)
                best = rates.setdefault(name, {})
                best[label] = max(best.get(label, 0.0), args.ops / took)
        eng.shutdown()

    print(f"engine overhead: {args.ops} ops per run, best of {args.repeat}; "
          f"k ops/s (us per op)")
    print(f"{'workload':<22}" + "".join(f"{c:>20}" for c in columns))
    for name, row in rates.items():
        cells = "".join(f"{row[c] / 1e3:>12.1f} ({1e6 / row[c]:>5.1f})" for c in columns)
        print(f"{name:<22}{cells}")


if __name__ == "__main__":
    main()
