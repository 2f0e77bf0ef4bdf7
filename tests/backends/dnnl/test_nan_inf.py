"""NaN and +-inf through every activation oneDNN runs: the DNNL path gives
the numpy path's values (relu gives 0 for NaN, as MXNet 1.9.1's Activation
does; clip gives a_min for NaN, as relu, being clip to [0, inf), does),
standalone, fused into a convolution, and after a Winograd one."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.backends.dnnl.state import DnnlState

from .helpers import partitioned
from .test_winograd import steps

# numpy warns of the NaN it is given; the values are what is checked.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

SPECIAL = np.array([np.nan, np.inf, -np.inf, -3.0, -0.5, 0.0, 0.25, 0.5, 2.0, 7.0],
                   np.float32)
SHAPE = (1, 1, 2, 5)
data = mx.sym.var("data")

ACTIVATIONS = {
    "Activation relu": lambda x: mx.sym.Activation(x, act_type="relu"),
    "Activation sigmoid": lambda x: mx.sym.Activation(x, act_type="sigmoid"),
    "Activation tanh": lambda x: mx.sym.Activation(x, act_type="tanh"),
    "Activation softrelu": lambda x: mx.sym.Activation(x, act_type="softrelu"),
    "LeakyReLU leaky": lambda x: mx.sym.LeakyReLU(x, act_type="leaky", slope=0.1),
    "LeakyReLU elu": lambda x: mx.sym.LeakyReLU(x, act_type="elu", slope=0.3),
    "relu": mx.sym.relu, "sigmoid": mx.sym.sigmoid, "tanh": mx.sym.tanh,
    "sqrt": mx.sym.sqrt, "square": mx.sym.square, "abs": mx.sym.abs,
    "clip": lambda x: mx.sym.clip(x, a_min=-1.0, a_max=6.0),
    "_plus_scalar": lambda x: x + 3.0, "_mul_scalar": lambda x: x * 0.0,
    "_div_scalar": lambda x: x / 6.0, "_rminus_scalar": lambda x: 1.0 - x,
}


def _run(sym, values: dict, backend: str, monkeypatch) -> tuple[np.ndarray, list]:
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
    ex = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in values.items()}, grad_req="null")
    return ex.forward()[0].asnumpy(), [n.op for n in ex._graph.nodes if n.op]


def _compare(sym, values: dict, monkeypatch) -> np.ndarray:
    want, _ = _run(sym, values, "NONE", monkeypatch)
    got, ops = _run(sym, values, "DNNL", monkeypatch)
    assert ops == ["_sg_dnnl"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    return got


def _identity_conv(act):
    """act after a 1x1 convolution that copies its one channel (fused)."""
    return act(mx.sym.Convolution(data, kernel=(1, 1), num_filter=1, no_bias=True,
                                   name="conv"))


def _cases():
    for name, act in ACTIVATIONS.items():
        yield pytest.param(act, False, id=f"{name}")
        yield pytest.param(act, True, id=f"conv+{name}")


@pytest.mark.parametrize("act,fused", list(_cases()))
def test_activation_of_nan_and_inf(act, fused, monkeypatch):
    sym = _identity_conv(act) if fused else act(data)
    values = {"data": SPECIAL.reshape(SHAPE)}
    if fused:
        values["conv_weight"] = np.ones((1, 1, 1, 1), np.float32)
    _compare(sym, values, monkeypatch)


@pytest.mark.parametrize("relu", [mx.sym.relu, lambda x: mx.sym.Activation(x, act_type="relu")],
                         ids=["relu", "Activation"])
def test_relu_follows_mxnet(relu, monkeypatch):
    # NaN and -inf give 0, as MXNet 1.9.1's Activation(act_type='relu') (its
    # `relu` operator keeps NaN: docs/api.md).
    got = _compare(relu(data), {"data": SPECIAL[:3].reshape(1, 1, 1, 3)}, monkeypatch)
    assert got.ravel().tolist() == [0.0, np.inf, 0.0]


@pytest.mark.parametrize("act,floor", [(mx.sym.relu, 0.0),
                                       (lambda x: mx.sym.clip(x, a_min=0.5, a_max=6.0), 0.5)],
                         ids=["relu", "clip"])
def test_winograd_activation_of_nan(act, floor, monkeypatch):
    # NaN data makes every convolution output NaN; relu makes it 0, clip a_min.
    monkeypatch.delenv("MINIMX_DNNL_WINOGRAD", raising=False)
    shape, weight = (1, 16, 16, 16), (16, 16, 3, 3)
    sym = act(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="conv"))
    rng = np.random.default_rng(0)
    values = {"data": np.full(shape, np.nan, np.float32),
              "conv_weight": rng.standard_normal(weight).astype(np.float32),
              "conv_bias": np.zeros(16, np.float32)}
    assert (_compare(sym, values, monkeypatch) == floor).all()
    ex = partitioned(sym, {"data": shape}).bind(
        mx.cpu(), {k: mx.nd.array(v) for k, v in values.items()}, grad_req="null")
    ex.forward()[0].wait_to_read()
    assert "wino_conv" in [op.kind for op in steps(ex)]


def test_clip_gives_a_min_for_nan_on_both_paths(monkeypatch):
    sym = _identity_conv(lambda x: mx.sym.clip(x, a_min=0.5, a_max=6.0))
    values = {"data": SPECIAL.reshape(SHAPE), "conv_weight": np.ones((1, 1, 1, 1), np.float32)}
    got = _compare(sym, values, monkeypatch)
    assert got.ravel().tolist() == [0.5, 6.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 2.0, 6.0]


def test_a_clip_subgraph_stays_on_onednn_for_nan_inputs(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    sym = _identity_conv(lambda x: mx.sym.clip(x, a_min=0.0, a_max=6.0))
    x = mx.nd.array(np.full(SHAPE, np.nan, np.float32))
    ex = sym.bind(mx.cpu(), {"data": x, "conv_weight": mx.nd.ones((1, 1, 1, 1))},
                  grad_req="null")
    assert (ex.forward()[0].asnumpy() == 0).all()
    (state,) = [s for s in ex._runner._states.values() if isinstance(s, DnnlState)]
    assert state.compiled is not None and not state._numpy


@pytest.mark.parametrize("fused", [False, True])
def test_gelu_departs_from_mxnet_for_plus_inf_only(fused, monkeypatch):
    """oneDNN's gelu_erf gives NaN for +inf (MXNet and numpy: inf); kept in the
    table because MXNet's backend fuses FullyConnected + GELU (configs/dnnl.yaml)."""
    act = lambda x: mx.sym.LeakyReLU(x, act_type="gelu")  # noqa: E731
    sym = _identity_conv(act) if fused else act(data)
    values = {"data": SPECIAL.reshape(SHAPE)}
    if fused:
        values["conv_weight"] = np.ones((1, 1, 1, 1), np.float32)
    want, _ = _run(sym, values, "NONE", monkeypatch)
    got, ops = _run(sym, values, "DNNL", monkeypatch)
    assert ops == ["_sg_dnnl"]
    inf = SPECIAL.reshape(SHAPE) == np.inf
    assert want[inf].tolist() == [np.inf] and np.isnan(got[inf]).all()
    np.testing.assert_allclose(got[~inf], want[~inf], rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("conv", [
    dict(kernel=(1, 1), pad=(1, 1), num_filter=4),   # oneDNN's gemm convolution
    dict(kernel=(3, 3), pad=(1, 1), num_filter=4, dilate=(2, 2)),
    dict(kernel=(1, 1), num_filter=4, num_group=2),
], ids=["padded-1x1", "dilated", "grouped"])
def test_relu_gives_0_for_nan_after_every_kind_of_convolution(conv, monkeypatch):
    # oneDNN's relu post-op keeps NaN in some kernels (found by a fuzz of the
    # backend against the numpy path); minimx runs it as clip to [0, inf).
    sym = mx.sym.Activation(mx.sym.Convolution(data, no_bias=True, name="conv", **conv),
                            act_type="relu")
    x = np.ones((1, 2, 5, 5), np.float32)
    x[0, 0, 2, 2] = np.nan
    weight = (4, 2 // conv.get("num_group", 1), *conv["kernel"])
    got = _compare(sym, {"data": x, "conv_weight": np.ones(weight, np.float32)}, monkeypatch)
    assert not np.isnan(got).any() and (got == 0).any()


def test_max_pooling_of_nan_and_minus_inf_is_mxnets(monkeypatch):
    # MXNet 1.9.1, with its MKLDNN and without: a window's max starts from the lowest
    # float and takes what is greater, so NaN never wins and -inf gives -FLT_MAX.
    x = np.array([[[[-np.inf, -np.inf], [np.nan, 2.0]]]], np.float32)
    lowest = float(np.finfo(np.float32).min)
    for kw, want in [(dict(kernel=(1, 1)), [lowest, lowest, lowest, 2.0]),
                     (dict(kernel=(1, 2), stride=(1, 2)), [lowest, 2.0]),
                     (dict(kernel=(1, 1), global_pool=True), [2.0])]:
        got = _compare(mx.sym.Pooling(data, pool_type="max", **kw), {"data": x}, monkeypatch)
        assert got.ravel().tolist() == want


def test_own_kernels_take_only_bounds_that_give_numpys_nan():
    # minimx's kernels clamp NaN to the lower bound where given bounds and keep it
    # where given (-inf, inf), which stands for no activation: a clip to
    # (-inf, inf), whose NaN the numpy path makes -inf, is left to oneDNN.
    from minimx.backends.dnnl.eltwise import clamp_bounds
    from minimx.onednn import PostOp

    assert clamp_bounds([]) == (-np.inf, np.inf)
    assert clamp_bounds([PostOp.eltwise("relu")]) == (0.0, np.inf)
    assert clamp_bounds([PostOp.eltwise("clip", 0.0, 6.0)]) == (0.0, 6.0)
    assert clamp_bounds([PostOp.eltwise("clip", -np.inf, 6.0)]) == (-np.inf, 6.0)
    assert clamp_bounds([PostOp.eltwise("clip", -np.inf, np.inf)]) is None
    assert clamp_bounds([PostOp.eltwise("tanh")]) is None


@pytest.mark.parametrize("axis", [1, -1])
def test_softmax_of_a_row_holding_plus_inf(axis, monkeypatch):
    # MXNet 1.9.1's CPU kernel: NaN across the row (x - max is NaN at the +inf);
    # its MKLDNN kernel along the last axis, as the DNNL path: NaN only there.
    x = np.zeros((1, 4, 1, 4), np.float32)
    if axis == -1:
        row = (0, 0, 0, slice(None))
        x[0, 0, 0, :2] = np.inf, -np.inf
    else:
        row = (0, slice(None), 0, 0)
        x[0, :2, 0, 0] = np.inf, -np.inf
    for op in (mx.sym.softmax, mx.sym.log_softmax):
        sym = op(data, axis=axis)
        want, _ = _run(sym, {"data": x}, "NONE", monkeypatch)
        got, _ = _run(sym, {"data": x}, "DNNL", monkeypatch)
        assert np.isnan(want[row]).all()
        if axis == -1:   # documented: the paths differ as MXNet's two kernels do
            assert np.isnan(got[row]).sum() == 1
        else:
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("fused", [False, True], ids=["BatchNorm", "conv+BatchNorm"])
def test_batch_norm_of_a_nan_or_negative_moving_variance(fused, monkeypatch):
    # MXNet 1.9.1 gives NaN for both (its plain and MKLDNN kernels), inf for a
    # zero variance with eps 0; minimx gave beta on the numpy path.
    x = mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, no_bias=True, name="c") \
        if fused else data
    sym = mx.sym.BatchNorm(x, fix_gamma=False, eps=0.0, name="bn")
    values = {"data": np.ones((1, 4, 2, 2), np.float32), "bn_gamma": np.ones(4, np.float32),
              "bn_beta": np.full(4, 0.5, np.float32)}
    if fused:
        values["c_weight"] = np.eye(4, dtype=np.float32).reshape(4, 4, 1, 1)
    # A zero variance folded into the weights makes 0 * inf: not checked there.
    last, want = (4.0, 1.0) if fused else (0.0, np.inf)
    aux = {"bn_moving_mean": np.zeros(4, np.float32),
           "bn_moving_var": np.array([1.0, np.nan, -5.0, last], np.float32)}
    got = {}
    for backend in ("NONE", "DNNL"):
        monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
        ex = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in values.items()},
                      aux_states={k: mx.nd.array(v) for k, v in aux.items()}, grad_req="null")
        got[backend] = ex.forward(is_train=False)[0].asnumpy()[0, :, 0, 0]
    for out in got.values():
        np.testing.assert_array_equal(out, [1.5, np.nan, np.nan, want])


