"""MXNet 1.9's multi-tensor SGD updates (src/operator/optimizer_op.cc): one call updates
`num_weights` weights, each with its own learning rate and weight decay (`lrs`, `wds`):

    mx.nd.multi_sgd_mom_update(w0, g0, m0, w1, g1, m1, num_weights=2, lrs=(0.1, 0.2),
                               wds=(0.0, 1e-4), momentum=0.9, out=[w0, w1])

The inputs interleave per weight: weight_i, grad_i[, mom_i][, weight32_i]; the outputs
are the new weights. mom and weight32 are updated in place, auxiliary states as in
`optimizer_ops`, whose `step` (on `update_rules.sgd`) each weight goes through.

The `preloaded_multi_*` forms take lrs and wds as the last two inputs (float32 arrays
of num_weights values, which may live on the device) instead of parameters.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..base import OperatorError
from . import update_rules as rules
from .infer import merge, merge_dtype, same_dtype
from .optimizer_ops import mp_types, step, update_shapes
from .params import Params
from .registry import InferFn, OpContext, OpDef, Param, register

Array = np.ndarray

_RATES = (Param("lrs", "floats", doc="The learning rate of each weight."),
          Param("wds", "floats", doc="The weight decay of each weight."))
_PARAMS = (Param("rescale_grad", "float", 1.0, "The gradients are multiplied by this first."),
           Param("clip_gradient", "float", -1.0,
                 "Clip the rescaled gradients to [-clip, clip]; negative: no clipping."),
           Param("num_weights", "int", 1, "The number of weights updated."))
_MOMENTUM = Param("momentum", "float", 0.0, "The decay of the momentum.")


def per_weight_names(slots: tuple[str, ...], tail: tuple[str, ...] = (),
                     count: str = "num_weights") -> Callable[[Params], list[str]]:
    """Input names: `slots` numbered for each of the `count` weights, then `tail`."""
    return lambda p: [f"{slot}_{i}" for i in range(p[count]) for slot in slots] + list(tail)


def weight_outputs(count: str = "num_weights") -> Callable[[Params], list[str]]:
    """One output per weight, named as MXNet names them."""
    return lambda p: ["output"] if p[count] == 1 else [f"output{i}" for i in range(p[count])]


def _check_rates(p: Params, lrs: Sequence, wds: Sequence, what: str) -> None:
    if p.num_weights < 1 or len(lrs) != p.num_weights or len(wds) != p.num_weights:
        raise OperatorError(f"{p.label}: num_weights={p.num_weights} needs that many lrs and "
                            f"wds, got {what}")


def per_weight(infer: InferFn, stride: int, tail: InferFn | None = None,
               count: str = "num_weights", check: Callable[[Params], None] | None = None
               ) -> InferFn:
    """`infer` on each weight's `stride` inputs and its output, `tail` on the inputs after
    them (the preloaded lrs and wds, AdamW's rescale_grad). `check` the parameters first:
    inference runs before any kernel, imperatively as at bind."""
    def run(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
        if check is not None:
            check(p)
        ins, outs = [], []
        for i in range(p[count]):
            a, b = infer(p, in_shapes[i * stride:(i + 1) * stride], out_shapes[i:i + 1])
            ins += a
            outs += b
        if tail is not None:
            ins += tail(p, in_shapes[p[count] * stride:], [])[0]
        return ins, outs
    return run


def _given_rates(p: Params) -> None:
    _check_rates(p, p.lrs, p.wds, f"lrs={p.lrs} and wds={p.wds}")


def _rate_shapes(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    return [merge(s, (p.num_weights,)) for s in in_shapes], out_shapes


def _rate_types(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    return [merge_dtype(t, np.dtype(np.float32)) for t in in_types], out_types


def _forward(stride: int, mixed: bool, preloaded: bool) -> Callable[..., list[Array]]:
    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
        if preloaded:
            lrs, wds = (a.tolist() for a in inputs[-2:])
            _check_rates(p, lrs, wds, f"lrs {inputs[-2].shape} and wds {inputs[-1].shape}")
        else:
            lrs, wds = p.lrs, p.wds
        common = {k: v for k, v in p.items() if k not in ("lrs", "wds", "num_weights")}
        return [step(rules.sgd, inputs[i * stride:(i + 1) * stride], mixed=mixed, lr=lr,
                     wd=wd, **common)
                for i, (lr, wd) in enumerate(zip(lrs, wds, strict=True))]
    return forward


def _register(name: str, momentum: bool, mixed: bool, doc: str) -> None:
    states = ("mom",) * momentum + ("weight32",) * mixed
    stride = 2 + len(states)
    for preloaded in (False, True):
        register(OpDef(
            "preloaded_" * preloaded + name, _forward(stride, mixed, preloaded),
            params=(*_RATES * (not preloaded), *_PARAMS, *(_MOMENTUM,) * momentum),
            inputs=per_weight_names(("weight", "grad", *states), ("lrs", "wds") * preloaded),
            aux=per_weight_names(states), outputs=weight_outputs(),
            infer_shape=per_weight(update_shapes(), stride, _rate_shapes if preloaded else None,
                                   check=None if preloaded else _given_rates),
            infer_type=per_weight(mp_types() if mixed else same_dtype, stride,
                                  _rate_types if preloaded else None,
                                  check=None if preloaded else _given_rates),
            bfloat16="refuse",
            doc=doc + " (lrs and wds: the last two inputs)" * preloaded + "."))


_register("multi_sgd_update", False, False,
          "sgd_update of each weight_i by grad_i with lrs[i] and wds[i]")
_register("multi_sgd_mom_update", True, False,
          "sgd_mom_update of each weight_i by grad_i; mom_i is updated in place")
_register("multi_mp_sgd_update", False, True,
          "mp_sgd_update of each float16 weight_i: its float32 master copy weight32_i is "
          "updated in place, the output is it in weight_i's dtype")
_register("multi_mp_sgd_mom_update", True, True,
          "mp_sgd_mom_update of each float16 weight_i; mom_i and weight32_i (float32) are "
          "updated in place")
