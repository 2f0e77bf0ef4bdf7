"""The late-added dense operators beyond their MXNet fixture cases (gap_ops, run by
test_mxnet_tensor_ops.py): a graph of the legacy layers loaded from MXNet's JSON, the
generated `mx.sym` / `mx.nd` functions, the legacy layers' parameter lists and the
errors that name the operator and the bad values."""
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError
from minimx.ops import get_op
from minimx.ops.registry import OpContext

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gap_ops"


def test_legacy_layer_graph_loads_infers_and_runs_as_mxnet():
    net = mx.sym.load_json((FIXTURES / "legacy_net.json").read_text())
    with np.load(FIXTURES / "legacy_net.npz") as npz:
        values = {k.removeprefix("in:"): npz[k] for k in npz.files if k.startswith("in:")}
        want = npz["output"]
    assert [n["op"] for n in json.loads(net.tojson())["nodes"] if n["op"] != "null"] == [
        "Convolution_v1", "BatchNorm_v1", "Activation", "Pooling_v1"]
    assert net.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    _, out_shapes, _ = net.infer_shape(data=values["data"].shape)
    assert out_shapes == [want.shape]
    ex = net.bind(mx.cpu(), {k: mx.nd.array(values[k]) for k in net.list_arguments()},
                  aux_states={k: mx.nd.array(values[k]) for k in net.list_auxiliary_states()},
                  grad_req="null")
    np.testing.assert_allclose(ex.forward(is_train=False)[0].asnumpy(), want, rtol=1e-5,
                               atol=1e-6)


def test_legacy_layers_take_mxnet_1_9_parameters_only():
    assert [p.name for p in get_op("Pooling_v1").params] == [
        "kernel", "pool_type", "global_pool", "pooling_convention", "stride", "pad"]
    assert [p.name for p in get_op("BatchNorm_v1").params] == [
        "eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var"]
    with pytest.raises(MinimxError, match=r"p1 \(Pooling_v1\): unknown parameter layout"):
        get_op("Pooling_v1").parse_params({"kernel": "(2, 2)", "layout": "NCHW"}, "p1")
    with pytest.raises(MinimxError, match="'lp' is not one of"):
        get_op("Pooling_v1").parse_params({"kernel": "(2, 2)", "pool_type": "lp"}, "p1")


@pytest.mark.parametrize("convention, want", [
    ("valid", [[0, 0, 0], [0, 2, 0]]), ("full", [[0, 0, 0], [0, 2, 0], [0, 0, 0]])])
def test_pooling_v1_max_takes_the_padding_zeros_in(convention, want):
    # MXNet 1.9.1's values: Pooling_v1 pools the input padded with zeros, so a window
    # of negative values that reaches the padding gives 0 (Pooling leaves padding out).
    x = mx.nd.array(-np.arange(1, 13, dtype="float32").reshape(1, 1, 3, 4) / 4)
    x[0, 0, 1, 1] = 2.0
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling_v1(x, kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type="max",
                             pooling_convention=convention)
    np.testing.assert_array_equal(y.asnumpy()[0, 0], want)
    y.backward(mx.nd.ones(y.shape))
    grad = np.zeros((3, 4), "float32")
    grad[1, 1] = 1.0   # every other window's maximum is a padding zero
    np.testing.assert_array_equal(x.grad.asnumpy()[0, 0], grad)


