"""Winograd convolutions inside DNNL subgraphs: which convolutions the lowering
runs as `wino_conv`, and that their results match the numpy path.

Tolerance: helpers.assert_close (rtol 1e-4, atol 1e-4 x the largest output
magnitude). Winograd's own error at these channel counts is about 1e-6 *
sqrt(C) of the output's magnitude (see tests/onednn/test_winograd.py), well
inside; a wrong tile, bias, BatchNorm fold or addend is off by far more.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.backends.dnnl.state import DnnlState
from minimx.backends.dnnl.winograd import (
    F2_BELOW_TILES,
    WINOGRAD_MIN_TILES,
    output_tiles,
    winograd_tile,
)
from minimx.executor.executor import Executor

from .helpers import assert_close, bind, outputs, partitioned, random_arrays

FIXTURES = Path(__file__).parents[2] / "fixtures"
data = mx.sym.var("data")
SHAPE = {"data": (2, 32, 16, 16)}  # 2 x 16 output tiles of 4x4: enough for Winograd


@pytest.fixture(autouse=True)
def _winograd_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MINIMX_DNNL_WINOGRAD", raising=False)


def steps(ex: Executor) -> list[onednn.Primitive]:
    """The primitives of every compiled DNNL plan of `ex` (after a forward)."""
    return [op for state in ex._runner._states.values() if isinstance(state, DnnlState)
            for op, _ in state.compiled.plan.steps]


def forward(sym: mx.sym.Symbol, shapes: dict, args: dict, aux: dict
            ) -> tuple[list[np.ndarray], list[onednn.Primitive]]:
    """Outputs of `sym` partitioned by DNNL, and the primitives its plans ran."""
    ex = bind(partitioned(sym, shapes), args, aux)
    outs = [o.asnumpy() for o in ex.forward()]
    return outs, steps(ex)


def residual(fix_gamma: bool) -> tuple[mx.sym.Symbol, mx.sym.Symbol]:
    """relu(relu(BN(conv3x3(data))) + side) and side = relu(conv1x1(data)):
    the whole chain fuses into one convolution with post-ops relu, sum, relu."""
    side = mx.sym.relu(mx.sym.Convolution(data, kernel=(1, 1), num_filter=32, name="side"))
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=32, name="c")
    x = mx.sym.relu(mx.sym.BatchNorm(x, fix_gamma=fix_gamma, name="bn"))
    return mx.sym.relu(mx.sym.elemwise_add(x, side)), side


def post_ops(op: onednn.Primitive) -> list[str]:
    """The primitive's post-op chain by name: relu, clip, sum..."""
    return [p.alg or p.kind for p in op.post_ops]


@pytest.mark.parametrize("fix_gamma", [False, True])
def test_fused_conv_bn_relu_sum_relu_runs_as_winograd(fix_gamma):
    """The fused chain becomes one wino_conv step (BN folded into its weights
    and bias, relu / sum / relu in its output transform) and matches numpy."""
    sym, _ = residual(fix_gamma)
    args, aux = random_arrays(sym, SHAPE)
    outs, ops = forward(sym, SHAPE, args, aux)
    (wino,) = [op for op in ops if op.kind == "wino_conv"]
    assert wino.impl.startswith("wino_4x3+") and "bias" in wino.args
    assert post_ops(wino) == ["relu", "sum", "relu"]
    assert_close(outs, outputs(sym, args, aux))


def test_summed_tensor_used_elsewhere_is_not_overwritten():
    """`side` is the sum's addend and also an output: the Winograd step must
    accumulate into a copy of it, not into the tensor the concat reads."""
    total, side = residual(fix_gamma=False)
    sym = mx.sym.concat(total, side, dim=1)
    args, aux = random_arrays(sym, SHAPE)
    outs, ops = forward(sym, SHAPE, args, aux)
    assert [post_ops(op) for op in ops if op.kind == "wino_conv"] == [["relu", "sum", "relu"]]
    assert_close(outs, outputs(sym, args, aux))


