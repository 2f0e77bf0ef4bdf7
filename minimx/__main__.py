"""`python -m minimx` (or `minimx`): the demo; `python -m minimx info`: versions.

The demo builds a small conv-bn-relu-pool-fc network, binds it with a subgraph
backend (DNNL when the native module is there, else `default`), and shows the
partitioned graph and the output next to the plain numpy result.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys

import numpy as np

import minimx as mx
from minimx import onednn


def _network():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="conv0")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=10, name="fc0")
    return mx.sym.softmax(x, name="prob")


def _bind(sym, backend: str | None, params: dict, data: np.ndarray):
    old = os.environ.get("MINIMX_SUBGRAPH_BACKEND")
    os.environ["MINIMX_SUBGRAPH_BACKEND"] = backend or "NONE"
    os.environ.setdefault("MINIMX_SUBGRAPH_DEFAULT_OPS",
                          "Convolution,BatchNorm,Activation,Pooling")
    try:
        ex = sym.simple_bind(mx.cpu(), grad_req="null", data=data.shape)
    finally:
        if old is None:
            del os.environ["MINIMX_SUBGRAPH_BACKEND"]
        else:
            os.environ["MINIMX_SUBGRAPH_BACKEND"] = old
    ex.copy_params_from(params["arg"], params["aux"])
    return ex, ex.forward(data=mx.nd.array(data))[0].asnumpy()


def demo() -> int:
    sym = _network()
    shape = (4, 3, 16, 16)
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(data=shape)
    rng = np.random.default_rng(0)
    params = {
        "arg": {n: mx.nd.array(rng.normal(0, 0.3, s)) for n, s in
                zip(sym.list_arguments(), arg_shapes, strict=True) if n != "data"},
        "aux": {n: mx.nd.array(rng.uniform(0.5, 1.5, s)) for n, s in
                zip(sym.list_auxiliary_states(), aux_shapes, strict=True)},
    }
    data = rng.normal(size=shape).astype(np.float32)
    backend = "DNNL" if onednn.available() and "DNNL" in mx.subgraph.list_backends() else "default"
    print(f"network: {len(sym._topo())} nodes, arguments {sym.list_arguments()}")
    print(f"output shape for data{shape}: {out_shapes[0]}")
    if backend == "default":
        print(f"(oneDNN backend unavailable: {onednn.unavailable_reason()})")
    ex, out = _bind(sym, backend, params, data)
    _, reference = _bind(sym, None, params, data)
    print(f"\nbound with MINIMX_SUBGRAPH_BACKEND={backend}; the executed graph:")
    print(ex.debug_str())
    print(f"\noutput {out.shape}, max |difference| from the numpy path: "
          f"{np.abs(out - reference).max():.2e}")
    print("first row:", np.array2string(out[0], precision=3))
    return 0


def info() -> int:
    print(f"minimx {mx.__version__}, Python {platform.python_version()}, numpy {np.__version__}")
    if onednn.available():
        bf16 = "in hardware" if onednn.bf16_native() else "not in hardware: DNNL runs it in float32"
        print(f"oneDNN {onednn.version()}, dispatching to {onednn.isa()} (bfloat16 {bf16})")
    else:
        print(f"oneDNN: unavailable ({onednn.unavailable_reason()})")
    print(f"subgraph backends: {', '.join(mx.subgraph.list_backends())}")
    print(f"operators: {len(mx.ops.canonical_ops())}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="minimx", description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=["demo", "info"], default="demo")
    args = parser.parse_args(argv)
    return demo() if args.command == "demo" else info()


if __name__ == "__main__":
    sys.exit(main())
