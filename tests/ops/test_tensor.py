"""Kernels, inference and gradients of minimx/ops/tensor.py against numpy references.

Reshape's expectations are written by hand from the examples in MXNet's
matrix_op.cc docstring; the random Reshape cases are built from the documented
meaning of each code, not from the implementation.
"""
from __future__ import annotations

import math
import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minimx.base import OperatorError, ShapeError
from minimx.ops import OpContext, get_op

from gradcheck import check_gradient

FAST = settings(max_examples=100, deadline=None)


def params(op_name: str, **attrs):
    op = get_op(op_name)
    return op, op.parse_params({k: str(v) for k, v in attrs.items()})


def run(op_name: str, inputs: list, **attrs) -> list[np.ndarray]:
    op, p = params(op_name, **attrs)
    out = op.forward(p, OpContext(), inputs)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def infer(op_name: str, in_shapes: list, out_shapes: list, **attrs):
    op, p = params(op_name, **attrs)
    return op.infer_shape(p, list(in_shapes), list(out_shapes))


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def distinct(*shape: int, seed: int = 0) -> np.ndarray:
    """Values at least 0.1 apart, so max/min are differentiable under small steps."""
    return np.random.default_rng(seed).permutation(math.prod(shape)).reshape(shape) * 0.1


# -- Reshape -----------------------------------------------------------------------

# Every example of MXNet 1.9's Reshape docstring: (input shape, shape, reverse, output).
DOC_EXAMPLES = [
    ((2, 3, 4), (4, 0, 2), False, (4, 3, 2)),
    ((2, 3, 4), (2, 0, 0), False, (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), False, (6, 1, 4)),
    ((2, 3, 4), (3, -1, 8), False, (3, 1, 8)),
    ((2, 3, 4), (-1,), False, (24,)),
    ((2, 3, 4), (-2,), False, (2, 3, 4)),
    ((2, 3, 4), (2, -2), False, (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), False, (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), False, (6, 4)),
    ((2, 3, 4, 5), (-3, -3), False, (6, 20)),
    ((2, 3, 4), (0, -3), False, (2, 12)),
    ((2, 3, 4), (-3, -2), False, (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), False, (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), False, (2, 1, 3, 4)),
    ((10, 5, 4), (-1, 0), False, (40, 5)),
    ((10, 5, 4), (-1, 0), True, (50, 4)),
    ((4,), (2, 2), False, (2, 2)),
]


@pytest.mark.parametrize("dshape, shape, reverse, expected", DOC_EXAMPLES)
def test_reshape_documented_examples(dshape, shape, reverse, expected):
    x = np.arange(math.prod(dshape), dtype=np.float32).reshape(dshape)
    (y,) = run("Reshape", [x], shape=shape, reverse=reverse)
    assert y.shape == expected
    np.testing.assert_array_equal(y.ravel(), x.ravel())
    assert infer("reshape", [dshape], [None], shape=shape, reverse=reverse) == \
        ([dshape], [expected])


@st.composite
def reshape_cases(draw):
    """(input shape, codes, reverse, expected output), built move by move from the
    documented meaning of each code; with reverse the moves are made on the
    reversed dims and both lists are reversed back, as MXNet documents."""
    dims = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    codes, expected, pos, used_infer = [], [], 0, False
    while pos < len(dims):
        moves = ["copy", "literal"] + (["merge"] if pos + 1 < len(dims) else [])
        moves += ["split", "rest"]
        move = draw(st.sampled_from(moves))
        d = dims[pos]
        if move in ("copy", "literal"):
            infer_here = not used_infer and draw(st.booleans())
            used_infer |= infer_here
            codes.append(-1 if infer_here else 0 if move == "copy" else d)
            expected.append(d)
            pos += 1
        elif move == "merge":
            codes.append(-3)
            expected.append(d * dims[pos + 1])
            pos += 2
        elif move == "split":
            a = draw(st.sampled_from([k for k in range(1, d + 1) if d % k == 0]))
            left, right = a, d // a
            hide = draw(st.sampled_from(["none", "left", "right"]))
            codes += [-4, -1 if hide == "left" else left, -1 if hide == "right" else right]
            expected += [left, right]
            pos += 1
        else:
            codes.append(-2)
            expected += dims[pos:]
            pos = len(dims)
    reverse = draw(st.booleans())
    if reverse:
        return tuple(dims[::-1]), tuple(codes[::-1]), True, tuple(expected[::-1])
    return tuple(dims), tuple(codes), False, tuple(expected)


