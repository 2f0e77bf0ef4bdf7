"""MXNet 1.9's optimizer update operators (src/operator/optimizer_op.cc,
contrib/adamw.cc), which scripts call imperatively to update in place:
``mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9, out=w)``.

The optimizer states (mom, mean, var, n, z, ..., and the float32 master copy
`weight32` of the ``mp_*`` variants) are mutable inputs, auxiliary states as
MXNet's FMutateInputs makes them: the kernel updates them in place. The weight
is an ordinary input: the new weight is the output, written over the weight only
through ``out=weight``. The arithmetic is `update_rules`, which `mx.optimizer`
runs as well. No gradients; no bfloat16 (MXNet's kernels have none).

``lazy_update`` is accepted and has no effect: minimx's arrays are dense.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from . import update_rules as rules
from .infer import merge_all, merge_dtype, same_dtype
from .params import Params
from .registry import InferFn, OpContext, OpDef, Param, register

Array = np.ndarray
_FLOAT32 = np.dtype("float32")

_LR = Param("lr", "float", doc="Learning rate.")
_WD = Param("wd", "float", 0.0, "Weight decay: the weight's L2 penalty.")
_RESCALE = Param("rescale_grad", "float", 1.0, "The gradient is multiplied by this first.")
_CLIP = Param("clip_gradient", "float", -1.0,
              "Clip the rescaled gradient to [-clip, clip]; negative: no clipping.")
_LAZY = Param("lazy_update", "bool", True, "Sparse lazy update (dense arrays: no effect).")
_MOMENTUM = Param("momentum", "float", 0.0, "The decay of the momentum.")
_BETA1 = Param("beta1", "float", 0.9, "The decay of the first moment.")
_BETA2 = Param("beta2", "float", 0.999, "The decay of the second moment.")
_EPSILON = Param("epsilon", "float", 1e-8, "Added to the denominator.")
_T = Param("t", "int", doc="The number of the update (from 1), for bias correction.")
_GAMMA1 = Param("gamma1", "float", 0.95, "The decay of the squared gradients' average.")
_CLIP_WEIGHTS = Param("clip_weights", "float", -1.0,
                      "Clip the weights to [-clip, clip]; negative: no clipping.")
_SGD = (_LR, _WD, _RESCALE, _CLIP)
_MOM = (_LR, _MOMENTUM, _WD, _RESCALE, _CLIP)


def _rule_kwargs(p: Params) -> dict:
    """The parameters a rule takes: all but lazy_update."""
    return {k: v for k, v in p.items() if k != "lazy_update"}


def _check_step(p: Params) -> None:
    if "t" in p and p.t < 1:
        raise OperatorError(f"{p.label}: t={p.t}, the number of the update, must be at "
                            "least 1 (bias correction divides by 1 - beta^t)")


def step(rule: Callable[..., None], inputs: Sequence[Array], *, mixed: bool,
         **kwargs: Any) -> Array:
    """One update of (weight, grad, *states) by `rule`; returns the new weight and
    updates the states in place. `mixed`: the last state is weight32, the float32
    master copy the rule updates (in place), and the new weight is it in the weight's
    dtype; otherwise the rule runs on a copy of the weight."""
    if not mixed:
        weight = inputs[0].copy()
        rule(weight, inputs[1], *inputs[2:], **kwargs)
        return weight
    weight, grad, *states, master = inputs
    rule(master, grad.astype(_FLOAT32), *states, **kwargs)
    return master.astype(weight.dtype)


def _update(rule: Callable[..., None], mixed: bool = False) -> Callable[..., Array]:
    """The forward of an operator whose inputs are (weight, grad, *states[, weight32])."""
    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
        _check_step(p)
        return step(rule, inputs, mixed=mixed, **_rule_kwargs(p))
    return forward


def update_shapes(*scalars: int) -> InferFn:
    """Every array has the weight's shape but the inputs at `scalars`, which hold one
    value (LAMB's norms, AdamW's rescale_grad)."""
    def infer(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
        s = merge_all([x for i, x in enumerate(in_shapes) if i not in scalars] + out_shapes)
        return ([(1,) if i in scalars else s for i in range(len(in_shapes))],
                [s] * len(out_shapes))
    return infer


def mp_types(low: tuple[int, ...] = (0, 1), float32_out: bool = False) -> InferFn:
    """The inputs at `low` (the weight and, but for LAMB's phase 2, the gradient) share
    a dtype (float16 as a rule), and so does the output unless `float32_out`; the other
    inputs (states, weight32, LAMB's direction and norms) are float32."""
    def infer(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
        t = merge_all([in_types[i] for i in low] + ([] if float32_out else out_types[:1]),
                      merge_dtype)
        for i, have in enumerate(in_types):
            if i not in low and have is not None and np.dtype(have) != _FLOAT32:
                raise DTypeError(f"{p.label}: input {i} (a state, weight32 or norm) must be "
                                 f"float32, got {np.dtype(have).name}")
        return ([t if i in low else _FLOAT32 for i in range(len(in_types))],
                [_FLOAT32 if float32_out else t])
    return infer


def _register(name: str, forward: Callable[..., Array], states: tuple[str, ...],
              params: tuple[Param, ...], doc: str, *, infer_type: InferFn = same_dtype
              ) -> None:
    register(OpDef(name, forward, params=params, inputs=("weight", "grad", *states),
                   outputs=("output",), aux=states,
                   infer_shape=update_shapes(), bfloat16="refuse", doc=doc,
                   infer_type=infer_type))


_register("sgd_update", _update(rules.sgd), (), (*_SGD, _LAZY),
          "SGD: ``w = (1 - lr*wd)*w - lr*clip(rescale_grad*grad)``.")
_register("sgd_mom_update", _update(rules.sgd), ("mom",), (*_MOM, _LAZY),
          "SGD with momentum: ``mom = momentum*mom - lr*wd*w - lr*clip(rescale_grad*grad);"
          " w += mom`` (mom is updated in place).")
_register("nag_mom_update", _update(rules.nag_mom), ("mom",), _MOM,
          "SGD with Nesterov momentum (mom is updated in place).")
_register("adam_update", _update(rules.adam), ("mean", "var"),
          (_LR, _BETA1, _BETA2, _EPSILON, _WD, _RESCALE, _CLIP, _LAZY),
          "Adam without bias correction: g = clip(rescale_grad*grad + wd*w); "
          "``w -= lr*mean / (sqrt(var) + epsilon)`` (mean and var updated in place).")
_register("rmsprop_update", _update(rules.rmsprop), ("n",),
          (_LR, _GAMMA1, _EPSILON, _WD, _RESCALE, _CLIP, _CLIP_WEIGHTS),
          "RMSProp: ``n = (1-gamma1)*g^2 + gamma1*n; w -= lr*g / sqrt(n + epsilon)``.")
_register("rmspropalex_update", _update(rules.rmspropalex), ("n", "g", "delta"),
          (_LR, _GAMMA1, Param("gamma2", "float", 0.9, "The decay of the step."), _EPSILON,
           _WD, _RESCALE, _CLIP, _CLIP_WEIGHTS),
          "Centered RMSProp (Graves); n, g and delta are updated in place.")
_register("ftrl_update", _update(rules.ftrl), ("z", "n"),
          (_LR, Param("lamda1", "float", 0.01, "The L1 penalty."),
           Param("beta", "float", 1.0, "Added to sqrt(n) in the per-coordinate rate."),
           _WD, _RESCALE, _CLIP),
          "FTRL-Proximal; z and n are updated in place.")
_register("ftml_update", _update(rules.ftml), ("d", "v", "z"),
          (_LR, Param("beta1", "float", 0.6, "The decay of the first moment."), _BETA2,
           Param("epsilon", "float", 1e-8, "Added to the denominator."), _T, _WD, _RESCALE,
           Param("clip_grad", "float", -1.0,
                 "Clip the gradient to [-clip, clip]; negative: no clipping.")),
          "FTML (follow the moving leader); d, v and z are updated in place.")
_register("signsgd_update", _update(rules.signsgd), (), _SGD,
          "signSGD: ``w = (1 - lr*wd)*w - lr*sign(grad)`` (rescale_grad and clip_gradient "
          "are accepted and unused, as in MXNet).")
_register("signum_update", _update(rules.signum), ("mom",),
          (*_MOM, Param("wd_lh", "float", 0.0, "Decoupled weight decay.")),
          "Signum: ``mom = momentum*mom - (1-momentum)*(wd*w + g); "
          "w = (1 - lr*wd_lh)*w + lr*sign(mom)``.")

_LAMB1 = (_BETA1, _BETA2, Param("epsilon", "float", 1e-6, "Added to the denominator."), _T,
          Param("bias_correction", "bool", True, "Divide the moments by 1 - beta^t."),
          Param("wd", "float", doc="Weight decay."), _RESCALE, _CLIP)
_LAMB2 = (_LR, Param("lower_bound", "float", -1.0, "Lower bound of r1; negative: none."),
          Param("upper_bound", "float", -1.0, "Upper bound of r1; negative: none."))


def _scalar(values: Array) -> float:
    """The value of a one-element array (LAMB's norms, AdamW's rescale_grad)."""
    return float(values.reshape(-1)[0])


def _lamb_phase1(mixed: bool) -> Callable[..., Array]:
    """Phase 1 returns the direction; its mp_ variant reads weight32 and a float32 gradient."""
    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
        _check_step(p)
        weight, grad, mean, var = inputs[:4]
        if mixed:
            weight, grad = inputs[4], grad.astype(_FLOAT32)
        return rules.lamb_phase1(weight, grad, mean, var, **_rule_kwargs(p))
    return forward


def _lamb_phase2_rule(w: Array, direction: Array, r1: Array, r2: Array, **kwargs: Any) -> None:
    rules.lamb_phase2(w, direction, _scalar(r1), _scalar(r2), **kwargs)


register(OpDef(
    "lamb_update_phase1", _lamb_phase1(mixed=False), params=_LAMB1,
    inputs=("weight", "grad", "mean", "var"),
    aux=("mean", "var"), infer_shape=update_shapes(), bfloat16="refuse",
    doc="LAMB's first phase: updates mean and var in place and returns the direction "
        "``mean_hat / (sqrt(var_hat) + epsilon) + wd*w``."))
register(OpDef(
    "lamb_update_phase2", _update(_lamb_phase2_rule), params=_LAMB2,
    inputs=("weight", "g", "r1", "r2"),
    infer_shape=update_shapes(2, 3), bfloat16="refuse",
    doc="LAMB's second phase: ``w - lr * r1/r2 * g`` with r1 = |w| (bounded) and r2 = |g| "
        "given as one-element arrays; lr alone when either is zero."))


_ADAMW = (_LR, _BETA1, _BETA2, _EPSILON, _WD,
          Param("eta", "float", doc="Scales the whole step (the schedule multiplier)."), _CLIP)


def _adamw(mixed: bool) -> Callable[..., Array]:
    """The inputs end with the one-element rescale_grad, after weight32 if `mixed`."""
    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
        *update, rescale = inputs
        return step(rules.adamw, update, mixed=mixed, rescale_grad=_scalar(rescale), **p)
    return forward


register(OpDef(
    "_adamw_update", _adamw(mixed=False), inputs=("weight", "grad", "mean", "var", "rescale_grad"),
    aux=("mean", "var"), infer_shape=update_shapes(4), bfloat16="refuse",
    params=_ADAMW,
    aliases=("_contrib_adamw_update",),
    doc="AdamW: ``w -= eta * (lr*mean / (sqrt(var) + epsilon) + wd*w)`` with the gradient "
        "times the one-element array rescale_grad; a non-finite or zero rescale_grad "
        "leaves weight and states as they are. mean and var are updated in place."))

_register("mp_sgd_update", _update(rules.sgd, mixed=True), ("weight32",), (*_SGD, _LAZY),
          "sgd_update on the float32 master copy weight32 (updated in place) of a float16 "
          "weight; the output is the new weight32 in the weight's dtype.",
          infer_type=mp_types())
_register("mp_sgd_mom_update", _update(rules.sgd, mixed=True), ("mom", "weight32"),
          (*_MOM, _LAZY),
          "sgd_mom_update on the float32 master copy weight32; mom (float32) and weight32 "
          "are updated in place.", infer_type=mp_types())
_register("mp_nag_mom_update", _update(rules.nag_mom, mixed=True), ("mom", "weight32"), _MOM,
          "nag_mom_update on the float32 master copy weight32; mom (float32) and weight32 "
          "are updated in place.", infer_type=mp_types())

register(OpDef(
    "mp_lamb_update_phase1", _lamb_phase1(mixed=True), params=_LAMB1,
    inputs=("weight", "grad", "mean", "var", "weight32"), aux=("mean", "var"),
    infer_shape=update_shapes(), infer_type=mp_types(float32_out=True), bfloat16="refuse",
    doc="lamb_update_phase1 on the float32 master copy weight32 of a float16 weight: "
        "mean and var (float32) are updated in place; the direction is float32."))


def _mp_lamb_phase2(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    """MXNet 1.9.1 declares weight32 mutable here but leaves it as it is: the output is
    the stepped master copy in the weight's dtype."""
    weight, direction, r1, r2, master = inputs
    return step(_lamb_phase2_rule, [master, direction, r1, r2], mixed=False,
                **p).astype(weight.dtype)


register(OpDef(
    "mp_lamb_update_phase2", _mp_lamb_phase2, params=_LAMB2,
    inputs=("weight", "g", "r1", "r2", "weight32"), aux=("weight32",),
    infer_shape=update_shapes(2, 3), infer_type=mp_types(low=(0,)), bfloat16="refuse",
    doc="lamb_update_phase2 on the float32 master copy weight32, which (as in MXNet "
        "1.9.1) is not updated: the output is the stepped weight32 in the weight's dtype."))
register(OpDef(
    "_mp_adamw_update", _adamw(mixed=True),
    inputs=("weight", "grad", "mean", "var", "weight32", "rescale_grad"),
    aux=("mean", "var", "weight32"), infer_shape=update_shapes(5), infer_type=mp_types(),
    bfloat16="refuse", params=_ADAMW,
    aliases=("_contrib_mp_adamw_update",),
    doc="_adamw_update on the float32 master copy weight32; mean, var and weight32 "
        "(float32) are updated in place, the output is weight32 in the weight's dtype."))


def _group_adagrad_shapes(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    """history holds one value per row of the weight: (rows,) or (rows, 1)."""
    *update, history = in_shapes
    ins, outs = update_shapes()(p, update, out_shapes)
    rows = outs[0][0] if outs[0] else None
    if history is None:
        history = None if rows is None else (rows, 1)
    elif rows is not None and (history[0] != rows or math.prod(history) != rows):
        raise ShapeError(f"{p.label}: history {history} must hold one value per row of the "
                         f"weight {outs[0]}: ({rows},) or ({rows}, 1)")
    return [*ins, history], outs


register(OpDef(
    "_contrib_group_adagrad_update", _update(rules.group_adagrad),
    inputs=("weight", "grad", "history"), aux=("history",),
    params=(_LR, _RESCALE, _CLIP, Param("epsilon", "float", 1e-5,
                                        "Epsilon for numerical stability")),
    infer_shape=_group_adagrad_shapes, bfloat16="refuse",
    doc="Group AdaGrad: ``history += mean(square(g), axis=1); w -= lr * g / "
        "(sqrt(history) + epsilon)`` with g = clip(rescale_grad*grad), one history value "
        "per row (updated in place). MXNet 1.9.1 runs it with a row_sparse gradient "
        "only; this dense kernel gives the same values."))
