"""Winograd F(4x4, 3x3) and F(2x2, 3x3) against oneDNN's direct convolution, per layer.

For each 3x3 stride-1 convolution shape of ResNet-50 v1 (the four stages:
56x56x64, 28x28x128, 14x14x256, 7x7x512) at the given batches, builds the
same convolution (bias, relu) three ways in NHWC, as the DNNL backend runs
them, and times them in alternating rounds; prints the median time of each,
the ratios to direct, the effective multiply-accumulates per second of the
direct convolution's arithmetic, and which way the backend picks
(minimx/backends/dnnl/winograd.py).

With --cold, each way runs round-robin over copies of itself with weights of
their own, at least 64 MB of them, so that every run reads its weights from
memory, as a forward does at batch 1 (a network's weights outgrow the
caches); without, the weights stay in cache between runs.

Run: python benchmarks/dnnl_winograd.py [--rounds 7] [--iters 5] [--batches 1 16]
     [--cold]
"""
from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import sys
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402

from minimx import onednn  # noqa: E402
from minimx.backends.dnnl.winograd import winograd_tile  # noqa: E402
from minimx.onednn.winograd import TILES  # noqa: E402

STAGES = [(64, 56), (128, 28), (256, 14), (512, 7)]   # channels, size
COLD_BYTES = 64 << 20   # weights a way cycles through with --cold
MAX_COPIES = 64


def plan_of(op: onednn.Primitive, x: np.ndarray, w: np.ndarray, b: np.ndarray
            ) -> Callable[[], object]:
    """A run of `op` alone: src already in its layout, dst a buffer of its own."""
    plan = onednn.Plan(op.kind)
    plan.add(op, dst=plan.constant(onednn.Memory.allocate(op.desc("dst"))),
             src=plan.constant(onednn.to_layout(x, op.desc("src"))),
             weights=plan.constant(onednn.constant(op, "weights", w)),
             bias=plan.constant(b))
    return lambda: plan.run([])


def runs_of(op: onednn.Primitive, x: np.ndarray, w: np.ndarray, b: np.ndarray,
            cold: bool) -> Callable[[], object]:
    """Runs of `op`: one plan, or with `cold` copies of it taken in turn, each
    with weights of its own, COLD_BYTES of them in all."""
    if not cold:
        return plan_of(op, x, w, b)
    copies = min(MAX_COPIES, math.ceil(COLD_BYTES / op.desc("weights").nbytes))
    turn = itertools.cycle([plan_of(op, x, w.copy(), b) for _ in range(copies)])
    return lambda: next(turn)()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--cold", action="store_true",
                        help="read the weights from memory at every run")
    args = parser.parse_args()
    onednn.require()
    rng = np.random.default_rng(0)
    print(f"oneDNN {onednn.version()} ({onednn.isa()}), OMP_NUM_THREADS="
          f"{os.environ['OMP_NUM_THREADS']}; weights {'from memory' if args.cold else 'in cache'}"
          "; median ms per convolution (bias + relu)")
    relu = [onednn.PostOp.eltwise("relu")]
    for n in args.batches:
        for c, size in STAGES:
            shape, wshape = (n, c, size, size), (c, c, 3, 3)
            x = rng.standard_normal(shape).astype(np.float32)
            w = (rng.standard_normal(wshape) / np.sqrt(9 * c)).astype(np.float32)
            b = rng.standard_normal(c).astype(np.float32)
            ops = {"direct": onednn.conv(shape, wshape, pad=1, bias=True, post_ops=relu),
                   **{f"F({t}x{t})": onednn.wino_conv(shape, wshape, pad=1, bias=True,
                                                      post_ops=relu, tile=t)
                      for t in TILES}}
            runs = {name: runs_of(op, x, w, b, args.cold) for name, op in ops.items()}
            times: dict[str, list[float]] = {k: [] for k in runs}
            for _ in range(args.rounds):
                for name, run in runs.items():
                    run()
                    for _ in range(args.iters):
                        start = time.perf_counter()
                        run()
                        times[name].append(time.perf_counter() - start)
            t = {name: statistics.median(v) for name, v in times.items()}
            macs = n * c * c * 9 * size * size
            tile = winograd_tile(shape, wshape, dict(stride=None, dilate=None, num_group=1,
                                                     post_ops=relu, pad=(1, 1)))
            picked = f"F({tile}x{tile})" if tile else "direct"
            cells = " | ".join(f"{name} {t[name] * 1e3:7.2f} (x{t['direct'] / t[name]:.2f})"
                               for name in runs if name != "direct")
            print(f"batch {n:2d} {c:3d}ch {size:2d}x{size:<2d}: direct {t['direct'] * 1e3:7.2f} "
                  f"({macs / t['direct'] / 1e9:5.1f} GMAC/s) | {cells}  [backend: {picked}]",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
