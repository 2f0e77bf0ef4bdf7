"""Bad shapes, bad buffers and misuse raise BackendError; nothing crashes."""
from __future__ import annotations

import numpy as np
import pytest

from minimx import BackendError, onednn
from minimx.onednn import MemoryDesc, PostOp

from .helpers import random


@pytest.mark.parametrize("build", [
    pytest.param(lambda: onednn.conv((1, 3, 8), (4, 3, 3, 3)), id="conv-1d-data-2d-kernel"),
    pytest.param(lambda: onednn.conv((1, 3), (4, 3, 1)), id="conv-no-spatial"),
    pytest.param(lambda: onednn.conv((1, 3, 8, 8), (4, 2, 3, 3)), id="conv-channel-mismatch"),
    pytest.param(lambda: onednn.conv((1, 4, 8, 8), (6, 2, 3, 3), num_group=3), id="conv-groups"),
    pytest.param(lambda: onednn.conv((1, 3, 2, 2), (4, 3, 5, 5)), id="conv-kernel-too-big"),
    pytest.param(lambda: onednn.conv((1, 3, 8, 8), (4, 3, 3, 3), stride=0), id="conv-stride-0"),
    pytest.param(lambda: onednn.conv((1, 3, 8, 8), (4, 3, 3, 3), pad=(1, 1, 1)),
                 id="conv-pad-arity"),
    pytest.param(lambda: onednn.conv((1, 3, 8, 8), (4, 3, 3, 3),
                                   post_ops=[PostOp.binary((1, 5, 1, 1))]),
                 id="conv-post-op-not-broadcast"),
    pytest.param(lambda: onednn.conv((1, -3, 8, 8), (4, 3, 3, 3)), id="conv-negative-dim"),
    pytest.param(lambda: onednn.deconv((1, 3, 4, 4), (2, 3, 3, 3)), id="deconv-channel-mismatch"),
    pytest.param(lambda: onednn.deconv((1, 3, 4, 4), (3, 2, 3, 3), pad=0, adj=1),
                 id="deconv-adj-over-pad"),
    pytest.param(lambda: onednn.inner_product((2,), 4), id="fc-1d-data"),
    pytest.param(lambda: onednn.inner_product((2, 3), 0), id="fc-no-hidden"),
    pytest.param(lambda: onednn.batch_norm((5,)), id="bn-no-channels"),
    pytest.param(lambda: onednn.eltwise((2, 3), "hard_tanh"), id="eltwise-unknown-alg"),
    pytest.param(lambda: onednn.pooling((1, 3, 4, 4), (2, 2), pad=2), id="pool-pad-over-kernel"),
    pytest.param(lambda: onednn.pooling((1, 3, 4, 4), (2, 2), pool_type="sum"), id="pool-sum"),
    pytest.param(lambda: onednn.pooling((1, 3, 4, 4), (2, 2), convention="same"),
                 id="pool-convention"),
    pytest.param(lambda: onednn.pooling((1, 3, 4, 4)), id="pool-no-kernel"),
    pytest.param(lambda: onednn.softmax((2, 3), axis=2), id="softmax-axis"),
    pytest.param(lambda: onednn.lrn((2, 3), 3), id="lrn-2d"),
    pytest.param(lambda: onednn.binary((2, 3), (3, 2)), id="binary-no-broadcast"),
    pytest.param(lambda: onednn.binary((2, 3), (2, 3), "pow"), id="binary-unknown-alg"),
    pytest.param(lambda: onednn.concat([(2, 3), (3, 3)], axis=1), id="concat-mismatch"),
    pytest.param(lambda: onednn.concat([]), id="concat-empty"),
    pytest.param(lambda: onednn.concat([MemoryDesc.any((1, 2))]), id="concat-any-layout"),
    pytest.param(lambda: onednn.reorder((2, 3), (3, 2)), id="reorder-shapes"),
    pytest.param(lambda: onednn.conv("abcd", (4, 3, 3, 3)), id="conv-shape-not-ints"),
    pytest.param(lambda: onednn.conv((1, 3, 8, 8), (4, 3, 3, 3), pad=["x", 1]),
                 id="conv-pad-not-ints"),
    pytest.param(lambda: MemoryDesc.plain(()), id="md-no-dims"),
    pytest.param(lambda: MemoryDesc.plain((2, 0)), id="md-zero-dim"),
    pytest.param(lambda: MemoryDesc.ordered((1, 2, 3), "acdb"), id="md-order-too-long"),
    pytest.param(lambda: MemoryDesc.ordered((1, 2, 3), "aab"), id="md-order-repeats"),
])
def test_bad_descriptions_raise_backend_error(build):
    with pytest.raises(BackendError):
        build()


def test_onednn_status_is_reported_with_the_failing_call():
    with pytest.raises(BackendError, match=r"dnnl_memory_desc_create_with_strides\(.*\): "
                                           r"invalid_arguments"):
        MemoryDesc.strided((2, 3), (-1, 1))


def test_the_innermost_failure_is_reported():
    """A failure inside the shim's own helpers (here the post-op chain's
    length, checked while building the attributes) is reported as the
    helper recorded it, not as the call that passed it on."""
    with pytest.raises(BackendError, match=r"failed: requirement failed: "
                                           r"npost >= 0 && npost <= 32: invalid_arguments$"):
        onednn.conv((1, 3, 8, 8), (4, 3, 3, 3), post_ops=[PostOp.eltwise("relu")] * 33)


