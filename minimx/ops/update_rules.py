"""The arithmetic of MXNet 1.9's optimizer kernels (src/operator/optimizer_op-inl.h,
contrib/adamw-inl.h), once, on numpy buffers: the `*_update` operators
(`optimizer_ops.py`) and the `mx.optimizer` rules both call these.

Each rule updates the weight `w` and its states in place from the gradient `g`
and takes MXNet's parameter names as keywords. A `clip_gradient` (FTML's
`clip_grad`) or `clip_weights` that is None or negative means no clipping, as in
MXNet's kernels; note that 0 clips to zero there.
"""
from __future__ import annotations

import math

import numpy as np

Array = np.ndarray


def bounded(values: Array, bound: float | None) -> Array:
    """`values` limited to [-bound, bound]; unchanged for a None or negative bound."""
    return values if bound is None or bound < 0 else np.clip(values, -bound, bound)


def decay(rate: float, ref: Array) -> tuple[np.generic, np.generic]:
    """A decay rate and one minus it as MXNet's kernels compute them: its float32
    parameter in `ref`'s dtype, and ``1 - rate`` in that dtype (the double ``1.0 - rate``
    rounded to float32 can be an ulp away, which Adam's moments then compound)."""
    kept = ref.dtype.type(np.float32(rate))
    return kept, ref.dtype.type(1) - kept


def sgd(w: Array, g: Array, mom: Array | None = None, *, lr: float, momentum: float = 0.0,
        wd: float = 0.0, rescale_grad: float = 1.0, clip_gradient: float | None = None
        ) -> None:
    """``sgd_update`` without a momentum array, ``sgd_mom_update`` with one."""
    grad = bounded(rescale_grad * g, clip_gradient)
    if mom is None:
        w[...] = (1.0 - lr * wd) * w - lr * grad
        return
    mom[...] = momentum * mom - lr * wd * w - lr * grad
    w += mom


def nag_mom(w: Array, g: Array, mom: Array, *, lr: float, momentum: float = 0.0,
            wd: float = 0.0, rescale_grad: float = 1.0, clip_gradient: float | None = None
            ) -> None:
    """``nag_mom_update``. MXNet's kernel writes the new weight before it updates the
    momentum, whose decay term then reads the new weight when the output is the weight
    itself (``out=weight``, as every caller does); so here, always."""
    grad = bounded(rescale_grad * g, clip_gradient)
    mom *= momentum
    w[...] = w - mom + (momentum + 1) * (mom - lr * (grad + wd * w))
    mom -= lr * (grad + wd * w)


def adam(w: Array, g: Array, mean: Array, var: Array, *, lr: float, beta1: float = 0.9,
         beta2: float = 0.999, epsilon: float = 1e-8, wd: float = 0.0,
         rescale_grad: float = 1.0, clip_gradient: float | None = None) -> None:
    """``adam_update``: no bias correction (the optimizer folds it into `lr`)."""
    grad = bounded(rescale_grad * g + wd * w, clip_gradient)
    (b1, rest1), (b2, rest2) = decay(beta1, mean), decay(beta2, var)
    mean[...] = b1 * mean + rest1 * grad
    var[...] = b2 * var + rest2 * grad * grad   # MXNet's order: ((1 - b2) * g) * g
    w -= lr * mean / (np.sqrt(var) + epsilon)


def rmsprop(w: Array, g: Array, n: Array, *, lr: float, gamma1: float = 0.95,
            epsilon: float = 1e-8, wd: float = 0.0, rescale_grad: float = 1.0,
            clip_gradient: float | None = None, clip_weights: float | None = None) -> None:
    """``rmsprop_update`` (Tieleman and Hinton)."""
    grad = bounded(rescale_grad * g + wd * w, clip_gradient)
    g1, rest = decay(gamma1, n)
    n[...] = rest * np.square(grad) + g1 * n
    w[...] = bounded(w - lr * (grad / np.sqrt(n + epsilon)), clip_weights)


def rmspropalex(w: Array, g: Array, n: Array, mean: Array, delta: Array, *, lr: float,
                gamma1: float = 0.95, gamma2: float = 0.9, epsilon: float = 1e-8,
                wd: float = 0.0, rescale_grad: float = 1.0,
                clip_gradient: float | None = None, clip_weights: float | None = None
                ) -> None:
    """``rmspropalex_update`` (Graves' centered RMSProp; MXNet calls `mean` g)."""
    grad = bounded(rescale_grad * g + wd * w, clip_gradient)
    g1, rest = decay(gamma1, n)
    n[...] = rest * np.square(grad) + g1 * n
    mean[...] = rest * grad + g1 * mean
    delta[...] = gamma2 * delta - lr * (grad / np.sqrt(n - np.square(mean) + epsilon))
    w[...] = bounded(w + delta, clip_weights)


def ftrl(w: Array, g: Array, z: Array, n: Array, *, lr: float, lamda1: float = 0.01,
         beta: float = 1.0, wd: float = 0.0, rescale_grad: float = 1.0,
         clip_gradient: float | None = None) -> None:
    """``ftrl_update`` (FTRL-Proximal): zero where ``|z| <= lamda1``."""
    grad = bounded(rescale_grad * g, clip_gradient)
    z += grad - (np.sqrt(n + np.square(grad)) - np.sqrt(n)) * w / lr
    n += np.square(grad)
    w[...] = (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > lamda1)


