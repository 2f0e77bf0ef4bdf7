"""MobileNet v2's expand-then-depthwise pairs, and the projections after them,
which the DNNL lowering gives to minimx's kernel (`onednn.pwdw_conv`) in
float32: the plan runs each block (or pair) as one step, whole and in batch
parts, with the numpy path's outputs; what it must not take stays oneDNN's."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl import pointwise_depthwise as lowering
from minimx.backends.dnnl.pointwise_depthwise import POINTWISE_DEPTHWISE
from minimx.backends.dnnl.state import DnnlState
from minimx.onednn import pointwise_depthwise as pd

from .helpers import assert_close, bind, image_by_image, outputs, partitioned, random_arrays
from .test_conv_layouts import plan_steps

kernel = pytest.mark.skipif(onednn.available() and not pd.pwdw_available(),
                            reason="this CPU has no AVX-512: the build has no kernel")

data = mx.sym.var("data")
# 32x32 after the first convolution: each block's output has the rows the
# kernel needs to project (`PROJECT_MIN_ROWS`).
SHAPE = {"data": (2, 3, 64, 64)}


def conv(x, name: str, filters: int, kernel: int = 1, stride: int = 1, group: int = 1,
         act: str | None = "relu6", bn: bool = True) -> mx.sym.Symbol:
    x = mx.sym.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride),
                           pad=(kernel // 2,) * 2, num_filter=filters, num_group=group,
                           no_bias=bn, name=name)
    if bn:
        x = mx.sym.BatchNorm(x, fix_gamma=False, name=f"{name}_bn")
    if act == "relu6":
        return mx.sym.clip(x, a_min=0.0, a_max=6.0)
    return x if act is None else mx.sym.Activation(x, act_type=act)


def block(x, name: str, cin: int, cout: int, stride: int, expand: int = 6, **kw):
    """An inverted residual: expand 1x1, depthwise 3x3, project 1x1 (+ x)."""
    mid = cin * expand
    y = conv(x, f"{name}_expand", mid, **kw)
    y = conv(y, f"{name}_dw", mid, kernel=3, stride=stride, group=mid, **kw)
    y = conv(y, f"{name}_project", cout, act=None)
    return y + x if stride == 1 and cin == cout else y


def net(**kw) -> mx.sym.Symbol:
    x = conv(data, "first", 16, kernel=3, stride=2)
    x = block(x, "b1", 16, 24, 2, **kw)
    x = block(x, "b2", 24, 24, 1, **kw)
    return mx.sym.FullyConnected(mx.sym.flatten(mx.sym.Pooling(
        x, kernel=(1, 1), global_pool=True, pool_type="avg")), num_hidden=10, name="fc")


def run(sym: mx.sym.Symbol, shapes=SHAPE) -> tuple[list, list, object]:
    """`sym` in a DNNL subgraph: its outputs, the numpy path's, and the executor."""
    args, aux = random_arrays(sym, shapes)
    ex = bind(partitioned(sym, shapes), args, aux)
    return [o.asnumpy() for o in ex.forward()], outputs(sym, args, aux), ex


def subgraph_state(ex) -> DnnlState:
    (state,) = [s for s in ex._runner._states.values() if isinstance(s, DnnlState)]
    return state


@kernel
@pytest.mark.parametrize("act", ["relu6", "relu", None])
def test_each_block_runs_as_one_step(act):
    got, want, ex = run(net(act=act))
    assert_close(got, want)
    kinds = [op.kind for op in plan_steps(ex)]
    assert kinds.count("pwdw_conv") == 2 and kinds.count("conv") == 1   # the first
    assert subgraph_state(ex).kernels[POINTWISE_DEPTHWISE] == ["b1_expand", "b2_expand"]


@kernel
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("act", ["relu6", "relu", None])
def test_nan_and_inf_as_the_numpy_path(act):
    # relu and clip give their lower bound for NaN on the numpy path (and in
    # oneDNN's kernels); no activation keeps it. The kernel kept NaN through
    # both, filling a relu6 block's output with NaN around one input NaN.
    x = conv(data, "first", 16, kernel=3, stride=2, act=None, bn=False)
    y = conv(conv(x, "expand", 96, act=act), "dw", 96, kernel=3, group=96, act=act)
    args, aux = random_arrays(y, SHAPE)
    args["data"][0, 1, 10, 10:13] = [np.nan, np.inf, -np.inf]
    ex = bind(partitioned(y, SHAPE), args, aux)
    got, want = ex.forward()[0].asnumpy(), outputs(y, args, aux)[0]
    assert subgraph_state(ex).kernels[POINTWISE_DEPTHWISE] == ["expand"]
    assert np.isnan(want).any() == (act is None)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True)


