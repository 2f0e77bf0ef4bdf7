"""A backward and the training forward after it, on the threaded engine: the
forward's steps write the blocks where backward reads the stored values of the
forward before, so they wait for it. Found by a differential fuzz against
MXNet 1.9.1: with grad_req='add', forward, backward, forward, backward gave
wrong gradients in some 3% of runs."""
from __future__ import annotations

import threading

import numpy as np

import minimx as mx

RELEASE = threading.Event()     # lets the gate's backward finish
SECOND = threading.Event()      # set by the gate's second forward
FORWARDS: list[int] = []        # one entry per forward of the gate


class Gate(mx.operator.CustomOp):
    """Identity whose backward waits for RELEASE, so that a race would show."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0])
        FORWARDS.append(1)
        if len(FORWARDS) == 2:
            SECOND.set()

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert RELEASE.wait(timeout=60), "the test never released the backward"
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register("test_backward_gate")
class GateProp(mx.operator.CustomOpProp):
    def __init__(self) -> None:
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Gate()


def test_next_forward_waits_for_backward_and_added_gradients_are_exact():
    a = mx.sym.var("a")
    y = mx.sym.square(mx.sym.Custom(mx.sym.relu(a), op_type="test_backward_gate"))
    x = np.array([[-1.0, 0.5, 2.0], [3.0, -0.25, 1.5]], np.float32)
    ex = y.bind(mx.cpu(), {"a": mx.nd.array(x)}, args_grad={"a": mx.nd.ones(x.shape)},
                grad_req="add")
    head = mx.nd.ones(x.shape)
    RELEASE.clear()
    SECOND.clear()
    FORWARDS.clear()
    try:
        ex.forward(is_train=True)
        ex.outputs[0].wait_to_read()
        ex.backward(head)
        ex.forward(is_train=True)   # pushed while the backward waits in the gate
        # Half a second for a wrongly ordered forward to reach the gate: it must not.
        assert not SECOND.wait(timeout=0.5)
    finally:
        RELEASE.set()
    assert SECOND.wait(timeout=60)   # and it runs once the backward is done
    ex.backward(head)
    got = ex.grad_dict["a"].asnumpy()
    # d/da sum(relu(a)^2) = 2 relu(a) (a > 0), added twice to the ones it started from
    np.testing.assert_array_equal(got, 1 + 2 * (2 * np.maximum(x, 0)))
