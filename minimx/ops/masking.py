"""`contrib.boolean_mask` (MXNet 1.9.1 src/operator/contrib/boolean_mask.cc): the slices
of `data` along axis 0 where `index` is nonzero. Its output shape depends on the values
of `index`, so it is `shape_from_values`: mx.nd runs it at once, graphs refuse it. Its
gradient, as MXNet's, scatters the head gradient back to the kept rows, zeros elsewhere
(none for `index`).
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError
from .params import Params
from .registry import OpContext, OpDef, Param, register

Array = np.ndarray


def _boolean_mask(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    data, index = inputs
    if p.axis != 0:
        raise OperatorError(f"{p.label}: axis={p.axis}: only axis 0 is supported, as in "
                            "MXNet 1.9.1")
    if data.ndim == 0 or index.shape != data.shape[:1]:
        raise OperatorError(f"{p.label}: index of shape {index.shape} must be 1-D and as long "
                            f"as data's axis 0 (data shape {data.shape})")
    return data[index != 0]


def _boolean_mask_backward(p: Params, ctx: OpContext, inputs: list[Array],
                           outputs: list[Array], out_grads: list[Array]) -> list:
    data, index = inputs
    grad = np.zeros_like(data)
    grad[index != 0] = out_grads[0]
    return [grad, None]


def _data_type(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    """The output has data's dtype; the index may have any."""
    return in_types, [in_types[0] if in_types[0] is not None else out_types[0]]


register(OpDef(
    "_contrib_boolean_mask", _boolean_mask, backward=_boolean_mask_backward,
    inputs=("data", "index"),
    params=(Param("axis", "int", 0, "The axis to mask (MXNet 1.9.1: 0 only)."),),
    infer_type=_data_type, shape_from_values=True,
    doc="The slices of data along axis 0 where index (1-D, as long as that axis) is "
        "nonzero. Imperative only: the output shape depends on index's values."))
