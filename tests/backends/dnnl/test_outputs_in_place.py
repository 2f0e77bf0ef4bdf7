"""A compiled subgraph writes its outputs straight into the arrays the runner
stores them in (OpContext.outputs): no copy, the same values."""
from __future__ import annotations

import numpy as np

import minimx as mx
from minimx.graph import Graph
from minimx.ops.registry import OpContext

from .helpers import assert_close, bind, outputs, partitioned, random_arrays

data = mx.sym.var("data")
SHAPE = {"data": (2, 3, 6, 6)}


def net():
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="c")
    x = mx.sym.Activation(x, act_type="relu")
    return mx.sym.Group([mx.sym.FullyConnected(x, num_hidden=3, name="fc"), x])


def state_and_inputs():
    sym = net()
    node = next(n for n in Graph(partitioned(sym, SHAPE).outputs).nodes if n.op == "_sg_dnnl")
    args, _ = random_arrays(sym, SHAPE)
    inputs = [args[n.rstrip("0123456789")] for n in node.input_names()]
    state = node.opdef.create_state(node.params, [a.shape for a in inputs],
                                    [a.dtype for a in inputs])
    return state, inputs, outputs(sym, args, {})


def test_given_outputs_are_written_and_returned():
    state, inputs, expected = state_and_inputs()
    given = [np.full(e.shape, np.nan, np.float32) for e in expected]
    results = state.forward(OpContext(outputs=given), inputs)
    assert all(r is g for r, g in zip(results, given, strict=True))
    assert_close(given, expected)


def test_outputs_the_plan_cannot_take_are_left_alone():
    state, inputs, expected = state_and_inputs()
    odd = [np.zeros(expected[0].shape, np.float64),                     # another dtype
           np.zeros(expected[1].shape[::-1], np.float32).transpose()]  # not C-contiguous
    results = state.forward(OpContext(outputs=odd), inputs)
    assert not any(r is o for r, o in zip(results, odd, strict=True))
    assert not odd[0].any() and not odd[1].any()
    assert_close(results, expected)


def test_executor_outputs_hold_the_values_after_repeated_forwards():
    sym = net()
    args, aux = random_arrays(sym, SHAPE)
    ex = bind(partitioned(sym, SHAPE), args, aux)
    for _ in range(2):
        assert_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