def test_batch_norm_training_zero_variance_gives_beta():
    # MXNet 1.9.1's CPU kernel: a channel whose batch variance is 0, with eps 0,
    # has inverse standard deviation 0 (the output is beta), not inf.
    x = mx.nd.array(np.stack([np.ones((2, 2)), np.arange(4.0).reshape(2, 2)])[None])
    gamma, beta = mx.nd.ones(2), mx.nd.full(2, 0.5)
    mean, var = mx.nd.zeros(2), mx.nd.ones(2)
    with mx.autograd.record(train_mode=True):
        out = mx.nd.BatchNorm(x, gamma, beta, mean, var, eps=0.0, fix_gamma=False)
    np.testing.assert_allclose(out.asnumpy()[0, :, 0, 0], [0.5, -0.8416407], rtol=1e-6)


def _grouped(op, group: int):
    return lambda x: op(x, kernel=(3, 3), pad=(1, 1), num_filter=4, num_group=group,
                        no_bias=True, name="c")


@pytest.mark.parametrize("layer,weight", [
    (_grouped(mx.sym.Convolution, 1), (4, 4, 3, 3)),
    (_grouped(mx.sym.Convolution, 2), (4, 2, 3, 3)),
    (_grouped(mx.sym.Convolution, 4), (4, 1, 3, 3)),
    (_grouped(mx.sym.Deconvolution, 1), (4, 4, 3, 3)),
    (_grouped(mx.sym.Deconvolution, 2), (4, 2, 3, 3))],
    ids=["conv", "grouped-conv", "depthwise-conv", "deconv", "grouped-deconv"])
