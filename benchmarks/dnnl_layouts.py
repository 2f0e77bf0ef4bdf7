"""The DNNL backend's layout and kernel choices, each on against off, in alternating rounds.

Thirteen choices, each timed where it acts (img/s, batch / median forward time):
- ``blocked``: depthwise networks' float32 convolutions in 16-channel blocks
  (`conv_layout.blocked_types`) against NHWC
  (MINIMX_DNNL_BLOCKED_LAYOUT=0); fp32 MobileNets, and ResNet-50, which it
  must leave alone;
- ``blocked-bf16``: the same in bfloat16, where every convolution writes
  whole blocks; bf16 MobileNet v1, and v2, which it must leave alone;
- ``bf16-dw-bias``: bf16 depthwise convolutions with the bias that gets
  oneDNN's brdgmm kernel (`onednn.conv`) against a float32 bias always; bf16
  MobileNets;
- ``first-conv``: a first convolution whose output fits in the L2 cache
  reading NCHW (`conv_layout.conv_in_network_layout`) against NHWC always;
  INT8 MobileNets, from the checkpoints `dnnl_int8_models.py` writes to --dir
  (skipped where they are missing);
- ``batch-parts``, ``batch-parts-bf16``, ``batch-parts-int8``: a large
  batch's first layers run once per part of it (`batch_parts`) against every
  layer on the whole batch (MINIMX_DNNL_BATCH_PARTS=0); at batch 1 there is
  nothing to split (run them with --batches 16);
- ``depthwise-int8``: INT8 depthwise convolutions by minimx's kernel
  (`onednn.dw8_conv`) against oneDNN's (MINIMX_DNNL_DEPTHWISE_INT8=0); INT8
  MobileNets, from the checkpoints in --dir;
- ``pointwise-int8``: INT8 1x1 convolutions expanding their channels by
  minimx's kernel (`onednn.pw8_conv`) against oneDNN's
  (MINIMX_DNNL_POINTWISE_INT8=0); INT8 MobileNets, from the checkpoints in --dir;
- ``nhwc-input``, ``nhwc-input-bf16``: the three-channel input made NHWC by
  minimx's kernel (`onednn.nhwc_input`) against oneDNN's reorder
  (MINIMX_DNNL_NHWC_INPUT=0); INT8 and bf16 MobileNets;
- ``first-conv-int8``: an INT8 graph's float32 first convolution and its
  quantizing by minimx's kernel (`onednn.first_conv`) against oneDNN's three
  steps (MINIMX_DNNL_FIRST_CONV_INT8=0); INT8 MobileNets;
- ``pointwise-depthwise``: float32 1x1 convolutions and the depthwise ones
  reading them by minimx's kernel (`onednn.pwdw_conv`) against oneDNN's two
  primitives (MINIMX_DNNL_POINTWISE_DEPTHWISE=0); fp32 MobileNet v2, and v1,
  which it must leave alone (its 1x1 convolutions expand too little).
Each variant runs in a fresh process per round (the choices are made when a
plan compiles), the two alternating, after the machine's quiet check. fp32
and bf16 models are minimx's zoo symbols with random weights
(`dnnl_throughput.Minimx`).

Run: python benchmarks/dnnl_layouts.py [--choices blocked blocked-bf16 bf16-dw-bias
     first-conv batch-parts batch-parts-bf16 batch-parts-int8 depthwise-int8
     pointwise-int8 nhwc-input nhwc-input-bf16 first-conv-int8 pointwise-depthwise]
     [--batches 1 16]
     [--rounds 3]
     [--dir /tmp/minimx_int8_models]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

from dnnl_throughput import HERE, closing_check, quiet_check, wait_quiet  # noqa: E402

# What turns each choice off in the child: an environment variable, or a line
# run before the model is bound.
OFF = {
    **dict.fromkeys(["blocked", "blocked-bf16"], ({"MINIMX_DNNL_BLOCKED_LAYOUT": "0"}, "")),
    "bf16-dw-bias": ({}, "import minimx.onednn.primitives as p; p.DEPTHWISE_BF16_KERNEL = ''"),
    "first-conv": ({}, "import minimx.backends.dnnl.conv_layout as c; "
                       "c.l2_cache_bytes = lambda: 0"),
    **dict.fromkeys(["batch-parts", "batch-parts-bf16", "batch-parts-int8"],
                    ({"MINIMX_DNNL_BATCH_PARTS": "0"}, "")),
    "depthwise-int8": ({"MINIMX_DNNL_DEPTHWISE_INT8": "0"}, ""),
    "pointwise-int8": ({"MINIMX_DNNL_POINTWISE_INT8": "0"}, ""),
    **dict.fromkeys(["nhwc-input", "nhwc-input-bf16"], ({"MINIMX_DNNL_NHWC_INPUT": "0"}, "")),
    "first-conv-int8": ({"MINIMX_DNNL_FIRST_CONV_INT8": "0"}, ""),
    "pointwise-depthwise": ({"MINIMX_DNNL_POINTWISE_DEPTHWISE": "0"}, ""),
}
CNNS = ["mobilenet1.0", "mobilenetv2_1.0", "resnet18_v1", "resnet50_v1"]
MODELS = {
    "blocked": ("fp32", ["mobilenet1.0", "mobilenetv2_1.0", "resnet50_v1"]),
    "blocked-bf16": ("bf16", ["mobilenet1.0", "mobilenetv2_1.0"]),
    "bf16-dw-bias": ("bf16", ["mobilenet1.0", "mobilenetv2_1.0"]),
    "first-conv": ("int8", ["mobilenet1.0", "mobilenetv2_1.0"]),
    "batch-parts": ("fp32", CNNS),
    "batch-parts-bf16": ("bf16", ["mobilenet1.0", "resnet50_v1"]),
    "batch-parts-int8": ("int8", CNNS),
    "depthwise-int8": ("int8", ["mobilenet1.0", "mobilenetv2_1.0"]),
    "pointwise-int8": ("int8", ["mobilenet1.0", "mobilenetv2_1.0"]),
    "nhwc-input": ("int8", ["mobilenet1.0", "mobilenetv2_1.0"]),
    "nhwc-input-bf16": ("bf16", ["mobilenet1.0", "mobilenetv2_1.0"]),
    "first-conv-int8": ("int8", ["mobilenet1.0", "mobilenetv2_1.0"]),
    "pointwise-depthwise": ("fp32", ["mobilenet1.0", "mobilenetv2_1.0"]),
}

# The child: bind `model` at `batch` in `precision`, run `iters` timed forwards,
# print img/s.
CHILD = """
import statistics, sys, time
sys.path.insert(0, {here!r})
{setup}
import numpy as np
import minimx as mx
from dnnl_throughput import Minimx
model, batch, precision, iters, int8_dir = {args!r}
if precision == "int8":
    sym, args, auxs = mx.model.load_checkpoint(f"{{int8_dir}}/{{model}}-int8", 0)
    shape = (batch, 3, 224, 224)
    ex = mx.subgraph.partition(sym, "DNNL", shapes={{"data": shape}}).simple_bind(
        mx.cpu(), grad_req="null", data=shape)
    for name, arr in {{**ex.arg_dict, **ex.aux_dict}}.items():
        arr[:] = args[name] if name in args else auxs[name] if name in auxs else \\
            np.random.default_rng(0).random(arr.shape, np.float32)
