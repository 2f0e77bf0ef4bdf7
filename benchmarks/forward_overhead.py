"""What a forward costs outside oneDNN: a trivial DNNL subgraph, timed whole and alone.

The network is one FullyConnected (16 -> 16) with relu, partitioned into
one `_sg_dnnl` node whose oneDNN plan takes a few microseconds. The script
times `forward()` then `wait_to_read()` on the output, as a caller does, and
the plan's own C call on the same arrays; the difference is what minimx
adds per forward (engine, executor, runner, the hop to the oneDNN thread,
output copies). Also printed: the same for ResNet-50 v1's argument count
(one read per weight), where the engine's bookkeeping grows with the number
of arrays. Medians of --repeat runs of --iters forwards each.

Then, for each of --models (zoo nets with random weights, batch 1, fp32 and
bf16 where oneDNN's ISA has it), alternating in one process: a forward
through the executor as it runs (the prepared path: the plan handed to the
oneDNN thread as a C job, see `Engine.run_if_idle`), the same executor's
forward pushed to the engine as when that path steps aside (the runner, the
engine's bookkeeping over every array, Python on the oneDNN thread), and the
plan alone, run straight on the oneDNN thread (the node's state called with
the bound arrays), and the floor: the plan run ten times back to back in one
job on the oneDNN thread (per run). The differences are what the bookkeeping
around a real plan costs - more than in the tight loop above, since after
milliseconds of oneDNN the interpreter finds its data out of cache.

Run: python benchmarks/forward_overhead.py [--iters 2000] [--repeat 5]
     [--models mobilenet1.0 mobilenetv2_1.0] [--rounds 40]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402
from dnnl_throughput import Minimx  # noqa: E402

import minimx as mx  # noqa: E402
from minimx import onednn  # noqa: E402
from minimx.backends.dnnl.thread import on_onednn_thread  # noqa: E402


def per_call_us(fn: Callable[[], object], iters: int, repeat: int) -> float:
    """Median over `repeat` runs of the mean microseconds of one call of `fn`."""
    for _ in range(iters // 10):
        fn()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        runs.append((time.perf_counter() - start) / iters * 1e6)
    return statistics.median(runs)


def trivial_executor(extra_layers: int) -> mx.Executor:
    """FullyConnected + relu on (1, 16), then `extra_layers` more FullyConnected
    layers (two arguments each), as one DNNL subgraph, bound with values set."""
    data = mx.sym.var("data")
    x = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=16, name="fc0"),
                          act_type="relu", name="relu0")
    for i in range(1, extra_layers + 1):
        x = mx.sym.FullyConnected(x, num_hidden=16, name=f"fc{i}")
    sym = mx.subgraph.partition(x, "DNNL", shapes={"data": (1, 16)})
    ex = sym.simple_bind(mx.cpu(), grad_req="null", data=(1, 16))
    rng = np.random.default_rng(0)
    for arr in ex.arg_dict.values():
        arr[:] = rng.uniform(-0.5, 0.5, arr.shape)
    return ex


def measure(extra_layers: int, iters: int, repeat: int) -> tuple[float, float]:
    """(microseconds per forward and wait, of the plan's C call alone)."""
    ex = trivial_executor(extra_layers)
    (state,) = ex._runner.operator_states().values()
    compiled = state.compiled
    data = [a._data for a in ex.arg_arrays]
    plan_data = [np.ascontiguousarray(data[i]) for i in compiled.data_inputs]
    whole = per_call_us(lambda: ex.forward()[0].wait_to_read(), iters, repeat)
    plan = per_call_us(lambda: compiled.plan.run(plan_data, compiled.out_buffers), iters, repeat)
    return whole, plan


def model_paths(model: str, dtype: str, rounds: int) -> dict[str, float]:
    """Median microseconds of a forward of zoo net `model` at batch 1 by each
    path (prepared, pushed, plan, back to back), alternating in `rounds` rounds
    of 10."""
    ex = Minimx(model, 1, "DNNL", dtype=dtype).ex
    pushed = Minimx(model, 1, "DNNL", dtype=dtype).ex
    pushed._run_prepared = lambda: False   # type: ignore[method-assign]
    runner = ex._runner
    ((nid, state),) = runner.operator_states().items()
    inputs, outputs = ex._input_data(), [o._data for o in ex.outputs]
    runs = {"prepared": lambda: ex.forward()[0].wait_to_read(),
            "pushed": lambda: pushed.forward()[0].wait_to_read(),
            "plan": lambda: on_onednn_thread(state._infer, inputs, runner._versions(nid),
                                             outputs, state.compiled)}
    compiled = state.compiled
    data = [inputs[i] for i in compiled.data_inputs]

    def back_to_back() -> float:
        start = time.perf_counter()
        for _ in range(10):
            compiled.plan.run(data, compiled.out_buffers)
        return (time.perf_counter() - start) / 10

    times: dict[str, list[float]] = {k: [] for k in (*runs, "back to back")}
    for _ in range(rounds):
        for name, run in runs.items():
            run()
            for _ in range(10):
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
        times["back to back"].append(on_onednn_thread(back_to_back))
    return {k: statistics.median(v) * 1e6 for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--models", nargs="*", default=["mobilenet1.0", "mobilenetv2_1.0"])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    onednn.require()
    print(f"oneDNN {onednn.version()} on {onednn.isa()}; "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    for layers, what in ((0, "1 FullyConnected+relu"), (53, "54 FullyConnected layers")):
        whole, plan = measure(layers, args.iters, args.repeat)
        print(f"{what:24s}: forward+wait {whole:7.1f} us, oneDNN plan {plan:6.1f} us, "
              f"outside oneDNN {whole - plan:6.1f} us")
    dtypes = ["float32"] + (["bfloat16"] if onednn.bf16_native() else [])
    for model in args.models:
        for dtype in dtypes:
            us = model_paths(model, dtype, args.rounds)
            print(f"{model} {dtype} batch 1: forward {us['prepared']:5.0f} us; pushed "
                  f"{us['pushed']:5.0f} us (x{us['pushed'] / us['prepared']:.3f}); the plan "
                  f"alone on the oneDNN thread {us['plan']:5.0f} us "
                  f"(x{us['plan'] / us['prepared']:.3f}); back to back "
                  f"{us['back to back']:5.0f} us", flush=True)

if __name__ == "__main__":
    main()