def test_sigmoid_after_a_convolution_keeps_nan(layer, weight, monkeypatch):
    # oneDNN's reference logistic (the gemm convolution's and the backward-data
    # one's post-op, the eltwise on a padded blocked layout) gives 0 for NaN.
    x = np.ones((1, 4, 3, 3), np.float32)
    x[0, 0, 1, 1] = np.nan
    sym = mx.sym.Activation(layer(data), act_type="sigmoid")
    got = _compare(sym, {"data": x, "c_weight": np.full(weight, 0.1, np.float32)}, monkeypatch)
    assert np.isnan(got).any()


def test_sigmoid_on_a_padded_blocked_layout_keeps_nan(monkeypatch):
    # A depthwise network's tensors of 20 channels are blocked by 16 and padded:
    # oneDNN has only its reference eltwise for them, so the sigmoid reads a plain copy.
    c = 20
    x = np.ones((1, c, 5, 5), np.float32)
    x[0, 0, 2, 2] = np.nan
    sym = mx.sym.sigmoid(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=c,
                                            num_group=c, name="dw") + 1.0)
    got = _compare(sym, {"data": x, "dw_weight": np.full((c, 1, 3, 3), 0.1, np.float32),
                         "dw_bias": np.zeros(c, np.float32)}, monkeypatch)
    assert np.isnan(got).sum() == 9