def test_winograd_off_by_setting(monkeypatch):
    """MINIMX_DNNL_WINOGRAD=0: direct convolutions only, same outputs."""
    sym, _ = residual(fix_gamma=False)
    args, aux = random_arrays(sym, SHAPE)
    wino_outs, _ = forward(sym, SHAPE, args, aux)
    monkeypatch.setenv("MINIMX_DNNL_WINOGRAD", "0")
    outs, ops = forward(sym, SHAPE, args, aux)
    assert "wino_conv" not in [op.kind for op in ops]
    assert post_ops(next(op for op in ops if op.kind == "conv" and op.has_sum)) == \
        ["relu", "sum", "relu"]
    assert_close(outs, outputs(sym, args, aux))
    assert_close(outs, wino_outs)


@pytest.mark.parametrize("shape,filters,kw,tile", [
    pytest.param((2, 32, 16, 16), 32, {}, 4, id="32-tiles"),
    pytest.param((1, 32, 28, 28), 32, {}, 4, id="49-tiles"),
    pytest.param((1, 32, 16, 16), 32, {}, 2, id="16-tiles"),
    pytest.param((1, 32, 13, 13), 32, {}, 2, id="16-partial-tiles"),
    pytest.param((1, 32, 20, 12), 32, {}, None, id="15-tiles"),
    pytest.param((4, 32, 8, 8), 32, {}, 4, id="16-tiles-over-the-batch"),
    pytest.param((8, 32, 7, 7), 32, {}, 4, id="32-tiles-over-the-batch"),
    pytest.param((1, 32, 7, 7), 32, {}, None, id="4-tiles"),
    pytest.param((2, 8, 16, 16), 8, {}, None, id="8-channels"),
    pytest.param((2, 32, 16, 16), 24, {}, None, id="24-filters"),
    pytest.param((2, 32, 16, 16), 32, dict(stride=(2, 2)), None, id="stride-2"),
    pytest.param((2, 32, 16, 16), 32, dict(num_group=2), None, id="grouped"),
])
def test_which_convolutions_run_as_winograd(shape, filters, kw, tile):
    """Winograd where winograd_supports allows it and the batch has at least
    WINOGRAD_MIN_TILES (16) 4x4 output tiles (pad 1 keeps the input size),
    F(2x2) for an image alone of fewer than F2_BELOW_TILES (32); a direct
    convolution otherwise, with the same results either way."""
    sym = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=filters, **kw)
    shapes = {"data": shape}
    args, aux = random_arrays(sym, shapes)
    outs, ops = forward(sym, shapes, args, aux)
    convs = [op for op in ops if "conv" in op.kind]
    assert [op.kind for op in convs] == ["wino_conv" if tile else "conv"]
    if tile:
        assert convs[0].impl.startswith(f"wino_{tile}x3+")
    assert_close(outs, outputs(sym, args, aux))


def test_new_weights_between_forwards_give_new_results():
    """The Winograd weight cache (G w G^T of the BN-folded weights) is
    recomputed when the weights, gamma or the moving statistics change."""
    sym, _ = residual(fix_gamma=False)
    args, aux = random_arrays(sym, SHAPE)
    ex = bind(partitioned(sym, SHAPE), args, aux)
    assert_close([ex.forward()[0].asnumpy()], outputs(sym, args, aux))
    assert "wino_conv" in [op.kind for op in steps(ex)]
    rng = np.random.default_rng(1)
    for name in ("c_weight", "bn_gamma", "bn_beta"):
        args[name] = rng.standard_normal(args[name].shape).astype(np.float32)
        ex.arg_dict[name][:] = args[name]
        assert_close([ex.forward()[0].asnumpy()], outputs(sym, args, aux))
    for name in ("bn_moving_mean", "bn_moving_var"):
        aux[name] = aux[name] * 4
        ex.aux_dict[name][:] = aux[name]
        assert_close([ex.forward()[0].asnumpy()], outputs(sym, args, aux))