def ftml(w: Array, g: Array, d: Array, v: Array, z: Array, *, lr: float, t: int,
         beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8, wd: float = 0.0,
         rescale_grad: float = 1.0, clip_grad: float | None = None) -> None:
    """``ftml_update`` at the parameter's `t`-th update (from 1)."""
    grad = bounded(rescale_grad * g + wd * w, clip_grad)
    v[...] = beta2 * v + (1.0 - beta2) * np.square(grad)
    # A zero lr (a schedule's final_lr) makes d_t infinite and the weight NaN, as in
    # MXNet's kernel, rather than a Python ZeroDivisionError.
    scale = (1.0 - beta1 ** t) / lr if lr else math.copysign(math.inf, lr)
    d_t = scale * (np.sqrt(v / (1.0 - beta2 ** t)) + epsilon)
    z[...] = beta1 * z + (1.0 - beta1) * grad - (d_t - beta1 * d) * w
    d[...] = d_t
    w[...] = -z / d_t


def signsgd(w: Array, g: Array, *, lr: float, wd: float = 0.0, rescale_grad: float = 1.0,
            clip_gradient: float | None = None) -> None:
    """``signsgd_update``: the raw gradient's sign; MXNet's kernel takes rescale_grad and
    clip_gradient and uses neither, and so does this."""
    w[...] = (1.0 - lr * wd) * w - lr * np.sign(g)


def signum(w: Array, g: Array, mom: Array, *, lr: float, momentum: float = 0.0,
           wd: float = 0.0, rescale_grad: float = 1.0, clip_gradient: float | None = None,
           wd_lh: float = 0.0) -> None:
    """``signum_update``: steps of lr along the momentum's sign; `wd_lh` decays apart."""
    grad = bounded(rescale_grad * g, clip_gradient)
    mom[...] = momentum * mom - (1.0 - momentum) * (wd * w + grad)
    w[...] = (1.0 - lr * wd_lh) * w + lr * np.sign(mom)


def lamb_phase1(w: Array, g: Array, mean: Array, var: Array, *, t: int, wd: float,
                beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-6,
                bias_correction: bool = True, rescale_grad: float = 1.0,
                clip_gradient: float | None = None) -> Array:
    """``lamb_update_phase1``: updates the moments and returns LAMB's direction."""
    grad = bounded(rescale_grad * g, clip_gradient)
    (b1, rest1), (b2, rest2) = decay(beta1, mean), decay(beta2, var)
    mean[...] = b1 * mean + rest1 * grad
    var[...] = b2 * var + rest2 * grad * grad   # MXNet's order, as Adam's
    mean_hat, var_hat = mean, var
    if bias_correction:   # MXNet's kernel: the mean's in double, the variance's in its type
        p1, p2 = (var.dtype.type(np.float64(b) ** t) for b in (b1, b2))
        mean_hat = (mean / (1.0 - np.float64(p1))).astype(mean.dtype)
        var_hat = var / (var.dtype.type(1) - p2)
    return mean_hat / (np.sqrt(var_hat) + epsilon) + wd * w


def lamb_phase2(w: Array, direction: Array, r1: float, r2: float, *, lr: float,
                lower_bound: float | None = None, upper_bound: float | None = None) -> None:
    """``lamb_update_phase2``: a step along `direction` scaled by the trust ratio of
    the norms of the weight (`r1`, bounded when a bound is not negative) and of the
    direction (`r2`); lr itself when either is zero."""
    if lower_bound is not None and lower_bound >= 0:
        r1 = max(r1, lower_bound)
    if upper_bound is not None and upper_bound >= 0:
        r1 = min(r1, upper_bound)
    w -= lr * (r1 / r2 if r1 and r2 else 1.0) * direction


def adamw(w: Array, g: Array, mean: Array, var: Array, *, rescale_grad: float, lr: float,
          eta: float, beta1: float = 0.9, beta2: float = 0.999, epsilon: float = 1e-8,
          wd: float = 0.0, clip_gradient: float | None = None) -> None:
    """``_adamw_update`` (Loshchilov and Hutter): Adam with the decay outside the moments,
    both scaled by `eta`. A non-finite or zero `rescale_grad` (AMP's overflow signal)
    skips the update."""
    if not math.isfinite(rescale_grad) or rescale_grad == 0:
        return
    grad = bounded(rescale_grad * g, clip_gradient)
    (b1, rest1), (b2, rest2) = decay(beta1, mean), decay(beta2, var)
    mean[...] = b1 * mean + rest1 * grad
    var[...] = b2 * var + rest2 * np.square(grad)   # adamw's kernel squares first
    w -= eta * (lr * mean / (np.sqrt(var) + epsilon) + wd * w)


def norm(values: Array) -> float:
    """The L2 norm of a whole array, summed in float64 (LARS's and LAMB's r1, r2)."""
    return float(np.sqrt(np.square(values, dtype=np.float64).sum()))


def group_adagrad(w: Array, g: Array, history: Array, *, lr: float, epsilon: float = 1e-5,
                  rescale_grad: float = 1.0, clip_gradient: float | None = None) -> None:
    """``_contrib_group_adagrad_update``: AdaGrad with one history value per row of `w`
    (the mean of the row's squared gradients accumulates there). The step divides by
    ``sqrt(history) + epsilon``, as MXNet's kernel does (its docstring says
    ``sqrt(history + epsilon)``)."""
    grad = bounded(rescale_grad * g, clip_gradient)
    rows = grad.reshape(len(grad), -1)
    history += np.square(rows).mean(axis=1).reshape(history.shape)
    per_row = np.sqrt(history).reshape((-1,) + (1,) * (w.ndim - 1))
    w -= lr * grad / (per_row + epsilon)