@pytest.mark.parametrize("out_type,calib,want", [
    ("int8", True, [127, 64, -64, 127, -128, 127]),
    ("int8", False, [127, 0, 0, 127, 127, 0]),
    ("uint8", True, [0, 128, 0, 255, 0, 255]),
    ("uint8", False, [0, 0, 0, 0, 0, 0])])
def test_quantize_of_nan_and_inf_as_mxnet(out_type, calib, want, monkeypatch):
    # MXNet 1.9.1's quantize_v2 (with MKLDNN and without): NaN becomes 127 in int8
    # and 0 in uint8; a measured range passes NaN by (here (-inf, inf), so that
    # every finite value scales to 0). The numpy path gave 0, and no range.
    x = np.array([[np.nan, 0.5, -0.5, np.inf, -np.inf, 1.0]], np.float32)
    kw = dict(min_calib_range=-1.0 if out_type == "int8" else 0.0, max_calib_range=1.0) \
        if calib else {}
    q = mx.sym.contrib.quantize_v2(data, out_type=out_type, **kw)
    for backend in ("NONE", "DNNL"):
        got, _ = _run(q[0], {"data": x}, backend, monkeypatch)
        assert got.tolist() == [want]


def _cv(name: str, channels: int, group: int, **kw):
    return mx.sym.Convolution(data, kernel=(3, 3), num_filter=channels, num_group=group,
                              name=name, **{"pad": (1, 1), **kw})