@FAST
@given(reshape_cases())
def test_reshape_codes_random(case):
    dshape, codes, reverse, expected = case
    x = rand(*dshape)
    (y,) = run("Reshape", [x], shape=codes, reverse=reverse)
    assert y.shape == expected
    np.testing.assert_array_equal(y, x.reshape(expected))


def test_reshape_is_inplace_identity_and_registered_names():
    op = get_op("Reshape")
    assert get_op("reshape") is op
    assert op.inplace == ((0, 0),)
    assert {p.name for p in op.params} == {"shape", "reverse", "target_shape", "keep_highest"}
    assert get_op("Flatten").inplace == ((0, 0),) == get_op("expand_dims").inplace


@pytest.mark.parametrize("shape, message", [
    ((5, -1), "-1 cannot be inferred"),
    ((-1, -1), "only one dim can be -1"),
    ((2, 3, 4, -3), "-3 needs 2"),
    ((0, 0, 0, 0), "code 0 needs 1"),
    ((-4, 3, -1, 0, 0), "do not divide"),
    ((-4, -1, -1, 0, 0), "cannot both be -1"),
    ((2, -4, 3), "followed by two dims"),
    ((-5, 24), "-5 is neither"),
    ((7, 4), "28 elements"),
])
def test_reshape_impossible_raises_shape_error(shape, message):
    x = np.zeros((2, 3, 4))
    with pytest.raises(ShapeError, match=message) as err:
        run("Reshape", [x], shape=shape)
    assert "(2, 3, 4)" in str(err.value)
    with pytest.raises(ShapeError):
        infer("Reshape", [(2, 3, 4)], [None], shape=shape)


def test_reshape_bad_parameter_is_operator_error_naming_it():
    with pytest.raises(OperatorError, match="shape"):
        params("Reshape", shape="(2, x)")
    with pytest.raises(OperatorError, match="reverse"):
        params("Reshape", shape="(2,)", reverse="maybe")


def test_reshape_inference_partial_and_backward():
    # An unknown input dim gives unknown output dims ...
    assert infer("Reshape", [(0, 3, 4)], [None], shape=(0, -1)) == ([(0, 3, 4)], [(0, 0)])
    assert infer("Reshape", [(0, 3, 4)], [None], shape=(-1, 4)) == ([(0, 3, 4)], [(0, 4)])
    assert infer("Reshape", [(0, 3, 4)], [None], shape=(-3, 0)) == ([(0, 3, 4)], [(0, 4)])
    # ... and a known output fills in the single unknown input dim.
    assert infer("Reshape", [(0, 3, 4)], [(24,)], shape=(-1,)) == ([(2, 3, 4)], [(24,)])
    assert infer("Reshape", [(0, 3)], [(4, 3)], shape=(0, -1)) == ([(4, 3)], [(4, 3)])
    assert infer("Reshape", [(2, 0)], [(3, 4)]) == ([(2, 6)], [(3, 4)])
    assert infer("Reshape", [None], [(3, 4)], shape=(-1,)) == ([None], [(3, 4)])
    with pytest.raises(ShapeError, match="5"):
        infer("Reshape", [(0, 3)], [(5,)], shape=(-1,))
    with pytest.raises(ShapeError):
        infer("Reshape", [(2, 3)], [(7,)], shape=(-1,))


def test_reshape_legacy_target_shape():
    x = rand(2, 3, 4)
    (y,) = run("Reshape", [x], target_shape=(0, 4))
    np.testing.assert_array_equal(y, x.reshape(6, 4))
    (y,) = run("Reshape", [x], target_shape=(5, 0), keep_highest=True)
    np.testing.assert_array_equal(y, x.reshape(2, 12))
    assert infer("Reshape", [(2, 3, 4)], [None], target_shape=(4, 0)) == \
        ([(2, 3, 4)], [(4, 6)])
    with pytest.raises(ShapeError, match="neither shape nor target_shape"):
        run("Reshape", [x])


