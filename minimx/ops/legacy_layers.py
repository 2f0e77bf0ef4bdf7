"""The legacy layers of MXNet 0.x model files: `Convolution_v1`, `Pooling_v1` and
`BatchNorm_v1`, as MXNet 1.9.1 still registers them (src/operator/*_v1*).

Each is its modern layer's OpDef under the old name and the old, smaller
parameter list: the parameters the old layer lacks (BatchNorm's axis, Pooling's
layout, ...) take the modern defaults before the modern kernels, inference and
gradient see them, so no kernel is repeated here. The old layers run on the
numpy kernels (the oneDNN backend fuses only the modern names).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import conv, norm, pooling  # noqa: F401  (they register the modern layers)
from .params import Param, Params
from .registry import OpDef, get_op, register

# The fields of an OpDef that are functions of the parameters.
_PARAM_FUNCTIONS = ("forward", "backward", "backward_reads", "inputs", "outputs",
                    "visible_outputs", "aux", "infer_shape", "infer_type", "resolve")


def _with_modern_defaults(modern: OpDef, p: Params) -> Params:
    """The old node's parameters with the modern layer's defaults for the rest
    (kept in the node's cache: Params are immutable)."""
    full = p.cache.get("modern params")
    if full is None:
        values = {s.name: s.default for s in modern.params if s.name not in p}
        full = p.cache["modern params"] = Params({**values, **p}, p.subgraphs, p.label)
    return full


def _adapted(modern: OpDef, fn: Any) -> Any:
    if not callable(fn):
        return fn
    fn = getattr(fn, "__wrapped__", fn)  # the float32 wrapper: the new OpDef adds its own

    def call(p: Params, *rest: Any) -> Any:
        return fn(_with_modern_defaults(modern, p), *rest)
    return call


Kernel = Callable[..., Any]


def legacy_layer(modern_name: str, name: str, keep: Callable[[Param], bool],
                 overrides: tuple[Param, ...] = (),
                 kernels: Callable[[Kernel, Kernel], tuple[Kernel, Kernel]] | None = None
                 ) -> OpDef:
    """`modern_name`'s OpDef as `name`, with the modern parameters `keep` accepts
    (each replaced by the one of `overrides` with its name, if any); `kernels`, given
    the modern forward and backward, returns the old layer's where they differ."""
    modern = get_op(modern_name)
    changed = {s.name: s for s in overrides}
    params = tuple(changed.get(s.name, s) for s in modern.params if keep(s))
    functions = {f: _adapted(modern, getattr(modern, f)) for f in _PARAM_FUNCTIONS}
    if kernels is not None:
        functions["forward"], functions["backward"] = kernels(functions["forward"],
                                                              functions["backward"])
    return dataclasses.replace(modern, name=name, params=params, aliases=(),
                               doc=f"{modern_name} as MXNet 0.x's {name} (its parameters).\n\n"
                                   + modern.doc, **functions)


# Pooling_v1 pools the input padded with zeros: its avg divides every window by the
# kernel's area, also the windows of the full convention that run past the padded input
# (Pooling divides those by their part inside): the sum pooling, scaled; its max takes the
# padding's zeros in (Pooling's max leaves padding out): Pooling without padding on the
# input padded with zeros, whose gradient at the padding is dropped.
def _v1_pooling(forward: Kernel, backward: Kernel) -> tuple[Kernel, Kernel]:
    def as_modern(p: Params, x: np.ndarray) -> tuple[Params, float, tuple[int, ...]]:
        """Pooling's parameters, the factor on its output and the zeros to pad x with."""
        none = (0,) * (x.ndim - 2)
        if p.pool_type == "avg":
            area = math.prod(x.shape[2:] if p.global_pool else p.kernel)
            return Params({**p, "pool_type": "sum"}, p.subgraphs, p.label), 1.0 / area, none
        if p.pool_type == "max" and not p.global_pool and any(p.pad or ()):
            return Params({**p, "pad": none}, p.subgraphs, p.label), 1.0, tuple(p.pad)
        return p, 1.0, none

    def padded(x: np.ndarray, pads: tuple[int, ...]) -> np.ndarray:
        return np.pad(x, [(0, 0), (0, 0), *((n, n) for n in pads)]) if any(pads) else x

    def v1_forward(p: Params, ctx: Any, inputs: list) -> Any:
        q, scale, pads = as_modern(p, inputs[0])
        y = forward(q, ctx, [padded(inputs[0], pads)])
        return y if scale == 1.0 else (y * scale).astype(y.dtype)

    def v1_backward(p: Params, ctx: Any, inputs: list, outputs: list, out_grads: list) -> list:
        q, scale, pads = as_modern(p, inputs[0])
        g = out_grads[0] if scale == 1.0 else (out_grads[0] * scale).astype(out_grads[0].dtype)
        (dx,) = backward(q, ctx, [padded(inputs[0], pads)], outputs, [g])
        inside = tuple(slice(n, n + size) for n, size in zip(pads, inputs[0].shape[2:],
                                                              strict=True))
        return [dx[(slice(None), slice(None), *inside)]]
    return v1_forward, v1_backward


# BatchNorm_v1's third output is the variance (BatchNorm's, the inverse std).
def _v1_variance(forward: Kernel, backward: Kernel) -> tuple[Kernel, Kernel]:
    def v1_forward(p: Params, ctx: Any, inputs: list) -> Any:
        y, mean, inv_std = forward(p, ctx, inputs)
        return [y, mean, (1.0 / np.square(inv_std) - p.eps).astype(inv_std.dtype)]

    def v1_backward(p: Params, ctx: Any, inputs: list, outputs: list, out_grads: list) -> list:
        y, mean, var = outputs
        inv_std = (1.0 / np.sqrt(var + p.eps)).astype(var.dtype)
        return backward(p, ctx, inputs, [y, mean, inv_std], out_grads)
    return v1_forward, v1_backward


register(legacy_layer("Convolution", "Convolution_v1", lambda s: True))
register(legacy_layer(
    "Pooling", "Pooling_v1",
    lambda s: s.name in ("kernel", "pool_type", "global_pool", "pooling_convention", "stride",
                         "pad"),
    (Param("pool_type", "str", "max", "Pooling type to be applied.",
           choices=("max", "avg", "sum")),
     Param("pooling_convention", "str", "valid", "valid: floor((x+2p-k)/s)+1; full: "
           "ceil((x+2p-k)/s)+1.", choices=("full", "valid"))),
    _v1_pooling))
register(legacy_layer(
    "BatchNorm", "BatchNorm_v1",
    lambda s: s.name in ("eps", "momentum", "fix_gamma", "use_global_stats",
                         "output_mean_var"),
    kernels=_v1_variance))
