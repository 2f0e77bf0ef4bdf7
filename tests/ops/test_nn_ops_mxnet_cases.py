"""Cases found by a differential fuzz of the layer operators against MXNet 1.9.1
(numpy path and DNNL path), with their regression checks."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.graph import Graph
from tests.onednn_required import require_onednn


def _outer_ops(sym) -> list[str]:
    return [n.op for n in Graph(sym.outputs).nodes if not n.is_variable]


def _forward(sym, data: np.ndarray) -> np.ndarray:
    ex = sym.bind(mx.cpu(), {"data": mx.nd.array(data)}, grad_req="null")
    return ex.forward(is_train=False)[0].asnumpy()


# 1-D Pooling with pooling_convention='same': ceil(5 / 2) = 3 windows per row, the last
# one reading end padding. MXNet 1.9.1 fails on every 1-D 'same' pooling (CPU and
# MKLDNN kernels: "index = 1 must be in range [0, 1)"), so these numbers are the
# windows computed by hand: max of [0, 1], [2, 3], [4] and [5, 6], [7, 8], [9]; the
# average divides by the window clipped to the padded input, as MXNet's kernels do for
# 'full' windows that run past it (so the last window averages one element).
SAME_DATA = np.arange(10, dtype=np.float32).reshape(1, 2, 5)
SAME_EXPECTED = {
    "max": [[[1.0, 3.0, 4.0], [6.0, 8.0, 9.0]]],
    "avg": [[[0.5, 2.5, 4.0], [5.5, 7.5, 9.0]]],
}


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_same_convention_pooling_numpy(pool_type):
    sym = mx.sym.Pooling(mx.sym.var("data"), kernel=(2,), stride=(2,), pool_type=pool_type,
                         pooling_convention="same")
    np.testing.assert_allclose(_forward(sym, SAME_DATA), SAME_EXPECTED[pool_type], rtol=1e-6)


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("global_pool", [False, True])
def test_same_convention_pooling_stays_off_dnnl(pool_type, global_pool):
    # oneDNN's pooling takes the valid and full conventions only. The selector used to
    # take a 'same' Pooling into a DNNL subgraph whose lowering then refused it, so a
    # graph bound with MINIMX_SUBGRAPH_BACKEND=DNNL failed (BackendError) where the
    # numpy path runs.
    require_onednn()
    relu = mx.sym.relu(mx.sym.var("data"))
    sym = mx.sym.Pooling(relu, kernel=(2,), stride=(2,), pool_type=pool_type,
                         pooling_convention="same", global_pool=global_pool)
    part = sym.optimize_for("DNNL")
    assert "Pooling" in _outer_ops(part)
    want = _forward(sym, SAME_DATA)
    if not global_pool:
        np.testing.assert_allclose(want, SAME_EXPECTED[pool_type], rtol=1e-6)
    else:
        np.testing.assert_allclose(want, [[[4.0], [9.0]]] if pool_type == "max"
                                   else [[[2.0], [7.0]]], rtol=1e-6)
    np.testing.assert_allclose(_forward(part, SAME_DATA), want, rtol=1e-6)


@pytest.mark.parametrize("backend", ["NONE", "DNNL"])
@pytest.mark.parametrize("nsize", [2, 4])
def test_lrn_with_an_even_window_is_refused_at_bind_on_every_path(backend, nsize, monkeypatch):
    # MXNet 1.9.1's CPU kernel refuses an even nsize; its MKLDNN path ran it off centre
    # (nsize=4 summed 3 channels), and so did minimx's DNNL path, where the numpy path
    # refused it at the forward. Now both refuse it at bind.
    if backend == "DNNL":
        require_onednn()
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
    sym = mx.sym.LRN(mx.sym.relu(mx.sym.var("data")), nsize=nsize, name="lrn")
    with pytest.raises(mx.base.OperatorError, match=f"lrn \\(LRN\\): nsize={nsize} must be odd"):
        sym.simple_bind(mx.cpu(), data=(1, 6, 3, 3))