# -- Flatten, transpose, expand_dims ------------------------------------------------

@FAST
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5))
def test_flatten(dims):
    x = rand(*dims)
    (y,) = run("flatten", [x])
    np.testing.assert_array_equal(y, x.reshape(dims[0], -1))
    assert infer("Flatten", [tuple(dims)], [None])[1] == [(dims[0], math.prod(dims[1:]))]


def test_flatten_needs_a_known_input():
    assert infer("Flatten", [(0, 3, 4)], [None]) == ([(0, 3, 4)], [None])


@FAST
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.randoms(use_true_random=False))
def test_transpose(dims, rnd):
    axes = list(range(len(dims)))
    rnd.shuffle(axes)
    x = rand(*dims)
    (y,) = run("transpose", [x], axes=tuple(axes))
    np.testing.assert_array_equal(y, np.transpose(x, axes))
    (y,) = run("transpose", [x])
    np.testing.assert_array_equal(y, x.T)
    out = tuple(dims[a] for a in axes)
    assert infer("transpose", [tuple(dims)], [None], axes=tuple(axes)) == ([tuple(dims)], [out])
    assert infer("transpose", [None], [out], axes=tuple(axes)) == ([tuple(dims)], [out])


def test_transpose_inference_merges_both_ways_and_rejects_bad_axes():
    assert infer("transpose", [(2, 0, 4)], [(0, 3, 0)], axes=(2, 1, 0)) == \
        ([(2, 3, 4)], [(4, 3, 2)])
    with pytest.raises(ShapeError, match=r"\(0, 0, 1\)"):
        infer("transpose", [(2, 3, 4)], [None], axes=(0, 0, 1))
    with pytest.raises(ShapeError):
        run("transpose", [rand(2, 3)], axes=(1, 0, 2))


@pytest.mark.parametrize("axis", [-4, -3, -2, -1, 0, 1, 2, 3])
def test_expand_dims(axis):
    x = rand(2, 3, 4)
    (y,) = run("expand_dims", [x], axis=axis)
    np.testing.assert_array_equal(y, np.expand_dims(x, axis))
    assert infer("expand_dims", [(2, 3, 4)], [None], axis=axis) == ([(2, 3, 4)], [y.shape])
    assert infer("expand_dims", [None], [y.shape], axis=axis) == ([(2, 3, 4)], [y.shape])


def test_expand_dims_errors():
    with pytest.raises(ShapeError, match="axis 4"):
        run("expand_dims", [rand(2, 3, 4)], axis=4)
    with pytest.raises(ShapeError):
        infer("expand_dims", [None], [(2, 3, 4)], axis=1)  # that dim must be 1
    with pytest.raises(OperatorError, match="axis"):
        params("expand_dims")


# -- Concat and split -----------------------------------------------------------------

@st.composite
def concat_cases(draw):
    ndim = draw(st.integers(1, 4))
    base = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    axis = draw(st.integers(-ndim, ndim - 1))
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    shapes = [tuple(base[:axis % ndim] + [s] + base[axis % ndim + 1:]) for s in sizes]
    return shapes, axis


@FAST
@given(concat_cases())
def test_concat_split_round_trip(case):
    shapes, axis = case
    xs = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    (y,) = run("concat", xs, num_args=len(xs), dim=axis)
    np.testing.assert_array_equal(y, np.concatenate(xs, axis=axis))
    assert infer("Concat", shapes, [None], num_args=len(xs), dim=axis)[1] == [y.shape]
    # Equal parts split back to the inputs when every input has one size.
    n = len(xs)
    whole = np.concatenate([xs[0]] * n, axis=axis)
    parts = run("split", [whole], num_outputs=n, axis=axis)
    for part in parts:
        np.testing.assert_array_equal(part, xs[0])


