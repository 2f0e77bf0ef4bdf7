"""minimx's INT8 convolution kernels against oneDNN's, alone, per MobileNet layer.

The 1x1 kernel (`onednn.pw8_conv`) on MobileNet v2's expansions (16 to 160
channels to six times as many, on the int8 outputs of its linear
projections, and its last 320 to 1280), on MobileNet v1's twofold ones (32
to 512 channels, uint8 data) and on layers it leaves to oneDNN (v1's 512 to
1024 and 1024 to 1024, v2's 32 to 32), against oneDNN's `brgconv_1x1`; the
depthwise 3x3 kernel (`onednn.dw8_conv`) on MobileNet v1's and v2's
depthwise layers, against oneDNN's `brdgmm_dw`. Each convolution is built
both ways as the DNNL INT8 lowering runs it (int32 bias, the
requantization factor per channel, uint8 dst) and timed by its plan in C
(`Plan.run`'s times, the step waited for), the two alternating; both must
give the same integers, which the script checks. Prints the median
microseconds of each and the ratio, with oneDNN's implementation.

Run: python benchmarks/int8_kernels.py [--rounds 30] [--iters 20] [--batches 1 16]
"""
from __future__ import annotations

import argparse
import os
import statistics
from typing import NamedTuple

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402

from minimx import onednn  # noqa: E402


class Layer(NamedTuple):
    kernel: str    # "pw8" (1x1) or "dw8" (depthwise 3x3, padding 1)
    k: int         # input channels
    oc: int        # output channels
    size: int
    stride: int
    dtype: type    # the data's


LAYERS = [Layer("pw8", 16, 96, 112, 1, np.int8), Layer("pw8", 24, 144, 56, 1, np.int8),
          Layer("pw8", 32, 192, 28, 1, np.int8), Layer("pw8", 64, 384, 14, 1, np.int8),
          Layer("pw8", 96, 576, 14, 1, np.int8), Layer("pw8", 160, 960, 7, 1, np.int8),
          Layer("pw8", 320, 1280, 7, 1, np.int8),
          Layer("pw8", 32, 64, 112, 1, np.uint8), Layer("pw8", 64, 128, 56, 1, np.uint8),
          Layer("pw8", 128, 256, 28, 1, np.uint8), Layer("pw8", 256, 512, 14, 1, np.uint8),
          Layer("pw8", 512, 1024, 7, 1, np.uint8), Layer("pw8", 1024, 1024, 7, 1, np.uint8),
          Layer("pw8", 32, 32, 112, 1, np.uint8),
          Layer("dw8", 32, 32, 112, 1, np.uint8), Layer("dw8", 64, 64, 112, 2, np.uint8),
          Layer("dw8", 128, 128, 56, 1, np.uint8), Layer("dw8", 256, 256, 28, 1, np.uint8),
          Layer("dw8", 512, 512, 14, 1, np.uint8), Layer("dw8", 144, 144, 56, 1, np.uint8)]


def plan_of(layer: Layer, x: np.ndarray, w: np.ndarray, bias: np.ndarray,
            factor: np.ndarray, own: bool) -> tuple[onednn.Plan, str]:
    """A plan of the one convolution (after the input's reorder), and its kernel."""
    dst = np.dtype(np.uint8)
    dw = layer.kernel == "dw8"
    if own and dw:
        op = onednn.dw8_conv(x.shape, stride=layer.stride, bias=True, relu=False, dst_dtype=dst)
    elif own:
        op = onednn.pw8_conv(x.shape, layer.oc, src_dtype=x.dtype, bias=True, relu=False,
                             dst_dtype=dst)
    else:
        per_channel = onednn.MemoryDesc.ordered((1, layer.oc, 1, 1), "acdb",
                                                np.dtype(np.float32))
        op = onednn.conv(x.shape, w.shape, bias=True, stride=(layer.stride,) * 2,
                         pad=(1, 1) if dw else None, num_group=layer.k if dw else 1,
                         post_ops=[onednn.PostOp.binary(per_channel, "mul")],
                         int8=onednn.Int8(src=x.dtype, dst=dst, bias=np.int32,
                                          src_scale=False, weight_scales=None,
                                          dst_scale=False))
    plan = onednn.Plan(layer.kernel)
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
               if name.startswith(("conv", "pw8_conv", "dw8_conv")))
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
        raise SystemExit("this build has no INT8 kernels (the CPU has no AVX512-VNNI)")
    print(f"oneDNN {onednn.version()} on {onednn.isa()}; "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; median us of the step")
    rng = np.random.default_rng(0)
    for batch in args.batches:
        for layer in LAYERS:
            info = np.iinfo(layer.dtype)
            x = rng.integers(info.min, info.max + 1,
                             (batch, layer.k, layer.size, layer.size)).astype(layer.dtype)
            wshape = (layer.oc, 1, 3, 3) if layer.kernel == "dw8" else (layer.oc, layer.k, 1, 1)
            w = rng.integers(-127, 128, wshape).astype(np.int8)
            bias = rng.integers(-40000, 40000, layer.oc).astype(np.int32)
            # outputs mostly within uint8's range however many products a sum has
            products = 9 if layer.kernel == "dw8" else layer.k
            factor = (rng.uniform(0.5, 1.5, layer.oc) / (10 * max(products, 30))).astype(
                np.float32)
            plans = {own: plan_of(layer, x, w, bias, factor, own) for own in (False, True)}
            theirs, ours = (plans[own][0].run([x])[0] for own in (False, True))
            what = (f"{layer.kernel} {layer.k:3d} -> {layer.oc:3d} at "
                    f"{layer.size:3d}x{layer.size:<3d} stride {layer.stride} "
                    f"{np.dtype(layer.dtype).name:5s}")
            if not np.array_equal(theirs, ours):
                raise SystemExit(f"{what}: the two kernels' integers differ")
            runs: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.rounds if batch == 1 else max(3, args.rounds // 6)):
                for own in (False, True):
                    runs[own].append(step_us(plans[own][0], x, args.iters))
            one, own = statistics.median(runs[False]), statistics.median(runs[True])
            print(f"batch {batch:2d} {what}: oneDNN {one:8.1f} ({plans[False][1]}), "
                  f"minimx {own:8.1f}: x{one / own:.2f}", flush=True)


if __name__ == "__main__":
    main()
