"""`mx.nd.contrib.boolean_mask` against MXNet 1.9.1's results (recorded from its
`mx.nd.contrib.boolean_mask` on these inputs), and its refusal in graphs."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.base import OperatorError

DATA = [[1, 2], [3, 4], [5, 6]]
CASES = [   # (data, index, MXNet 1.9.1's output)
    (DATA, [0, 1, 1], [[3, 4], [5, 6]]),
    (DATA, [0, 2.5, -1], [[3, 4], [5, 6]]),      # nonzero is true
    (DATA, [1, 0, 1], [[1, 2], [5, 6]]),
    (np.arange(24).reshape(3, 2, 4), [1, 0, 1],
     np.arange(24).reshape(3, 2, 4)[[0, 2]]),
    ([1, 2, 3], [1, 0, 1], [1, 3]),
]


@pytest.mark.parametrize("data, index, expected", CASES)
def test_matches_mxnet(data, index, expected) -> None:
    out = mx.nd.contrib.boolean_mask(mx.nd.array(data), mx.nd.array(index))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy(), np.array(expected, "float32"))


def test_an_all_false_index_gives_an_empty_array_and_dtypes_follow_data() -> None:
    assert mx.nd.contrib.boolean_mask(mx.nd.array(DATA), mx.nd.zeros(3)).shape == (0, 2)
    out = mx.nd.contrib.boolean_mask(mx.nd.array(DATA, dtype="int32"),
                                     mx.nd.array([1, 0, 1], dtype="int32"))
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [[1, 2], [5, 6]]


def test_it_waits_for_pending_writes_and_fills_out() -> None:
    index = mx.nd.zeros(3)
    index[:] = mx.nd.array([1, 1, 0])   # pushed to the engine; read after it finishes
    out = mx.nd.zeros((2, 2))
    assert mx.nd.contrib.boolean_mask(mx.nd.array(DATA), index, out=out) is out
    assert out.asnumpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(mx.base.MinimxError, match=r"boolean_mask.*\(1, 2\)"):
        mx.nd.contrib.boolean_mask(mx.nd.array(DATA), mx.nd.array([0, 1, 0]), out=out)


def test_bad_index_or_axis_names_the_op_and_values() -> None:
    data = mx.nd.array(DATA)
    with pytest.raises(OperatorError, match=r"boolean_mask.*\(2,\).*\(3, 2\)"):
        mx.nd.contrib.boolean_mask(data, mx.nd.array([1, 0]))
    with pytest.raises(OperatorError, match=r"boolean_mask.*axis=1"):
        mx.nd.contrib.boolean_mask(data, mx.nd.array([1, 0]), axis=1)


def test_graphs_refuse_it_naming_the_node_and_why() -> None:
    with pytest.raises(OperatorError, match=r"m \(_contrib_boolean_mask\).*depends on its "
                                            r"input values"):
        mx.sym.contrib.boolean_mask(mx.sym.var("a"), mx.sym.var("b"), name="m")
    text = ('{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "null", "name": "b", '
            '"inputs": []}, {"op": "_contrib_boolean_mask", "name": "m", "inputs": [[0, 0, 0], '
            '[1, 0, 0]]}], "arg_nodes": [0, 1], "heads": [[2, 0, 0]]}')
    with pytest.raises(OperatorError, match="boolean_mask"):
        mx.sym.load_json(text)


def test_its_gradient_scatters_the_head_to_the_kept_slices() -> None:
    # MXNet 1.9.1: dx = [[1, 2], [0, 0], [3, 4]] for this mask and head gradient.
    x = mx.nd.array([[1, 2], [3, 4], [5, 6]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.boolean_mask(x, mx.nd.array([1, 0, 1]))
    y.backward(mx.nd.array([[1, 2], [3, 4]]))
    np.testing.assert_array_equal(x.grad.asnumpy(), [[1, 2], [0, 0], [3, 4]])
