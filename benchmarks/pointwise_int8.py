"""minimx's INT8 1x1 kernel (`onednn.pw8_conv`) against oneDNN's, alone, per MobileNet layer.

For MobileNet v2's 1x1 expansions (16, 24 and 32 channels to six times as
many, on the int8 outputs of its linear projections) and the layers that
expand less (v1's 32 to 64 and v2's 32 to 32, on uint8 data), builds the
convolution both ways as the DNNL INT8 lowering runs it (int32 bias, the
requantization factor per channel, uint8 dst) and times each step by its
plan in C (`Plan.run`'s times, the step waited for), the two alternating.
Both must give the same integers; the script checks it. Prints the median
microseconds of each and the ratio, with oneDNN's implementation.

Run: python benchmarks/pointwise_int8.py [--rounds 30] [--iters 20] [--batches 1 16]
"""
from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402

from minimx import onednn  # noqa: E402

# (input channels, output channels, size, data type)
LAYERS = [(16, 96, 112, np.int8), (24, 144, 56, np.int8), (32, 192, 28, np.int8),
          (32, 64, 112, np.uint8), (32, 32, 112, np.uint8)]


def plan_of(x: np.ndarray, w: np.ndarray, bias: np.ndarray, factor: np.ndarray,
            own: bool) -> tuple[onednn.Plan, str]:
    """A plan of the one convolution (after the input's reorder), and its kernel."""
    dst = np.dtype(np.uint8)
    if own:
        op = onednn.pw8_conv(x.shape, w.shape[0], src_dtype=x.dtype, bias=True, relu=False,
                             dst_dtype=dst)
    else:
        per_channel = onednn.MemoryDesc.ordered((1, w.shape[0], 1, 1), "acdb",
                                                np.dtype(np.float32))
        op = onednn.conv(x.shape, w.shape, bias=True,
                         post_ops=[onednn.PostOp.binary(per_channel, "mul")],
                         int8=onednn.Int8(src=x.dtype, dst=dst, bias=np.int32,
                                          src_scale=False, weight_scales=None,
                                          dst_scale=False))
    plan = onednn.Plan("pointwise")
    src = plan.reorder(plan.input(x.shape, dtype=x.dtype), op.desc("src"))
    plan.output(plan.add(
        op, src=src, weights=plan.constant(onednn.constant(op, "weights", w)),
        bias=plan.constant(onednn.constant(op, "bias", bias)),
        post0_src1=plan.constant(onednn.constant(op, "post0_src1",
                                                 factor.reshape(1, -1, 1, 1)))))
    return plan, op.impl


def step_us(plan: onednn.Plan, x: np.ndarray, iters: int) -> float:
    """The median over `iters` runs of the convolution step's microseconds."""
    times = np.zeros(2 * plan.step_runs, np.int64)
    (step,) = (i for i, (_, name) in enumerate(plan.run_names())
               if name.startswith(("conv", "pw8_conv")))
    runs = []
    for _ in range(iters):
        plan.run([x], times=times)
        runs.append((times[2 * step + 1] - times[2 * step]) / 1e3)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args()
    if not onednn.pw8_supports((1, 16, 8, 8), (96, 16, 1, 1), np.dtype(np.int8)):
        raise SystemExit("this build has no pw8 kernel (the CPU has no AVX512-VNNI)")
    print(f"oneDNN {onednn.version()} on {onednn.isa()}; "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; median us of the step")
    rng = np.random.default_rng(0)
    for batch in args.batches:
        for k, oc, size, dtype in LAYERS:
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max + 1, (batch, k, size, size)).astype(dtype)
            w = rng.integers(-127, 128, (oc, k, 1, 1)).astype(np.int8)
            bias = rng.integers(-40000, 40000, oc).astype(np.int32)
            factor = (rng.uniform(0.5, 1.5, oc) / 300).astype(np.float32)
            plans = {own: plan_of(x, w, bias, factor, own) for own in (False, True)}
            theirs, ours = (plans[own][0].run([x])[0] for own in (False, True))
            if not np.array_equal(theirs, ours):
                raise SystemExit(f"{k}->{oc} at {size}: the two kernels' integers differ")
            runs: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.rounds if batch == 1 else max(3, args.rounds // 6)):
                for own in (False, True):
                    runs[own].append(step_us(plans[own][0], x, args.iters))
            one, own = statistics.median(runs[False]), statistics.median(runs[True])
            print(f"batch {batch:2d} {k:3d} -> {oc:3d} at {size:3d}x{size:<3d} "
                  f"{np.dtype(dtype).name:5s}: oneDNN {one:8.1f} ({plans[False][1]}), "
                  f"pw8 {own:8.1f}: x{one / own:.2f}", flush=True)


if __name__ == "__main__":
    main()
