"""MXNet 1.9's multi-tensor LARS, AdamW and LAMB kernels (src/operator/contrib/
multi_lars.cc, adamw.cc, multi_lamb.cc), which its optimizers call once for many weights:

    mx.nd._multi_adamw_update(w0, g0, m0, v0, w1, g1, m1, v1, rescale_grad,
                              num_weights=2, lrs=(0.1, 0.2), wds=(0, 0), etas=(1, 1),
                              out=[w0, w1])

Inputs interleave per weight as in `multi_sgd`: weight_i, grad_i, mean_i, var_i
[, weight32_i]; the outputs are the new weights; mean, var and weight32 are updated in
place. Each weight goes through `optimizer_ops.step` on `update_rules`' AdamW and LAMB.
`multi_lars` turns learning rates into LARS's layer-wise ones from the sums of squares
that `multi_sum_sq` computes.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..base import OperatorError
from . import update_rules as rules
from .infer import merge, merge_all, merge_dtype, same_dtype
from .multi_sgd import per_weight, per_weight_names, weight_outputs
from .multi_tensor import sum_sq
from .optimizer_ops import mp_types, step, update_shapes
from .params import Params
from .registry import OpContext, OpDef, Param, register

Array = np.ndarray
_FLOAT32 = np.dtype(np.float32)

_BETA1 = Param("beta1", "float", 0.9, "The decay rate for the 1st moment estimates.")
_BETA2 = Param("beta2", "float", 0.999, "The decay rate for the 2nd moment estimates.")
_CLIP = Param("clip_gradient", "float", -1.0,
              "Clip the rescaled gradients to [-clip, clip]; negative: no clipping.")


def _lengths_match(count: str, *names: str) -> Callable[[Params], None]:
    """Checks that each per-weight tuple parameter has `count` values."""
    def check(p: Params) -> None:
        wrong = {n: p[n] for n in names if len(p[n]) != p[count]}
        if p[count] < 1 or wrong:
            raise OperatorError(f"{p.label}: {count}={p[count]} needs that many values in "
                                f"each of {', '.join(names)}, got {wrong or p[count]}")
    return check


def _groups(p: Params, inputs: Sequence[Array], count: str) -> list[Sequence[Array]]:
    stride = len(inputs) // p[count]
    return [inputs[i * stride:(i + 1) * stride] for i in range(p[count])]


# -- multi_lars ------------------------------------------------------------------------

def _multi_lars(p: Params, ctx: OpContext, inputs: list[Array]) -> Array:
    """MXNet's kernel in float32: lr * eta*|w| / (|g| + wd*|w| + eps), where the gradient's
    norm is rescaled; the learning rate itself where either norm is zero."""
    lrs, w_sq, g_sq, wds = (a.astype(_FLOAT32) for a in inputs)
    w_norm = np.sqrt(w_sq)
    g_norm = np.sqrt(g_sq) * np.float32(p.rescale_grad)
    with np.errstate(divide="ignore", invalid="ignore"):
        lars = np.float32(p.eta) * w_norm / (g_norm + wds * w_norm + np.float32(p.eps))
    return (np.where((w_norm > 0) & (g_norm > 0), lars, np.float32(1)) * lrs).astype(
        inputs[0].dtype)


def _same_vector(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    s = merge_all(in_shapes + out_shapes)
    if s is not None and len(s) != 1:
        raise OperatorError(f"{p.label}: expects 1-D arrays of one value per weight, got {s}")
    return [s] * len(in_shapes), [s]


register(OpDef(
    "multi_lars", _multi_lars, inputs=("lrs", "weights_sum_sq", "grads_sum_sq", "wds"),
    params=(Param("eta", "float", doc="LARS eta"), Param("eps", "float", doc="LARS eps"),
            Param("rescale_grad", "float", 1.0, "Gradient rescaling factor")),
    infer_shape=_same_vector, bfloat16="refuse",
    doc="LARS's learning rate of each weight from the sums of squares of the weights "
        "and gradients: ``lrs * eta*|w| / (|g|*rescale_grad + wds*|w| + eps)``, lrs where "
        "either norm is zero."))


# -- _multi_adamw_update, _multi_mp_adamw_update ---------------------------------------

def _adamw_forward(mixed: bool) -> Callable[..., list[Array]]:
    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
        *update, rescale = inputs
        common = {k: p[k] for k in ("beta1", "beta2", "epsilon", "clip_gradient")}
        return [step(rules.adamw, group, mixed=mixed, rescale_grad=float(rescale.reshape(-1)[0]),
                     lr=lr, wd=wd, eta=eta, **common)
                for group, lr, wd, eta in zip(_groups(p, update, "num_weights"), p.lrs, p.wds,
                                              p.etas, strict=True)]
    return forward


def _scalar_shape(p: Params, in_shapes: list, out_shapes: list) -> tuple[list, list]:
    return [merge(in_shapes[0], (1,))], []


def _float32_type(p: Params, in_types: list, out_types: list) -> tuple[list, list]:
    return [merge_dtype(in_types[0], _FLOAT32)], []


def _register_adamw(name: str, mixed: bool, doc: str) -> None:
    states = ("mean", "var") + ("weight32",) * mixed
    check = _lengths_match("num_weights", "lrs", "wds", "etas")
    register(OpDef(
        name, _adamw_forward(mixed),
        params=(Param("lrs", "floats", doc="Learning rates"), _BETA1, _BETA2,
                Param("epsilon", "float", 1e-8, "A small constant for numerical stability."),
                Param("wds", "floats", doc="Weight decays."),
                Param("etas", "floats", doc="Learning rates schedule multiplier"), _CLIP,
                Param("num_weights", "int", 1, "Number of updated weights.")),
        inputs=per_weight_names(("weight", "grad", *states), ("rescale_grad",)),
        aux=per_weight_names(states), outputs=weight_outputs(),
        infer_shape=per_weight(update_shapes(), 4 + mixed, _scalar_shape, check=check),
        infer_type=per_weight(mp_types(), 4 + mixed, _float32_type, check=check),
        bfloat16="refuse", doc=doc))


_register_adamw("_multi_adamw_update", False,
                "_adamw_update of each weight_i with lrs[i], wds[i] and etas[i]; the last "
                "input is the one-element rescale_grad (non-finite or zero: no update).")
_register_adamw("_multi_mp_adamw_update", True,
                "_mp_adamw_update of each float16 weight_i: mean_i, var_i and the float32 "
                "master copy weight32_i are updated in place.")


# -- _multi_lamb_update, _multi_mp_lamb_update -----------------------------------------

def _lamb_forward(mixed: bool) -> Callable[..., list[Array]]:
    """Both phases of LAMB per weight. The weight's norm r1 is the given weight's (float16
    for the mp_ variant, as in MXNet), taken before the update."""
    def forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
        phase1 = {k: p[k] for k in ("beta1", "beta2", "epsilon", "bias_correction",
                                    "rescale_grad", "clip_gradient")}
        bounds = {"lower_bound": p.lower_bound, "upper_bound": p.upper_bound}
        outputs = []
        for i, (weight, grad, mean, var, *master) in enumerate(
                _groups(p, inputs, "num_tensors")):
            r1 = _weight_norm(weight)
            w = master[0] if mixed else weight.copy()
            direction = rules.lamb_phase1(w, grad.astype(w.dtype), mean, var,
                                          t=p.step_count[i], wd=p.wds[i], **phase1)
            rules.lamb_phase2(w, direction, r1, rules.norm(direction),
                              lr=p.learning_rates[i], **bounds)
            outputs.append(w.astype(weight.dtype))
        return outputs
    return forward


def _weight_norm(weight: Array) -> float:
    """r1 as MXNet takes it, through multi_sum_sq (`multi_tensor.sum_sq`)."""
    return float(np.sqrt(sum_sq(weight)))


def _check_lamb(p: Params) -> None:
    _lengths_match("num_tensors", "learning_rates", "wds", "step_count")(p)
    if min(p.step_count) < 1:
        raise OperatorError(f"{p.label}: step_count={p.step_count} must be at least 1 "
                            "(bias correction divides by 1 - beta^t)")


def _register_lamb(name: str, mixed: bool, doc: str) -> None:
    states = ("mean", "var") + ("weight32",) * mixed
    register(OpDef(
        name, _lamb_forward(mixed),
        params=(Param("learning_rates", "floats", doc="List of learning rates"), _BETA1,
                _BETA2, Param("epsilon", "float", 1e-6, "Small value to avoid division by 0."),
                Param("wds", "floats", doc="List of Weight decays."),
                Param("rescale_grad", "float", 1.0, "Gradient rescaling factor"),
                Param("lower_bound", "float", -1.0, "Lower limit of the weight's norm; "
                      "negative: none."),
                Param("upper_bound", "float", -1.0, "Upper limit of the weight's norm; "
                      "negative: none."), _CLIP,
                Param("bias_correction", "bool", True, "Whether to use bias correction."),
                Param("step_count", "shape", doc="Step count for each tensor"),
                Param("num_tensors", "int", 1, "Number of tensors")),
        inputs=per_weight_names(("weight", "grad", *states), count="num_tensors"),
        aux=per_weight_names(states, count="num_tensors"), outputs=weight_outputs("num_tensors"),
        infer_shape=per_weight(update_shapes(), 4 + mixed, count="num_tensors",
                               check=_check_lamb),
        infer_type=per_weight(mp_types() if mixed else same_dtype, 4 + mixed,
                              count="num_tensors", check=_check_lamb),
        bfloat16="refuse", doc=doc))


_register_lamb("_multi_lamb_update", False,
               "lamb_update_phase1 then phase2 of each weight_i, with learning_rates[i], "
               "wds[i] and step_count[i]; mean_i and var_i are updated in place.")
_register_lamb("_multi_mp_lamb_update", True,
               "The LAMB update of each float16 weight_i on its float32 master copy "
               "weight32_i; mean_i, var_i and weight32_i are updated in place.")