def test_mxnet_model_through_winograd_gives_mxnet_output():
    """resnet18_v1's layout with 16 channels on 64 pixels, exported by MXNet
    1.9.1 with its output (tests/fixtures/models): the first stage's 3x3
    convolutions run as Winograd and the whole net still gives MXNet's
    output (tolerance as tests/formats/test_mxnet_outputs.py: rtol 1e-4, atol 1e-5)."""
    prefix = FIXTURES / "models" / "resnet18_v1_wide16"
    sym, arg_params, aux_params = mx.model.load_checkpoint(str(prefix), 0)
    io = np.load(f"{prefix}-io.npz")
    args = {k: v.asnumpy() for k, v in arg_params.items()} | {"data": io["data"]}
    ex = bind(partitioned(sym, {"data": io["data"].shape}), args,
              {k: v.asnumpy() for k, v in aux_params.items()})
    out = ex.forward()[0].asnumpy()
    assert [op.kind for op in steps(ex)].count("wino_conv") == 4
    np.testing.assert_allclose(out, io["output"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("src,pad,tiles", [
    pytest.param((1, 32, 16, 16), (1, 1), 16, id="16x16-out"),
    pytest.param((1, 32, 13, 13), (1, 1), 16, id="partial-tiles"),
    pytest.param((2, 32, 16, 16), None, 2 * 16, id="no-pad-batch-2"),
    pytest.param((3, 32, 5, 9), (0, 2), 3 * 1 * 3, id="pads-differ"),
])
def test_output_tiles(src, pad, tiles):
    """4x4 output tiles over the batch, partial tiles counted whole."""
    assert output_tiles(src, pad) == tiles


def test_output_tiles_of_2x2():
    assert output_tiles((1, 32, 14, 14), (1, 1), 2) == 49
    assert output_tiles((3, 32, 5, 9), (0, 2), 2) == 3 * 2 * 6


CONV = dict(stride=None, dilate=None, num_group=1, pad=(1, 1),
            post_ops=[onednn.PostOp.eltwise("relu")])


def test_winograd_tile_from_the_tile_thresholds_on(monkeypatch):
    """From WINOGRAD_MIN_TILES 4x4 tiles on, where Winograd can run, unless
    turned off: F(2x2) for an image alone of fewer than F2_BELOW_TILES, else
    F(4x4)."""
    assert (WINOGRAD_MIN_TILES, F2_BELOW_TILES) == (16, 32)
    w = (32, 32, 3, 3)
    assert winograd_tile((2, 32, 16, 16), w, CONV) == 4      # 2 x 4 x 4 tiles
    assert winograd_tile((1, 32, 14, 14), w, CONV) == 2      # 4 x 4 tiles
    assert winograd_tile((1, 32, 28, 28), w, CONV) == 4      # 7 x 7 tiles
    assert winograd_tile((1, 32, 12, 16), w, CONV) is None   # 3 x 4 tiles
    assert winograd_tile((4, 32, 7, 7), w, CONV) == 4        # 4 x 2 x 2 tiles
    assert winograd_tile((2, 32, 7, 7), w, CONV) is None     # 2 x 2 x 2 tiles
    assert winograd_tile((8, 32, 16, 16), w, CONV | dict(stride=(2, 2))) is None
    assert winograd_tile((8, 32, 16, 16), w,
                         CONV | dict(post_ops=[onednn.PostOp.eltwise("tanh")])) is None
    monkeypatch.setenv("MINIMX_DNNL_WINOGRAD", "0")
    assert winograd_tile((1, 32, 16, 16), w, CONV) is None


def test_the_partition_summary_names_the_tile(monkeypatch):
    """A bind's summary lists F(2x2) convolutions apart from F(4x4) ones."""
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    small = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=32, name="small")
    ex = small.simple_bind(mx.cpu(), grad_req="null", data=(1, 32, 14, 14))
    assert ex.debug_str().endswith("  convolutions run as Winograd F(4x4, 3x3): none\n"
                                   "  convolutions run as Winograd F(2x2, 3x3): 1 (small)")