def test_concat_inference_backward():
    # Non-concat dims flow both ways; one unknown concat size comes from the output.
    ins, outs = infer("Concat", [(2, 3), None, (0, 4)], [(0, 10)], num_args=3, dim=1)
    assert ins == [(2, 3), (2, 3), (2, 4)] and outs == [(2, 10)]
    ins, outs = infer("Concat", [None, None], [(5, 6)], num_args=2, dim=0)
    assert ins == [(0, 6), (0, 6)] and outs == [(5, 6)]
    ins, outs = infer("Concat", [(1, 6), (0, 6)], [None], num_args=2, dim=0)
    assert ins == [(1, 6), (0, 6)] and outs == [(0, 6)]
    assert infer("Concat", [None, None], [None], num_args=2) == ([None, None], [None])


def test_concat_errors():
    with pytest.raises(ShapeError, match="ndim"):
        infer("Concat", [(2, 3), (2, 3, 1)], [None], num_args=2)
    with pytest.raises(ShapeError, match=r"\(2, 3\)"):
        run("Concat", [rand(2, 3), rand(3, 3)], num_args=2, dim=1)
    with pytest.raises(ShapeError, match="axis 2"):
        infer("Concat", [(2, 3), (2, 3)], [None], num_args=2, dim=2)
    with pytest.raises(ShapeError, match="10"):
        infer("Concat", [(2, 6), (2, 0), (2, 4)], [(2, 10)], num_args=3, dim=1)
    op, p = params("concat", num_args=3)
    assert op.input_names(p) == ["arg0", "arg1", "arg2"] and p.dim == 1


def test_split_names_squeeze_and_inference():
    op, p = params("split", num_outputs=3, axis=0, squeeze_axis=True)
    assert get_op("SliceChannel") is op
    assert op.output_names(p) == ["output0", "output1", "output2"]
    x = rand(3, 2, 1)
    parts = run("split", [x], num_outputs=3, axis=0, squeeze_axis=True)
    for i, part in enumerate(parts):
        np.testing.assert_array_equal(part, x[i])
    assert op.infer_shape(p, [None], [(2, 1), None, None]) == ([(3, 2, 1)], [(2, 1)] * 3)
    assert infer("split", [None], [None, (3, 1, 1)], num_outputs=2) == \
        ([(3, 2, 1)], [(3, 1, 1)] * 2)
    assert infer("split", [(3, 0)], [None, None], num_outputs=2) == \
        ([(3, 0)], [(3, 0)] * 2)
    assert infer("split", [(2, 0)], [None, None], num_outputs=2, axis=1, squeeze_axis=True) \
        == ([(2, 0)], [(2,)] * 2)
    parts = run("split", [rand(4)], num_outputs=4, axis=0, squeeze_axis=True)
    assert [q.shape for q in parts] == [()] * 4


def test_split_errors():
    with pytest.raises(ShapeError, match="num_outputs=2"):
        run("split", [rand(3, 3)], num_outputs=2)
    with pytest.raises(ShapeError, match="squeeze_axis"):
        infer("split", [(3, 4)], [None, None], num_outputs=2, squeeze_axis=True)
    op, p = params("split", num_outputs=0)
    with pytest.raises(OperatorError, match="num_outputs"):
        op.output_names(p)


# -- slice_axis ------------------------------------------------------------------------

@FAST
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_slice_axis(dims, data):
    ndim = len(dims)
    axis = data.draw(st.integers(-ndim, ndim - 1))
    size = dims[axis]
    begin = data.draw(st.integers(0, size - 1))
    end = data.draw(st.integers(begin + 1, size))
    # Each bound either as given, or counted from the end (or None for the end).
    b = data.draw(st.sampled_from([begin, begin - size]))
    e = data.draw(st.sampled_from([end, end - size] if end < size else [end, None]))
    x = rand(*dims)
    attrs = {"axis": axis, "begin": b, "end": e}
    (y,) = run("slice_axis", [x], **attrs)
    expected = np.take(x, range(begin, end), axis=axis)
    np.testing.assert_array_equal(y, expected)
    assert infer("slice_axis", [tuple(dims)], [None], **attrs)[1] == [expected.shape]


