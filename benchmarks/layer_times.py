"""Per layer: minimx's DNNL plan against ONNX Runtime or OpenVINO, on the same model and weights.

minimx's side is its profiler (`mx.profiler` with profile_symbolic: every
primitive its DNNL plan runs, with the owner node and oneDNN's kernel, timed
by the plan in C around each step. oneDNN 3.2's own ONEDNN_VERBOSE=profile_exec
timing is not used: it added 8-18 us to each step's time, MobileNet v1 INT8
at batch 1 summing to 1347 us against 938 timed by the plan); the peer's is
its own profiler (ONNX Runtime's SessionOptions.enable_profiling, OpenVINO's
PERF_COUNT), in its venv through peer_worker.py, fp32, or bf16 for OpenVINO
with --dtype bfloat16 (minimx then runs `optimize_for(dtype="bfloat16")`).
The two alternate in --rounds rounds of --iters forwards each (the peer's
worker stays up between them): on a VM whose speed swings within seconds,
a layer's figure is only comparable with one taken in the same stretch.
Each step's figure is the median over the rounds of its --statistic over a
round's forwards (min: the fastest, which on a busy machine is closer to
what the step costs undisturbed). The k-th convolution of one is set
against the k-th of the other (a plain CNN such as MobileNet v1 or v2 runs
its convolutions in the same order everywhere); the other steps (layout
conversions, pooling, the classifier, the peer's elementwise additions) are
listed after, per kind. minimx's own convolution kernels (Winograd, the INT8
depthwise one) count as convolutions. Models come from
dnnl_throughput.exported.

Run: python benchmarks/layer_times.py [--model mobilenet1.0] [--batch 1]
     [--peer ort|openvino] [--dtype float32|bfloat16] [--iters 20] [--rounds 1]
     [--statistic median] [--models-dir DIR]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

from dnnl_throughput import SETTLE, Minimx, exported, peer_worker  # noqa: E402

import minimx as mx  # noqa: E402

Step = tuple[str, str, float]   # kind, description, microseconds (STATISTIC)
# A plan's primitive kinds as oneDNN's verbose output names them (minimx's
# own convolution kernels among the convolutions).
KINDS = dict.fromkeys(["conv", "wino_conv", "dw8_conv", "pw8_conv", "first_conv", "pwdw_conv"],
                      "convolution")
STATISTIC = {"median": statistics.median, "min": min}
PRECISIONS = {"float32": "fp32", "bfloat16": "bf16"}   # --dtype: the peer's name for it


def minimx_steps(ex: mx.executor.Executor, iters: int, stat: str = "median") -> list[Step]:
    """The steps of `ex`'s DNNL plans in order, as minimx's profiler records
    `iters` forwards (each step timed by its plan in C, waited for): (primitive
    kind, owner node and kernel, us). A plan's batch loop (its first steps run
    once per part of the batch) counts as one step each, with all parts' time."""
    with tempfile.TemporaryDirectory() as tmp:
        mx.profiler.set_config(profile_symbolic=True, filename=f"{tmp}/trace.json")
        mx.profiler.set_state("run")
        for _ in range(iters):
            ex.forward()
            ex.outputs[0].wait_to_read()
        mx.profiler.set_state("stop")
        mx.profiler.dump()
        events = json.loads(Path(f"{tmp}/trace.json").read_text())["traceEvents"]
    # The trace writes each step as a begin and an end event, one after the other.
    steps = [e for e in events if e.get("cat") == "onednn"]
    runs = [[b["args"]["op"], b["name"], e["ts"] - b["ts"]]
            for b, e in zip(steps[::2], steps[1::2], strict=True)]
    steps = []
    for (op, name), us in folded(runs, iters, stat):
        kind = op.split("[")[0]   # "conv[brgconv:avx512_core]"
        steps.append((KINDS.get(kind, kind), name, us))
    return steps


def steps_of(lines: list[str], iters: int, stat: str = "median") -> list[Step]:
    """The oneDNN steps of one forward in order, from the verbose `lines` of
    `iters` forwards (a peer's oneDNN: MXNet's): (primitive kind, shape and
    implementation, us)."""
    runs = [[*fields[:-1], float(fields[-1]) * 1e3] for fields in map(executed, lines) if fields]
    return [(fields[1], f"{fields[-1]} [{fields[2]}]", us)
            for fields, us in folded(runs, iters, stat)]


