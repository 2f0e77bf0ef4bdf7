"""A quantized MobileNet-like net whose depthwise convolutions the DNNL
lowering gives to minimx's own kernel (`onednn.dw8_conv`): the numpy
kernels' integers, whole and in batch parts, and oneDNN's kernel where it
is left to (stride 2 on other than blocks of 64 channels)."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl.quantized import OWN_DEPTHWISE
from minimx.onednn import depthwise

from .helpers import convolution_kernels, image_by_image, partitioned, quantized_mkldnn
from .helpers import forward_quantized as forward

kernel = pytest.mark.skipif(onednn.available() and not depthwise.dw8_available(),
                            reason="this CPU has no AVX512-VNNI: the build has no kernel")

data = mx.sym.var("data")
SHAPE = (3, 3, 32, 32)


def relu(x: mx.sym.Symbol) -> mx.sym.Symbol:
    return mx.sym.Activation(x, act_type="relu")   # what MXNet's pass fuses into a conv


def net() -> mx.sym.Symbol:
    """conv-BN-relu, then depthwise 3x3 + pointwise pairs: stride 1 on 16
    channels (with BN and relu; without relu, whose output is int8 when
    calibrated `auto`), stride 2 on 64 channels, and on 32 (oneDNN's)."""
    x = relu(mx.sym.BatchNorm(mx.sym.Convolution(
        data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="c0"), fix_gamma=False,
        name="bn0"))
    for i, (channels, stride, with_relu) in enumerate([(16, 1, True), (64, 1, False),
                                                      (32, 2, True), (32, 2, True)]):
        x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), stride=(stride, stride),
                               num_filter=x.infer_shape(data=SHAPE)[1][0][1],
                               num_group=x.infer_shape(data=SHAPE)[1][0][1], name=f"dw{i}")
        x = mx.sym.BatchNorm(x, fix_gamma=False, name=f"dwbn{i}")
        x = relu(x) if with_relu else x
        x = relu(mx.sym.Convolution(x, kernel=(1, 1), num_filter=channels, name=f"pw{i}"))
    return mx.sym.FullyConnected(mx.sym.flatten(mx.sym.Pooling(
        x, kernel=(2, 2), global_pool=True, pool_type="avg")), num_hidden=10, name="fc")


@pytest.fixture(scope="module")
def quantized():
    return quantized_mkldnn(net(), SHAPE, quantized_dtype="auto", excluded_sym_names=["c0"])


@kernel
def test_depthwise_runs_minimx_kernel_with_the_numpy_integers(quantized):
    qsym, qargs, qaux, x = quantized
    got, (state,) = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    np.testing.assert_array_equal(got, forward(qsym, qargs, qaux, x)[0])
    chosen = convolution_kernels(state, "dw8_conv")
    assert chosen["quantized_sg_mkldnn_conv_bn_act_1"].startswith("dw8_conv")
    assert chosen["quantized_sg_mkldnn_conv_bn_3"].startswith("dw8_conv")   # no relu: int8 out
    assert chosen["quantized_sg_mkldnn_conv_bn_act_5"].startswith("dw8_conv")   # stride 2
    assert chosen["quantized_sg_mkldnn_conv_bn_act_7"].startswith("conv")   # 32 channels
    assert sum(name.startswith("dw8_conv") for name in chosen.values()) == 3
    assert state.kernels[OWN_DEPTHWISE] == ["quantized_sg_mkldnn_conv_bn_act_1",
                                            "quantized_sg_mkldnn_conv_bn_3",
                                            "quantized_sg_mkldnn_conv_bn_act_5"]


@kernel
def test_in_batch_parts_too(quantized, monkeypatch):
    image_by_image(monkeypatch)
    qsym, qargs, qaux, x = quantized
    got, (state,) = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    assert state.compiled.plan.loop_count == SHAPE[0]
    assert "dw8_conv" in str(state.compiled.plan)
    np.testing.assert_array_equal(got, forward(qsym, qargs, qaux, x)[0])


def test_turned_off_onednn_gives_the_same_integers(quantized, monkeypatch):
    monkeypatch.setenv("MINIMX_DNNL_DEPTHWISE_INT8", "0")
    qsym, qargs, qaux, x = quantized
    got, (state,) = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    chosen = convolution_kernels(state, "dw8_conv")
    assert not any(name.startswith("dw8_conv") for name in chosen.values())
    assert OWN_DEPTHWISE not in state.kernels
    np.testing.assert_array_equal(got, forward(qsym, qargs, qaux, x)[0])
