"""``IdentityAttachKLSparseReg``: the identity forward, and a backward that adds the
gradient of a KL sparseness penalty (MXNet 1.9.1's
src/operator/identity_attach_KL_sparse_reg-inl.h, for the outputs of a sigmoid: P11 of
Hinton's guide to training RBMs).

Backward first updates the auxiliary ``moving_avg``, the running mean activation
of each unit: ``moving_avg = momentum * moving_avg + (1 - momentum) * mean``, the
mean over the rows of the data seen as a matrix (its last axis the units, every other
axis rows, as MXNet's FlatTo2D), then adds
``penalty * (-sparseness_target / moving_avg + (1 - sparseness_target) / (1 - moving_avg))``
to the output gradient. All in float32, MXNet's only dtype for it.
"""
from __future__ import annotations

import numpy as np

from ..base import DTypeError, OperatorError
from .infer import merge, merge_all
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register

Array = np.ndarray
_F32 = np.dtype(np.float32)


def _shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    for name in ("sparseness_target", "momentum"):   # MXNet's set_range(0, 1)
        if not 0.0 <= p[name] <= 1.0:
            raise OperatorError(f"{p.label}: {name}={p[name]} must be in [0, 1]")
    data = merge_all([in_shapes[0], out_shapes[0]])
    if data is None or len(data) < 2:
        return [data, in_shapes[1]], [data]
    return [data, merge(in_shapes[1], (data[1],))], [data]


def _type(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    for name, dtype in zip(("data", "moving_avg", "output"), [*in_types, *out_types],
                           strict=True):
        if dtype is not None and dtype != _F32:
            raise DTypeError(f"{p.label}: {name} must be float32, got {dtype}")
    return [_F32, _F32], [_F32]


def _forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    return inputs[0].view()


def _backward(p: Params, ctx: OpContext, inputs: list[Array], outputs: list,
              out_grads: list[Array]) -> list:
    data, moving_avg = inputs
    rows = data.reshape(-1, data.shape[-1])
    if rows.shape[1] != moving_avg.shape[0]:
        # MXNet's backward fails so too (its reduction's shape check).
        raise OperatorError(f"{p.label}: the data's last axis ({data.shape}) must match "
                            f"moving_avg's {moving_avg.shape[0]} units (its axis 1)")
    mean = rows.sum(axis=0, dtype=np.float32) / np.float32(rows.shape[0])
    momentum = np.float32(p.momentum)
    moving_avg[:] = momentum * moving_avg + (np.float32(1) - momentum) * mean
    target, penalty = np.float32(p.sparseness_target), np.float32(p.penalty)
    push = penalty * (-target / moving_avg + (np.float32(1) - target)
                      / (np.float32(1) - moving_avg))
    return [out_grads[0] + push, None]


register(OpDef(
    "IdentityAttachKLSparseReg", _forward, inputs=("data", "moving_avg"), aux=("moving_avg",),
    params=(Param("sparseness_target", "float", 0.1, "The sparseness target"),
            Param("penalty", "float", 0.001, "The tradeoff parameter for the sparseness penalty"),
            Param("momentum", "float", 0.9, "The momentum for running average")),
    infer_shape=_shape, infer_type=_type, backward=_backward,
    backward_reads=GradReads(inputs=("data", "moving_avg")), inplace=((0, 0),),
    bfloat16="refuse",
    doc="Apply a sparse regularization to the output of a sigmoid activation function: "
        "the identity forward, a KL sparseness penalty added to the gradient (and the "
        "running mean activation, moving_avg, updated) in backward."))
