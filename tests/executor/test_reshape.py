"""Executor.reshape: new input shapes, parameters shared, growth checked."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx


def test_reshape_shares_unchanged_arrays_and_checks_growth():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    ex = fc.simple_bind(mx.cpu(), grad_req="null", data=(2, 4))
    ex.arg_dict["fc_weight"][:] = np.arange(12).reshape(3, 4) / 10
    ex.arg_dict["fc_bias"][:] = 1.0
    with pytest.raises(mx.ShapeError, match="allow_up_sizing"):
        ex.reshape(data=(5, 4))
    bigger = ex.reshape(allow_up_sizing=True, data=(5, 4))
    assert bigger.arg_dict["fc_weight"] is ex.arg_dict["fc_weight"]
    x = np.ones((5, 4), np.float32)
    out = bigger.forward(data=x)[0].asnumpy()
    np.testing.assert_allclose(out, x @ (np.arange(12).reshape(3, 4) / 10).T + 1, rtol=1e-6)
    smaller = ex.reshape(data=(1, 4))
    assert smaller.outputs[0].shape == (1, 3)