def test_batchnorm_v1_training_gradient_is_batchnorms():
    rng = np.random.default_rng(3)
    inputs = [rng.normal(size=(4, 3, 2, 2)).astype("float32"),
              *rng.uniform(0.5, 1.5, (4, 3)).astype("float32")]
    heads = [rng.normal(size=(4, 3, 2, 2)).astype("float32"), np.zeros(3, "float32"),
             np.zeros(3, "float32")]
    grads = []
    for name in ("BatchNorm", "BatchNorm_v1"):
        op = get_op(name)
        p = op.parse_params({"fix_gamma": "False"})
        ctx = OpContext(is_train=True)
        state = [a.copy() for a in inputs]
        outputs = op.forward(p, ctx, state)
        grads.append(op.backward(p, ctx, state, outputs, heads))
    x = inputs[0]
    np.testing.assert_allclose(outputs[2], x.var(axis=(0, 2, 3)), rtol=1e-5)  # v1: variance
    for got, want in zip(grads[1][:3], grads[0][:3], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_generated_functions():
    x = mx.nd.array(np.arange(12, dtype="float32").reshape(3, 4))
    parts = mx.nd._split_v2(x, indices=(0, 1), axis=1)
    assert [a.shape for a in parts] == [(3, 1), (3, 3)]
    split = mx.sym._split_v2(mx.sym.var("x"), indices=(0, 2), axis=1, name="s")
    assert split.list_outputs() == ["s_output0", "s_output1"]
    assert split.infer_shape(x=(3, 4))[1] == [(3, 2), (3, 2)]
    np.testing.assert_array_equal(mx.nd.contrib.quadratic(x, a=1, c=2).asnumpy(),
                                  x.asnumpy() ** 2 + 2)
    np.testing.assert_array_equal(mx.nd._copyto(x).asnumpy(), x.asnumpy())
    zeros = mx.nd._zeros_without_dtype(shape=(2, 3), dtype=6)
    assert zeros.dtype == np.int64 and zeros.shape == (2, 3)
    counts, edges = mx.nd._histogram(mx.nd.array([0.0, 1, 2, 2, 5, 7.5]), bin_cnt=3,
                                     range=(0, 6))
    np.testing.assert_array_equal(counts.asnumpy(), [2, 2, 1])   # MXNet 1.9.1's
    np.testing.assert_array_equal(edges.asnumpy(), [0, 2, 4, 6])


@pytest.mark.parametrize("op, attrs, shapes, message", [
    ("_split_v2", {"indices": "(1, 3)"}, [(3, 4)], r"indices=\(1, 3\) must rise from 0"),
    ("_split_v2", {"indices": "()", "sections": "3"}, [(3, 4)],
     "cannot be split into sections=3"),
    ("_split_v2", {"indices": "(0, 2)", "squeeze_axis": "True"}, [(3, 4)],
     "squeeze_axis=True needs pieces of length 1"),
    ("_slice_assign", {"begin": "(0,)", "end": "(2,)"}, [(3, 4), (3, 4)],
     r"rhs \(3, 4\) must have the slice's shape \(2, 4\)"),
    ("_onehot_encode", {}, [(3,), (4, 5)], r"needs an \(N, K\) array and N indices"),
    ("_histogram", {"bin_cnt": "3"}, [(5,)], "bin_cnt=3 needs a range"),
    ("_contrib_allclose", {}, [(2, 3), (3, 2)], "differ in shape"),
    ("_linspace", {"start": "0", "stop": "1", "num": "0"}, [], "num=0 must be at least 1"),
    ("_zeros_without_dtype", {"shape": "(2,)", "dtype": "99"}, [],
     "dtype=99 is not an MXNet type flag"),
])
def test_bad_input_raises_naming_the_operator(op, attrs, shapes, message):
    definition = get_op(op)
    p = definition.parse_params(attrs)
    with pytest.raises(MinimxError, match=message):
        definition.forward(p, OpContext(), [np.zeros(s, "float32") for s in shapes])


def test_onehot_encode_truncates_and_zeroes_rows_outside_the_range():
    # MXNet 1.9.1's output for these indices (mx.nd._internal._onehot_encode).
    got = mx.nd._onehot_encode(mx.nd.array([0, 2, 5, -1, 1.7]), mx.nd.zeros((5, 3)))
    assert got.asnumpy().tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], [0, 1, 0]]


def test_fill_element_refuses_out_of_range_indices():
    with pytest.raises(MinimxError, match="fill_element_0index: indices 0.0..5.0 are outside"):
        get_op("fill_element_0index").forward(
            get_op("fill_element_0index").parse_params({}), OpContext(),
            [np.zeros((2, 5), "float32"), np.ones(2, "float32"), np.array([0, 5], "float32")])


def test_reset_arrays_zeroes_its_inputs_in_place_and_returns_nothing():
    a, b = mx.nd.ones((2, 3)), mx.nd.array([4, 5], dtype="int32")
    assert mx.nd.reset_arrays(a, b, num_arrays=2) == []
    np.testing.assert_array_equal(a.asnumpy(), np.zeros((2, 3)))
    assert b.dtype == np.int32 and not b.asnumpy().any()


