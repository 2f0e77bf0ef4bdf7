"""How fast any runtime could run a model on this CPU: its peak rates, and the floor they set.

A CNN's time goes into its convolutions and fully connected layers, whose
multiply-accumulates (MACs) no runtime can do faster than the CPU's vector
units allow. `peaks` measures that rate per precision, on all OpenMP threads
(roofline.c: float32 FMA, bfloat16 dot products, INT8 VNNI, and AMX's tile
dot products where the CPU has them), compiled for
this CPU with cffi at first use (a C compiler with OpenMP is needed). `macs`
counts a graph's MACs by precision: an MXNet INT8 checkpoint's quantized
nodes in int8, the rest in the float precision it runs in. Their quotient,
`floor_ms`, is the least time a forward can take: counting only MACs (no
memory traffic, no other operator), so it is a bound, not an estimate, for
any runtime that computes every product of a direct convolution, as
oneDNN's INT8 and bfloat16 kernels and MXNet's do. (Winograd, which minimx
runs for float32 3x3 convolutions, computes fewer and can beat the float32
floor.) The model scripts print, beside a measured ratio, the largest ratio
over the same peer that this floor allows (`floor_line`).

Where oneDNN dispatches to AMX, its INT8 and bfloat16 convolutions run on
tiles, and the tile loops give those two precisions' peaks (its depthwise
kernels stay on vectors, which are slower, so the floor still bounds them).
On the Intel VM of 2026-11-29 the tile rate moved between runs minutes
apart (INT8 2035 to 5408 GMAC/s on two threads) while float32's read
150-175 but once 111; the model scripts print the rates at their start.

Run: python benchmarks/roofline.py [--models resnet50_v1 ...] [--json]
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import minimx as mx  # noqa: E402
from minimx import onednn  # noqa: E402

SOURCE = Path(__file__).with_name("roofline.c")
PRECISIONS = ("float32", "bfloat16", "int8")
AMX = ("amx_bfloat16", "amx_int8")   # the tile loops, standing for these precisions with AMX
ITERATIONS = 20_000_000   # per thread and run: some 0.1 s of float32 FMAs
AMX_ITERATIONS = ITERATIONS // 5   # each of their iterations takes about 5 times as long
RUNS = 5                  # the best run counts: the others were interrupted
CONV_OPS = {"Convolution", "_sg_mkldnn_conv", "_sg_dnnl_conv"}
FC_OPS = {"FullyConnected", "_sg_mkldnn_fully_connected", "_sg_dnnl_fully_connected"}


def _compiled():
    """The cffi module of roofline.c, built once per source (in the temp directory)."""
    import cffi
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    name = f"_minimx_roofline_{digest}"
    where = Path(tempfile.gettempdir(), "minimx-roofline")
    built = list(where.glob(f"{name}*.so"))
    if not built:
        ffi = cffi.FFI()
        ffi.cdef("".join(f"double peak_{p}(long iterations);" for p in PRECISIONS + AMX))
        ffi.set_source(name, SOURCE.read_text(), extra_compile_args=["-O2", "-march=native",
                                                                     "-fopenmp"],
                       extra_link_args=["-fopenmp"])
        built = [Path(ffi.compile(tmpdir=str(where)))]
    spec = importlib.util.spec_from_file_location(name, built[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lib


def measure() -> dict[str, float]:
    """GMAC/s per loop (`PRECISIONS`, `AMX`) on this process's OpenMP threads (0:
    no such instruction)."""
    lib = _compiled()
    return {p: max(getattr(lib, f"peak_{p}")(AMX_ITERATIONS if p in AMX else ITERATIONS)
                   for _ in range(RUNS))
            for p in PRECISIONS + AMX}


def peaks() -> dict[str, float]:
    """GMAC/s per precision: `measure` in a child process, so that its OpenMP
    threads are not the caller's; INT8 and bfloat16 from the tile loops where
    oneDNN uses AMX; none where the loops cannot be built (no C compiler: the
    reason is printed)."""
    child = subprocess.run([sys.executable, __file__, "--json"], capture_output=True,
                           text=True)
    if child.returncode:
        print("no peak rates: roofline.c did not build or run ("
              + (child.stderr.strip().splitlines() or ["no message"])[-1] + ")")
        return {}
    rates = json.loads(child.stdout)
    if "amx" in onednn.isa():
        rates.update((p.removeprefix("amx_"), rates[p]) for p in AMX)
    return {p: rates[p] for p in PRECISIONS if rates[p] > 0}


def macs(sym: mx.sym.Symbol, data_shape: tuple[int, ...]) -> dict[str, int]:
    """The MACs of one forward of `sym` on `data_shape`: "int8" those of its
    quantized convolutions and fully connected layers, "float" the others'."""
    internals = sym.get_internals()
    _, shapes, _ = internals.infer_shape_partial(data=data_shape)
    shape_of = dict(zip(internals.list_outputs(), shapes, strict=True))
    nodes = json.loads(sym.tojson())["nodes"]

    def output(i: int) -> tuple[int, ...]:
        node = nodes[i]
        return shape_of[node["name"] if node["op"] == "null" else f"{node['name']}_output"]

    counts = {"int8": 0, "float": 0}
    for i, node in enumerate(nodes):
        if node["op"] in CONV_OPS | FC_OPS:
            weight = output(node["inputs"][1][0])
            out = output(i)
            n = (math.prod(out) * math.prod(weight[1:]) if node["op"] in CONV_OPS
                 else out[0] * math.prod(weight))
            quantized = node.get("attrs", {}).get("quantized", "false").lower() == "true"
            counts["int8" if quantized else "float"] += n
    return counts