def test_slice_axis_requires_end_like_mxnet():
    with pytest.raises(OperatorError, match="required parameter end"):
        params("slice_axis", axis=0, begin=0)
    assert params("slice_axis", axis=0, begin=0, end=None)[1].end is None


def test_slice_axis_inference_and_errors():
    assert infer("slice_axis", [(0, 5)], [None], axis=0, begin=1, end=2) == \
        ([(0, 5)], [(0, 5)])
    assert infer("slice_axis", [(0, 5)], [None], axis=1, begin=1, end="None") == \
        ([(0, 5)], [(0, 4)])
    with pytest.raises(ShapeError, match="begin=3, end=2"):
        run("slice_axis", [rand(2, 5)], axis=1, begin=3, end=2)
    with pytest.raises(ShapeError, match="end=6"):
        infer("slice_axis", [(2, 5)], [None], axis=1, begin=0, end=6)
    with pytest.raises(ShapeError, match="axis 2"):
        run("slice_axis", [rand(2, 5)], axis=2, begin=0, end=1)


# -- reductions -------------------------------------------------------------------------

REDUCERS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
            "nansum": np.nansum, "nanprod": np.nanprod}


@st.composite
def reduce_cases(draw):
    dims = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    ndim = len(dims)
    chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
    as_negative = draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    listed = [a - ndim if neg else a for a, neg in zip(chosen, as_negative, strict=True)]
    form = draw(st.sampled_from(["none", "empty", "int", "tuple"]))
    if form == "int" and listed:
        axis = listed[0]
        listed = listed[:1]
    elif form == "tuple" and listed:
        axis = tuple(listed)
    else:
        axis, listed = (None if form == "none" else ()), None
    return dims, axis, listed, draw(st.booleans()), draw(st.booleans())


@FAST
@given(reduce_cases(), st.sampled_from(sorted(REDUCERS)))
def test_reductions(case, name):
    dims, axis, listed, keepdims, exclude = case
    x = distinct(*dims)
    attrs = {"keepdims": keepdims, "exclude": exclude}
    if axis is not None:
        attrs["axis"] = axis
    (y,) = run(name, [x], **attrs)
    # The reference: no axis reduces all; exclude reduces the axes not listed;
    # MXNet returns (1,) where numpy would give a 0-d array.
    if listed is None:
        reduced = tuple(range(len(dims)))
    else:
        named = {a % len(dims) for a in listed}
        reduced = tuple(a for a in range(len(dims)) if (a in named) != exclude)
    expected = REDUCERS[name](x, axis=reduced, keepdims=keepdims)
    expected = expected.reshape((1,)) if expected.ndim == 0 else expected
    np.testing.assert_allclose(y, expected)
    assert y.dtype == x.dtype
    assert infer(name, [tuple(dims)], [None], **attrs)[1] == [expected.shape]


def test_reduction_shapes_and_errors():
    assert infer("sum", [(0, 3, 4)], [None], axis=1) == ([(0, 3, 4)], [(0, 4)])
    assert infer("mean", [(2, 3, 4)], [None], axis=(0, 2), exclude=True, keepdims=True) \
        == ([(2, 3, 4)], [(2, 1, 4)])
    assert infer("max", [(2, 3)], [None], axis=(0, 1)) == ([(2, 3)], [(1,)])
    assert run("sum", [np.arange(6, dtype=np.int32)])[0].dtype == np.int32
    with pytest.raises(ShapeError, match="duplicates"):
        infer("sum", [(2, 3)], [None], axis=(1, -1))
    with pytest.raises(ShapeError, match="axis 2"):
        run("min", [rand(2, 3)], axis=2)
    assert get_op("sum_axis") is get_op("sum") and get_op("max_axis") is get_op("max")


