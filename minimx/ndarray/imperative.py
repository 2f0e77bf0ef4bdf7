"""Running one operator on NDArrays: `invoke`, behind every `mx.nd.<Op>`.

Output shapes and dtypes come from the operator's inference rules; the kernel
is pushed to the engine reading the inputs and writing the outputs (and the
auxiliary states it updates), and the call returns at once. An operator whose
output shape depends on the input values (`OpDef.shape_from_values`) instead
waits for its inputs and runs before the call returns. The outputs are on the
first input's context, as in MXNet; an operator without inputs puts them on its
``ctx`` parameter's, or on the current context. Under ``mx.autograd.train_mode()``
(or ``record()``) kernels run in training mode; while autograd records, each call is
handed to its recorder (`AUTOGRAD`: a flag check when not recording).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import engine
from ..base import DTypeError, MinimxError, ShapeError, node_label
from ..context import Context, context_from_str
from ..ops.calling import split_call
from ..ops.infer import known
from ..ops.registry import GENERATOR, OpContext, OpDef, get_op
from .ndarray import AUTOGRAD, NDArray, allocate, autograd_entry


def _infer_outputs(op: OpDef, p, label: str, inputs: Sequence[NDArray],
                   given: Sequence[NDArray]) -> tuple[list, list]:
    """The outputs' shapes and dtypes from the inputs' and from the `given` (``out=``)
    arrays', as MXNet infers them: an operator without inputs whose output only `out`
    sizes (`_set_value`) takes its shape and dtype."""
    unknown = [None] * (op.num_outputs(p) - len(given))
    try:
        _, shapes = op.infer_shape(p, [a.shape for a in inputs],
                                   [a.shape for a in given] + unknown)
        _, dtypes = op.infer_type(p, [a.dtype for a in inputs],
                                  [a.dtype for a in given] + unknown)
    except (ShapeError, DTypeError) as exc:
        raise type(exc)(f"{label}: {exc} (input shapes {[a.shape for a in inputs]})") from None
    if not all(known(s) for s in shapes) or any(t is None for t in dtypes):
        raise ShapeError(f"{label}: cannot infer output shapes {shapes} / dtypes {dtypes} "
                         f"from input shapes {[a.shape for a in inputs]}")
    return shapes, dtypes


def _output_context(inputs: Sequence[NDArray], attrs: Mapping[str, str], label: str
                    ) -> Context:
    if inputs:
        return inputs[0]._ctx
    return context_from_str(attrs.get("ctx", ""), f"{label}: ctx")


def _kernel(op: OpDef, state, ins: list[np.ndarray], outs: list[np.ndarray], is_train: bool
            ) -> Callable[[], None]:
    def run() -> None:
        results = op.forward(state, OpContext(is_train=is_train), ins)
        if isinstance(results, np.ndarray):
            results = (results,)
        for dst, src in zip(outs, results, strict=True):
            np.copyto(dst, src, casting="unsafe")
    return run


def _run_now(op: OpDef, p, attrs: Mapping[str, str], label: str, inputs: Sequence[NDArray],
             out: NDArray | Sequence[NDArray] | None, ctx: Context) -> NDArray:
    """An operator whose output shape depends on its input values: no output can be
    allocated before they are known, so it waits for them and runs here."""
    for a in inputs:
        a.wait_to_read()
    result = NDArray(op.forward(p, OpContext(), [a._data for a in inputs]), ctx=ctx)
    if AUTOGRAD.recording:
        autograd_entry("record")(op, p, attrs, inputs, [result], p, False)
    if out is None:
        return result
    if not isinstance(out, NDArray) or out.shape != result.shape:
        raise ShapeError(f"{label}: out must be one array of the result's shape "
                         f"{result.shape}, got {out!r}")
    return result.copyto(out)


def invoke(op: OpDef, inputs: Sequence[NDArray], attrs: Mapping[str, str],
           out: NDArray | Sequence[NDArray] | None = None, name: str | None = None,
           is_train: bool = False) -> NDArray | list[NDArray]:
    """Run `op` on `inputs`; returns its visible output(s)."""
    is_train = is_train or AUTOGRAD.training
    label = node_label(name or "_imperative", op.name)
    p = op.parse_params(attrs, name or "_imperative")
    expected = op.input_names(p)
    if len(inputs) != len(expected):
        raise MinimxError(f"{label}: takes inputs {expected}, got {len(inputs)}")
    ctx = _output_context(inputs, attrs, label)
    if op.shape_from_values:
        return _run_now(op, p, attrs, label, inputs, out, ctx)
    given = [] if out is None else [out] if isinstance(out, NDArray) else list(out)
    shapes, dtypes = _infer_outputs(op, p, label, inputs, given)
    for o, s in zip(given, shapes, strict=False):
        if o.shape != tuple(s):
            raise ShapeError(f"{label}: out has shape {o.shape}, the result has {s}")
    outs = given + [allocate(s, t, label, ctx)
                    for s, t in zip(shapes[len(given):], dtypes[len(given):], strict=True)]
    aux = set(op.aux_indices(p))
    ins = [a._data for a in inputs]
    state = op.create_state(p, [a.shape for a in ins], [a.dtype for a in ins]) \
        if op.create_state else p
    if AUTOGRAD.recording:
        autograd_entry("record")(op, p, attrs, inputs, outs, state, is_train)
    run = _kernel(op, state, ins, [o._data for o in outs], is_train)
    engine.push(run, [a._var for i, a in enumerate(inputs) if i not in aux],
                [o._var for o in outs] + [inputs[i]._var for i in aux]
                + ([GENERATOR.var] if op.draws else []), name=op.name)
    visible = outs[:op.num_visible_outputs(p)]
    return visible[0] if len(visible) == 1 else visible


def invoke_by_name(op_name: str, inputs: Sequence[NDArray], attrs: Mapping[str, object]
                   ) -> NDArray | list[NDArray]:
    return invoke(get_op(op_name), inputs, {k: str(v) for k, v in attrs.items()})


def make_op_function(op: OpDef, called: str) -> Callable[..., Any]:
    """The generated ``mx.nd.<called>`` function of `op`."""
    def fn(*args: Any, out: Any = None, name: str | None = None, **kwargs: Any) -> Any:
        names, tensors, attrs = split_call(op, args, kwargs, NDArray, name)
        missing = [n for n in names if n not in tensors]
        if missing:
            raise MinimxError(f"{called}: missing inputs {', '.join(missing)}")
        return invoke(op, [tensors[n] for n in names], attrs, out=out, name=name)
    fn.__name__ = called
    fn.__qualname__ = called
    fn.__doc__ = op.docstring()
    return fn
