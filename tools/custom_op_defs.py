"""The Python custom operators the fixtures use, defined once for either runtime:
`register(mx)` registers them with the `mx` it is given (MXNet 1.9.1 when the fixture
scripts write the ``custom_op`` and ``test_utils`` groups, minimx when the tests read
them), so both run the same code. Imports neither runtime itself.

- ``fixture_scaled_relu``: relu times ``scale`` (a keyword argument, which MXNet hands
  over as a string);
- ``fixture_softmax``: a softmax loss that needs no top gradient;
- ``tu_square``: x**2 whose backward sends ``factor`` * x * head gradient (2 is right,
  3 is wrong: what check_numeric_gradient must tell apart).
"""
from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Any

import numpy as np


@cache  # once per runtime: a second registration of a name would be refused
def register(mx: ModuleType) -> None:
    """Define the three operators on `mx.operator` and register them."""

    class ScaledRelu(mx.operator.CustomOp):
        def __init__(self, scale: float) -> None:
            super().__init__()
            self.scale = scale

        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], mx.nd.relu(in_data[0]) * self.scale)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * (in_data[0] > 0) * self.scale)

    @mx.operator.register("fixture_scaled_relu")
    class ScaledReluProp(mx.operator.CustomOpProp):
        def __init__(self, scale: str = "1.0") -> None:
            super().__init__(need_top_grad=True)
            self.scale = float(scale)

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return ScaledRelu(self.scale)

    class SoftmaxLoss(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            x = in_data[0].asnumpy()
            y = np.exp(x - x.max(axis=1, keepdims=True))
            self.assign(out_data[0], req[0], mx.nd.array(y / y.sum(axis=1, keepdims=True)))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            label = in_data[1].asnumpy().astype(int)
            y = out_data[0].asnumpy()
            y[np.arange(label.shape[0]), label] -= 1.0
            self.assign(in_grad[0], req[0], mx.nd.array(y))
            self.assign(in_grad[1], req[1], mx.nd.zeros(label.shape))

    @mx.operator.register("fixture_softmax")
    class SoftmaxLossProp(mx.operator.CustomOpProp):
        def __init__(self) -> None:
            super().__init__(need_top_grad=False)

        def list_arguments(self):
            return ["data", "label"]

        def infer_shape(self, in_shape):
            return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return SoftmaxLoss()

    class Square(mx.operator.CustomOp):
        def __init__(self, factor: float) -> None:
            super().__init__()
            self.factor = factor

        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * in_data[0] * self.factor)

    @mx.operator.register("tu_square")
    class SquareProp(mx.operator.CustomOpProp):
        def __init__(self, factor: str = "2") -> None:
            super().__init__(need_top_grad=True)
            self.factor = float(factor)

        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Square(self.factor)


def build_customnet(mx: ModuleType) -> Any:
    """FC, the scaled relu and FC, then the softmax loss: both custom operators."""
    register(mx)
    fc1 = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=5, name="fc1")
    act = mx.sym.Custom(fc1, op_type="fixture_scaled_relu", scale=1.5, name="srelu")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.Custom(data=fc2, op_type="fixture_softmax", name="softmax")