else:
    ex = Minimx(model, batch, "DNNL", **({{"dtype": "bfloat16"}} if precision == "bf16"
                                         else {{}})).ex
times = []
for _ in range(iters + 3):
    start = time.perf_counter()
    ex.forward(is_train=False)[0].wait_to_read()
    times.append(time.perf_counter() - start)
print(batch / statistics.median(times[3:]))
"""


def img_per_s(choice: str, on: bool, model: str, batch: int, precision: str,
              int8_dir: Path) -> float:
    """One round: a fresh process binds the model with `choice` on or off."""
    env, setup = ({}, "") if on else OFF[choice]
    code = CHILD.format(here=str(HERE), setup=setup,
                        args=(model, batch, precision, 300 if batch == 1 else 20,
                              str(int8_dir)))
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--choices", nargs="+", choices=list(OFF), default=list(OFF))
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/minimx_int8_models"))
    args = parser.parse_args()
    quiet_check()
    print("img/s, median of the rounds; each round runs off, then on")
    for choice in args.choices:
        precision, models = MODELS[choice]
        for model in models:
            if precision == "int8" and not (args.dir / f"{model}-int8-symbol.json").exists():
                print(f"{choice:16s} {model}: no INT8 checkpoint in {args.dir} "
                      "(benchmarks/dnnl_int8_models.py writes them)")
                continue
            for batch in args.batches:
                runs: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(args.rounds):
                    for on in (False, True):
                        wait_quiet()
                        runs[on].append(img_per_s(choice, on, model, batch, precision,
                                                  args.dir))
                off, on = statistics.median(runs[False]), statistics.median(runs[True])
                print(f"{choice:16s} {precision} {model:16s} batch {batch:2d}: "
                      f"off {off:7.1f}, on {on:7.1f} (x{on / off:.2f})", flush=True)
    closing_check()


if __name__ == "__main__":
    main()