def read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@pytest.fixture
def relu_plan() -> onednn.Plan:
    plan = onednn.Plan("relu")
    plan.output(plan.add(onednn.eltwise((2, 3), "relu"), src=plan.input((2, 3))))
    return plan


@pytest.mark.parametrize("inputs,outputs,message", [
    ([np.zeros((2, 3), np.float64)], None, "expected float32"),
    ([np.zeros((3, 2), np.float32)], None, "expected shape"),
    ([np.zeros((2, 6), np.float32)[:, ::2]], None, "not C-contiguous"),
    ([np.zeros((3, 2), np.float32).T], None, "not C-contiguous"),
    ([[[0.0] * 3] * 2], None, "numpy.ndarray"),
    ([], None, "1 inputs expected"),
    ([np.zeros((2, 3), np.float32)] * 2, None, "1 inputs expected"),
    ([np.zeros((2, 3), np.float32)], [np.zeros((2, 3), np.float32)] * 2, "1 outputs expected"),
    ([np.zeros((2, 3), np.float32)], [np.zeros(6, np.float32)], "expected shape"),
    ([np.zeros((2, 3), np.float32)], [read_only(np.zeros((2, 3), np.float32))], "read-only"),
])
def test_bad_run_buffers_raise_backend_error(relu_plan, inputs, outputs, message):
    with pytest.raises(BackendError, match=message):
        relu_plan.run(inputs, outputs)
    out = relu_plan.run([np.array([[-1, 2, -3], [4, -5, 6]], np.float32)])[0]
    np.testing.assert_array_equal(out, [[0, 2, 0], [4, 0, 6]])  # still usable


def test_plan_misuse_raises_backend_error():
    conv = onednn.conv((1, 16, 6, 6), (16, 16, 3, 3), pad=1)
    assert conv.desc("src").layout != "abcd"
    plan, other = onednn.Plan(), onednn.Plan()
    x = plan.input((1, 16, 6, 6))
    w = plan.constant(onednn.constant(conv, "weights", random((16, 16, 3, 3))))
    with pytest.raises(BackendError, match="insert plan.reorder"):
        plan.add(conv, src=x, weights=w)
    xb = plan.reorder(x, conv.desc("src"))
    with pytest.raises(BackendError, match="arguments"):
        plan.add(conv, src=xb)
    with pytest.raises(BackendError, match="not a slot of plan"):
        plan.add(conv, src=other.reorder(other.input((1, 16, 6, 6)), conv.desc("src")),
                 weights=w)
    with pytest.raises(BackendError, match="is an input"):
        plan.add(onednn.eltwise((1, 16, 6, 6), "relu"), src=x, dst=x)
    with pytest.raises(BackendError, match="in place"):
        plan.add(conv, src=xb, weights=w, dst=xb)
    summing = onednn.conv(conv.desc("src"), (16, 16, 3, 3), pad=1, post_ops=[PostOp.sum()])
    with pytest.raises(BackendError, match="sum post-op needs dst"):
        plan.add(summing, src=xb, weights=w)
    with pytest.raises(BackendError, match="expected a Primitive"):
        plan.add("conv", src=xb)
    with pytest.raises(BackendError, match="has no argument"):
        conv.desc("gamma")
    with pytest.raises(BackendError, match="expected shape"):
        onednn.constant(conv, "weights", random((16, 16, 3)))
    plan.output(plan.add(conv, src=xb, weights=w))
    plan.compile()
    with pytest.raises(BackendError, match="already compiled"):
        plan.input((1, 2))


def test_memory_misuse_raises_backend_error():
    with pytest.raises(BackendError, match="still 'any'"):
        onednn.Memory.allocate(MemoryDesc.any((2, 3)))
    blocked = onednn.conv((1, 16, 4, 4), (16, 16, 1, 1)).desc("src")
    with pytest.raises(BackendError, match="plain layout"):
        onednn.Memory.from_numpy(np.zeros((1, 16, 4, 4), np.float32), blocked)
    with pytest.raises(BackendError, match="no buffer"):
        onednn.to_numpy(onednn.Memory.unbound(MemoryDesc.plain((2, 3))))
    owned = onednn.Memory.allocate(blocked)
    with pytest.raises(BackendError, match="owns its buffer"):
        owned.rebind(np.zeros((1, 16, 4, 4), np.float32))
    with pytest.raises(BackendError, match="target memory"):
        onednn.to_layout(np.zeros((2, 3), np.float32), MemoryDesc.plain((2, 3)), into=owned)


def test_binary_post_op_without_operand_is_refused():
    with pytest.raises(BackendError, match=r"^conv: binary post_ops\[1\] has no operand \(src1\)$"):
        onednn.conv((1, 3, 8, 8), (4, 3, 3, 3), post_ops=[PostOp.eltwise("relu"), PostOp("binary")])


def test_a_slot_has_memory_only_once_the_plan_is_compiled():
    plan = onednn.Plan()
    x = plan.input((2, 3), "data")
    plan.output(plan.add(onednn.eltwise((2, 3), "relu"), src=x))
    with pytest.raises(BackendError, match=r"^data: no memory bound \(the plan is not compiled\)$"):
        x.bound_memory()
    plan.compile()
    assert x.bound_memory().desc == x.desc