DILATED = dict(dilate=(2, 2), stride=(2, 2), pad=(2, 2))


@pytest.mark.parametrize("sym,shape", [
    (mx.sym.sigmoid(_cv("a", 4, 2) + _cv("b", 4, 2)), (1, 4, 6, 6)),
    (mx.sym.sigmoid(mx.sym.abs(_cv("a", 2, 2, **DILATED)) + _cv("b", 2, 2, **DILATED)),
     (1, 2, 9, 11)),
    (mx.sym.sigmoid(_cv("a", 4, 1)) + data, (2, 4, 11, 11))],
    ids=["grouped-conv-sum", "dilated-depthwise", "conv-4-channels"])
def test_sigmoid_fused_into_a_reference_kernel_keeps_nan(sym, shape, monkeypatch):
    # oneDNN runs these convolutions with its reference (or gemm) kernel, whose
    # logistic post-op gives 0 for NaN: minimx gives it as 0.5 * tanh(x / 2) + 0.5.
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    x[0, 0, 3, 5] = x[0, 1, 4, 4] = np.nan
    arg_shapes = sym.infer_shape(data=shape)[0]
    values = {n: x if n == "data" else rng.standard_normal(s).astype(np.float32)
              for n, s in zip(sym.list_arguments(), arg_shapes, strict=True)}
    assert np.isnan(_compare(sym, values, monkeypatch)).any()


@pytest.mark.parametrize("hidden", [3, 64])
def test_sigmoid_after_a_fully_connected_layer_keeps_nan(hidden, monkeypatch):
    x = np.ones((2, 6), np.float32)
    x[0, 1] = np.nan
    sym = mx.sym.sigmoid(mx.sym.FullyConnected(data, num_hidden=hidden, name="fc"))
    got = _compare(sym, {"data": x, "fc_weight": np.full((hidden, 6), 0.1, np.float32),
                         "fc_bias": np.zeros(hidden, np.float32)}, monkeypatch)
    assert np.isnan(got[0]).all() and not np.isnan(got[1]).any()
