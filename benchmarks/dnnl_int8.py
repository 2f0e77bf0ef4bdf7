"""INT8 and bfloat16 against fp32 convolution in oneDNN, per ResNet-50 v1 layer shape.

For the 3x3 and 1x1 convolution shapes of ResNet-50 v1's four stages, at
batch 1 and 16, builds one convolution with bias and relu in each precision -
fp32; bf16 (where oneDNN's ISA has it) as the bf16 DNNL subgraphs run it;
and INT8 as the DNNL INT8 lowering will run it (u8 src, s8 weights
quantized per output channel, u8 dst, src/weights/dst scales bound at
execution), and INT8 as the DNNL backend lowers MXNet's quantized
convolution ("lowered": no scales, int32 bias, the requantization factor
as a per-channel binary post-op) - and times them in alternating rounds. Prints the median time
of each, its multiply-accumulates per second (the largest of a precision is
about the most this CPU gives it: how near a whole model comes to that is
how much a faster kernel could still gain), the ratio, and the
implementation oneDNN chose for each (its impl_info_str:
``brgconv:avx512_core_amx`` means AMX tiles).

Run: python benchmarks/dnnl_int8.py [--rounds 7] [--iters 5] [--batches 1 16]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402

from minimx import onednn  # noqa: E402

# (in channels, out channels, kernel, size): each stage's 3x3 convolution,
# and its bottleneck's 1x1 reduction and expansion.
LAYERS = [(64, 64, 3, 56), (128, 128, 3, 28), (256, 256, 3, 14), (512, 512, 3, 7),
          (256, 64, 1, 56), (64, 256, 1, 56), (512, 128, 1, 28), (128, 512, 1, 28),
          (1024, 256, 1, 14), (256, 1024, 1, 14), (2048, 512, 1, 7), (512, 2048, 1, 7)]
RELU = [onednn.PostOp.eltwise("relu")]


def alone(op: onednn.Primitive, src: np.ndarray, weights: onednn.Memory,
          **scales: np.ndarray) -> Callable[[], object]:
    """A run of `op` alone: src already in its layout, dst a buffer of its own."""
    plan = onednn.Plan(op.kind)
    plan.add(op, dst=plan.constant(onednn.Memory.allocate(op.desc("dst"))),
             src=plan.constant(onednn.to_layout(src, op.desc("src"))),
             weights=plan.constant(weights),
             **{name: plan.constant(value) for name, value in scales.items()})
    return lambda: plan.run([])


def layer_runs(n: int, c: int, o: int, k: int, size: int, rng: np.random.Generator
               ) -> dict[str, tuple[Callable[[], object], str]]:
    """The fp32, bf16 (where oneDNN's ISA has it) and INT8 runs of one layer,
    with the implementation of each."""
    shape, wshape = (n, c, size, size), (o, c, k, k)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal(wshape) / np.sqrt(k * k * c)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    fp32 = onednn.conv(shape, wshape, pad=k // 2, bias=True, post_ops=RELU)
    int8 = onednn.conv(onednn.MemoryDesc.any(shape, np.uint8), wshape, pad=k // 2, bias=True,
                       post_ops=RELU,
                       int8=onednn.Int8(dst=np.uint8, weight_scales="channel"))
    w_scales = (np.abs(w).reshape(o, -1).max(1) / 127).astype(np.float32)
    x_u8 = rng.integers(0, 256, shape).astype(np.uint8)
    one = np.array([0.02], np.float32)
    # As the DNNL backend lowers MXNet's quantized convolution: no scales, an int32
    # bias, the requantization factor per channel as a binary post-op (exact).
    factor = (1, o, 1, 1)
    lowered = onednn.conv(onednn.MemoryDesc.any(shape, np.uint8), wshape, pad=k // 2,
                          bias=True, post_ops=[onednn.PostOp.binary(factor, "mul"), *RELU],
                          int8=onednn.Int8(dst=np.uint8, bias=np.int32, src_scale=False,
                                           weight_scales=None, dst_scale=False))
    w_s8 = np.clip(np.rint(w / w_scales.reshape(-1, 1, 1, 1)), -128, 127).astype(np.int8)
    runs = {
        "fp32": (alone(fp32, x, onednn.constant(fp32, "weights", w), bias=b), fp32.impl),
        "int8": (alone(int8, x_u8, onednn.constant(int8, "weights", w, scales=w_scales),
                       bias=b, src_scale=one, weights_scale=w_scales, dst_scale=one),
                 int8.impl),
        "lowered": (alone(lowered, x_u8, onednn.constant(lowered, "weights", w_s8),
                          bias=(b * 100).astype(np.int32),
                          post0_src1=(one * w_scales).reshape(factor)), lowered.impl),
    }
    if onednn.bf16_native():
        bf16 = onednn.conv(shape, wshape, pad=k // 2, bias=True, post_ops=RELU,
                           dtype=onednn.BFLOAT16)
        runs["bf16"] = (alone(bf16, x.astype(onednn.BFLOAT16),
                              onednn.constant(bf16, "weights", w), bias=b), bf16.impl)
    return runs


def median_times(runs: dict[str, tuple[Callable[[], object], str]], rounds: int,
                 iters: int) -> dict[str, float]:
    """Median seconds per run of each, timed in alternating rounds."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (run, _impl) in runs.items():
            run()
            for _ in range(iters):
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    args = parser.parse_args()
    onednn.require()
    rng = np.random.default_rng(0)
    print(f"oneDNN {onednn.version()} ({onednn.isa()}), OMP_NUM_THREADS="
          f"{os.environ['OMP_NUM_THREADS']}; median ms per convolution (bias + relu)")
    for n in args.batches:
        total: dict[str, float] = {}
        peak: dict[str, float] = {}
        for c, o, k, size in LAYERS:
            runs = layer_runs(n, c, o, k, size, rng)
            t = median_times(runs, args.rounds, args.iters)
            gmacs = n * o * c * k * k * size * size / 1e9
            for name in t:
                total[name] = total.get(name, 0.0) + t[name]
                peak[name] = max(peak.get(name, 0.0), gmacs / t[name])
            line = " | ".join(f"{name} {t[name] * 1e3:7.3f} ({gmacs / t[name]:5.0f} GMAC/s) "
                              f"x{t['fp32'] / t[name]:4.2f}"
                              for name in ("bf16", "int8") if name in t)
            impls = " / ".join(runs[name][1] for name in ("fp32", "bf16", "int8") if name in runs)
            print(f"batch {n:2d} {k}x{k} {c:4d}->{o:<4d} {size:2d}x{size:<2d}: "
                  f"fp32 {t['fp32'] * 1e3:7.3f} ({gmacs / t['fp32']:5.0f} GMAC/s) | {line} | "
                  f"lowered {t['lowered'] * 1e3:7.3f} | {impls}", flush=True)
        print(f"batch {n:2d} all layers, ms: "
              + ", ".join(f"{name} {total[name] * 1e3:.2f}" for name in total)
              + "; largest GMAC/s: " + ", ".join(f"{name} {peak[name]:.0f}" for name in peak),
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
