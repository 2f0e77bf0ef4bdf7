"""A subgraph backend written in Python: Convolution followed by BatchNorm
becomes one node.

This is the tutorial case of MXNet's subgraph API. The selector starts at a
Convolution, follows only its outputs, takes a BatchNorm that reads it, and
its `filter` drops a Convolution left alone. The backend is registered under a
name and chosen with MINIMX_SUBGRAPH_BACKEND at bind time.

Run: python examples/custom_backend.py
"""
from __future__ import annotations

import os

import numpy as np

import minimx as mx


class ConvBNSelector(mx.subgraph.SubgraphSelector):
    def select(self, node):
        return node.op == "Convolution"

    def select_input(self, cur_node, new_node):
        return False

    def select_output(self, cur_node, new_node):
        return cur_node.op == "Convolution" and new_node.op == "BatchNorm"

    def filter(self, candidates):
        return candidates if len(candidates) > 1 else []


class ConvBNProperty(mx.subgraph.SubgraphProperty):
    name_prefix = "conv_bn_"

    def create_subgraph_selector(self):
        return ConvBNSelector()


mx.subgraph.register_property("CONV_BN", ConvBNProperty)


def network():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name="conv0")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.Convolution(x, kernel=(1, 1), num_filter=4, name="conv1")  # no BN: stays alone
    return mx.sym.Pooling(x, global_pool=True, pool_type="avg", kernel=(1, 1), name="pool")


def bind(sym, backend: str):
    os.environ["MINIMX_SUBGRAPH_BACKEND"] = backend
    try:
        return sym.simple_bind(mx.cpu(), grad_req="null", data=(2, 3, 8, 8))
    finally:
        del os.environ["MINIMX_SUBGRAPH_BACKEND"]


def main() -> None:
    sym = network()
    fused, plain = bind(sym, "CONV_BN"), bind(sym, "NONE")
    rng = np.random.default_rng(0)
    params = {name: rng.uniform(0.5, 1.5, arr.shape)
              for name, arr in {**plain.arg_dict, **plain.aux_dict}.items()}
    for ex in (fused, plain):
        for name, arr in {**ex.arg_dict, **ex.aux_dict}.items():
            arr[:] = params[name]
    data = rng.normal(size=(2, 3, 8, 8))
    out_fused = fused.forward(data=data)[0].asnumpy()
    out_plain = plain.forward(data=data)[0].asnumpy()
    print(fused.debug_str())
    print(f"\nmax |fused - plain| = {np.abs(out_fused - out_plain).max():.2e}")


if __name__ == "__main__":
    main()
