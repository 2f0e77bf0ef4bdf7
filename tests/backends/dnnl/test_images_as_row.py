"""A 1x1 convolution of a batch of 1x1 images (a classifier written as one,
as MobileNet v2's) runs on the batch as one image's row of pixels
(`Lowering.images_as_row`), in float32, bfloat16 and INT8, with the values of
the numpy path; at batch 1, or on larger images, it runs as before."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.backends.dnnl.state import DnnlState

from .helpers import (
    assert_close,
    bind,
    forward_quantized,
    outputs,
    partitioned,
    quantized_mkldnn,
    random_arrays,
    vnni,
)
from .test_conv_layouts import assert_bf16_close, bf16_isa

data = mx.sym.var("data")


def net(depthwise: bool) -> mx.sym.Symbol:
    """conv 3x3 (16 channels, or a depthwise pair, which makes float32 run in
    channel blocks), global average pooling, a 1x1 classifier with relu."""
    x = mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16,
                                       name="c0"))
    if depthwise:
        x = mx.sym.relu(mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=16,
                                           num_group=16, name="dw"))
    x = mx.sym.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="avg")
    x = mx.sym.relu(mx.sym.Convolution(x, kernel=(1, 1), num_filter=10, name="classifier"))
    return mx.sym.flatten(x)


def classifier_src(ex) -> tuple[int, ...]:
    """The shape the classifier's convolution (the last) reads, in the plan of
    `ex`'s one DNNL subgraph."""
    (state,) = [s for s in ex._runner.operator_states().values() if isinstance(s, DnnlState)]
    return plan_classifier_src(state)


def plan_classifier_src(state: DnnlState) -> tuple[int, ...]:
    *_, last = [op for op, _ in state.compiled.plan.steps if op.kind == "conv"]
    return last.desc("src").shape


@pytest.mark.parametrize("depthwise", [False, True], ids=["dense", "depthwise"])
@pytest.mark.parametrize("batch", [1, 3])
def test_float32(depthwise, batch):
    sym, shape = net(depthwise), (batch, 3, 6, 6)
    args, aux = random_arrays(sym, {"data": shape})
    ex = bind(partitioned(sym, {"data": shape}), args, aux)
    assert_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
    assert classifier_src(ex) == ((1, 16, 1, batch) if batch > 1 else (1, 16, 1, 1))


@bf16_isa
def test_bfloat16():
    sym, shape = net(depthwise=True), (3, 3, 6, 6)
    args, aux = random_arrays(sym, {"data": shape})
    ex = bind(sym.optimize_for("DNNL", args, aux, dtype="bfloat16"), args, aux)
    assert_bf16_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
    assert classifier_src(ex) == (1, 16, 1, 3)


@vnni
def test_int8_gives_the_numpy_integers():
    qsym, qargs, qaux, x = quantized_mkldnn(net(depthwise=True), (3, 3, 6, 6))
    got, (state,) = forward_quantized(partitioned(qsym, {"data": x.shape}), qargs, qaux, x)
    np.testing.assert_array_equal(got, forward_quantized(qsym, qargs, qaux, x)[0])
    assert plan_classifier_src(state) == (1, 16, 1, 3)


def test_larger_images_run_as_images():
    """On 2x2 images the classifier's convolution reads the batch as it is."""
    sym, shape = net(depthwise=False), (3, 3, 6, 6)
    sym = mx.sym.flatten(mx.sym.Convolution(
        mx.sym.Pooling(mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1),
                                                      num_filter=16, name="c0")),
                       kernel=(3, 3), stride=(3, 3), pool_type="avg"),
        kernel=(1, 1), num_filter=10, name="classifier"))
    args, aux = random_arrays(sym, {"data": shape})
    ex = bind(partitioned(sym, {"data": shape}), args, aux)
    assert_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
    assert classifier_src(ex) == (3, 16, 2, 2)
