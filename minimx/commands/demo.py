"""`minimx demo`: a small network bound with a subgraph backend, beside the numpy path.

The demo builds a small conv-bn-relu-pool-fc network, binds it with a subgraph
backend (DNNL when the native module is there, else `default`), and shows the
partitioned graph and the output next to the plain numpy result.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import minimx as mx
from minimx import onednn
from minimx.base import subgraph_backend


def _network():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="conv0")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=10, name="fc0")
    return mx.sym.softmax(x, name="prob")


def _bind(sym, name: str | None, params: dict, data: np.ndarray):
    os.environ.setdefault("MINIMX_SUBGRAPH_DEFAULT_OPS",
                          "Convolution,BatchNorm,Activation,Pooling")
    with subgraph_backend(name or "NONE"):
        ex = sym.simple_bind(mx.cpu(), grad_req="null", data=data.shape)
    ex.copy_params_from(params["arg"], params["aux"])
    return ex, ex.forward(data=mx.nd.array(data))[0].asnumpy()


def demo(args: argparse.Namespace | None = None) -> int:
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
    name = "DNNL" if onednn.available() and "DNNL" in mx.subgraph.list_backends() else "default"
    print(f"network: {len(sym._topo())} nodes, arguments {sym.list_arguments()}")
    print(f"output shape for data{shape}: {out_shapes[0]}")
    if name == "default":
        print(f"(oneDNN backend unavailable: {onednn.unavailable_reason()})")
    ex, out = _bind(sym, name, params, data)
    _, reference = _bind(sym, None, params, data)
    print(f"\nbound with MINIMX_SUBGRAPH_BACKEND={name}; the executed graph:")
    print(ex.debug_str())
    print(f"\noutput {out.shape}, max |difference| from the numpy path: "
          f"{np.abs(out - reference).max():.2e}")
    print("first row:", np.array2string(out[0], precision=3))
    return 0


def add_parsers(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("demo", help="bind a small network with a subgraph backend "
                                         "and show what it did (the default command)")
    p.set_defaults(run=demo)
