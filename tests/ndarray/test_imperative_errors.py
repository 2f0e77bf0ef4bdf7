"""An operator kernel failing inside the engine surfaces as a MinimxError naming the op."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.ops.registry import OpDef


def _singular(p, ctx, inputs):
    return np.linalg.inv(np.zeros((2, 2)))  # numpy raises LinAlgError


FAILING = OpDef("_test_singular_inverse", forward=_singular)


def test_reading_a_failed_result_raises_an_operation_error_naming_the_op():
    out = mx.nd.invoke(FAILING, [mx.nd.ones((2, 2))], {})
    with pytest.raises(mx.MinimxError, match="'_test_singular_inverse' failed.*Singular matrix"
                       ) as info:
        out.asnumpy()
    assert isinstance(info.value, mx.engine.OperationError)
    assert isinstance(info.value.__cause__, np.linalg.LinAlgError)


def test_operations_reading_a_failed_result_carry_the_failure_on():
    out = mx.nd.relu(mx.nd.invoke(FAILING, [mx.nd.ones((2, 2))], {}) + 1)
    with pytest.raises(mx.engine.OperationError, match="_test_singular_inverse") as info:
        out.asnumpy()
    assert info.value.op_name == "_test_singular_inverse"
    out[:] = 3  # the failure was raised once; the array is usable again
    assert out.asnumpy().tolist() == [[3, 3], [3, 3]]


FAILING_DRAW = OpDef("_test_failing_draw", forward=_singular, draws=True)


def test_a_failed_draw_leaves_later_draws_and_dropout_working():
    """An operator that holds the random generator and fails (in the engine) spoils
    only its own result: later random operators and training Dropout still run."""
    bad = mx.nd.invoke(FAILING_DRAW, [mx.nd.ones((2, 2))], {})
    mx.random.seed(3)
    draws = [mx.nd.random.uniform(shape=(3,)).asnumpy() for _ in range(2)]
    assert 0 <= draws[0].min() and draws[1].max() < 1 and not np.array_equal(*draws)
    with mx.autograd.train_mode():
        assert set(mx.nd.Dropout(mx.nd.ones((64,)), p=0.5).asnumpy()) <= {0.0, 2.0}
    with pytest.raises(mx.engine.OperationError, match="_test_failing_draw"):
        bad.asnumpy()
    mx.nd.waitall()


def test_an_imperative_result_too_big_for_memory_is_refused_naming_the_op():
    a = mx.nd.ones((2**20, 1))
    with pytest.raises(mx.ShapeError, match=r"_imperative \(dot\): shape \(1048576, 1048576\)"):
        mx.nd.dot(a, a, transpose_b=True)
