"""Python custom operators (`mx.operator`), as MXNet 1.9's.

Subclass `CustomOpProp` (what the operator takes and gives) and `CustomOp`
(what it computes), register the property under a name, and call it with
``mx.sym.Custom(*inputs, op_type=name, **kwargs)`` or ``mx.nd.Custom(...)``;
the keyword arguments reach the property's ``__init__`` as strings.

>>> import numpy as np
>>> import minimx as mx
>>> class Twice(mx.operator.CustomOp):
...     def forward(self, is_train, req, in_data, out_data, aux):
...         self.assign(out_data[0], req[0], in_data[0] * 2)
...     def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
...         self.assign(in_grad[0], req[0], out_grad[0] * 2)
>>> @mx.operator.register("twice")
... class TwiceProp(mx.operator.CustomOpProp):
...     def create_operator(self, ctx, in_shapes, in_dtypes):
...         return Twice()
>>> mx.nd.Custom(mx.nd.array([1.0, 2.0]), op_type="twice").asnumpy()
array([2., 4.], dtype=float32)

The user's forward and backward run inside the engine operation of their
node, on NDArrays over that operation's arrays; their own NDArray calls run at
once on that thread (`engine.synchronous`), as MXNet runs custom operators
outside its engine. What they raise becomes an `OperatorError` naming the node
and op_type.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import engine
from .base import DTYPE_TO_FLAG
from .context import cpu
from .ndarray import NDArray
from .ops import custom, get_op
from .ops.params import Params
from .ops.registry import OpContext, Unread

__all__ = ["CustomOp", "CustomOpProp", "register"]


class CustomOp:
    """The computation of a custom operator: override `forward` and `backward`."""

    def forward(self, is_train: bool, req: list[str], in_data: list[NDArray],
                out_data: list[NDArray], aux: list[NDArray]) -> None:
        """Write the outputs into `out_data` (`assign` honours `req`)."""

    def backward(self, req: list[str], out_grad: list[NDArray], in_data: list[NDArray],
                 out_data: list[NDArray], in_grad: list[NDArray],
                 aux: list[NDArray]) -> None:
        """Write the input gradients into `in_grad` (`assign` honours `req`)."""

    def assign(self, dst: NDArray, req: str, src: Any) -> None:
        """``dst[:] = src`` for 'write' / 'inplace', ``dst[:] += src`` for 'add',
        nothing for 'null'."""
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src


class CustomOpProp:
    """What a custom operator takes and gives. `need_top_grad`: whether backward
    reads the output gradients (False makes a loss layer, which needs none)."""

    def __init__(self, need_top_grad: bool = True) -> None:
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape: list) -> tuple:
        """(argument shapes, output shapes[, auxiliary shapes]); by default every
        output has the first argument's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type: list) -> tuple:
        """(argument dtypes, output dtypes[, auxiliary dtypes]); by default the
        first argument's."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def list_outputs(self) -> list[str]:
        return ["output"]

    def list_arguments(self) -> list[str]:
        return ["data"]

    def list_auxiliary_states(self) -> list[str]:
        return []

    def declare_backward_dependency(self, out_grad: list[int], in_data: list[int],
                                    out_data: list[int]) -> list[int]:
        """The ids of what backward reads: all of it, the output gradients only
        with `need_top_grad`."""
        return [*(out_grad if self.need_top_grad_ else []), *in_data, *out_data]

    def create_operator(self, ctx: Any, in_shapes: list, in_dtypes: list) -> CustomOp:
        return CustomOp()


def register(reg_name: str) -> Callable[[type], type]:
    """Class decorator: register a `CustomOpProp` subclass as ``op_type=reg_name``."""
    def do_register(prop_cls: type) -> type:
        custom.register_prop(reg_name, prop_cls)
        return prop_cls
    return do_register


register("custom_op")(CustomOpProp)   # as in MXNet


class _Bound:
    """The operator state of one Custom node: its CustomOp and the shapes it was made for."""

    def __init__(self, p: Params, prop: Any, in_shapes: list[tuple[int, ...]],
                 in_dtypes: list[np.dtype]) -> None:
        self.p = p
        self.n_args = len(prop.list_arguments())
        n_out = len(prop.list_outputs())
        opdef = get_op("Custom")
        _, self.out_shapes = opdef.infer_shape(p, list(in_shapes), [None] * n_out)
        _, self.out_dtypes = opdef.infer_type(p, list(in_dtypes), [None] * n_out)
        self.arg_shapes = in_shapes[:self.n_args]
        self.arg_dtypes = in_dtypes[:self.n_args]
        # As MXNet's: every input (arguments, then auxiliary states), dtypes as
        # MXNet's type flags (0 float32, 1 float64, ...).
        self.op = self._user("create_operator", lambda: prop.create_operator(
            cpu(), [list(s) for s in in_shapes],
            [DTYPE_TO_FLAG[np.dtype(t)] for t in in_dtypes]))

    def _user(self, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` on this thread's own engine; what it raises names the node."""
        try:
            with engine.synchronous():
                result = fn()
                engine.wait_for_all()   # what its pushes stored surfaces here
            return result
        except Exception as exc:  # any exception of user code; the cause is kept
            raise custom.user_error(self.p, what, exc) from exc

    def forward(self, ctx: OpContext, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        outs = list(ctx.outputs) if ctx.outputs is not None else [
            np.empty(s, t) for s, t in zip(self.out_shapes, self.out_dtypes, strict=True)]
        out_data = [NDArray(o) for o in outs]
        self._user("forward", lambda: self.op.forward(
            is_train=int(ctx.is_train), req=["write"] * len(outs),   # an int, as MXNet's
            in_data=_wrap(inputs[:self.n_args]), out_data=out_data,
            aux=_wrap(inputs[self.n_args:])))
        return outs

    def backward(self, ctx: OpContext, inputs: Sequence[Any], outputs: Sequence[Any],
                 out_grads: Sequence[np.ndarray]) -> list[np.ndarray | None]:
        grads = [np.zeros(s, t) for s, t in zip(self.arg_shapes, self.arg_dtypes, strict=True)]
        self._user("backward", lambda: self.op.backward(
            req=["write"] * len(grads), out_grad=_wrap(out_grads),
            in_data=_wrap(inputs[:self.n_args]), out_data=_wrap(outputs),
            in_grad=[NDArray(g) for g in grads], aux=_wrap(inputs[self.n_args:])))
        return [*grads, *[None] * (len(inputs) - self.n_args)]   # auxiliary states: none


def _wrap(arrays: Sequence[Any]) -> list[NDArray | None]:
    """NDArrays over the kernel's arrays; None for what backward did not declare it
    reads (MXNet hands an empty array)."""
    return [None if isinstance(a, Unread) else NDArray(a) for a in arrays]


custom.set_runtime(_Bound)
