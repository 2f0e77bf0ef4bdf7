"""What a forward costs outside oneDNN: a trivial DNNL subgraph, timed whole and alone.

The network is one FullyConnected (16 -> 16) with relu, partitioned into
one `_sg_dnnl` node whose oneDNN plan takes a few microseconds. The script
times `forward()` then `wait_to_read()` on the output, as a caller does, and
the plan's own C call on the same arrays; the difference is what minimx
adds per forward (engine, executor, runner, the hop to the oneDNN thread,
output copies). Also printed: the same for ResNet-50 v1's argument count
(one read per weight), where the engine's bookkeeping grows with the number
of arrays. Medians of --repeat runs of --iters forwards each.

Run: python benchmarks/forward_overhead.py [--iters 2000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402

import minimx as mx  # noqa: E402
from minimx import onednn  # noqa: E402


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    onednn.require()
    print(f"oneDNN {onednn.version()} on {onednn.isa()}; "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    for layers, what in ((0, "1 FullyConnected+relu"), (53, "54 FullyConnected layers")):
        whole, plan = measure(layers, args.iters, args.repeat)
        print(f"{what:24s}: forward+wait {whole:7.1f} us, oneDNN plan {plan:6.1f} us, "
              f"outside oneDNN {whole - plan:6.1f} us")


if __name__ == "__main__":
    main()
