"""Every operator the DNNL backend supports, alone and in small groups, against
the numpy kernels (tolerances in helpers.py); hypothesis picks shapes and
parameters within what configs/dnnl.yaml allows."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx

from .helpers import check, dnnl_nodes, inner_ops, outer_ops

SETTINGS = settings(max_examples=25, deadline=None)
data = mx.sym.var("data")


def only_dnnl(part) -> list[str]:
    """The partitioned graph is one `_sg_dnnl` node; its inner operators."""
    assert outer_ops(part) == ["_sg_dnnl"], outer_ops(part)
    return inner_ops(dnnl_nodes(part)[0])


@SETTINGS
@given(n=st.integers(1, 2), c=st.integers(1, 6), size=st.integers(5, 11),
       k=st.integers(1, 3), stride=st.integers(1, 2), pad=st.integers(0, 1),
       dilate=st.integers(1, 2), groups=st.sampled_from([1, 2]), f=st.integers(1, 3),
       no_bias=st.booleans())
def test_convolution(n, c, size, k, stride, pad, dilate, groups, f, no_bias):
    sym = mx.sym.Convolution(data, kernel=(k, k), stride=(stride, stride), pad=(pad, pad),
                             dilate=(dilate, dilate), num_group=groups,
                             num_filter=f * groups, no_bias=no_bias)
    assert only_dnnl(check(sym, {"data": (n, c * groups, size, size)})) == ["Convolution"]


@SETTINGS
@given(c=st.integers(1, 4), length=st.integers(4, 12), k=st.integers(1, 3))
def test_convolution_1d(c, length, k):
    sym = mx.sym.Convolution(data, kernel=(k,), num_filter=3, pad=(1,))
    only_dnnl(check(sym, {"data": (2, c, length)}))


@SETTINGS
@given(c=st.integers(1, 4), size=st.integers(2, 6), k=st.integers(2, 4),
       stride=st.integers(1, 2), pad=st.integers(0, 1), groups=st.sampled_from([1, 2]),
       no_bias=st.booleans())
def test_deconvolution(c, size, k, stride, pad, groups, no_bias):
    sym = mx.sym.Deconvolution(data, kernel=(k, k), stride=(stride, stride), pad=(pad, pad),
                               num_filter=2 * groups, num_group=groups, no_bias=no_bias)
    assert only_dnnl(check(sym, {"data": (2, c * groups, size, size)})) == ["Deconvolution"]


@SETTINGS
@given(shape=st.sampled_from([(3, 7), (2, 3, 4), (2, 3, 2, 2)]), hidden=st.integers(1, 9),
       no_bias=st.booleans())
def test_fully_connected(shape, hidden, no_bias):
    sym = mx.sym.FullyConnected(data, num_hidden=hidden, no_bias=no_bias)
    assert only_dnnl(check(sym, {"data": shape})) == ["FullyConnected"]


@SETTINGS
@given(shape=st.sampled_from([(2, 3), (2, 3, 5), (2, 4, 3, 3)]), fix_gamma=st.booleans(),
       eps=st.sampled_from([1e-5, 1e-3]))
def test_batch_norm(shape, fix_gamma, eps):
    sym = mx.sym.BatchNorm(data, fix_gamma=fix_gamma, eps=eps)
    assert only_dnnl(check(sym, {"data": shape})) == ["BatchNorm"]


ELTWISE = [lambda x: mx.sym.Activation(x, act_type="relu"),
           lambda x: mx.sym.Activation(x, act_type="sigmoid"),
           lambda x: mx.sym.Activation(x, act_type="tanh"),
           lambda x: mx.sym.Activation(x, act_type="softrelu"),
           lambda x: mx.sym.LeakyReLU(x, act_type="leaky", slope=0.1),
           lambda x: mx.sym.LeakyReLU(x, act_type="elu", slope=0.7),
           lambda x: mx.sym.clip(x, a_min=-0.5, a_max=0.8),
           mx.sym.relu, mx.sym.sigmoid, mx.sym.tanh, mx.sym.square, mx.sym.abs,
           lambda x: mx.sym.sqrt(mx.sym.abs(x))]


@SETTINGS
@given(act=st.sampled_from(ELTWISE), shape=st.sampled_from([(7,), (2, 5), (2, 3, 4, 5)]))
def test_eltwise(act, shape):
    only_dnnl(check(act(data), {"data": shape}))


@SETTINGS
@given(n=st.integers(1, 2), c=st.integers(1, 5), size=st.integers(3, 10),
       k=st.integers(1, 3), stride=st.integers(1, 3), pad=st.integers(0, 2),
       pool_type=st.sampled_from(["max", "avg"]), convention=st.sampled_from(["valid", "full"]),
       include=st.sampled_from([None, True, False]), global_pool=st.booleans())
def test_pooling(n, c, size, k, stride, pad, pool_type, convention, include, global_pool):
    pad = min(pad, k - 1)
    kw = {} if include is None else {"count_include_pad": include}
    sym = mx.sym.Pooling(data, kernel=(k, k), stride=(stride, stride), pad=(pad, pad),
                         pool_type=pool_type, pooling_convention=convention,
                         global_pool=global_pool, **kw)
    part = check(sym, {"data": (n, c, size, size)})
    assert outer_ops(part) in (["_sg_dnnl"], ["Pooling"])  # some windows oneDNN refuses


@pytest.mark.parametrize("pool_type,include,runs_in_dnnl", [
    ("max", True, True), ("max", False, True),
    # MXNet's divisor counts the padding but not the part of a window past it.
    ("avg", True, False), ("avg", False, True)])
def test_full_convention_with_padding(pool_type, include, runs_in_dnnl):
    sym = mx.sym.Pooling(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type=pool_type,
                         pooling_convention="full", count_include_pad=include)
    part = check(sym, {"data": (2, 3, 8, 8)})
    assert outer_ops(part) == (["_sg_dnnl"] if runs_in_dnnl else ["Pooling"])


@SETTINGS
@given(shape=st.sampled_from([(3, 7), (2, 3, 4), (2, 3, 2, 2)]), axis=st.integers(-1, 1),
       log=st.booleans())
def test_softmax(shape, axis, log):
    op = mx.sym.log_softmax if log else mx.sym.softmax
    assert only_dnnl(check(op(data, axis=axis), {"data": shape})) == [op.__name__]


@SETTINGS
@given(n=st.integers(1, 3), k=st.integers(2, 9), multi=st.booleans(), preserve=st.booleans())
def test_softmax_output_at_inference(n, k, multi, preserve):
    sym = mx.sym.SoftmaxOutput(data, multi_output=multi, preserve_shape=preserve,
                               name="softmax")
    assert only_dnnl(check(sym, {"data": (n, k)})) == ["SoftmaxOutput"]


def test_softmax_output_of_more_than_2d_data_stays_outside():
    sym = mx.sym.SoftmaxOutput(data, multi_output=True, name="softmax")
    assert outer_ops(check(sym, {"data": (2, 3, 4)})) == ["SoftmaxOutput"]


@SETTINGS
@given(n=st.integers(2, 3), dim=st.integers(0, 3), sizes=st.lists(st.integers(1, 4),
                                                                  min_size=2, max_size=3))
def test_concat(n, dim, sizes):
    xs = [mx.sym.var(f"x{i}") for i in range(len(sizes))]
    shapes = {}
    for i, s in enumerate(sizes):
        shape = [n, 3, 4, 5]
        shape[dim] = s
        shapes[f"x{i}"] = tuple(shape)
    only_dnnl(check(mx.sym.Concat(*[mx.sym.relu(x) for x in xs], dim=dim), shapes))


@SETTINGS
@given(shape=st.sampled_from([(4,), (2, 3), (2, 3, 4, 5)]), k=st.integers(2, 4))
def test_add(shape, k):
    xs = [mx.sym.var(f"x{i}") for i in range(k)]
    shapes = {f"x{i}": shape for i in range(k)}
    only_dnnl(check(mx.sym.elemwise_add(xs[0], xs[1]), {"x0": shape, "x1": shape}))
    only_dnnl(check(mx.sym.add_n(*xs), shapes))


@SETTINGS
@given(rhs=st.sampled_from([(1, 3, 1, 1), (2, 3, 4, 5), (1, 1, 1, 5), (2, 1, 4, 1)]))
def test_broadcast_add(rhs):
    sym = mx.sym.broadcast_add(mx.sym.var("a"), mx.sym.var("b"))
    only_dnnl(check(sym, {"a": (2, 3, 4, 5), "b": rhs}))


@SETTINGS
@given(nsize=st.sampled_from([1, 3, 5]), c=st.integers(1, 7))
def test_lrn(nsize, c):
    sym = mx.sym.LRN(data, nsize=nsize, alpha=1e-3, beta=0.75, knorm=2.0)
    only_dnnl(check(sym, {"data": (2, c, 4, 4)}))


@SETTINGS
@given(view=st.sampled_from(["flatten", "reshape"]), hidden=st.integers(1, 6))
def test_view_feeding_fully_connected(view, hidden):
    conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1))
    flat = mx.sym.Flatten(conv) if view == "flatten" else mx.sym.Reshape(conv, shape=(0, -1))
    sym = mx.sym.FullyConnected(flat, num_hidden=hidden)
    assert only_dnnl(check(sym, {"data": (2, 3, 5, 5)}))[-1] == "FullyConnected"


def test_small_cnn_is_one_subgraph():
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1))
    x = mx.sym.Activation(mx.sym.BatchNorm(x), act_type="relu")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    y = mx.sym.Convolution(x, kernel=(1, 1), num_filter=8)
    x = mx.sym.Concat(x, mx.sym.LRN(y, nsize=3), dim=1)
    x = mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg")
    x = mx.sym.softmax(mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=5))
    only_dnnl(check(x, {"data": (2, 3, 8, 8)}))
