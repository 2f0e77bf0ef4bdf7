"""How oneDNN's convolutions speed up from one OpenMP thread to two, per precision.

The INT8 and bfloat16 goals assume that a second core doubles what AMX's
tiles compute, as it doubles float32's FMAs. This script checks that on the
layers the benchmarked CNNs spend their time in (ResNet-50's stages,
MobileNet v1's wide 1x1 convolutions): each layer alone as a oneDNN plan, in
each precision of `dnnl_int8.layer_runs` (float32, INT8 with scales, INT8 as
the DNNL backend lowers MXNet's quantized convolution, bfloat16), at the
given batches (median of --runs runs, caches hot). A child process does all of them with
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
from dnnl_int8 import LAYERS as RESNET_LAYERS
from dnnl_int8 import layer_runs, median_times
from dnnl_throughput import closing_check, quiet_check, wait_quiet
from roofline import AMX, measure

# dnnl_int8.py's ResNet-50 layers (in channels, out channels, kernel, size) and
# MobileNet v1's widest 1x1 ones.
LAYERS = [*RESNET_LAYERS, (512, 512, 1, 14), (1024, 1024, 1, 7)]


def child(batches: list[int], runs: int) -> dict[str, float]:
    """Every layer's time (us) in every precision and batch on this process's
    threads (dnnl_int8.layer_runs: fp32, INT8 with scales, INT8 as the backend
    lowers it, bf16), and the peak loops' GMAC/s, keyed as `main` prints them."""
    out = {f"peak {p}": rate for p, rate in measure().items()}
    rng = np.random.default_rng(0)
    for batch in batches:
        for c, o, k, size in LAYERS:
            layer = layer_runs(batch, c, o, k, size, rng)
            times = median_times(layer, 1, runs)
            for precision, (_, impl) in layer.items():
                key = f"{c}->{o} {k}x{k} on {size}x{size}|{batch}|{precision}|{impl}"
                out[key] = times[precision] * 1e6
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
        print(f"{name:24} batch {batch:>2} {precision:8} {kernel:32} "
              f"1T {statistics.median(one):8.0f} us  2T {statistics.median(two):8.0f} us  "
              f"x{statistics.median(ups):.2f} ({min(ups):.2f}-{max(ups):.2f})")
    closing_check()


if __name__ == "__main__":
    main()
