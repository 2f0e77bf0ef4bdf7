"""bfloat16 in the numpy kernels: computed in float32, rounded once at the end.

MXNet 1.9.1's CPU kernels take bfloat16 for most operators and compute in
float32 (mshadow's ``bf16_t`` converts to float for every operation; the oneDNN
kernels accumulate in float32). A numpy kernel here does the same without
knowing about bfloat16: its bfloat16 inputs are widened to float32, it runs,
and each result is rounded to the dtype the operator's type inference gives
(`minimx.base.to_bfloat16`'s rounding, to nearest even). Gradients come back
in their inputs' dtypes.

Operators MXNet 1.9.1 has no bfloat16 kernel for (`dot`, `LayerNorm`, ...)
set ``OpDef(bfloat16="refuse")``: their type inference refuses bfloat16 with a
`DTypeError`, so a graph fails at bind, not in the middle of a forward.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base import BFLOAT16, DTypeError

F32 = np.dtype(np.float32)
InferFn = Callable[[Any, list, list], tuple[list, list]]


def _any_bf16(arrays: Sequence[Any]) -> bool:
    return any(getattr(a, "dtype", None) == BFLOAT16 for a in arrays)


def _widen(arrays: Sequence[Any]) -> list:
    """bfloat16 arrays as float32; anything else (an `Unread`, None, float32) as it is."""
    return [a.astype(F32) if isinstance(a, np.ndarray) and a.dtype == BFLOAT16 else a
            for a in arrays]


def _as_dtypes(results: Any, dtypes: Sequence[np.dtype | None]) -> Any:
    """Each result in its dtype (None: as the kernel gave it)."""
    single = isinstance(results, np.ndarray)
    cast = [r if t is None or r is None or np.dtype(r.dtype) == t else np.asarray(r).astype(t)
            for r, t in zip([results] if single else results, dtypes, strict=True)]
    return cast[0] if single else cast


def forward_in_float32(forward: Callable[..., Any], infer_type: InferFn,
                       num_outputs: Callable[[Any], int],
                       aux_indices: Callable[[Any], list[int]]) -> Callable[..., Any]:
    """`forward`, run in float32 when an input is bfloat16; results in the inferred
    dtypes, and the auxiliary states it updated written back."""
    def run(p: Any, ctx: Any, inputs: list) -> Any:
        if not _any_bf16(inputs):
            return forward(p, ctx, inputs)
        _, out_types = infer_type(p, [a.dtype for a in inputs], [None] * num_outputs(p))
        wide = _widen(inputs)
        results = _as_dtypes(forward(p, ctx, wide), out_types)
        for i in aux_indices(p):
            if wide[i] is not inputs[i]:
                np.copyto(inputs[i], wide[i], casting="unsafe")
        return results
    run.__wrapped__ = forward  # type: ignore[attr-defined]
    return run


def backward_in_float32(backward: Callable[..., list]) -> Callable[..., list]:
    """`backward`, run in float32 when a forward array is bfloat16; each gradient in
    its input's dtype."""
    def run(p: Any, ctx: Any, inputs: list, outputs: list, out_grads: list) -> list:
        if not (_any_bf16(inputs) or _any_bf16(outputs) or _any_bf16(out_grads)):
            return backward(p, ctx, inputs, outputs, out_grads)
        grads = backward(p, ctx, _widen(inputs), _widen(outputs), _widen(out_grads))
        return _as_dtypes(list(grads), [a.dtype for a in inputs])
    run.__wrapped__ = backward  # type: ignore[attr-defined]
    return run


def refusing_bf16(infer_type: InferFn, op_name: str) -> InferFn:
    """`infer_type` that refuses bfloat16 anywhere among the operator's arrays."""
    def infer(p: Any, in_types: list, out_types: list) -> tuple[list, list]:
        ins, outs = infer_type(p, in_types, out_types)
        if any(t == BFLOAT16 for t in (*in_types, *out_types, *ins, *outs)):
            raise DTypeError(f"{op_name} has no bfloat16 kernel (MXNet 1.9.1 has none on "
                             "CPU either): cast its inputs to float32 (amp_cast), or list "
                             "it among the fp32_ops of amp.convert_symbol")
        return ins, outs
    infer.__wrapped__ = infer_type  # type: ignore[attr-defined]
    return infer
