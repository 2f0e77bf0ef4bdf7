"""Batch parts: a DNNL plan runs a large batch's first layers once per part of
the batch (`batch_parts` chooses where, `Plan.batch_loop` runs it), with the
numbers of the whole batch.

The small nets here have small activations, so `forced` sets the thresholds
to loop over every per-image prefix, one image a part. Tolerances: float32 as
helpers.assert_close against numpy, and rtol 1e-5 against the same plan on the
whole batch (oneDNN may pick another kernel for one image); INT8 exact, as the
whole-batch INT8 tests.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.backends.dnnl import batch_parts as bp
from minimx.backends.dnnl.state import DnnlState
from minimx.backends.dnnl.winograd import WINOGRAD_2
from minimx.contrib import amp
from minimx.graph import Graph
from minimx.graph.infer import infer_shapes

from .helpers import assert_close, bind, image_by_image, outputs, partitioned, random_arrays

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "quantized_net"
data = mx.sym.var("data")


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    image_by_image(monkeypatch)


def states(ex) -> list[DnnlState]:
    return [s for s in ex._runner.operator_states().values() if isinstance(s, DnnlState)]


def mobilenet_like() -> mx.sym.Symbol:
    """Stride-2 conv-BN-relu, depthwise and pointwise convolutions, a residual
    add, a concat along channels and max pooling (all per image), then a
    flatten and a classifier (the whole batch)."""
    x = mx.sym.Convolution(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=16,
                           name="c0")
    x = mx.sym.relu(mx.sym.BatchNorm(x, fix_gamma=False, name="bn0"))
    d = mx.sym.relu(mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=16,
                                       num_group=16, name="dw"))
    p = mx.sym.Convolution(d, kernel=(1, 1), num_filter=16, name="pw")
    x = mx.sym.relu(mx.sym.elemwise_add(p, x, name="add"))
    x = mx.sym.Concat(x, d, dim=1, name="cat")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    return mx.sym.FullyConnected(mx.sym.flatten(x), num_hidden=10, name="fc")


def run(sym, shapes: dict, monkeypatch, on: bool, **options) -> tuple[list[np.ndarray], list]:
    """Outputs of `sym` partitioned by DNNL with batch parts on or off, and the
    states of its DNNL nodes."""
    monkeypatch.setenv("MINIMX_DNNL_BATCH_PARTS", "1" if on else "0")
    args, aux = random_arrays(sym, shapes)
    ex = bind(mx.subgraph.partition(sym, "DNNL", shapes=shapes, **options), args, aux)
    outs = [o.asnumpy() for o in ex.forward(is_train=False)]
    return outs, states(ex)


def test_a_per_image_prefix_runs_in_parts_with_the_whole_batchs_numbers(forced, monkeypatch):
    sym, shapes = mobilenet_like(), {"data": (4, 8, 16, 16)}
    got, (state,) = run(sym, shapes, monkeypatch, on=True)
    whole, (whole_state,) = run(sym, shapes, monkeypatch, on=False)
    plan = state.compiled.plan
    assert plan.loop_count == 4 and whole_state.compiled.plan.loop_count == 1
    assert state.kernels[bp.BATCH_PARTS] == [
        "sg_dnnl_conv_bn_act_0", "sg_dnnl_conv_act_1", "sg_dnnl_conv_sum_postsum_act_2", "cat",
        "pool"]
    assert bp.BATCH_PARTS not in whole_state.kernels
    np.testing.assert_allclose(got[0], whole[0], rtol=1e-5, atol=1e-5)
    assert_close(got, outputs(sym, *random_arrays(sym, shapes)))


def test_the_partition_summary_names_the_operators_run_in_parts(forced, monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    ex = mobilenet_like().simple_bind(mx.cpu(), grad_req="null", data=(2, 8, 16, 16))
    assert ex.debug_str().endswith(f"{bp.BATCH_PARTS}: 5 (sg_dnnl_conv_bn_act_0, "
                                   "sg_dnnl_conv_act_1, sg_dnnl_conv_sum_postsum_act_2, cat, pool)")


def test_outputs_read_from_inside_the_loop_and_winograd_in_it(forced, monkeypatch):
    monkeypatch.delenv("MINIMX_DNNL_WINOGRAD", raising=False)
    c = mx.sym.relu(mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=32,
                                       name="c"))
    sym = mx.sym.Group([c, mx.sym.Convolution(c, kernel=(3, 3), pad=(1, 1), num_filter=16,
                                              name="d")])
    shapes = {"data": (3, 16, 16, 16)}   # 16 tiles of 4x4 an image: Winograd F(2x2)
    got, (state,) = run(sym, shapes, monkeypatch, on=True)   # (an image a part)
    assert state.compiled.plan.loop_count == 3 and len(state.kernels[bp.BATCH_PARTS]) == 2
    assert len(state.compiled.kernels[WINOGRAD_2]) == 2
    assert_close(got, outputs(sym, *random_arrays(sym, shapes)))


def test_two_inputs_in_parts_of_two_images_and_an_input_read_after_the_loop(forced,
                                                                            monkeypatch):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    x = mx.sym.relu(mx.sym.Convolution(a, kernel=(3, 3), pad=(1, 1), num_filter=16, name="ca"))
    z = mx.sym.elemwise_add(x, mx.sym.Convolution(b, kernel=(1, 1), num_filter=16, name="cb"))
    head = mx.sym.FullyConnected(mx.sym.flatten(z), num_hidden=5, name="fc")
    sym = mx.sym.Group([head, mx.sym.elemwise_add(z, mx.sym.var("c"), name="tail")])
    shapes = {"a": (6, 8, 12, 12), "b": (6, 8, 12, 12), "c": (6, 16, 12, 12)}
    # Two images' input and output of the largest layer, ca: a part of 2 images.
    monkeypatch.setattr(bp, "PART_BYTES", 2 * (8 + 16) * 144 * 4)
    got, (state,) = run(sym, shapes, monkeypatch, on=True)
    assert state.compiled.plan.loop_count == 3
    assert state.kernels[bp.BATCH_PARTS] == ["cb", "sg_dnnl_conv_act_sum_0"]
    assert_close(got, outputs(sym, *random_arrays(sym, shapes)))


def test_bfloat16_in_parts_matches_the_whole_batch(forced, monkeypatch):
    sym, shapes = mobilenet_like(), {"data": (4, 16, 16, 16)}
    got, (state,) = run(sym, shapes, monkeypatch, on=True, dtype="bfloat16")
    whole, _ = run(sym, shapes, monkeypatch, on=False, dtype="bfloat16")
    assert state.compiled.plan.loop_count == 4
    np.testing.assert_allclose(got[0], whole[0], rtol=2e-2, atol=2e-2 * np.abs(whole[0]).max())


def test_an_amp_converted_graph_loops_from_its_casts_on(forced, monkeypatch):
    """AMP's graph begins with casts of the data and the weights (1-d ones
    too): the data's runs per part, a weight's is read whole, in the loop and
    after it."""
    sym, shapes = mobilenet_like(), {"data": (4, 16, 16, 16)}
    args, aux = random_arrays(sym, shapes)
    converted, cargs, caux = amp.convert_model(sym, args, aux, target_dtype="bfloat16")
    assert [n.op for n in Graph(converted.outputs).nodes if not n.is_variable][0] == "amp_cast"

    def forward(on: bool):
        monkeypatch.setenv("MINIMX_DNNL_BATCH_PARTS", "1" if on else "0")
        ex = bind(mx.subgraph.partition(converted, "DNNL", shapes=shapes), cargs, caux)
        return ex.forward(is_train=False)[0].asnumpy().astype(np.float32), states(ex)

    (got, (state,)), (whole, _) = forward(True), forward(False)
    assert state.compiled.plan.loop_count == 4 and state.kernels[bp.BATCH_PARTS]
    np.testing.assert_allclose(got, whole, rtol=2e-2, atol=2e-2 * np.abs(whole).max())


def _qnet(mode: str):
    prefix = str(FIXTURES / f"qnet_{mode}")
    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    with np.load(f"{prefix}-io.npz") as npz:
        shape = (16,) + npz["data"].shape[1:]
    x = np.random.default_rng(3).uniform(-1, 1, shape).astype(np.float32)

    def forward(s):
        feeds = {**args, "data": mx.nd.array(x)}
        ex = s.bind(mx.cpu(), {n: feeds[n] for n in s.list_arguments()}, grad_req="null",
                    aux_states=auxs)
        return ex.forward(is_train=False)[0].asnumpy(), states(ex)
    return sym, forward, shape


def test_calibrated_int8_in_parts_gives_the_numpy_kernels_integers(forced):
    sym, forward, shape = _qnet("naive")
    got, (state,) = forward(partitioned(sym, {"data": shape}))
    assert state.compiled.plan.loop_count == 16
    np.testing.assert_array_equal(got, forward(sym)[0])


def test_int8_ranges_found_at_run_time_keep_the_batch_whole(forced):
    """calib_mode none: a quantize's range is the whole batch's min and max, so
    the plan does not split the batch (and says nothing of parts)."""
    sym, forward, shape = _qnet("none")
    got, plan_states = forward(partitioned(sym, {"data": shape}))
    assert all(s.compiled.plan.loop_count == 1 for s in plan_states)
    assert all(bp.BATCH_PARTS not in s.kernels for s in plan_states)
    np.testing.assert_array_equal(got, forward(sym)[0])


# -- where the loop ends, with the thresholds as shipped ---------------------------------

def _choice(sym, shape, itemsize: int = 4) -> bp.BatchParts | None:
    g = Graph(sym.outputs)
    shapes = infer_shapes(g, {g.entry_ptr[g.input_ids[0]]: shape})
    args = dict(zip(sym.list_arguments(), sym.infer_shape(data=shape)[0], strict=True))
    for nid in g.input_ids:
        shapes[g.entry_ptr[nid]] = args[g.nodes[nid].name]
    return bp.batch_parts(g, shapes, lambda e: math.prod(shapes[e]) * itemsize)


def _conv(x, filters: int, kernel: int = 1, stride: int = 1, name: str = "c"):
    return mx.sym.Convolution(x, kernel=(kernel,) * 2, stride=(stride,) * 2,
                              pad=(kernel // 2,) * 2, num_filter=filters, name=name)


def test_large_activations_loop_image_by_image_until_weights_outweigh_them(monkeypatch):
    monkeypatch.delenv("MINIMX_DNNL_BATCH_PARTS", raising=False)
    # 112x112, 32 -> 64 channels: 4.8 MB an image, so one image a part (8 MB).
    x = mx.sym.relu(_conv(data, 64, name="a"))
    # 28x28, 1024 channels in and out, 3x3: 9.4 M weights against 6.4 MB an image.
    y = _conv(_conv(x, 1024, stride=4, name="b"), 1024, kernel=3, name="big")
    got = _choice(y, (16, 32, 112, 112))
    assert got is not None and (got.count, got.images) == (16, 1)
    g = Graph(y.outputs)
    assert [n.name for n in g.nodes[got.end:] if not n.is_variable] == ["big"]
    # As one-byte integers 1.2 MB an image: 4 a part (8 would make 9.6 MB).
    assert _choice(x, (16, 32, 112, 112), itemsize=1) == bp.BatchParts(end=5, count=4, images=4)


def test_no_loop_where_it_cannot_pay_or_is_turned_off(monkeypatch):
    monkeypatch.delenv("MINIMX_DNNL_BATCH_PARTS", raising=False)
    conv = _conv(data, 64)
    assert _choice(conv, (1, 32, 112, 112)) is None      # one image
    assert _choice(conv, (2, 8, 56, 56)) is None         # the whole batch fits a part
    assert _choice(conv, (16, 32, 14, 14)) is None       # too few pixels an image
    assert _choice(mx.sym.Concat(conv, conv, dim=0), (16, 32, 112, 112)) is not None
    assert _choice(mx.sym.Concat(data, data, dim=0), (16, 32, 112, 112)) is None
    assert _choice(mx.sym.flatten(data), (16, 32, 112, 112)) is None
    monkeypatch.setenv("MINIMX_DNNL_BATCH_PARTS", "0")
    assert _choice(conv, (16, 32, 112, 112)) is None
