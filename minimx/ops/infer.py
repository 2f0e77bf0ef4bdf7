"""Shape and dtype inference helpers shared by operator definitions.

A shape is None (unknown) or a tuple whose unknown dimensions are 0, as in
MXNet 1.x. `merge` combines two partial facts about one shape and raises
`ShapeError` on a contradiction; the graph pass adds the node's name.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeGuard, overload

import numpy as np

from ..base import DTypeError, ShapeError

Dims = tuple[int, ...]
Shape = Dims | None


def known(shape: Shape) -> TypeGuard[Dims]:
    """True when every dimension of `shape` is known."""
    return shape is not None and all(d > 0 for d in shape)


@overload
def merge(a: Dims, b: Shape) -> Dims: ...
@overload
def merge(a: Shape, b: Dims) -> Dims: ...
@overload
def merge(a: Shape, b: Shape) -> Shape: ...
def merge(a: Shape, b: Shape) -> Shape:
    """The shape both `a` and `b` describe; `ShapeError` if they disagree."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ShapeError(f"shape {a} does not match {b}")
    out = []
    for x, y in zip(a, b, strict=True):
        if x and y and x != y:
            raise ShapeError(f"shape {a} does not match {b}")
        out.append(x or y)
    return tuple(out)


def merge_dtype(a: np.dtype | None, b: np.dtype | None) -> np.dtype | None:
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise DTypeError(f"dtype {a} does not match {b}")


def merge_all(values: Sequence, merge_fn=merge):
    """One value merged from all of `values` (None if nothing is known)."""
    result = None
    for v in values:
        result = merge_fn(result, v)
    return result


def same_shape(p, in_shapes: list[Shape], out_shapes: list[Shape]):
    """Every input and output has one shape (elementwise operators)."""
    s = merge_all([*in_shapes, *out_shapes])
    return [s] * len(in_shapes), [s] * len(out_shapes)


def same_dtype(p, in_types: list, out_types: list):
    """Every input and output has one dtype."""
    t = merge_all([*in_types, *out_types], merge_dtype)
    return [t] * len(in_types), [t] * len(out_types)


def first_input_dtype(p, in_types: list, out_types: list):
    """The output has the first input's dtype; the other inputs (indices, a shape
    to copy) may have any dtype."""
    t = merge_dtype(in_types[0], out_types[0])
    return [t, *in_types[1:]], [t]


def forward_only(fn):
    """Adapt ``fn(p, in_shapes) -> out_shapes`` (run once all inputs are known)."""
    def infer(p, in_shapes, out_shapes):
        if not all(known(s) for s in in_shapes):
            return in_shapes, out_shapes
        result = fn(p, [tuple(s) for s in in_shapes])
        return in_shapes, [merge(o, tuple(r)) for o, r in zip(out_shapes, result, strict=True)]
    infer.__name__ = fn.__name__
    infer.__doc__ = fn.__doc__
    return infer


def from_input(rule: Callable[..., list]) -> Callable:
    """Adapt ``rule(p, in_shapes) -> out_shapes``, run once every input's ndim is
    known; unknown dimensions (0) flow through the rule as MXNet's do."""
    def infer(p, in_shapes, out_shapes):
        if any(s is None for s in in_shapes):
            return in_shapes, out_shapes
        result = rule(p, in_shapes)
        return in_shapes, [merge(o, r) for o, r in zip(out_shapes, result, strict=True)]
    infer.__name__ = rule.__name__
    return infer


def checked_axis(axis: int, ndim: int, what: str) -> int:
    """`axis` counted from 0; `ShapeError` unless -ndim <= axis < ndim."""
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{what}: axis {axis} is out of range for a {ndim}-d input")
    return axis % ndim


def merge_at(shapes: list, index: int, shape: Shape, what: str) -> None:
    """Merge `shape` into ``shapes[index]`` in place; a contradiction names `what`."""
    try:
        shapes[index] = merge(shapes[index], shape)
    except ShapeError as exc:
        raise ShapeError(f"{what}: {exc}") from None
