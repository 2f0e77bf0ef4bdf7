"""`mx.autograd`: recording NDArray operations and differentiating them, as MXNet 1.x.

>>> import minimx as mx
>>> x = mx.nd.array([1.0, 2.0])
>>> x.attach_grad()
>>> with mx.autograd.record():
...     y = (x * x).sum()
>>> y.backward()
>>> x.grad.asnumpy()
array([2., 4.], dtype=float32)

While `record` is on, every operator call with an input in a recorded graph (a
variable `attach_grad` or `mark_variables` made, or an earlier recorded result)
is recorded (`tape`); `backward` and `grad` run the gradient pass over it
(`backward`). `train_mode` / `predict_mode` set whether operators such as
Dropout and BatchNorm run as in training; `record` turns it on by default.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from ..base import MinimxError
from ..graph.node import NodeEntry
from ..ndarray.ndarray import AUTOGRAD, NDArray, provide_autograd
from ..symbol import Symbol
from .backward import run_backward
from .function import Function
from .indexing import getitem
from .tape import (
    AutogradError,
    attach_grad,
    entry_of,
    grad_of,
    in_graph,
    mark_variables,
    record_call,
    record_copy,
    record_setitem,
)
from .tape import record as _record

__all__ = ["AutogradError", "Function", "backward", "get_symbol", "grad", "is_recording",
           "is_training", "mark_variables", "pause", "predict_mode", "record",
           "set_recording", "set_training", "train_mode"]


def set_recording(is_recording: bool) -> bool:
    """Turn recording on or off; returns the previous state."""
    previous, AUTOGRAD.recording = AUTOGRAD.recording, bool(is_recording)
    return previous


def set_training(train_mode: bool) -> bool:
    """Turn training mode (``ctx.is_train`` of the operators) on or off; returns the
    previous state."""
    previous, AUTOGRAD.training = AUTOGRAD.training, bool(train_mode)
    return previous


def is_recording() -> bool:
    return AUTOGRAD.recording


def is_training() -> bool:
    return AUTOGRAD.training


@contextmanager
def _scope(recording: bool | None, training: bool | None) -> Iterator[None]:
    previous = AUTOGRAD.recording, AUTOGRAD.training
    if recording is not None:
        AUTOGRAD.recording = recording
    if training is not None:
        AUTOGRAD.training = training
    try:
        yield
    finally:
        AUTOGRAD.recording, AUTOGRAD.training = previous


def record(train_mode: bool = True) -> AbstractContextManager[None]:
    """A scope that records the operations for `backward` (in training mode unless
    ``train_mode=False``)."""
    return _scope(True, train_mode)


def pause(train_mode: bool = False) -> AbstractContextManager[None]:
    """A scope that records nothing (in predict mode unless ``train_mode=True``)."""
    return _scope(False, train_mode)


def train_mode() -> AbstractContextManager[None]:
    """A scope in training mode, recording or not as outside it."""
    return _scope(None, True)


def predict_mode() -> AbstractContextManager[None]:
    """A scope in predict mode, recording or not as outside it."""
    return _scope(None, False)


def _as_list(arrays: NDArray | Sequence[NDArray | None] | None
             ) -> list[NDArray | None] | None:
    return [arrays] if isinstance(arrays, NDArray) else None if arrays is None else list(arrays)


def backward(heads: NDArray | Sequence[NDArray],
             head_grads: NDArray | Sequence[NDArray | None] | None = None,
             retain_graph: bool = False, train_mode: bool = True) -> None:
    """The gradients of `heads` (with `head_grads`, default ones) with respect to the
    marked variables they were recorded from, into the variables' `grad` buffers."""
    run_backward(_as_list(heads), _as_list(head_grads), None,  # type: ignore[arg-type]
                 retain_graph, train_mode)


def grad(heads: NDArray | Sequence[NDArray], variables: NDArray | Sequence[NDArray],
         head_grads: NDArray | Sequence[NDArray | None] | None = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         train_mode: bool = True) -> list[NDArray]:
    """The gradients of `heads` with respect to `variables`, as new arrays (the
    variables' `grad` buffers are left alone); a list even for one variable, as MXNet's."""
    if create_graph:
        raise AutogradError("autograd.grad: create_graph=True (recording the gradient "
                            "computation for higher-order gradients) is not supported by "
                            "minimx")
    listed = _as_list(variables)
    if not listed:
        raise AutogradError("variables cannot be an empty list.")
    result = run_backward(_as_list(heads), _as_list(head_grads),  # type: ignore[arg-type]
                          listed, bool(retain_graph), train_mode)  # type: ignore[arg-type]
    assert result is not None
    return result


def get_symbol(x: NDArray) -> Symbol:
    """The graph recorded for `x` as a Symbol (MXNet's node names: ``var0``,
    ``null1``, ``node_2``...)."""
    if not isinstance(x, NDArray):
        raise MinimxError(f"get_symbol: Invalid argument type, expecting NDArray, got "
                          f"{type(x).__name__}")
    e = entry_of(x)
    if e is None:
        raise AutogradError("get_symbol: the array is not in a recorded graph")
    return Symbol([NodeEntry(e.node, e.index)])


provide_autograd(record=_record, record_call=record_call, record_copy=record_copy,
                 record_setitem=record_setitem, in_graph=in_graph, getitem=getitem,
                 attach_grad=attach_grad, grad_of=grad_of, backward=backward)
