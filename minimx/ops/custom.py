"""`Custom`: the operator that runs a Python operator registered with
`mx.operator.register` (MXNet's ``Custom``, attribute ``op_type``).

The node's other attributes are handed, as strings, to the registered
`CustomOpProp` class; that property object (one per node, kept in the params'
cache) names the inputs (``list_arguments`` then ``list_auxiliary_states``)
and outputs, infers shapes and dtypes, says what backward reads
(``declare_backward_dependency``: a property without ``need_top_grad`` makes
a loss layer) and creates the `CustomOp` a bind runs.

Running user code needs NDArrays, which sit above this layer: `minimx.operator`
registers the property classes here with `register_prop` and sets the
`Runtime` that turns one property into an operator state (`set_runtime`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from .infer import merge, merge_dtype
from .params import Param, Params
from .registry import REQUIRED, GradReads, OpDef, register

Shape = tuple[int, ...] | None


class Runtime(Protocol):
    """What `minimx.operator` provides: the state of one bound Custom node."""

    def __call__(self, p: Params, prop: Any, in_shapes: list[tuple[int, ...]],
                 in_dtypes: list[np.dtype]) -> Any: ...


_PROPS: dict[str, Callable[..., Any]] = {}
_runtime: list[Runtime] = []   # set once, by minimx.operator


def register_prop(op_type: str, prop_cls: Callable[..., Any]) -> None:
    """Make `prop_cls` the property class of ``Custom(op_type=op_type)`` (a later
    registration under the same name replaces it, as in MXNet)."""
    _PROPS[op_type] = prop_cls


def set_runtime(runtime: Runtime) -> None:
    _runtime[:] = [runtime]


def registered() -> list[str]:
    return sorted(_PROPS)


def prop_of(p: Params) -> Any:
    """The node's property object, made once from its string attributes."""
    if "prop" not in p.cache:
        cls = _PROPS.get(p.op_type)
        if cls is None:
            raise OperatorError(f"{p.label or 'Custom'}: no custom operator is registered as "
                                f"op_type={p.op_type!r} (registered: "
                                f"{', '.join(registered()) or 'none'})")
        kwargs = {k: v for k, v in p.items() if k != "op_type"}
        p.cache["prop"] = _call_user(p, "__init__", lambda: cls(**kwargs), OperatorError)
    return p.cache["prop"]


def _call_user(p: Params, what: str, fn: Callable[[], Any],
               error: type[Exception] = OperatorError) -> Any:
    """``fn()``, a call into the user's property; what it raises becomes `error`
    naming the node and op_type."""
    try:
        return fn()
    except Exception as exc:  # any exception of user code; the cause is kept
        raise user_error(p, what, exc, error) from exc


def user_error(p: Params, what: str, exc: Exception,
               error: type[Exception] = OperatorError) -> Exception:
    """The error that reports `exc`, raised by the user's `what`, naming the node."""
    return error(f"{p.label or 'Custom'}: op_type={p.op_type!r}: {what} raised "
                 f"{type(exc).__name__}: {exc}")


def _names(p: Params, what: str) -> list[str]:
    prop = prop_of(p)
    return [str(n) for n in _call_user(p, what, getattr(prop, what))]


def _inputs(p: Params) -> list[str]:
    return _names(p, "list_arguments") + _names(p, "list_auxiliary_states")


def _split(p: Params, ret: Sequence, what: str, error: type[Exception]) -> list[list]:
    """A rule's answer as [inputs, outputs, aux], checked against the declared counts."""
    counts = [len(_names(p, "list_arguments")), len(_names(p, "list_outputs")),
              len(_names(p, "list_auxiliary_states"))]
    parts = [list(r) for r in ret] + ([[]] if len(ret) == 2 else [])
    if len(ret) not in (2, 3) or [len(x) for x in parts] != counts:
        raise error(f"{p.label or 'Custom'}: op_type={p.op_type!r}: {what} must return "
                    f"{counts[0]} input, {counts[1]} output and {counts[2]} auxiliary "
                    f"entries, got {[len(x) for x in parts] if len(ret) in (2, 3) else ret!r}")
    return parts