def test_nan_reductions_count_nan_as_their_neutral_element():
    x = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan]])
    np.testing.assert_array_equal(run("nansum", [x], axis=1)[0], [3.0, 0.0])
    np.testing.assert_array_equal(run("nanprod", [x], axis=1)[0], [2.0, 1.0])
    for name in ("nansum", "nanprod"):
        op, p = params(name, axis=1)
        y = op.forward(p, OpContext(), [x])
        (g,) = op.backward(p, OpContext(), [x], [y], [np.array([10.0, 20.0])])
        want = [[10.0, 0, 10.0], [0, 0, 0]] if name == "nansum" else [[20.0, 0, 10.0], [0, 0, 0]]
        np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("attrs, reference", [
    ({}, lambda x: np.sqrt((x * x).sum()).reshape(1)),
    ({"ord": 1}, lambda x: np.abs(x).sum().reshape(1)),
    ({"axis": 1}, lambda x: np.linalg.norm(x, axis=1)),
    ({"ord": 1, "axis": (0, 2), "keepdims": True},
     lambda x: np.abs(x).sum(axis=(0, 2), keepdims=True)),
])
def test_norm_is_the_l1_or_l2_norm(attrs, reference):
    x = rand(2, 3, 4)
    (y,) = run("norm", [x], **attrs)
    np.testing.assert_allclose(y, reference(x), rtol=1e-12)
    assert infer("norm", [x.shape], [None], **attrs)[1] == [y.shape]


def test_l2_norm_of_integers_and_float16_sums_squares_that_do_not_fit_their_type():
    # uint8: MXNet 1.9.1 gives [11, 19, 16] here (docs/api.md); float16: 500, as MXNet.
    x = np.array([[11, 19, 14], [9, 8, 16]], np.uint8)
    np.testing.assert_array_equal(run("norm", [x], axis=0)[0], [14, 20, 21])
    assert run("norm", [np.array([300, 400], np.float16)])[0] == np.float16(500)


def test_norm_output_type_and_bad_order():
    op, p = params("norm", out_dtype="float64")
    assert op.infer_type(p, [np.dtype(np.float32)], [None])[1] == [np.dtype(np.float64)]
    assert run("norm", [rand(3).astype(np.float32)], out_dtype="float64")[0].dtype == np.float64
    with pytest.raises(OperatorError, match=r"norm: ord=3; the norms are ord=1 and ord=2"):
        infer("norm", [(2, 3)], [None], ord=3)


def test_moments_are_mean_and_variance_and_need_axes():
    x = rand(2, 3, 4)
    mean, var = run("moments", [x], axes=(0, -1), keepdims=True)
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(var, x.var(axis=(0, 2), keepdims=True), rtol=1e-12)
    assert infer("moments", [(2, 3, 4)], [None, None], axes=(0, 1, 2)) \
        == ([(2, 3, 4)], [(1,), (1,)])
    for axes in ("None", "()"):
        with pytest.raises(OperatorError, match="pass every axis"):
            infer("moments", [(2, 3)], [None, None], axes=axes)
    with pytest.raises(ShapeError, match="axis 3"):
        infer("moments", [(2, 3)], [None, None], axes=(3,))


def test_cumsum_shapes_dtypes_and_reverse_gradient():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(run("cumsum", [x])[0], [0, 1, 3, 6, 10, 15])
    (y,) = run("cumsum", [x], axis=0, dtype="float64")
    np.testing.assert_array_equal(y, [[0, 1, 2], [3, 5, 7]])
    assert y.dtype == np.float64
    assert infer("cumsum", [(2, 3)], [None]) == ([(2, 3)], [(6,)])
    assert infer("cumsum", [None], [(2, 3)], axis=1) == ([(2, 3)], [(2, 3)])
    op, p = params("cumsum")
    assert op.infer_type(p, [np.dtype(bool)], [None])[1] == [np.dtype(np.int64)]
    assert op.infer_type(p, [None], [np.dtype(np.float16)])[0] == [np.dtype(np.float16)]
    with pytest.raises(ShapeError, match="axis 2"):
        infer("cumsum", [(2, 3)], [None], axis=2)
    # Each input feeds the outputs from its position on: the gradient sums them.
    op, p = params("cumsum", axis=1)
    g = np.array([[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]])
    (dx,) = op.backward(p, OpContext(), *op.backward_view(p, [rand(2, 3)], [g]), [g])
    np.testing.assert_array_equal(dx, [[7, 6, 4], [56, 48, 32]])


