"""Optimizer updates equal MXNet 1.9.1's on fixed gradients.

tests/fixtures/training/ (tools/mxnet_fixtures.py, group training) holds, for
each case of OPTIMIZER_CASES, a weight, the gradients of a few updates and
MXNet's weight after each (so momentum and moment states are checked too), and
the lr / wd multipliers an optimizer takes from a symbol's attributes.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx

FIXTURES = Path(__file__).parents[1] / "fixtures" / "training"
RECORD = json.loads((FIXTURES / "training.json").read_text())
ARRAYS = np.load(FIXTURES / "training-arrays.npz")


@pytest.mark.parametrize("case", sorted(RECORD["optimizers"]))
def test_updates_equal_mxnets(case: str) -> None:
    spec = RECORD["optimizers"][case]
    updater = mx.optimizer.get_updater(mx.optimizer.create(spec["optimizer"], **spec["kwargs"]))
    weight = mx.nd.array(ARRAYS[f"{case}:weight"])
    for k in range(spec["updates"]):
        updater(0, mx.nd.array(ARRAYS[f"{case}:grad_{k}"]), weight)
        np.testing.assert_allclose(weight.asnumpy(), ARRAYS[f"{case}:after_{k}"],
                                   rtol=1e-5, atol=1e-6, err_msg=f"update {k}")


def test_multipliers_come_from_symbol_attributes_and_names() -> None:
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("fc_weight", lr_mult=0.5, wd_mult=2.0)
    bias = mx.sym.Variable("fc_bias", lr_mult=3.0)
    net = mx.sym.FullyConnected(data, weight=weight, bias=bias, num_hidden=4, name="fc")
    net = mx.sym.BatchNorm(net, name="bn")
    net = mx.sym.FullyConnected(net, num_hidden=2, name="out")
    want = RECORD["mults"]
    names = [n for n in net.list_arguments() if n != "data"]
    assert names == want["names"]
    opt = mx.optimizer.create("sgd", learning_rate=0.1, wd=0.01, sym=net,
                              param_idx2name=dict(enumerate(names)))
    np.testing.assert_allclose([opt._get_lr(i) for i in range(len(names))], want["lr"])
    np.testing.assert_allclose([opt._get_wd(i) for i in range(len(names))], want["wd"])