def floor_ms(counts: dict[str, int], rates: dict[str, float], float_precision: str
             ) -> float | None:
    """The least milliseconds `counts` (as `macs` gives them) take at `rates`,
    the float MACs at the `float_precision` peak; None without the rates."""
    need = {"int8": "int8", "float": float_precision}
    if any(counts[kind] and need[kind] not in rates for kind in counts):
        return None
    return sum(n / rates[need[kind]] / 1e6 for kind, n in counts.items() if n)


def floor_line(sym: mx.sym.Symbol, shape: tuple[int, ...], rates: dict[str, float],
               float_precision: str, measured: dict[str, float], ours: str, other: str) -> str:
    """Where the measured img/s of `ours` stands against the MAC floor of `sym`
    on `shape`, and the largest ratio over `other` that the floor allows."""
    least = floor_ms(macs(sym, shape), rates, float_precision)
    if least is None:
        return "no MAC floor (peak not measured)"
    best = shape[0] / (least / 1e3)
    return (f"MAC floor {least:.2f} ms a batch: {ours} at {measured[ours] / best:.0%} of "
            f"its rate; computing every product at the floor: x{best / measured[other]:.2f} "
            f"over {other}")


def report(rates: dict[str, float]) -> None:
    """Print the peaks `peaks` measured, if any."""
    if not rates:
        return
    print("peak GMAC/s on " + os.environ["OMP_NUM_THREADS"] + " threads: "
          + ", ".join(f"{p} {r:.0f}" for p, r in rates.items())
          + (" (INT8 and bfloat16 on AMX tiles)" if "amx" in onednn.isa() else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+",
                        default=["resnet50_v1", "resnet18_v1", "mobilenet1.0", "mobilenetv2_1.0"])
    parser.add_argument("--json", action="store_true", help="print the peaks as JSON only")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure()))
        return
    rates = peaks()
    print(f"oneDNN {onednn.version()} dispatching to {onednn.isa()}")
    report(rates)
    for model in args.models if rates else []:
        counts = macs(mx.models.get_model(model), (1, 3, 224, 224))
        floors = ", ".join(f"{p} {floor_ms(counts, rates, p):.3f} ms"
                           for p in ("float32", "bfloat16") if p in rates)
        print(f"{model:16s}: {counts['float'] / 1e9:.2f} GMAC an image; "
              f"at the peaks at least {floors} an image")


if __name__ == "__main__":
    sys.exit(main())