@kernel
def test_short_outputs_leave_the_projection_to_onednn(monkeypatch):
    monkeypatch.setattr(lowering, "PROJECT_MIN_ROWS", 64)
    got, want, ex = run(net())
    assert_close(got, want)
    kinds = [op.kind for op in plan_steps(ex)]
    assert kinds.count("pwdw_conv") == 2 and kinds.count("conv") == 3   # first, projects


@kernel
def test_a_projection_adding_another_tensor_stays_onednns():
    x = conv(data, "first", 16, kernel=3, stride=2)
    y = conv(conv(x, "expand", 64), "dw", 64, kernel=3, group=64)
    other = conv(x, "other", 16, act=None)
    got, want, ex = run(conv(y, "project", 16, act=None) + other)
    assert_close(got, want)
    steps = [op.kind for op in plan_steps(ex)]
    assert steps.count("pwdw_conv") == 1 and steps.count("conv") == 3


@kernel
def test_without_bias_or_batch_norm():
    got, want, ex = run(net(bn=False))   # no BN: each convolution has its own bias
    assert_close(got, want)
    x = conv(data, "first", 16, kernel=3, stride=2)
    y = mx.sym.Convolution(x, kernel=(1, 1), num_filter=64, no_bias=True, name="expand")
    y = mx.sym.Convolution(mx.sym.relu(y), kernel=(3, 3), pad=(1, 1), num_filter=64,
                           num_group=64, no_bias=True, name="dw")
    got, want, ex = run(mx.sym.relu(y))
    assert_close(got, want)
    assert subgraph_state(ex).kernels[POINTWISE_DEPTHWISE] == ["expand"]


@kernel
def test_an_expanded_tensor_read_elsewhere_stays_onednns():
    x = conv(data, "first", 16, kernel=3, stride=2)
    e = conv(x, "expand", 64)
    d = conv(e, "dw", 64, kernel=3, group=64)
    got, want, ex = run(mx.sym.Group([d, e]))
    assert_close(got, want)
    assert "pwdw_conv" not in [op.kind for op in plan_steps(ex)]


def test_wide_inputs_small_expansions_and_other_layouts_stay_onednns(monkeypatch):
    x = conv(data, "first", 48, kernel=3, stride=2)   # 48 channels in: bound by its products
    y = conv(conv(x, "expand", 192), "dw", 192, kernel=3, group=192)
    got, want, ex = run(y)
    assert_close(got, want)
    assert "pwdw_conv" not in [op.kind for op in plan_steps(ex)]
    x = conv(data, "first", 16, kernel=3, stride=2)   # 16 to 32: no expansion to speak of
    got, want, ex = run(conv(conv(x, "expand", 32), "dw", 32, kernel=3, group=32))
    assert_close(got, want)
    assert "pwdw_conv" not in [op.kind for op in plan_steps(ex)]
    monkeypatch.setenv("MINIMX_DNNL_BLOCKED_LAYOUT", "0")   # NHWC: the kernel reads blocks
    got, want, ex = run(net())
    assert_close(got, want)
    assert "pwdw_conv" not in [op.kind for op in plan_steps(ex)]


def test_turned_off_onednn_runs_both(monkeypatch):
    monkeypatch.setenv("MINIMX_DNNL_POINTWISE_DEPTHWISE", "0")
    got, want, ex = run(net())
    assert_close(got, want)
    assert "pwdw_conv" not in [op.kind for op in plan_steps(ex)]
    assert POINTWISE_DEPTHWISE not in subgraph_state(ex).kernels


@kernel
def test_in_batch_parts_the_same_outputs(monkeypatch):
    shapes = {"data": (3, 3, 64, 64)}
    whole, want, _ = run(net(), shapes)
    image_by_image(monkeypatch)
    got, _, ex = run(net(), shapes)
    state = subgraph_state(ex)
    assert state.compiled.plan.loop_count == 3
    assert "b1_expand" in state.kernels[POINTWISE_DEPTHWISE]
    for g, w in zip(got, whole, strict=True):
        np.testing.assert_array_equal(g, w)   # image by image, the same sums
    assert_close(got, want)


@kernel
def test_new_weights_of_each_convolution_between_forwards():
    """The weight cache refreshes the kernel's three sets of weights (BatchNorm
    folded into each) when their sources move."""
    sym = net()
    args, aux = random_arrays(sym, SHAPE)
    ex = bind(partitioned(sym, SHAPE), args, aux)
    assert_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
    rng = np.random.default_rng(1)
    for name in ("b2_expand_weight", "b2_dw_bn_gamma", "b2_project_weight"):
        args[name] = rng.standard_normal(args[name].shape).astype(np.float32)
        ex.arg_dict[name][:] = args[name]
        assert_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
    aux["b2_project_bn_moving_var"] = aux["b2_project_bn_moving_var"] * 4
    ex.aux_dict["b2_project_bn_moving_var"][:] = aux["b2_project_bn_moving_var"]
    assert_close([o.asnumpy() for o in ex.forward()], outputs(sym, args, aux))