def test_max_min_gradient_goes_to_every_tied_position():
    op, p = params("max", axis=1)
    x = np.array([[1.0, 3.0, 3.0], [5.0, 2.0, 0.0]])
    y = op.forward(p, OpContext(), [x])
    (g,) = op.backward(p, OpContext(), [x], [y], [np.array([10.0, 20.0])])
    np.testing.assert_array_equal(g, [[0, 10, 10], [20, 0, 0]])
    op, p = params("min")
    x = np.array([[1.0, 3.0], [1.0, 2.0]])
    (g,) = op.backward(p, OpContext(), [x], [op.forward(p, OpContext(), [x])], [np.ones(1)])
    np.testing.assert_array_equal(g, [[1, 0], [1, 0]])


# -- dot and batch_dot --------------------------------------------------------------------

@st.composite
def dot_cases(draw):
    """Shapes and the einsum that defines MXNet's dot for them."""
    a_free = draw(st.lists(st.integers(1, 3), max_size=2))
    b_free = draw(st.lists(st.integers(1, 3), max_size=2))
    k = draw(st.integers(1, 4))
    ta = bool(a_free) and draw(st.booleans())
    tb = bool(b_free) and draw(st.booleans())
    la, lb = string.ascii_lowercase[:len(a_free)], string.ascii_lowercase[10:10 + len(b_free)]
    a_shape = [k, *a_free] if ta else [*a_free, k]
    b_shape = [*b_free, k] if tb else [k, *b_free]
    spec = f"{'z' + la if ta else la + 'z'},{lb + 'z' if tb else 'z' + lb}->{la}{lb}"
    return tuple(a_shape), tuple(b_shape), ta, tb, spec


@FAST
@given(dot_cases())
def test_dot_matches_einsum(case):
    a_shape, b_shape, ta, tb, spec = case
    a, b = rand(*a_shape, seed=1), rand(*b_shape, seed=2)
    (y,) = run("dot", [a, b], transpose_a=ta, transpose_b=tb)
    expected = np.einsum(spec, a, b)
    expected = expected.reshape((1,)) if expected.ndim == 0 else expected
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-12)
    assert infer("dot", [a_shape, b_shape], [None], transpose_a=ta, transpose_b=tb)[1] \
        == [expected.shape]


def test_dot_inference_and_errors():
    assert infer("dot", [(0, 3), (3, 5)], [None]) == ([(0, 3), (3, 5)], [(0, 5)])
    assert infer("dot", [None, (3, 5)], [None]) == ([None, (3, 5)], [None])
    with pytest.raises(ShapeError, match=r"\(2, 3\) X \(4, 5\)"):
        run("dot", [rand(2, 3), rand(4, 5)])
    with pytest.raises(ShapeError, match="cannot transpose vectors"):
        infer("dot", [(3,), (3,)], [None], transpose_a=True)
    with pytest.raises(OperatorError, match="forward_stype"):
        params("dot", forward_stype="dense")
    op, p = params("dot", forward_stype="csr")
    assert op.input_names(p) == ["lhs", "rhs"] and p.forward_stype == "csr"


@FAST
@given(st.lists(st.integers(1, 3), min_size=1, max_size=2), st.integers(1, 3),
       st.integers(1, 3), st.integers(1, 3), st.booleans(), st.booleans())
def test_batch_dot_matches_einsum(batch, m, k, n, ta, tb):
    a_shape = (*batch, k, m) if ta else (*batch, m, k)
    b_shape = (*batch, n, k) if tb else (*batch, k, n)
    a, b = rand(*a_shape, seed=3), rand(*b_shape, seed=4)
    (y,) = run("batch_dot", [a, b], transpose_a=ta, transpose_b=tb)
    spec = f"...{'km' if ta else 'mk'},...{'nk' if tb else 'kn'}->...mn"
    np.testing.assert_allclose(y, np.einsum(spec, a, b), rtol=1e-10, atol=1e-12)
    assert infer("batch_dot", [a_shape, b_shape], [None], transpose_a=ta,
                 transpose_b=tb)[1] == [(*batch, m, n)]


