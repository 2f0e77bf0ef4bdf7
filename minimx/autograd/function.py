"""`mx.autograd.Function`: a forward and its gradient written in Python.

While recording, a call runs `forward` unrecorded and records one
``_CustomFunction`` node (MXNet's) reading the inputs and writing the outputs;
backward calls the instance's `backward` with the output gradients.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ndarray.ndarray import AUTOGRAD, NDArray
from ..ops.params import Param, Params
from ..ops.registry import GradReads, OpDef
from .tape import AutogradError, record


class Function:
    """Customize differentiation: `forward(*inputs)` computes with NDArrays (unrecorded),
    `backward(*output_grads)` returns one gradient per input. Each instance is called once.

    >>> import minimx as mx
    >>> class sigmoid(mx.autograd.Function):
    ...     def forward(self, x):
    ...         y = 1 / (1 + mx.nd.exp(-x))
    ...         self.save_for_backward(y)
    ...         return y
    ...     def backward(self, dy):
    ...         y, = self.saved_tensors
    ...         return dy * y * (1 - y)
    >>> x = mx.nd.zeros((2,))
    >>> x.attach_grad()
    >>> with mx.autograd.record():
    ...     m = sigmoid()(x)
    >>> m.backward()
    >>> x.grad.asnumpy()
    array([0.25, 0.25], dtype=float32)
    """

    def __init__(self) -> None:
        self._used = False
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *args: Any) -> None:
        self.saved_tensors = args

    def __call__(self, *inputs: NDArray) -> Any:
        if self._used:
            raise AutogradError("Each Function instance can only be called once. "
                                "Please create another instance.")
        self._used = True
        recording = AUTOGRAD.recording
        AUTOGRAD.recording = False
        try:
            outputs = self.forward(*inputs)
        finally:
            AUTOGRAD.recording = recording
        if not recording:
            return outputs
        outs = [outputs] if isinstance(outputs, NDArray) else list(outputs)
        attrs = {"num_inputs": str(len(inputs)), "num_outputs": str(len(outs))}
        record(_FUNCTION, _FUNCTION.parse_params(attrs), attrs, list(inputs), outs, self,
               AUTOGRAD.training)
        return outputs

    def forward(self, *inputs: NDArray) -> Any:
        """Forward computation (a subclass defines it, as MXNet's)."""
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def backward(self, *output_grads: NDArray) -> Any:
        """Backward computation: as many gradients as forward's inputs (a subclass
        defines it, as MXNet's)."""
        raise NotImplementedError(f"{type(self).__name__} must define backward")

    def _gradients(self, out_grads: list[np.ndarray], inputs: list[Any]) -> list[np.ndarray]:
        grads = self.backward(*(NDArray(np.array(g)) for g in out_grads))
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        if len(grads) != len(inputs):
            raise AutogradError(f"{type(self).__name__}.backward must return exactly the "
                                "same number of NDArrays as the number of NDArrays arguments "
                                f"to forward. Expecting {len(inputs)} got {len(grads)}")
        for g, x in zip(grads, inputs, strict=True):
            if not isinstance(g, NDArray):
                raise AutogradError("autograd.Function.backward must return NDArrays, "
                                    f"not {type(g).__name__}")
            if g.shape != x.shape:
                raise AutogradError(f"{type(self).__name__}.backward returned a gradient of "
                                    f"shape {g.shape} for an input of shape {x.shape}")
        return [g.asnumpy() for g in grads]


def _no_forward(p: Params, ctx: Any, inputs: list) -> list:
    raise AutogradError("_CustomFunction runs only through mx.autograd.Function")


_FUNCTION = OpDef(
    "_CustomFunction", _no_forward,
    params=(Param("num_inputs", "int"), Param("num_outputs", "int")),
    inputs=lambda p: [f"arg{i}" for i in range(p["num_inputs"])],
    outputs=lambda p: [f"output{i}" for i in range(p["num_outputs"])],
    backward=lambda fn, ctx, ins, outs, out_grads: fn._gradients(out_grads, ins),
    backward_reads=GradReads(), bfloat16="native",
    doc="A recorded call of an mx.autograd.Function.")