@pytest.mark.parametrize("name, states", [("multi_sgd_mom_update", 1),
                                          ("multi_mp_sgd_mom_update", 2)])
def test_preloaded_multi_sgd_updates_states_as_the_parameter_form(name, states):
    rng = np.random.default_rng(5)
    weights = [rng.uniform(-1, 1, (3, 4)).astype("float16" if states == 2 else "float32")
               for _ in range(2)]
    per_weight = [[w, rng.uniform(-2, 2, (3, 4)).astype(w.dtype),
                   rng.uniform(-0.1, 0.1, (3, 4)).astype("float32"),
                   *[w.astype("float32")] * (states == 2)] for w in weights]
    attrs = {"num_weights": "2", "momentum": "0.9", "rescale_grad": "0.5"}
    given = [a.copy() for group in per_weight for a in group]
    preloaded = [a.copy() for a in given] + [np.array([0.1, 0.2], "float32"),
                                             np.array([0.05, 0.0], "float32")]
    op, pre = get_op(name), get_op("preloaded_" + name)
    want = op.forward(op.parse_params({**attrs, "lrs": "(0.1, 0.2)", "wds": "(0.05, 0.0)"}),
                      OpContext(), given)
    got = pre.forward(pre.parse_params(attrs), OpContext(), preloaded)
    for a, b in zip(got + preloaded[:-2], want + given, strict=True):  # lrs in float32
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert pre.input_names(pre.parse_params(attrs))[-3:] == [
        "weight32_1" if states == 2 else "mom_1", "lrs", "wds"]
    with pytest.raises(MinimxError, match="num_weights=2 needs that many lrs and wds"):
        pre.forward(pre.parse_params(attrs), OpContext(), preloaded[:-2] + [
            np.array([0.1], "float32"), np.array([0.0], "float32")])


def test_split_v2_and_histogram_fronts_give_mxnets_values():
    """MXNet 1.9.1's Python fronts (values from its venv, the same calls)."""
    x = mx.nd.array(np.arange(12).reshape(3, 4))
    assert [r.asnumpy().tolist() for r in mx.nd.split_v2(x, (1, 3), axis=1)] == [
        [[0.0], [4.0], [8.0]], [[1.0, 2.0], [5.0, 6.0], [9.0, 10.0]], [[3.0], [7.0], [11.0]]]
    assert [r.shape for r in mx.nd.split_v2(x, 3, axis=0, squeeze_axis=True)] == [(4,)] * 3
    counts, edges = mx.nd.histogram(x, bins=mx.nd.array([0, 2, 5, 11]))
    assert counts.asnumpy().tolist() == [2, 3, 7] and edges.asnumpy().tolist() == [0, 2, 5, 11]
    counts, edges = mx.nd.histogram(x, bins=3, range=(0, 12))
    assert counts.asnumpy().tolist() == [4, 4, 4]
    with pytest.warns(UserWarning, match="range is not specified"):
        counts, edges = mx.nd.histogram(mx.nd.array([[0, 1, 2], [3, 4, 5]]), bins=3)
    assert counts.dtype == np.float32 and counts.asnumpy().tolist() == [2, 2, 2]
    np.testing.assert_allclose(edges.asnumpy(), [0, 5 / 3, 10 / 3, 5], rtol=1e-6)
    sym = mx.sym.split_v2(mx.sym.var("a"), (1, 2), axis=1)
    assert len(sym.list_outputs()) == 3
    out = sym.eval(a=x)
    assert [o.shape for o in out] == [(3, 1), (3, 1), (3, 2)]
    hist = mx.sym.histogram(mx.sym.var("a"), bins=4, range=(0, 1))
    assert len(hist.list_outputs()) == 2
    with pytest.raises(MinimxError, match="needs range"):
        mx.sym.histogram(mx.sym.var("a"), bins=4)
    with pytest.raises(MinimxError, match="int or a tuple of ints, got list"):
        mx.nd.split_v2(x, [1], axis=1)
