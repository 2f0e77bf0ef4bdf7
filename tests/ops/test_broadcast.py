"""broadcast_axis, broadcast_to and broadcast_like against numpy's broadcast_to,
their gradients (sums over what was broadcast) and shape inference."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minimx.base import ShapeError

from gradcheck import check_gradient
from ops_support import floats, infer, run

FAST = settings(max_examples=40, deadline=None, database=None)


@st.composite
def broadcastable(draw):
    """(input with some axes of size 1, the target shape)."""
    target = draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=3))
    ones = draw(st.lists(st.booleans(), min_size=len(target), max_size=len(target)))
    shape = tuple(1 if o else d for o, d in zip(ones, target, strict=True))
    return draw(floats(shape=st.just(shape))), target


@FAST
@given(case=broadcastable())
def test_broadcast_to_axis_and_like(case):
    x, target = case
    want = np.broadcast_to(x, target)
    grown = tuple(i for i, (a, b) in enumerate(zip(x.shape, target, strict=True)) if a != b)
    keep = tuple(0 if i not in grown else d for i, d in enumerate(target))
    for name, params, extra in (
            ("broadcast_to", {"shape": keep}, []),
            ("broadcast_axis", {"axis": grown, "size": tuple(target[i] for i in grown)}, []),
            ("broadcast_like", {}, [np.zeros(target)]),
            ("broadcast_like", {"lhs_axes": grown or (0,), "rhs_axes": grown or (0,)},
             [np.zeros(target)])):
        out = run(name, params, x, *extra)
        np.testing.assert_array_equal(out, want)
        assert infer(name, params, [x.shape, *(e.shape for e in extra)])[1] == [target]
        grads = check_gradient(name, params, [x, *extra])
        assert all(not g.any() for g in grads[1:])


def test_broadcast_like_copies_other_axes():
    out = run("broadcast_like", {"lhs_axes": (0,), "rhs_axes": (-1,)}, np.ones((1, 3)),
              np.ones((2, 5)))
    assert out.shape == (5, 3)


@pytest.mark.parametrize("name, params, shapes, match", [
    ("broadcast_to", {"shape": (4, 3)}, [(2, 3)], "only an axis of size 1"),
    ("broadcast_to", {"shape": (3,)}, [(1, 3)], "ndim"),
    ("broadcast_axis", {"axis": (0,), "size": (2, 3)}, [(1, 3)], "length"),
    ("broadcast_axis", {"axis": (2,), "size": (2,)}, [(1, 3)], "out of range"),
    ("broadcast_like", {"lhs_axes": (0,)}, [(1, 3), (2, 3)], "as many axes"),
    ("broadcast_like", {}, [(1, 3), (2, 3, 1)], "ndim"),
])
def test_broadcast_errors(name, params, shapes, match):
    with pytest.raises(ShapeError, match=match):
        infer(name, params, shapes)