def test_batch_dot_errors():
    with pytest.raises(ShapeError, match="ndim >= 3"):
        infer("batch_dot", [(2, 3), (3, 2)], [None])
    with pytest.raises(ShapeError, match="batch dims"):
        run("batch_dot", [rand(2, 3, 4), rand(3, 4, 5)])
    with pytest.raises(ShapeError, match="contracted dims 4 and 3"):
        run("batch_dot", [rand(2, 3, 4), rand(2, 3, 5)])


# -- gradients ------------------------------------------------------------------------------

GRAD_CASES = [
    ("Reshape", [rand(2, 3, 4)], {"shape": (-4, 1, 2, -3)}),
    ("Reshape", [rand(2, 3, 4)], {"shape": (-1, 0), "reverse": True}),
    ("Flatten", [rand(2, 3, 2)], {}),
    ("transpose", [rand(2, 3, 4)], {"axes": (1, 2, 0)}),
    ("transpose", [rand(2, 3)], {}),
    ("expand_dims", [rand(2, 3)], {"axis": -1}),
    ("Concat", [rand(2, 1, 3), rand(2, 2, 3, seed=1), rand(2, 3, 3, seed=2)],
     {"num_args": 3, "dim": 1}),
    ("Concat", [rand(2, 3), rand(1, 3, seed=1)], {"num_args": 2, "dim": -2}),
    ("split", [rand(2, 6)], {"num_outputs": 3, "axis": -1}),
    ("split", [rand(3, 2)], {"num_outputs": 3, "axis": 0, "squeeze_axis": True}),
    ("slice_axis", [rand(3, 5)], {"axis": 1, "begin": -4, "end": -1}),
    ("sum", [rand(2, 3, 4)], {"axis": (0, 2)}),
    ("sum", [rand(2, 3)], {}),
    ("mean", [rand(2, 3, 4)], {"axis": 1, "keepdims": True}),
    ("mean", [rand(2, 3, 4)], {"axis": 1, "exclude": True}),
    ("max", [distinct(2, 3, 4)], {"axis": -1}),
    ("min", [distinct(2, 3, 4)], {"axis": (0, 1), "exclude": True, "keepdims": True}),
    ("prod", [distinct(2, 3, 4) + 0.05], {"axis": 1}),
    ("prod", [rand(2, 3)], {}),
    ("nansum", [rand(2, 3, 4)], {"axis": (0, 2), "keepdims": True}),
    ("nanprod", [rand(2, 3, 4)], {"axis": -1}),
    ("norm", [rand(2, 3, 4)], {}),
    ("norm", [rand(2, 3, 4)], {"axis": 1, "keepdims": True}),
    ("norm", [distinct(2, 3) + 0.05], {"ord": 1, "axis": 0}),
    ("dot", [rand(2, 3), rand(3, 4, seed=1)], {}),
    ("dot", [rand(3, 2, 2), rand(5, 3, seed=1)], {"transpose_a": True, "transpose_b": True}),
    ("dot", [rand(2, 2, 3), rand(3, 2, seed=1)], {"transpose_b": False}),
    ("dot", [rand(4), rand(4, 2, seed=1)], {}),
    ("dot", [rand(3), rand(3, seed=1)], {}),
    ("batch_dot", [rand(2, 3, 4), rand(2, 4, 2, seed=1)], {}),
    ("batch_dot", [rand(2, 4, 3), rand(2, 2, 4, seed=1)],
     {"transpose_a": True, "transpose_b": True}),
    ("batch_dot", [rand(2, 1, 3, 2), rand(2, 1, 3, 4, seed=1)], {"transpose_a": True}),
]


@pytest.mark.parametrize("op_name, inputs, attrs", GRAD_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(GRAD_CASES)])
def test_gradient_matches_finite_differences(op_name, inputs, attrs):
    check_gradient(op_name, attrs, inputs)
