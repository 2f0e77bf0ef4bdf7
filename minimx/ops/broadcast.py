"""Explicit broadcasts: `broadcast_axis`, `broadcast_to` and `broadcast_like`,
with MXNet 1.9's parameters (src/operator/tensor/broadcast_reduce_op.h); and the
hypot family (`_hypot`, `broadcast_hypot`, `_hypot_scalar`).

Each broadcast axis of the input must have size 1 (or already the target
size); the gradient sums the output gradient back over what was broadcast.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..base import ShapeError
from .elemwise import Binary, binary_ops, scalar_op, unbroadcast
from .infer import Dims, checked_axis, first_input_dtype, from_input
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register

Array = np.ndarray


def _expanded(what: str, dshape: Dims, targets: dict[int, int]) -> Dims:
    """`dshape` with axis a set to targets[a] (a 0 target keeps the input's size);
    only axes of size 1 (or unknown, or already that size) may grow."""
    out = list(dshape)
    for a, size in targets.items():
        if size and dshape[a] not in (0, 1, size):
            raise ShapeError(f"{what}: axis {a} of input {dshape} has size {dshape[a]}; only "
                             f"an axis of size 1 broadcasts to {size}")
        out[a] = size or dshape[a]
    return tuple(out)


def _forward(target: Callable[[Params, list[Dims]], list[Dims]]) -> Callable:
    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
        x = inputs[0]
        return np.broadcast_to(x, target(p, [s.shape for s in inputs])[0]).copy()
    return forward


def _grad_to_input(p: Params, ctx: OpContext, inputs: list, outputs: list,
                   out_grads: list) -> list:
    """The gradient of the broadcast input (zeros for broadcast_like's rhs, whose
    values are not used)."""
    x = inputs[0]
    return [unbroadcast(out_grads[0], x.shape).astype(x.dtype),
            *(np.zeros(r.shape, r.dtype) for r in inputs[1:])]


# -- broadcast_axis and broadcast_to ---------------------------------------------------

def _axis_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    dshape = in_shapes[0]
    if len(p.axis) != len(p.size):
        raise ShapeError(f"broadcast_axis: axis={p.axis} and size={p.size} differ in length")
    axes = [checked_axis(a, len(dshape), f"broadcast_axis (axis={p.axis})") for a in p.axis]
    return [_expanded("broadcast_axis", dshape, dict(zip(axes, p.size, strict=True)))]


def _to_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    dshape = in_shapes[0]
    if len(p.shape) != len(dshape):
        raise ShapeError(f"broadcast_to: shape={p.shape} and input {dshape} differ in ndim")
    return [_expanded("broadcast_to", dshape, dict(enumerate(p.shape)))]


for _op, _rule, _params, _aliases, _doc in (
        ("broadcast_axis", _axis_rule,
         (Param("axis", "shape", (), "The axes to perform the broadcasting."),
          Param("size", "shape", (), "Target sizes of the broadcasting axes.")),
         ("broadcast_axes",), "Broadcasts the input along the given axes (of size 1)."),
        ("broadcast_to", _to_rule,
         (Param("shape", "shape", (), "The target shape; a 0 dim keeps the input's size."),),
         (), "Broadcasts the input to a new shape (axes of size 1 grow).")):
    register(OpDef(_op, _forward(_rule), params=_params, aliases=_aliases, doc=_doc,
                   infer_shape=from_input(_rule), backward=_grad_to_input,
                   backward_reads=GradReads()))


# -- broadcast_like --------------------------------------------------------------------

def _like_rule(p: Params, in_shapes: list[Dims]) -> list[Dims]:
    lhs, rhs = in_shapes
    if p.lhs_axes is None and p.rhs_axes is None:
        if len(lhs) != len(rhs):
            raise ShapeError(f"broadcast_like: lhs {lhs} and rhs {rhs} differ in ndim")
        return [_expanded("broadcast_like", lhs, dict(enumerate(rhs)))]
    lhs_axes, rhs_axes = p.lhs_axes or (), p.rhs_axes or ()
    if len(lhs_axes) != len(rhs_axes) or not lhs_axes:
        raise ShapeError(f"broadcast_like: lhs_axes={p.lhs_axes} and rhs_axes={p.rhs_axes} "
                         "must name as many axes, at least one")
    what = f"broadcast_like (lhs_axes={p.lhs_axes}, rhs_axes={p.rhs_axes})"
    targets = {checked_axis(a, len(lhs), what): rhs[checked_axis(b, len(rhs), what)]
               for a, b in zip(lhs_axes, rhs_axes, strict=True)}
    return [_expanded("broadcast_like", lhs, targets)]


register(OpDef(
    "broadcast_like", _forward(_like_rule), inputs=("lhs", "rhs"),
    params=(Param("lhs_axes", "shape", None, "Axes to perform broadcast on in the first "
                  "input array"),
            Param("rhs_axes", "shape", None, "Axes to copy from the second input array")),
    infer_shape=from_input(_like_rule), infer_type=first_input_dtype, backward=_grad_to_input,
    backward_reads=GradReads(),
    doc="Broadcasts lhs to rhs's shape (or to its sizes on the given axes)."))


# -- hypot -------------------------------------------------------------------------------

def _hypot_grads(g: Array, a: Array, b: Array) -> tuple[Array, Array]:
    h = np.hypot(a, b)
    return g * a / h, g * b / h


# sqrt(a^2 + b^2) without overflow: one more row of elemwise's binary table, made by its
# factories into MXNet's _hypot (alias _Hypot), broadcast_hypot and _hypot_scalar.
HYPOT = Binary(np.hypot, _hypot_grads, True)
for _hypot_op in binary_ops("hypot", HYPOT):
    register(_hypot_op)
register(scalar_op("_hypot_scalar", HYPOT, False, "_HypotScalar"))
