"""NDArray: creation, values, indexing, arithmetic, in-place updates, imperative ops."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx


def test_creation_and_properties():
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    assert a.shape == (2, 3) and a.dtype == np.float32 and a.size == 6 and a.ndim == 2
    assert a.context == mx.cpu()
    assert mx.nd.zeros((2, 2)).asnumpy().sum() == 0
    assert mx.nd.ones(3, dtype="int32").dtype == np.int32
    np.testing.assert_array_equal(mx.nd.full((2,), 7).asnumpy(), [7, 7])
    np.testing.assert_array_equal(mx.nd.arange(0, 3).asnumpy(), [0, 1, 2])
    assert mx.nd.array(np.arange(3, dtype=np.int64)).dtype == np.float32  # as MXNet 1.x
    assert mx.nd.array(mx.nd.ones(2, dtype="int64")).dtype == np.int64
    assert mx.nd.array([5.0]).asscalar() == 5.0


def test_arithmetic_matches_numpy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    y = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    a, b = mx.nd.array(x), mx.nd.array(y)
    np.testing.assert_allclose((a + b).asnumpy(), x + y)
    np.testing.assert_allclose((a - b).asnumpy(), x - y)
    np.testing.assert_allclose((a * b).asnumpy(), x * y)
    np.testing.assert_allclose((a / b).asnumpy(), x / y)
    np.testing.assert_allclose((2 - a).asnumpy(), 2 - x)
    np.testing.assert_allclose((1 / a).asnumpy(), 1 / x, rtol=1e-6)
    np.testing.assert_allclose((-a).asnumpy(), -x)


def test_in_place_updates_and_versions():
    a = mx.nd.ones((2, 2))
    v0 = (a.wait_to_read(), a.version)[1]
    a += 1
    a *= 3
    a[0, 1] = 10
    np.testing.assert_array_equal(a.asnumpy(), [[6, 10], [6, 6]])
    assert a.version > v0
    with pytest.raises(mx.ShapeError):
        a += mx.nd.ones((3, 2, 2))


def test_slices_are_views_sharing_the_engine_variable():
    a = mx.nd.zeros((4, 2))
    row = a[1:3]
    row[:] = 5
    np.testing.assert_array_equal(a.asnumpy()[:, 0], [0, 5, 5, 0])


# (key, shape, elements of a (2, 3, 4) array a write to the result changes):
# MXNet 1.9.1's, measured. A contiguous part is a view, anything else a copy.
VIEWS_AS_MXNET = [
    (1, (3, 4), 12), (-1, (3, 4), 12), ((1, 2), (4,), 4), ((1, 2, 3), (1,), 1),
    ((-1, -1, -1), (1,), 1), (slice(1, 2), (1, 3, 4), 12), ((1, slice(1, 3)), (2, 4), 8),
    ((None, 1), (1, 3, 4), 12), ((0, Ellipsis), (3, 4), 12), ((Ellipsis,), (2, 3, 4), 24),
    ((1, None, 2), (1, 4), 4), ((0, 1, slice(1, 3)), (2,), 2),
    ((slice(None), 1), (2, 4), 0), ((Ellipsis, 1), (2, 3), 0),
    ((0, slice(None), 2), (3,), 0), ((slice(None, None, -1),), (2, 3, 4), 0)]


@pytest.mark.parametrize(("key", "shape", "shared"), VIEWS_AS_MXNET)
def test_basic_indexing_gives_a_view_where_mxnet_does(key, shape, shared):
    a = mx.nd.array(np.arange(24).reshape(2, 3, 4))
    part = a[key]
    assert part.shape == shape
    part[:] = -7
    assert int((a.asnumpy() == -7).sum()) == shared


def test_the_whole_array_and_a_short_transpose_are_the_array_itself():
    v = mx.nd.array([1, 2, 3])
    assert v[:] is v and v[()] is v and v[::1] is v and v.T is v
    m = mx.nd.array([[1, 2]])
    assert m.T is not m and m.T.shape == (2, 1)
    # so a gradient attached to x[:] is x's, as in MXNet (there [2, 4])
    x = mx.nd.array([1, 2])
    y = x[:]
    y.attach_grad()
    with mx.autograd.record():
        z = (y * x).sum()
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 4])


def test_copy_copyto_astype_reshape():
    a = mx.nd.array([[1.5, 2.5]])
    b = a.copy()
    b[:] = 0
    assert a.asnumpy()[0, 0] == 1.5
    c = mx.nd.zeros((1, 2))
    a.copyto(c)
    np.testing.assert_array_equal(c.asnumpy(), [[1.5, 2.5]])
    assert a.astype("int32").asnumpy().tolist() == [[1, 2]]
    assert a.reshape((2, 1)).shape == (2, 1)
    with pytest.raises(mx.ShapeError):
        a.copyto(mx.nd.zeros((3,)))


def test_generated_imperative_ops():
    x = np.array([[-1.0, 2.0], [3.0, -4.0]], dtype=np.float32)
    a = mx.nd.array(x)
    np.testing.assert_allclose(mx.nd.relu(a).asnumpy(), np.maximum(x, 0))
    w = mx.nd.array(np.eye(2, dtype=np.float32))
    out = mx.nd.FullyConnected(a, w, no_bias=True, num_hidden=2)
    np.testing.assert_allclose(out.asnumpy(), x)
    target = mx.nd.zeros((2, 2))
    mx.nd.exp(a, out=target)
    np.testing.assert_allclose(target.asnumpy(), np.exp(x), rtol=1e-6)
    parts = mx.nd.split(a, num_outputs=2, axis=1)
    assert [p.shape for p in parts] == [(2, 1), (2, 1)]


def test_batchnorm_training_updates_moving_stats_in_place():
    rng = np.random.default_rng(0)
    x = mx.nd.array(rng.normal(2.0, 1.0, (8, 3)))
    gamma, beta = mx.nd.ones(3), mx.nd.zeros(3)
    mean, var = mx.nd.zeros(3), mx.nd.ones(3)
    op = mx.ops.get_op("BatchNorm")
    mx.nd.invoke(op, [x, gamma, beta, mean, var], {"momentum": "0.5"}, is_train=True)
    assert np.all(mean.asnumpy() > 0.5)


def test_save_load_round_trip(tmp_path):
    data = {"arg:w": mx.nd.array([[1, 2]]), "aux:m": mx.nd.array([3], dtype="float64")}
    mx.nd.save(str(tmp_path / "p.params"), data)
    loaded = mx.nd.load(str(tmp_path / "p.params"))
    assert sorted(loaded) == ["arg:w", "aux:m"]
    assert loaded["aux:m"].dtype == np.float64
    mx.nd.save(str(tmp_path / "l.params"), [mx.nd.ones(2)])
    assert isinstance(mx.nd.load(str(tmp_path / "l.params")), list)


def test_errors_are_reported_at_the_next_wait():
    a = mx.nd.array([1.0, 2.0])
    with pytest.raises(mx.ShapeError):
        mx.nd.elemwise_add(a, mx.nd.ones(3))
    with pytest.raises(mx.MinimxError, match="indexed by ints, slices"):
        a["0"]
    with pytest.raises(mx.MinimxError, match="NDArray index: index 5 is out of bounds"):
        a[mx.nd.array([5])].asnumpy()


def test_indexing_as_mxnet():
    # MXNet 1.9.1's shapes and values for the same expressions.
    x = mx.nd.array([[1, -2, 3], [4, 5, -6]])
    assert x[0, 0].shape == (1,) and x[1, -1].asscalar() == -6   # an element: shape (1,)
    assert mx.nd.array([1, 2, 3])[0].shape == (1,)
    for key in ((1, ...), (..., 1), (-2, Ellipsis)):   # through `...` too, still a view
        v = mx.nd.array([1, 2, 3])[key]
        assert v.shape == (1,) and v.asscalar() == 2
    v = x[1, 2, ...]
    v[:] = 0
    assert v.shape == (1,) and x[1, 2].asscalar() == 0
    x[1, 2] = -6
    assert [v.shape for v in mx.nd.array([1, 2])] == [(1,), (1,)]
    assert x[1].shape == (3,) and x[0, 1:].shape == (2,)
    np.testing.assert_array_equal(abs(x).asnumpy(), [[1, 2, 3], [4, 5, 6]])
    # Advanced indexing, by lists, numpy arrays and NDArrays (float ones too).
    np.testing.assert_array_equal(x[[1, 0], [2, 2]].asnumpy(), [-6, 3])
    np.testing.assert_array_equal(x[[1, 0], (2, 2)].asnumpy(), [-6, 3])   # a tuple within
    assert x[np.array([1, 0])].shape == (2, 3)
    assert x[mx.nd.array([[1, 0], [0, 0]])].shape == (2, 2, 3)
    np.testing.assert_array_equal(x[:, [0, 2]].asnumpy(), [[1, 3], [4, -6]])
    # Departures (docs/api.md): numpy's axis order next to None (MXNet: (1, 2, 3)), and
    # negative advanced indices assigned where they wrap (MXNet writes out of bounds).
    assert x[[1, -1], None].shape == (2, 1, 3)
    z = mx.nd.zeros(4)
    z[[-1, 0]] = 5
    np.testing.assert_array_equal(z.asnumpy(), [5, 0, 0, 5])
    y = x.copy()
    y[[0, 1]] = 7
    y[mx.nd.array([0]), 1] = mx.nd.array([9])
    np.testing.assert_array_equal(y.asnumpy(), [[7, 9, 7], [7, 7, 7]])
    np.testing.assert_array_equal(x.asnumpy(), [[1, -2, 3], [4, 5, -6]])


def test_an_ndarray_index_is_read_after_its_pending_writes():
    x = mx.nd.array([[1, 2], [3, 4], [5, 6]])
    index = mx.nd.zeros(2)
    index[:] = mx.nd.array([2, 0]) * mx.nd.ones(2)   # written by an engine operation
    np.testing.assert_array_equal(x[index].asnumpy(), [[5, 6], [1, 2]])


@pytest.mark.parametrize("compare, reference", [
    (lambda a, b: a == b, np.equal), (lambda a, b: a != b, np.not_equal),
    (lambda a, b: a > b, np.greater), (lambda a, b: a >= b, np.greater_equal),
    (lambda a, b: a < b, np.less), (lambda a, b: a <= b, np.less_equal),
])
def test_comparisons_are_elementwise_as_mxnets(compare, reference):
    x = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], np.float32)
    row = np.array([1.0, 2.0, 1.0], np.float32)
    a = mx.nd.array(x)
    for other, value in ((mx.nd.array(row), row), (2, 2.0), (mx.nd.array(x), x)):
        got = compare(a, other)
        assert isinstance(got, mx.nd.NDArray) and got.dtype == np.float32
        np.testing.assert_array_equal(got.asnumpy(), reference(x, value).astype(np.float32))


def test_arrays_hash_by_identity_and_are_true_only_when_one_true_value():
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([1.0, 2.0])
    assert {a: "a", b: "b"}[b] == "b" and a in [a] and len({a, b}) == 2
    assert (a == b).sum().asscalar() == 2.0        # MXNet's accuracy idiom
    with pytest.raises(ValueError, match=r"truth value of an NDArray of shape \(2,\) is "
                                             "ambiguous"):
        bool(a == b)
    assert bool(mx.nd.array([3.0])) and not mx.nd.array([0.0]) and not mx.nd.zeros((0,))
