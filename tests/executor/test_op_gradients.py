"""Every differentiable operator's gradient through the executor, against central
finite differences of the executor's own forward, in float64.

`tests/ops/gradcheck.py` checks each kernel pair in isolation; this checks the
path users take: bind, forward, backward (the gradient pass, the memory plan,
the runner's copies). The objective is ``sum(output * cotangent)`` over the
outputs; for SoftmaxOutput, whose backward is its loss gradient whatever the
head gradient, it is the cross-entropy ``-sum(log(out[i, label[i]]))``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minimx as mx
from minimx.ops.registry import canonical_ops

# Input kinds: a shape draws normal values; ("away", shape) keeps |x| > 0.2 (kinks
# of relu, abs, leaky ...); ("pos", shape) draws from [0.5, 2]; ("index", shape, n)
# integers below n, which get no gradient.
CASES: list[tuple[str, dict[str, Any], list, dict[str, Any]]] = [
    ("Activation", {"act_type": "relu"}, [("away", (2, 3))], {}),
    ("Activation", {"act_type": "softsign"}, [(2, 3)], {}),
    ("BatchNorm", {"fix_gamma": False}, [(2, 3, 2)], {"is_train": True}),
    ("BatchNorm", {"fix_gamma": False, "use_global_stats": True}, [(2, 3, 2)], {}),
    ("Cast", {"dtype": "float64"}, [(2, 3)], {}),
    ("Concat", {"dim": 1}, [(2, 2), (2, 3)], {}),
    ("Convolution", {"kernel": (3, 3), "num_filter": 2, "pad": (1, 1)}, [(1, 2, 3, 3)], {}),
    ("Deconvolution", {"kernel": (2, 2), "stride": (2, 2), "num_filter": 2}, [(1, 2, 2, 2)],
     {}),
    ("Dropout", {"p": 0.5}, [(2, 3)], {}),
    ("Embedding", {"input_dim": 4, "output_dim": 3}, [("index", (2, 2), 4)], {}),
    ("Flatten", {}, [(2, 3, 2)], {}),
    ("FullyConnected", {"num_hidden": 2}, [(2, 3)], {}),
    ("InstanceNorm", {}, [(2, 2, 3)], {}),
    ("L2Normalization", {"mode": "instance"}, [(2, 3)], {}),
    ("LRN", {"nsize": 3}, [(1, 3, 2, 1)], {}),
    ("LayerNorm", {}, [(2, 3)], {}),
    ("LeakyReLU", {"act_type": "elu"}, [("away", (2, 3))], {}),
    ("LeakyReLU", {"act_type": "prelu"}, [("away", (2, 3))], {}),
    ("Pooling", {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}, [(1, 2, 4, 4)], {}),
    ("Pooling", {"kernel": (2, 2), "pool_type": "avg"}, [(1, 1, 3, 3)], {}),
    ("Reshape", {"shape": (3, -1)}, [(2, 3)], {}),
    ("SliceChannel", {"num_outputs": 2, "axis": 1}, [(2, 4)], {}),
    ("SoftmaxActivation", {}, [(2, 3)], {}),
    ("SoftmaxOutput", {}, [(3, 4), ("index", (3,), 4)], {}),
    ("UpSampling", {"scale": 2, "sample_type": "nearest"}, [(1, 2, 2, 2)], {}),
    ("_copy", {}, [(2, 3)], {}),
    ("_div_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("_minus_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("_mul_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("_plus_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("_rdiv_scalar", {"scalar": 1.5}, [("pos", (2, 3))], {}),
    ("_rminus_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("abs", {}, [("away", (2, 3))], {}),
    ("add_n", {}, [(2, 3), (2, 3), (2, 3)], {}),
    ("amp_cast", {"dtype": "float32"}, [(2, 3)], {}),
    ("amp_multicast", {"num_outputs": 2}, [(2, 3), (3,)], {}),
    ("batch_dot", {}, [(2, 2, 3), (2, 3, 2)], {}),
    ("broadcast_add", {}, [(2, 3), (1, 3)], {}),
    ("broadcast_div", {}, [(2, 3), ("pos", (2, 1))], {}),
    ("broadcast_mul", {}, [(2, 3), (1, 3)], {}),
    ("broadcast_sub", {}, [(2, 1), (2, 3)], {}),
    ("clip", {"a_min": -0.1, "a_max": 0.1}, [("away", (2, 3))], {}),
    ("dot", {"transpose_b": True}, [(2, 3), (2, 3)], {}),
    ("elemwise_add", {}, [(2, 3), (2, 3)], {}),
    ("elemwise_div", {}, [(2, 3), ("pos", (2, 3))], {}),
    ("elemwise_mul", {}, [(2, 3), (2, 3)], {}),
    ("elemwise_sub", {}, [(2, 3), (2, 3)], {}),
    ("exp", {}, [(2, 3)], {}),
    ("expand_dims", {"axis": 1}, [(2, 3)], {}),
    ("log", {}, [("pos", (2, 3))], {}),
    ("log_softmax", {"axis": 1}, [(2, 3)], {}),
    ("max", {"axis": 1}, [(2, 3)], {}),
    ("mean", {"axis": 0}, [(2, 3)], {}),
    ("min", {"axis": 1, "keepdims": True}, [(2, 3)], {}),
    ("negative", {}, [(2, 3)], {}),
    ("ones_like", {}, [(2, 3)], {}),
    ("relu", {}, [("away", (2, 3))], {}),
    ("sigmoid", {}, [(2, 3)], {}),
    ("slice_axis", {"axis": 1, "begin": 1, "end": 3}, [(2, 4)], {}),
    ("softmax", {}, [(2, 3)], {}),
    ("sqrt", {}, [("pos", (2, 3))], {}),
    ("square", {}, [(2, 3)], {}),
    ("sum", {"axis": (0, 1)}, [(2, 3)], {}),
    ("tanh", {}, [(2, 3)], {}),
    ("transpose", {"axes": (1, 0)}, [(2, 3)], {}),
    ("zeros_like", {}, [(2, 3)], {}),
]
# Operators holding a subgraph differentiate through their inner graph; the
# partitioner's properties (tests/subgraph) compare their gradients.
NOT_HERE = {op.name for op in canonical_ops()
            if op.name == "_subgraph_op" or op.name.startswith("_sg_")}


def draw(spec: Any, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """A value for an input spec, and whether it takes a gradient."""
    if isinstance(spec[0], int):
        return rng.normal(size=spec), True
    kind, shape = spec[0], spec[1]
    if kind == "away":
        x = rng.normal(size=shape)
        return np.sign(x) * (np.abs(x) + 0.2), True
    if kind == "pos":
        return rng.uniform(0.5, 2.0, size=shape), True
    return rng.integers(0, spec[2], size=shape).astype(np.float64), False


def test_every_differentiable_operator_has_a_case():
    differentiable = {op.name for op in canonical_ops() if op.backward is not None}
    assert differentiable - NOT_HERE - {c[0] for c in CASES} == set()


@pytest.mark.parametrize("op_name, params, specs, options", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_gradient_matches_finite_differences(op_name, params, specs, options):
    rng = np.random.default_rng(0)
    is_train = options.get("is_train", False)
    inputs = [mx.sym.Variable(f"in{i}") for i in range(len(specs))]
    sym = getattr(mx.sym, op_name)(*inputs, name="op", **params)
    values, differentiable = {}, set()
    for i, spec in enumerate(specs):
        values[f"in{i}"], grad = draw(spec, rng)
        if grad:
            differentiable.add(f"in{i}")
    shapes = {n: v.shape for n, v in values.items()}
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    for name, shape in zip(sym.list_arguments(), arg_shapes, strict=True):
        if name not in values:
            values[name] = rng.uniform(0.5, 1.5, shape)  # weights, gamma, beta
            differentiable.add(name)
    reqs = {n: "write" if n in differentiable else "null" for n in sym.list_arguments()}
    ex = sym.simple_bind(mx.cpu(), grad_req=reqs,
                         type_dict={n: "float64" for n in sym.list_arguments()}, **shapes)
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes, strict=True):
        ex.aux_dict[name][:] = rng.uniform(0.5, 1.5, shape)
    loss = op_name == "SoftmaxOutput"
    cotangents = [rng.normal(size=o.shape) for o in ex.outputs]

    def objective() -> float:
        for name, value in values.items():
            ex.arg_dict[name][:] = value
        outs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
        if loss:
            label = values["in1"].astype(int)
            return -float(np.sum(np.log(outs[0][np.arange(len(label)), label])))
        return sum(float(np.sum(o * c)) for o, c in zip(outs, cotangents, strict=True))

    objective()
    ex.backward(None if loss else [mx.nd.array(c, dtype=np.float64) for c in cotangents])
    grads = {n: g.asnumpy() for n, g in ex.grad_dict.items()}
    eps = 1e-6
    for name in sorted(differentiable):
        base = values[name]
        numeric = np.zeros_like(base)
        for j in np.ndindex(base.shape):
            original = base[j]
            base[j] = original + eps
            up = objective()
            base[j] = original - eps
            numeric[j] = (up - objective()) / (2 * eps)
            base[j] = original
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{op_name} {params}: gradient of {name}")
