"""The custom operators of the custom_op fixture group, defined as
tools/mxnet_fixtures.py defines them for MXNet: a scaled relu (its ``scale``
comes as a string) and a softmax loss that needs no top gradient."""
from __future__ import annotations

import numpy as np

import minimx as mx


class ScaledRelu(mx.operator.CustomOp):
    def __init__(self, scale: float) -> None:
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.relu(in_data[0]) * self.scale)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * (in_data[0] > 0) * self.scale)


@mx.operator.register("fixture_scaled_relu")
class ScaledReluProp(mx.operator.CustomOpProp):
    def __init__(self, scale: str = "1.0") -> None:
        super().__init__(need_top_grad=True)
        self.scale = float(scale)   # MXNet hands every keyword argument over as a string

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


def build_customnet() -> mx.sym.Symbol:
    """FC, a scaled relu and FC, then the softmax loss (the script's `build_customnet`)."""
    fc1 = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=5, name="fc1")
    act = mx.sym.Custom(fc1, op_type="fixture_scaled_relu", scale=1.5, name="srelu")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.Custom(data=fc2, op_type="fixture_softmax", name="softmax")
