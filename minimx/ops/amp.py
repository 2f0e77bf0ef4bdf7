"""The casts of automatic mixed precision: `amp_cast` and `amp_multicast`.

As MXNet 1.9.1 (src/operator/tensor/amp_cast.h): they cast only between the
floating types a model mixes (float32, float16, bfloat16); an input of any
other type passes through unchanged. `amp_multicast` casts all its inputs to
the widest of their types (float32 if any is; with ``cast_narrow``, to the
narrowest). Gradients come back in each input's dtype.
"""
from __future__ import annotations

import numpy as np

from ..base import BFLOAT16, to_bfloat16
from .infer import merge, merge_dtype
from .params import Param, Params
from .registry import GradReads, OpContext, OpDef, register

AMP_FLOATS = (np.dtype(np.float32), np.dtype(np.float16), BFLOAT16)
F32 = np.dtype(np.float32)


def _cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`x` in `dtype` when both are AMP floats; `x` itself otherwise."""
    if x.dtype not in AMP_FLOATS or x.dtype == dtype:
        return x
    return to_bfloat16(x) if dtype == BFLOAT16 else x.astype(dtype)


def _grads_in_input_types(p: Params, ctx: OpContext, inputs: list, outputs: list,
                          out_grads: list) -> list:
    return [_cast(g, x.dtype) for g, x in zip(out_grads, inputs, strict=True)]


def _cast_to(dtype: np.dtype | None, source: np.dtype | None) -> np.dtype | None:
    """What an AMP cast to `dtype` makes of an input of `source` (None: unknown)."""
    if source is None:
        return None
    return dtype if source in AMP_FLOATS else source


def _amp_cast_type(p: Params, in_types: list, out_types: list):
    return in_types, [merge_dtype(out_types[0], _cast_to(p.dtype, in_types[0]))]


register(OpDef(
    "amp_cast", lambda p, ctx, inputs: _cast(inputs[0], p.dtype),
    params=(Param("dtype", "dtype", doc="Output data type.",
                  choices=("float32", "float64", "float16", "bfloat16", "uint8", "int8",
                           "int32", "int64")),),
    infer_type=_amp_cast_type, inplace=((0, 0),), bfloat16="native",
    backward=_grads_in_input_types, backward_reads=GradReads(),
    doc="Cast function between low precision float/FP32 used by AMP.\n\n"
        "It casts only between low precision float/FP32 and does not do anything "
        "for other types.", named_inputs=False))


def _widest(p: Params, in_types: list, out_types: list) -> np.dtype | None:
    """The type the AMP floats become, from what is known so far (AMPMultiCastType):
    float32 if any input or output is (with ``cast_narrow``: the narrow type present,
    float32 if none); else the first input's type."""
    known = [t for t in (*in_types, *out_types) if t is not None]  # numpy: float64 == None
    if p.cast_narrow:
        return next((t for t in reversed(known) if t in (np.float16, BFLOAT16)), F32)
    return F32 if F32 in known else in_types[0]


def _multicast_type(p: Params, in_types: list, out_types: list):
    widest = _widest(p, in_types, out_types)
    return in_types, [merge_dtype(o, _cast_to(widest, t))
                      for o, t in zip(out_types, in_types, strict=True)]


def _multicast_forward(p: Params, ctx: OpContext, inputs: list) -> list:
    _, out_types = _multicast_type(p, [x.dtype for x in inputs], [None] * len(inputs))
    return [_cast(x, t) for x, t in zip(inputs, out_types, strict=True)]


def _pairwise_shapes(p: Params, in_shapes: list, out_shapes: list):
    """Output i has input i's shape."""
    shapes = [merge(i, o) for i, o in zip(in_shapes, out_shapes, strict=True)]
    return shapes, list(shapes)


def _multicast_outputs(p: Params) -> list[str]:
    # nnvm's names for an operator that does not name its outputs.
    return [f"output{i}" for i in range(p.num_outputs)] if p.num_outputs > 1 else ["output"]


register(OpDef(
    "amp_multicast", _multicast_forward,
    params=(Param("num_outputs", "int",
                  doc="Number of input/output pairs to be casted to the widest type."),
            Param("cast_narrow", "bool", False, doc="Whether to cast to the narrowest type")),
    variadic="num_outputs", outputs=_multicast_outputs,
    infer_shape=_pairwise_shapes, infer_type=_multicast_type, bfloat16="native",
    backward=_grads_in_input_types, backward_reads=GradReads(),
    doc="Cast function used by AMP, that casts its inputs to the common widest type.\n\n"
        "It casts only between low precision float/FP32 and does not do anything "
        "for other types."))
