"""A quantized MobileNet v2-like net whose expanding 1x1 convolutions the DNNL
lowering gives to minimx's own kernel (`onednn.pw8_conv`): the numpy
kernels' integers, whole and in batch parts, on the int8 outputs of linear
projections and on uint8 data; oneDNN's kernel where a layer expands too
little or has too many input channels."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl.quantized import OWN_POINTWISE
from minimx.onednn import pointwise

from .helpers import convolution_kernels, image_by_image, partitioned, quantized_mkldnn
from .helpers import forward_quantized as forward

kernel = pytest.mark.skipif(onednn.available() and not pointwise.pw8_available(),
                            reason="this CPU has no AVX512-VNNI: the build has no kernel")

data = mx.sym.var("data")
SHAPE = (3, 3, 20, 20)


def conv_bn(x: mx.sym.Symbol, channels: int, name: str, relu: bool) -> mx.sym.Symbol:
    y = mx.sym.BatchNorm(mx.sym.Convolution(x, kernel=(1, 1), num_filter=channels, name=name),
                         fix_gamma=False, name=f"{name}_bn")
    return mx.sym.Activation(y, act_type="relu") if relu else y


def net() -> mx.sym.Symbol:
    """A first conv-BN-relu to 16 channels (uint8 out), then 1x1 layers, pw8
    where they expand at least twofold from at most 320 channels (32 a step
    above 32), oneDNN's elsewhere: see LAYERS."""
    x = mx.sym.Activation(mx.sym.BatchNorm(mx.sym.Convolution(
        data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="c0"), fix_gamma=False,
        name="bn0"), act_type="relu")
    for i, (channels, relu, _) in enumerate(LAYERS):
        x = conv_bn(x, channels, f"pw{i}", relu)
    return mx.sym.FullyConnected(mx.sym.flatten(mx.sym.Pooling(
        x, kernel=(2, 2), global_pool=True, pool_type="avg")), num_hidden=10, name="fc")


# (output channels, relu, the kernel that runs it) of each 1x1 layer in turn;
# a layer without relu writes int8, which the next reads.
LAYERS = [(96, True, "pw8_conv"),     # 16 -> 96 on uint8
          (24, False, "conv"),        # 96 -> 24: shrinks
          (144, True, "pw8_conv"),    # 24 -> 144 on int8
          (32, False, "conv"),
          (64, True, "pw8_conv"),     # 32 -> 64: twofold
          (128, True, "pw8_conv"),    # 64 -> 128: twofold, summed in steps of 32
          (64, False, "conv"),
          (96, True, "conv"),         # 64 -> 96: less than twofold
          (192, True, "pw8_conv"),    # 96 -> 192 on uint8
          (40, False, "conv"),
          (192, True, "conv"),        # 40 -> 192: 40 is not 32 a step
          (384, True, "pw8_conv"),    # 192 -> 384
          (768, True, "conv")]        # 384 -> 768: more than 320 in


@pytest.fixture(scope="module")
def quantized():
    return quantized_mkldnn(net(), SHAPE, quantized_dtype="auto", excluded_sym_names=["c0"])


@kernel
def test_expansions_run_minimx_kernel_with_the_numpy_integers(quantized):
    qsym, qargs, qaux, x = quantized
    got, (state,) = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    np.testing.assert_array_equal(got, forward(qsym, qargs, qaux, x)[0])
    chosen = {owner: name.split("[")[0]
              for owner, name in convolution_kernels(state, "pw8_conv").items()}
    names = [f"quantized_sg_mkldnn_conv_bn_{'act_' if relu else ''}{i + 1}"
             for i, (_, relu, _) in enumerate(LAYERS)]
    assert chosen == {"sg_mkldnn_conv_bn_act_0": "conv",   # float32
                      **{name: kind for name, (_, _, kind) in zip(names, LAYERS, strict=True)}}
    assert state.kernels[OWN_POINTWISE] == [
        name for name, (_, _, kind) in zip(names, LAYERS, strict=True) if kind == "pw8_conv"]


@kernel
def test_in_batch_parts_too(quantized, monkeypatch):
    image_by_image(monkeypatch)
    qsym, qargs, qaux, x = quantized
    got, (state,) = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    assert state.compiled.plan.loop_count == SHAPE[0]
    assert "pw8_conv" in str(state.compiled.plan)
    np.testing.assert_array_equal(got, forward(qsym, qargs, qaux, x)[0])


@kernel
def test_a_batch_of_one_pixel_images_runs_as_one_row():
    """A 1x1 convolution of 1x1 images reads the batch as one image's row of
    pixels (`Lowering.images_as_row`): the kernel takes the row."""
    shape = (5, 8, 1, 1)
    sym = mx.sym.Activation(mx.sym.Convolution(data, kernel=(1, 1), num_filter=32, name="pw"),
                            act_type="relu")
    qsym, qargs, qaux, x = quantized_mkldnn(sym, shape, quantized_dtype="auto")
    got, (state,) = forward(partitioned(qsym, {"data": shape}), qargs, qaux, x)
    assert state.kernels[OWN_POINTWISE] == ["quantized_sg_mkldnn_conv_act_0"]
    np.testing.assert_array_equal(got, forward(qsym, qargs, qaux, x)[0])


def test_turned_off_onednn_gives_the_same_integers(quantized, monkeypatch):
    monkeypatch.setenv("MINIMX_DNNL_POINTWISE_INT8", "0")
    qsym, qargs, qaux, x = quantized
    got, (state,) = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    chosen = convolution_kernels(state, "pw8_conv")
    assert not any(name.startswith("pw8_conv") for name in chosen.values())
    assert OWN_POINTWISE not in state.kernels
    np.testing.assert_array_equal(got, forward(qsym, qargs, qaux, x)[0])
