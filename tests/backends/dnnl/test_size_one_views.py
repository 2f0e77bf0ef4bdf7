"""Views with a size-1 axis inside DNNL subgraphs (batch 1 of a transformer).

A transpose or slice of batch-1 data is a plain array, but its oneDNN strides
for the size-1 axis need not be plain ones; oneDNN calls both layouts equal,
yet its INT8 quantize (a binary multiply by a scalar) wrote wrong bytes from the
odd strides. The plan views such data through plain strides: checked against
the numpy kernels, exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx

from .helpers import outer_ops

data = mx.sym.var("data")


def _quantized(sym: mx.sym.Symbol) -> mx.sym.Symbol:
    return mx.sym.contrib.quantize_v2(sym, min_calib_range=-2.0, max_calib_range=2.0,
                                      out_type="int8")[0]


def _both_paths(sym: mx.sym.Symbol, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(numpy path, DNNL subgraph) outputs of `sym` on `x`."""
    part = mx.subgraph.partition(sym, "DNNL", shapes={"data": x.shape})
    assert outer_ops(part) == ["_sg_dnnl"]
    return tuple(s.bind(mx.cpu(), {"data": mx.nd.array(x)}).forward()[0].asnumpy()
                 for s in (sym, part))


@pytest.mark.parametrize("view", ["transpose", "slice_then_transpose"])
def test_quantize_of_a_view_with_a_size_one_axis(view):
    x = np.linspace(-1.5, 1.5, 24, dtype=np.float32).reshape(2, 3, 4)
    if view == "transpose":   # (1, 3, 4) -> (3, 1, 4)
        y, x = mx.sym.transpose(data, axes=(1, 0, 2)), x[:1]
    else:                     # (2, 3, 4) -> (1, 3, 4) -> (3, 1, 4)
        y = mx.sym.transpose(mx.sym.slice_axis(mx.sym.relu(data), axis=0, begin=1, end=2),
                             axes=(1, 0, 2))
    expected, got = _both_paths(_quantized(y), x)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, expected)


def test_quantized_fc_over_a_batch_one_sequence_first_transpose():
    # BERT's (T, B, C) projection at batch 1, as quantize_model_mkldnn makes it.
    rng = np.random.default_rng(0)
    fc = mx.sym.FullyConnected(mx.sym.transpose(data, axes=(1, 0, 2)), num_hidden=4,
                               flatten=False, name="fc")
    args = {"fc_weight": mx.nd.array(rng.standard_normal((4, 6)).astype(np.float32)),
            "fc_bias": mx.nd.array(rng.standard_normal(4).astype(np.float32))}
    x = rng.standard_normal((1, 5, 6)).astype(np.float32)
    qsym, qargs, _ = mx.contrib.quantization.quantize_model_mkldnn(
        fc, args, {}, calib_mode="naive", calib_data=[x], label_names=(),
        quantized_dtype="auto")
    part = mx.subgraph.partition(qsym, "DNNL", shapes={"data": x.shape})
    expected, got = (s.bind(mx.cpu(), {**qargs, "data": mx.nd.array(x)}).forward()[0].asnumpy()
                     for s in (qsym, part))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
