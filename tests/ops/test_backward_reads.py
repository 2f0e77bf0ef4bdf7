"""What each operator's backward reads of its forward (`OpDef.backward_reads`),
and `Unread`, which stands for the rest and refuses to give values."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.base import OperatorError
from minimx.graph import Graph
from minimx.ops.registry import GradReads, OpContext, OpDef, Unread, get_op


def reads(op: str, **attrs) -> tuple[list[str], list[str]]:
    """(inputs, outputs) by name that `op`'s backward reads with these parameters."""
    opdef = get_op(op)
    p = opdef.parse_params({k: str(v) for k, v in attrs.items()})
    read_in, read_out = opdef.grad_reads(p)
    return ([n for n, r in zip(opdef.input_names(p), read_in, strict=True) if r],
            [n for n, r in zip(opdef.output_names(p), read_out, strict=True) if r])


@pytest.mark.parametrize("op, attrs, expected", [
    # as MXNet's FGradient functions: relu reads its output, not its input
    ("Activation", {"act_type": "relu"}, ([], ["output"])),
    ("Activation", {"act_type": "softrelu"}, (["data"], [])),
    ("relu", {}, ([], ["output"])),
    ("Convolution", {"kernel": (3, 3), "num_filter": 4}, (["data", "weight"], [])),
    ("FullyConnected", {"num_hidden": 4}, (["data", "weight"], [])),
    # the moving statistics for a backward in predict mode
    ("BatchNorm", {}, (["data", "gamma", "moving_mean", "moving_var"], ["mean", "var"])),
    ("elemwise_add", {}, ([], [])),
    ("elemwise_mul", {}, (["lhs", "rhs"], [])),
    ("Pooling", {"kernel": (2, 2), "pool_type": "max"}, (["data"], [])),
    ("Pooling", {"kernel": (2, 2), "pool_type": "avg"}, ([], [])),
    ("Dropout", {}, ([], ["mask"])),
    ("Flatten", {}, ([], [])),
    ("Concat", {"num_args": 3}, ([], [])),
    ("clip", {"a_min": 0, "a_max": 6}, (["data"], [])),
    ("SoftmaxOutput", {}, (["label"], ["output"])),
])
def test_declared_reads(op, attrs, expected):
    assert reads(op, **attrs) == expected


def test_an_operator_that_declares_nothing_reads_everything():
    op = OpDef("_probe", lambda p, ctx, inputs: inputs[0], inputs=("a", "b"),
               outputs=("y", "z"))
    assert op.grad_reads(op.parse_params({})) == ([True, True], [True, True])


def test_every_model_zoo_operator_declares_its_reads():
    ops = set()
    for name in mx.models.list_models():
        ops |= {n.op for n in Graph(mx.models.get_model(name).outputs).nodes
                if not n.is_variable}
    ops.add("SoftmaxOutput")  # the loss head a training bind adds
    assert sorted(op for op in ops if get_op(op).backward_reads is None) == []


def test_a_name_that_is_no_input_or_output_is_refused():
    op = OpDef("_probe", lambda p, ctx, inputs: inputs[0], backward_reads=GradReads(("dat",)))
    with pytest.raises(OperatorError, match=r"n0 \(_probe\): backward_reads names \['dat'\], "
                                            r"which are not among inputs \['data'\]"):
        op.grad_reads(op.parse_params({}), "n0 (_probe)")


def test_unread_has_shape_and_dtype_but_no_values():
    u = Unread((2, 3), np.float32, "c0 (Convolution) input data")
    assert (u.shape, u.dtype, u.ndim, u.size) == ((2, 3), np.float32, 2, 6)
    assert np.zeros(u.shape, u.dtype).dtype == np.float32
    message = (r"c0 \(Convolution\) input data: backward reads its values, but the "
               r"operator's backward_reads does not declare it")
    for use in (lambda: np.ones((2, 3)) * u, lambda: np.asarray(u), lambda: np.sum(u),
                lambda: np.float32(2) * u, lambda: np.zeros_like(u), lambda: 2 * u,
                lambda: u > 0, lambda: u[0], lambda: -u):
        with pytest.raises(OperatorError, match=message):
            use()


def test_a_backward_reading_what_it_does_not_declare_fails_loudly():
    # Declares nothing, but its gradient multiplies by the input.
    op = OpDef("_probe", lambda p, ctx, inputs: inputs[0] ** 2,
               backward=lambda p, ctx, inputs, outputs, out_grads: [2 * inputs[0] * out_grads[0]],
               backward_reads=GradReads())
    p, x = op.parse_params({}), np.arange(3.0)
    ins, outs = op.backward_view(p, [x], [x ** 2], "sq (_probe)")
    assert isinstance(ins[0], Unread) and isinstance(outs[0], Unread)
    with pytest.raises(OperatorError, match=r"sq \(_probe\) input data: backward reads"):
        op.backward(p, OpContext(), ins, outs, [np.ones(3)])


def test_backward_view_passes_what_is_declared():
    op = get_op("Activation")
    p = op.parse_params({"act_type": "relu"})
    x = np.array([-1.0, 2.0])
    y = op.forward(p, OpContext(), [x])
    ins, outs = op.backward_view(p, [x], [y])
    assert isinstance(ins[0], Unread) and outs[0] is y
    (dx,) = op.backward(p, OpContext(), ins, outs, [np.array([5.0, 7.0])])
    np.testing.assert_array_equal(dx, [0.0, 7.0])
