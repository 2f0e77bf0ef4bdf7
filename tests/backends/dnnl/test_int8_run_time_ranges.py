"""calib_mode none inside DNNL subgraphs: ranges found at run time by plan steps
(oneDNN's min/max reduction, the scale arithmetic on 1-element tensors) give the
numpy kernels' numbers exactly (`backends/dnnl/quantized.py`)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.backends.dnnl.state import DnnlState

from .helpers import dnnl_nodes, inner_ops, outer_ops

OUT_TYPES = st.sampled_from(["int8", "uint8", "auto"])
SHAPES = st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple)


def _outputs(sym, feeds: dict[str, mx.nd.NDArray]) -> list[np.ndarray]:
    return [o.asnumpy() for o in sym.bind(mx.cpu(), feeds, grad_req="null").forward()]


def _assert_same(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@settings(max_examples=25, deadline=None)
@given(shape=SHAPES, out_type=OUT_TYPES, scale=st.sampled_from([0.0, 1e-30, 1e-3, 1.0, 1e4]),
       low=st.sampled_from([-1.0, -0.2, 0.0]), seed=st.integers(0, 2**16))
def test_quantize_and_dequantize_find_the_range_as_the_numpy_kernels(shape, out_type, scale,
                                                                     low, seed):
    q = mx.sym._contrib_quantize_v2(mx.sym.var("data"), out_type=out_type, name="q")
    sym = mx.sym.Group([q[0], q[1], q[2], mx.sym._contrib_dequantize(q[0], q[1], q[2])])
    data = np.random.default_rng(seed).uniform(low, 1.0, shape).astype(np.float32) * \
        np.float32(scale)
    part = mx.subgraph.partition(sym, "DNNL", shapes={"data": shape})
    assert outer_ops(part) == ["_sg_dnnl"]
    feeds = {"data": mx.nd.array(data)}
    _assert_same(_outputs(part, feeds), _outputs(sym, feeds))


@settings(max_examples=25, deadline=None)
@given(shape=SHAPES, out_type=OUT_TYPES,
       reach=st.sampled_from([0, 1, 1000, 2**20, 2**31 - 1]),
       real=st.sampled_from([0.0, 1e-3, 40.0, 1e6]), seed=st.integers(0, 2**16))
def test_requantize_to_the_range_reached_as_the_numpy_kernel(shape, out_type, reach, real,
                                                             seed):
    """Its input range is read at run time: other values run the same plan."""
    acc, lo, hi = mx.sym.var("acc"), mx.sym.var("lo"), mx.sym.var("hi")
    r = mx.sym._contrib_requantize(acc, lo, hi, out_type=out_type, name="r")
    sym = mx.sym.Group([r[0], r[1], r[2], mx.sym._contrib_dequantize(r[0], r[1], r[2])])
    rng = np.random.default_rng(seed)
    part = mx.subgraph.partition(sym, "DNNL", shapes={"acc": shape, "lo": (1,), "hi": (1,)},
                                 dtypes={"acc": np.int32})
    assert outer_ops(part) == ["_sg_dnnl"]
    feeds = {"acc": mx.nd.zeros(shape, dtype=np.int32), "lo": mx.nd.zeros((1,)),
             "hi": mx.nd.zeros((1,))}
    ex = part.bind(mx.cpu(), feeds, grad_req="null")
    for k in range(2):
        values = {"acc": rng.integers(-reach, reach, shape, endpoint=True).astype(np.int32),
                  "lo": np.array([-real * (k + 1)], np.float32),
                  "hi": np.array([real / (k + 1)], np.float32)}
        for name, value in values.items():
            ex.arg_dict[name][:] = value
        got = [o.asnumpy() for o in ex.forward()]
        _assert_same(got, _outputs(sym, {n: mx.nd.array(v, dtype=v.dtype)
                                         for n, v in values.items()}))
    plans = [s.compiled for s in ex._runner.operator_states().values()
             if isinstance(s, DnnlState)]
    assert [p.ranges for p in plans] == [{}]


def _check_quantized(net, shape: tuple[int, ...], fused: str, dtype: str, scale: float,
                     seed: int) -> None:
    """`net` (two `fused` layers) quantized with calib_mode none runs in one DNNL
    subgraph with the numpy kernels' outputs (uint8 data from 0 up, as they require),
    but for convolutions reading uint8 data: those stay on the numpy kernels, which
    refuse a range below 0 as MXNet does (a plan finds the range too late to)."""
    rng = np.random.default_rng(seed)
    ex = net.simple_bind(mx.cpu(), data=shape)
    args = {k: mx.nd.array(rng.uniform(-1, 1, v.shape).astype(np.float32))
            for k, v in ex.arg_dict.items() if k != "data"}
    auxs = {k: mx.nd.array(rng.uniform(0.5, 1.5, v.shape).astype(np.float32))
            for k, v in ex.aux_dict.items()}
    qsym, qargs, qauxs = mx.contrib.quantization.quantize_model_mkldnn(
        net, args, auxs, calib_mode="none", label_names=None, quantized_dtype=dtype)
    part = mx.subgraph.partition(qsym, "DNNL", shapes={"data": shape})
    if fused == "_sg_mkldnn_conv" and dtype == "uint8":
        assert outer_ops(part).count(fused) == 2
    else:
        assert outer_ops(part) == ["_sg_dnnl"]
        assert inner_ops(dnnl_nodes(part)[0]).count(fused) == 2
    data = (rng.uniform(0 if dtype == "uint8" else -1, 1, shape) * scale).astype(np.float32)
    got, want = ([o.asnumpy() for o in s.bind(mx.cpu(), {**qargs, "data": mx.nd.array(data)},
                                             grad_req="null", aux_states=qauxs).forward()]
                 for s in (part, qsym))
    _assert_same(got, want)


def _conv_net(channels: int, kernel: int, stride: int, no_bias: bool, bn: bool, act: str | None):
    x = mx.sym.Convolution(mx.sym.var("data"), num_filter=channels, kernel=(kernel, kernel),
                           stride=(stride, stride), pad=(kernel // 2, kernel // 2),
                           no_bias=no_bias, name="c0")
    if bn:
        x = mx.sym.BatchNorm(x, name="bn0")
    if act is not None:
        x = mx.sym.Activation(x, act_type=act, name="a0")
    return mx.sym.Convolution(x, num_filter=3, kernel=(1, 1), name="c1")


@settings(max_examples=15, deadline=None)
@given(channels=st.integers(1, 8), kernel=st.sampled_from([1, 3]), stride=st.integers(1, 2),
       no_bias=st.booleans(), bn=st.booleans(), act=st.sampled_from([None, "relu"]),
       batch=st.integers(1, 3), scale=st.sampled_from([0.0, 1e-3, 1.0, 30.0]),
       dtype=OUT_TYPES, seed=st.integers(0, 2**16))
def test_uncalibrated_convolutions_match_the_numpy_kernels(channels, kernel, stride, no_bias,
                                                           bn, act, batch, scale, dtype, seed):
    """quantize_model_mkldnn with calib_mode none: quantize, the int32 convolutions
    (BatchNorm folded, their bias quantized by the data's scale), requantize and
    dequantize all in one subgraph."""
    _check_quantized(_conv_net(channels, kernel, stride, no_bias, bn, act), (batch, 2, 7, 6),
                     "_sg_mkldnn_conv", dtype, scale, seed)


@settings(max_examples=15, deadline=None)
@given(hidden=st.integers(1, 12), no_bias=st.booleans(), act=st.sampled_from([None, "relu"]),
       batch=st.integers(1, 3), scale=st.sampled_from([0.0, 1e-7, 1e-4, 1.0, 30.0]),
       dtype=OUT_TYPES, seed=st.integers(0, 2**16))
def test_uncalibrated_fully_connected_match_the_numpy_kernels(hidden, no_bias, act, batch,
                                                              scale, dtype, seed):
    """The int8 bias rescaled to the product's scale found at run time (and the weights,
    where the bias would pass INT32_MAX / 2: tiny data), rounding half away from zero."""
    x = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=hidden, no_bias=no_bias,
                              name="fc0")
    if act is not None:
        x = mx.sym.Activation(x, act_type=act, name="a0")
    _check_quantized(mx.sym.FullyConnected(x, num_hidden=4, name="fc1"), (batch, 3, 2, 5),
                     "_sg_mkldnn_fully_connected", dtype, scale, seed)


@pytest.mark.parametrize("calib_mode", ["naive", "none"])
def test_a_subgraph_starting_at_a_range_passing_operator_reads_its_range_as_given(calib_mode):
    """MXNet's padded average pooling with the full convention stays on the numpy
    kernels, so the next subgraph starts at a quantized flatten whose range
    comes from outside it (lowering followed that range to a variable and failed)."""
    data = mx.sym.var("data")
    y = mx.sym.Convolution(data, kernel=(1, 1), num_filter=8, name="c")
    y = mx.sym.Pooling(y, kernel=(3, 3), pad=(1, 1), stride=(2, 2), pool_type="avg",
                       pooling_convention="full", name="pool")
    y = mx.sym.FullyConnected(mx.sym.Flatten(y), num_hidden=10, name="fc")
    shape = (2, 4, 12, 12)
    rng = np.random.default_rng(0)
    arg_shapes, _, _ = y.infer_shape(data=shape)
    args = {n: mx.nd.array(rng.normal(0, 0.3, s).astype(np.float32))
            for n, s in zip(y.list_arguments(), arg_shapes, strict=True) if n != "data"}
    calib = [rng.standard_normal(shape).astype(np.float32)] if calib_mode == "naive" else None
    qsym, qargs, _ = mx.contrib.quantization.quantize_model_mkldnn(
        y, args, {}, calib_mode=calib_mode, calib_data=calib, label_names=())
    part = mx.subgraph.partition(qsym, "DNNL", shapes={"data": shape})
    assert len(dnnl_nodes(part)) == 2 and "_contrib_quantized_pooling" in outer_ops(part)
    feeds = {**qargs, "data": mx.nd.zeros(shape)}
    ex = part.bind(mx.cpu(), {n: feeds[n] for n in part.list_arguments()}, grad_req="null")
    for scale in (1.0, 5.0):   # other ranges, at run time, for calib_mode none
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        ex.arg_dict["data"][:] = x
        want = _outputs(qsym, {**qargs, "data": mx.nd.array(x)})
        _assert_same([o.asnumpy() for o in ex.forward()], want)