def folded(runs: list[list], iters: int, stat: str) -> list[tuple[list, float]]:
    """Per step of one forward, in order, its fields and the `stat` of its
    microseconds over `iters` forwards, from `runs`: every step run of the
    forwards, each a list of fields ending with its microseconds. A batch loop
    counts as one step each, the parts' times summed."""
    per_forward = len(runs) // iters
    length, parts = batch_loop(runs[:per_forward])
    steps = []
    for k in range(per_forward - length * (parts - 1)):
        # Where the step runs in a forward: once per part in the loop, once after it.
        at = [k + r * length for r in range(parts)] if k < length else [k + (parts - 1) * length]
        times = [sum(runs[j + i * per_forward][-1] for j in at) for i in range(iters)]
        steps.append((runs[at[0]][:-1], STATISTIC[stat](times)))
    return steps


def batch_loop(runs: list[list]) -> tuple[int, int]:
    """(steps, parts) of the batch loop a forward's step `runs` start with: the
    first `steps` of them repeated `parts` times (1, 1 without one). Of the
    repeated beginnings the one covering the most runs wins."""
    what = [tuple(fields[:-1]) for fields in runs]   # all but the time
    best = (1, 1)
    for length in range(1, len(what) // 2 + 1):
        parts = 1
        while what[parts * length:(parts + 1) * length] == what[:length]:
            parts += 1
        if parts > 1 and length * parts > best[0] * best[1]:
            best = (length, parts)
    return best


def executed(line: str) -> list[str]:
    """The fields of a oneDNN verbose line about a primitive run, from the
    engine on (engine, kind, implementation, ..., problem, milliseconds); []
    for any other line. oneDNN 3.2 writes ``onednn_verbose,exec,cpu,...``;
    later releases put ``primitive,`` before ``exec``, and then ``v1,`` before
    that (3.13: ``onednn_verbose,v1,primitive,exec,cpu,...``); oneDNN 2
    (MXNet 1.9.1's) starts with ``dnnl_verbose,exec,cpu,...``."""
    head, *fields = line.split(",")
    for tag in ("v1", "primitive"):
        if fields[:1] == [tag]:
            fields = fields[1:]
    ours = head in ("onednn_verbose", "dnnl_verbose")
    return fields[1:] if ours and fields[:1] == ["exec"] else []


def by_rounds(times: list[float], iters: int, rounds: int, stat: str) -> float:
    """The median over `rounds` rounds of the `stat` of each round's `iters`
    times, from a step's `times` in every forward (the last iters * rounds
    are the timed ones; warm-up forwards come before them)."""
    timed = times[len(times) - iters * rounds:]
    return statistics.median(STATISTIC[stat](timed[r * iters:(r + 1) * iters])
                             for r in range(rounds))


def ort_steps(prefix: str, iters: int, rounds: int, stat: str) -> list[Step]:
    """ONNX Runtime's nodes in order, from its profile at `prefix`: (operator,
    node name and input shape, us)."""
    (profile,) = glob.glob(f"{prefix}*.json")
    times: dict[str, list[float]] = defaultdict(list)
    order: dict[str, tuple[str, str]] = {}
    for e in json.loads(Path(profile).read_text()):
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"].removesuffix("_kernel_time")
            times[name].append(float(e["dur"]))
            shapes = [next(iter(s.values())) for s in e["args"].get("input_type_shape", [])]
            order.setdefault(name, (e["args"]["op_name"], f"{name} {shapes[:2]}"))
    return [(kind, what, by_rounds(times[name], iters, rounds, stat))
            for name, (kind, what) in order.items()]


def openvino_steps(prefix: str, iters: int, rounds: int, stat: str) -> list[Step]:
    """OpenVINO's executed nodes in order, from peer_worker's profile at
    `prefix`: (node type, name and kernel, us)."""
    forwards = json.loads(Path(f"{prefix}.json").read_text())
    return [(kind, f"{name} [{kernel}]",
             by_rounds([f[k][3] for f in forwards], iters, rounds, stat))
            for k, (name, kind, kernel, _) in enumerate(forwards[-1])]


PEERS = {"ort": ("ONNX Runtime", ort_steps, ("Conv", "FusedConv")),
         "openvino": ("OpenVINO", openvino_steps, ("Convolution", "GroupConvolution"))}


def alternated(ex: mx.executor.Executor, peer: str, onnx: Path, batch: int, dtype: str,
               iters: int, rounds: int, stat: str) -> tuple[list[Step], list[Step]]:
    """minimx's steps and the peer's, from `rounds` alternating rounds of
    `iters` forwards each (see the module docstring)."""
    ours: list[list[Step]] = []
    with tempfile.TemporaryDirectory() as tmp:
        worker = peer_worker(peer, onnx, batch, PRECISIONS[dtype], profile=f"{tmp}/profile")
        for _ in range(rounds):
            # The other side's OpenMP threads spin for a while after its last forward.
            time.sleep(SETTLE)
            ours.append(minimx_steps(ex, iters, stat))
            time.sleep(SETTLE)
            worker.run(iters)
        worker.close()
        theirs = PEERS[peer][1](f"{tmp}/profile", iters, rounds, stat)
    return median_steps(ours), theirs


def median_steps(rounds: list[list[Step]]) -> list[Step]:
    """Each step's median over `rounds`, lists of the same steps in order."""
    return [(kind, what, statistics.median(r[k][2] for r in rounds))
            for k, (kind, what, _) in enumerate(rounds[0])]


def report(ours: list[Step], theirs: list[Step], peer: str = "ONNX Runtime",
           peer_conv_kinds: tuple[str, ...] = ("Conv", "FusedConv")) -> None:
    """Convolution by convolution, then the other steps summed per kind."""
    convs = [s for s in ours if s[0] == "convolution"]
    peer_convs = [s for s in theirs if s[0] in peer_conv_kinds]
    print(f"{'#':>3} {'minimx us':>10} {'peer us':>8} {'ratio':>6}  layer (minimx: oneDNN impl)"
          f"; peer: {peer}")
    for k, (a, b) in enumerate(zip(convs, peer_convs, strict=False)):
        print(f"{k:3d} {a[2]:10.1f} {b[2]:8.1f} {a[2] / b[2]:6.2f}  {a[1]}")
    if len(convs) != len(peer_convs):
        print(f"(convolutions: minimx {len(convs)}, {peer} {len(peer_convs)})")
    for who, steps, conv_kinds in (("minimx", ours, ("convolution",)),
                                   (peer, theirs, peer_conv_kinds)):
        others: dict[str, float] = defaultdict(float)
        for kind, _, us in steps:
            if kind not in conv_kinds:
                others[kind] += us
        conv_total = sum(us for kind, _, us in steps if kind in conv_kinds)
        print(f"{who}: convolutions {conv_total:.0f} us; "
              + ", ".join(f"{kind} {us:.0f} us" for kind, us in sorted(others.items()))
              + f"; all steps {sum(s[2] for s in steps):.0f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet1.0")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--peer", choices=list(PEERS), default="ort")
    parser.add_argument("--dtype", choices=list(PRECISIONS), default="float32")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--statistic", choices=list(STATISTIC), default="median")
    parser.add_argument("--models-dir", type=Path,
                        default=Path(tempfile.gettempdir(), "minimx-peer-models"))
    args = parser.parse_args()
    if args.dtype != "float32" and args.peer == "ort":
        parser.error("ONNX Runtime runs float32 only here: use --peer openvino")
    prefix = exported(args.model, args.models_dir)
    print(f"{args.model} {args.dtype} batch {args.batch}, "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, median over {args.rounds} "
          f"alternating rounds of the {args.statistic} of {args.iters} forwards")
    path = Minimx("", args.batch, "DNNL", prefix,
                  **({} if args.dtype == "float32" else {"dtype": args.dtype}))
    path.run(3)
    name, _, conv_kinds = PEERS[args.peer]
    report(*alternated(path.ex, args.peer, args.models_dir / f"{args.model}.onnx", args.batch,
                       args.dtype, args.iters, args.rounds, args.statistic),
           peer=name, peer_conv_kinds=conv_kinds)


if __name__ == "__main__":
    main()
