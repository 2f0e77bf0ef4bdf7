"""How oneDNN's convolutions speed up from one OpenMP thread to two, per precision.

The INT8 and bfloat16 goals assume that a second core doubles what AMX's
tiles compute, as it doubles float32's FMAs. This script checks that on the
layers the benchmarked CNNs spend their time in (ResNet-50's stages,
MobileNet v1's wide 1x1 convolutions): each layer alone as a oneDNN plan
(NHWC, bias and relu fused; INT8 as MXNet quantizes it, u8 in and out, s8
weights with a scale per output channel), in float32, bfloat16 and INT8, at
the given batches, its convolution step timed by the plan in C (median of
--runs runs, caches hot). A child process does all of them with
OMP_NUM_THREADS=1, another with 2 (oneDNN fixes a primitive's thread count
when it is made, so the two cannot share a process); the two alternate in
--rounds rounds, after the machine's quiet check. Each child also measures
roofline.py's peak loops on its threads: what the vector units and the tiles
do with no memory traffic at all.

Printed per layer: microseconds on one and on two threads (medians over the
rounds), and the speed-up, with its lowest and highest over the rounds
(round k's one-thread run against round k's two-thread run).

Run: python benchmarks/amx_threads.py [--batches 1 16] [--rounds 5] [--runs 20]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np
from dnnl_throughput import closing_check, quiet_check, wait_quiet
from roofline import AMX, measure

from minimx import onednn
from minimx.onednn import Int8, MemoryDesc, PostOp

# (what it is, input channels, output channels, height and width, kernel)
LAYERS = [
    ("ResNet-50 stage 1, 1x1", 64, 256, 56, 1),
    ("ResNet-50 stage 1, 3x3", 64, 64, 56, 3),
    ("ResNet-50 stage 3, 3x3", 256, 256, 14, 3),
    ("ResNet-50 stage 4, 3x3", 512, 512, 7, 3),
    ("ResNet-50 stage 4, 1x1", 2048, 512, 7, 1),
    ("MobileNet v1 14x14, 1x1", 512, 512, 14, 1),
    ("MobileNet v1 7x7, 1x1", 1024, 1024, 7, 1),
]
SRC_TYPES = {"float32": onednn.FLOAT32, "bfloat16": onednn.BFLOAT16, "int8": np.dtype(np.uint8)}


def conv_plan(batch: int, c: int, oc: int, size: int, kernel: int, precision: str
              ) -> onednn.Plan:
    """One convolution (bias, relu) of `precision` on NHWC data, its input
    converted from a float32 array by the plan's first step."""
    shape = (batch, c, size, size)
    weight_shape = (oc, c, kernel, kernel)
    src = MemoryDesc.ordered(shape, "acdb", SRC_TYPES[precision])
    int8 = precision == "int8"
    op = onednn.conv(src, weight_shape, pad=kernel // 2, bias=True, dst_layout="acdb",
                     post_ops=[PostOp.eltwise("relu")],
                     **({"int8": Int8(dst=np.uint8, weight_scales="channel")} if int8
                        else {"dtype": SRC_TYPES[precision]}))
    rng = np.random.default_rng(0)
    w = rng.standard_normal(weight_shape).astype(np.float32) / np.sqrt(c * kernel * kernel)
    scales = np.full(oc, 1 / 64, np.float32)
    plan = onednn.Plan()
    x = plan.reorder(plan.input(shape), src)
    args = {"src": x, "bias": plan.constant(np.zeros(oc, np.float32))}
    if int8:
        args.update(weights=plan.constant(onednn.constant(op, "weights", w, scales=scales)),
                    src_scale=plan.constant(np.array([0.1], np.float32)),
                    weights_scale=plan.constant(scales),
                    dst_scale=plan.constant(np.array([1.0], np.float32)))
    else:
        args["weights"] = plan.constant(onednn.constant(op, "weights", w))
    plan.output(plan.add(op, **args))
    return plan


def conv_step(plan: onednn.Plan) -> int:
    """The index of the plan's convolution step."""
    return next(i for i, (_, kind) in enumerate(plan.run_names()) if kind.startswith("conv"))


def conv_us(plan: onednn.Plan, data: np.ndarray, runs: int) -> float:
    """The median microseconds of the plan's convolution step over `runs` runs."""
    times = np.zeros(2 * plan.step_runs, np.int64)
    step = conv_step(plan)
    plan.run([data], times=times)
    spans = []
    for _ in range(runs):
        plan.run([data], times=times)
        spans.append((times[2 * step + 1] - times[2 * step]) / 1e3)
    return statistics.median(spans)


def child(batches: list[int], runs: int) -> dict[str, float]:
    """Every layer's time in every precision and batch on this process's threads,
    and the peak loops' GMAC/s, keyed as `main` prints them."""
    out = {f"peak {p}": rate for p, rate in measure().items()}
    for batch in batches:
        for name, c, oc, size, kernel in LAYERS:
            data = np.abs(np.random.default_rng(1).standard_normal(
                (batch, c, size, size))).astype(np.float32)
            for precision in SRC_TYPES:
                plan = conv_plan(batch, c, oc, size, kernel, precision)
                kind = plan.run_names()[conv_step(plan)][1]
                out[f"{name}|{batch}|{precision}|{kind}"] = conv_us(
                    plan, data, runs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.batches, args.runs)))
        return
    quiet_check()
    rounds: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    command = [sys.executable, __file__, "--child", "--runs", str(args.runs), "--batches",
               *map(str, args.batches)]
    for _ in range(args.rounds):
        for threads in rounds:
            wait_quiet()
            result = subprocess.run(command, capture_output=True, text=True, check=True,
                                    env={**os.environ, "OMP_NUM_THREADS": str(threads)})
            rounds[threads].append(json.loads(result.stdout))
    print(f"median over {args.rounds} rounds alternating one and two OpenMP threads; "
          "speed-up = one thread's time / two threads' (lowest-highest over the rounds)")
    for key in rounds[1][0]:
        one = [r[key] for r in rounds[1]]
        two = [r[key] for r in rounds[2]]
        if key.startswith("peak"):
            label = "tile loop" if key.removeprefix("peak ") in AMX else "vector loop"
            print(f"{key} ({label}): {statistics.median(one):.0f} GMAC/s on one thread, "
                  f"{statistics.median(two):.0f} on two")
            continue
        name, batch, precision, kernel = key.split("|")
        ups = [a / b for a, b in zip(one, two, strict=True)]
        print(f"{name:24} batch {batch:>2} {precision:8} {kernel:36} "
              f"1T {statistics.median(one):8.0f} us  2T {statistics.median(two):8.0f} us  "
              f"x{statistics.median(ups):.2f} ({min(ups):.2f}-{max(ups):.2f})")
    closing_check()


if __name__ == "__main__":
    main()