def _infer_shape(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    n_args = len(_names(p, "list_arguments"))
    prop = prop_of(p)
    # MXNet hands an unknown shape over as []; rules commonly index the data's
    # shape, so a rule that fails before every argument is known is asked again
    # once more is (the inference pass comes back to the node).
    given = [list(s) if s is not None else [] for s in in_shapes[:n_args]]
    try:
        ret = prop.infer_shape(given)
    except Exception as exc:  # any exception of user code; the cause is kept
        if any(s is None for s in in_shapes[:n_args]):
            return in_shapes, out_shapes
        raise user_error(p, "infer_shape", exc, ShapeError) from exc
    ins, outs, aux = _split(p, ret, "infer_shape", ShapeError)

    def shape(s: Any) -> Shape:
        return tuple(int(d) for d in s) if len(s) else None   # [] is unknown, as in MXNet

    new_in = [merge(a, shape(b)) for a, b in zip(in_shapes, ins + aux, strict=True)]
    return new_in, [merge(a, shape(b)) for a, b in zip(out_shapes, outs, strict=True)]


def _infer_type(p: Params, in_types: list, out_types: list):
    n_args = len(_names(p, "list_arguments"))
    given = [None if t is None else np.dtype(t).type for t in in_types[:n_args]]
    ret = _call_user(p, "infer_type", lambda: prop_of(p).infer_type(given), DTypeError)
    ins, outs, aux = _split(p, ret, "infer_type", DTypeError)

    def dtype(t: Any) -> np.dtype | None:
        return None if t is None else np.dtype(t)

    new_in = [merge_dtype(a, dtype(b)) for a, b in zip(in_types, ins + aux, strict=True)]
    return new_in, [merge_dtype(a, dtype(b)) for a, b in zip(out_types, outs, strict=True)]


def _backward_reads(p: Params) -> GradReads:
    """MXNet's numbering: output gradients, then arguments, then outputs."""
    args, outs = _names(p, "list_arguments"), _names(p, "list_outputs")
    n_out = len(outs)
    deps = {int(d) for d in _call_user(
        p, "declare_backward_dependency", lambda: prop_of(p).declare_backward_dependency(
            list(range(n_out)), list(range(n_out, n_out + len(args))),
            list(range(n_out + len(args), 2 * n_out + len(args)))))}
    return GradReads(
        inputs=tuple(n for i, n in enumerate(args) if n_out + i in deps)
        + tuple(_names(p, "list_auxiliary_states")),   # MXNet's backward gets them all
        outputs=tuple(n for i, n in enumerate(outs) if n_out + len(args) + i in deps),
        out_grads=any(i in deps for i in range(n_out)))


def _create_state(p: Params, in_shapes: list, in_dtypes: list) -> Any:
    if not _runtime:
        raise OperatorError(f"{p.label or 'Custom'}: import minimx.operator to run custom "
                            "operators")
    return _runtime[0](p, prop_of(p), [tuple(s) for s in in_shapes], list(in_dtypes))


register(OpDef(
    "Custom",
    lambda state, ctx, inputs: state.forward(ctx, inputs),
    backward=lambda state, ctx, inputs, outputs, out_grads: state.backward(
        ctx, inputs, outputs, out_grads),
    create_state=_create_state,
    params=(Param("op_type", "str", REQUIRED, "Name of the custom operator, as registered "
                  "with mx.operator.register."),),
    extra_params=True,
    inputs=_inputs,
    outputs=lambda p: _names(p, "list_outputs"),
    aux=lambda p: _names(p, "list_auxiliary_states"),
    infer_shape=_infer_shape,
    infer_type=_infer_type,
    backward_reads=_backward_reads,
    doc="Runs a Python operator registered with mx.operator.register(op_type); the other "
        "keyword arguments go, as strings, to its CustomOpProp."))


__all__ = ["Runtime", "prop_of", "register_prop", "registered", "set_runtime", "user_error"]
