"""A quantized MobileNet-like net whose float32 first convolution (3x3, stride 2,
left out of quantization as MXNet's examples do) and the quantizing of its
output the DNNL lowering gives to minimx's own kernel (`onednn.first_conv`):
the plan runs it, whole and in batch parts, and the outputs are the numpy
kernels' but for a rare quantized value moved by one (the float32 sums' last
bit)."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl.quantized import OWN_FIRST_CONV

from .helpers import forward_quantized as forward
from .helpers import image_by_image, partitioned, quantized_mkldnn

kernel = pytest.mark.skipif(onednn.available() and not onednn.stem.first_conv_available(),
                            reason="this CPU has no AVX-512: the build has no kernel")

data = mx.sym.var("data")
SHAPE = (4, 3, 40, 40)


def net(act: str) -> mx.sym.Symbol:
    """conv 3x3/2 (3 -> 16) with BN and relu or relu6, then depthwise and
    pointwise layers and a classifier."""
    x = mx.sym.BatchNorm(mx.sym.Convolution(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                            num_filter=16, name="c0"), fix_gamma=False,
                         name="bn0")
    x = mx.sym.Activation(x, act_type="relu") if act == "relu" else \
        mx.sym.clip(x, a_min=0.0, a_max=6.0)
    x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=16, num_group=16,
                           name="dw")
    x = mx.sym.Activation(mx.sym.Convolution(x, kernel=(1, 1), num_filter=32, name="pw"),
                          act_type="relu")
    return mx.sym.FullyConnected(mx.sym.flatten(mx.sym.Pooling(
        x, kernel=(2, 2), global_pool=True, pool_type="avg")), num_hidden=10, name="fc")


def quantized(act: str):
    return quantized_mkldnn(net(act), SHAPE, excluded_sym_names=["c0"])


def assert_near(got: np.ndarray, want: np.ndarray) -> None:
    """A quantized value moved by one shifts the logits by a few hundredths of their scale."""
    np.testing.assert_allclose(got, want, rtol=0, atol=0.03 * float(np.abs(want).max()))


@kernel
@pytest.mark.parametrize("act", ["relu", "relu6"])
def test_first_convolution_and_its_quantizing_run_as_one_step(act):
    qsym, qargs, qaux, x = quantized(act)
    got, (state,) = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    steps = state.compiled.plan.step_names()
    assert steps[0][1].startswith("first_conv")
    assert not any(name.startswith("binary") for _, name in steps)   # no quantizing step
    assert state.kernels[OWN_FIRST_CONV] == ["c0"]
    assert_near(got, forward(qsym, qargs, qaux, x)[0])


@kernel
def test_in_batch_parts_the_same_outputs(monkeypatch):
    qsym, qargs, qaux, x = quantized("relu")
    whole, _ = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    image_by_image(monkeypatch)
    got, (state,) = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    assert state.compiled.plan.loop_count == SHAPE[0]
    assert "first_conv" in str(state.compiled.plan)
    np.testing.assert_array_equal(got, whole)   # image by image, the same sums


def test_turned_off_onednn_runs_the_three_steps(monkeypatch):
    monkeypatch.setenv("MINIMX_DNNL_FIRST_CONV_INT8", "0")
    qsym, qargs, qaux, x = quantized("relu")
    got, (state,) = forward(partitioned(qsym, {"data": SHAPE}), qargs, qaux, x)
    assert "first_conv" not in str(state.compiled.plan)
    assert OWN_FIRST_CONV not in state.kernels
    assert_near(got, forward(qsym, qargs, qaux, x)[0])


@kernel
@pytest.mark.parametrize("act", [None, "relu"])
@pytest.mark.parametrize("dtype", ["int8", "auto"])
def test_an_input_nan_is_quantized_as_on_the_numpy_path(act, dtype):
    # NaN becomes relu's lower bound, or without an activation what quantizing
    # NaN gives (127 in int8): the kernel gave -128 there.
    c0 = mx.sym.Convolution(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=16,
                            name="c0")
    x = c0 if act is None else mx.sym.Activation(c0, act_type=act)
    sym = mx.sym.Convolution(x, kernel=(1, 1), num_filter=16, no_bias=True, name="c1")
    shape = (1, 3, 8, 8)
    qsym, qargs, qaux, image = quantized_mkldnn(sym, shape, excluded_sym_names=["c0"],
                                                quantized_dtype=dtype)
    image[0, 1, 2, 5] = np.nan
    got, (state,) = forward(partitioned(qsym, {"data": shape}), qargs, qaux, image)
    assert state.kernels[OWN_FIRST_CONV] == ["c0"]
    want = forward(qsym, qargs, qaux, image)[0]
    np.testing.assert_array_equal(got[:, :, 1:3, 2:4], want[:, :, 1:3, 2:4])  # the NaN's outputs
    assert_near(got, want)
