"""Rules with per-element step sizes: `Adam`, `RMSProp` (plain and centered),
`AdaGrad`, `AdaDelta`, `Adamax` and `Nadam`, and one with a step size per row,
`GroupAdaGrad`, computed as MXNet 1.9's kernels and
Python rules compute them. For Adam, RMSProp, Adamax and Nadam the weight decay
joins the gradient before clipping: g = clip(rescale*grad + wd*w); AdaGrad and
AdaDelta clip g = clip(rescale*grad) and decay the weight apart. AdaGrad, AdaDelta,
Adamax and Nadam clip as MXNet's Python rules do, for any `clip_gradient` not None
(0 and negative ones too: see `clipped`); Adam's and RMSProp's kernels ignore those.

- Adam: ``mean = b1*mean + (1-b1)*g; var = b2*var + (1-b2)*g^2;
  w -= lr_t * mean / (sqrt(var) + eps)`` with
  ``lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t)`` at the parameter's t-th update.
- RMSProp: ``n = (1-g1)*g^2 + g1*n; w -= lr * g / sqrt(n + eps)``; centered
  (Graves'): also ``m = (1-g1)*g + g1*m``,
  ``delta = g2*delta - lr * g / sqrt(n - m^2 + eps); w += delta``. Weights are
  then clipped to [-clip_weights, clip_weights] if given.
- AdaGrad: ``h += g^2; w -= lr * (g / sqrt(h + eps) + wd*w)``.
- GroupAdaGrad (2-D weights, no weight decay): ``h += mean(g^2)`` over each row,
  one ``h`` a row; ``w -= lr * g / sqrt(h + eps)`` (MXNet's Python rule for dense
  gradients; its `_contrib_group_adagrad_update` kernel divides by
  ``sqrt(h) + eps``).
- AdaDelta (no learning rate): ``a = rho*a + (1-rho)*g^2;
  d = sqrt(b + eps) / sqrt(a + eps) * g; b = rho*b + (1-rho)*d^2; w -= d + wd*w``.
- Adamax: ``m = b1*m + (1-b1)*g; u = max(b2*u, |g|); w -= lr / (1 - b1^t) * m / u``.
- Nadam: Adam with Nesterov momentum and MXNet's momentum schedule
  ``mu_t = b1 * (1 - 0.5 * 0.96^(t*schedule_decay))``, whose running product
  is kept per optimizer (over all parameters' updates), as MXNet keeps it.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import OperatorError, ShapeError
from ..ndarray import NDArray, zeros
from ..ops import update_rules as rules
from .optimizer import Optimizer, State, clipped, push_update, register


class _PerElement(Optimizer):
    """A rule whose state is `states` arrays of the weight's shape and dtype,
    zero at first."""

    states = 2

    def create_state(self, index: int, weight: NDArray) -> State:
        return tuple(zeros(weight.shape, dtype=weight.dtype) for _ in range(self.states))


class _Moments(_PerElement):
    """A per-element rule with Adam's decay rates of the moments, `beta1` and `beta2`,
    and its `epsilon` in the denominator."""

    def __init__(self, beta1: float, beta2: float, epsilon: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon


@register
class Adam(_Moments):
    """Adam (Kingma and Ba), with MXNet's defaults."""

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(beta1, beta2, epsilon, learning_rate=learning_rate, **kwargs)
        self.lazy_update = lazy_update   # dense arrays only: nothing is lazy here

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, t = self._begin_update(index)
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        kwargs: dict[str, Any] = dict(
            lr=lr, beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon, wd=wd,
            rescale_grad=self.rescale_grad, clip_gradient=self._clip())

        def kernel(w: np.ndarray, g: np.ndarray, mean: np.ndarray, var: np.ndarray) -> None:
            rules.adam(w, g, mean, var, **kwargs)
        push_update(kernel, weight, grad, state, "adam_update")


@register
class RMSProp(_PerElement):
    """RMSProp (Tieleman and Hinton), or with `centered` Graves' variant."""

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False,
                 clip_weights: float | None = None, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.epsilon = epsilon
        self.centered = centered
        self.clip_weights = clip_weights
        self.states = 3 if centered else 1

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, _ = self._begin_update(index)
        # MXNet's Python rule passes clip_weights only when set and non-zero.
        kwargs: dict[str, Any] = dict(lr=lr, gamma1=self.gamma1, epsilon=self.epsilon, wd=wd,
                      rescale_grad=self.rescale_grad, clip_gradient=self._clip(),
                      clip_weights=self.clip_weights or None)

        def plain(w: np.ndarray, g: np.ndarray, n: np.ndarray) -> None:
            rules.rmsprop(w, g, n, **kwargs)

        def centered(w: np.ndarray, g: np.ndarray, n: np.ndarray, m: np.ndarray,
                     delta: np.ndarray) -> None:
            rules.rmspropalex(w, g, n, m, delta, gamma2=self.gamma2, **kwargs)
        kernel, name = (centered, "rmspropalex_update") if self.centered else \
            (plain, "rmsprop_update")
        push_update(kernel, weight, grad, state, name)


@register
class AdaGrad(_PerElement):
    """AdaGrad (Duchi et al.); `eps` keeps the division finite."""

    states = 1

    def __init__(self, eps: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, _ = self._begin_update(index)
        rescale, clip, eps = self.rescale_grad, self.clip_gradient, self.float_stable_eps

        def kernel(w: np.ndarray, g: np.ndarray, history: np.ndarray) -> None:
            step = clipped(rescale * g, clip)
            history += np.square(step)
            w += (step / np.sqrt(history + eps) + w * wd) * -lr
        push_update(kernel, weight, grad, state, "adagrad_update")


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one step size for each row of a 2-D weight (MXNet's
    ``mx.optimizer.contrib.GroupAdaGrad``, as for embeddings); `eps` keeps the
    division finite. It takes no weight decay."""

    def __init__(self, eps: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index: int, weight: NDArray) -> State:
        if weight.ndim != 2:
            raise ShapeError(f"GroupAdaGrad: parameter {index} has shape {weight.shape}; "
                             "it takes 2-D weights (a step size per row)")
        return (zeros((weight.shape[0], 1), dtype=weight.dtype),)

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, _ = self._begin_update(index)
        if wd:
            raise OperatorError(f"GroupAdaGrad: weight decay {wd} for parameter {index}; "
                                "it takes none (wd=0)")
        rescale, clip, eps = self.rescale_grad, self.clip_gradient, self.float_stable_eps

        def kernel(w: np.ndarray, g: np.ndarray, history: np.ndarray) -> None:
            step = clipped(rescale * g, clip)
            history += np.square(step).mean(axis=1, keepdims=True)
            w -= lr * step / np.sqrt(history + eps)
        push_update(kernel, weight, grad, state, "group_adagrad_update")


@register
class AdaDelta(_PerElement):
    """AdaDelta (Zeiler): no learning rate; `rho` decays both running averages."""

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        wd = self._get_wd(index)
        self._update_count(index)
        rescale, clip, rho, eps = self.rescale_grad, self.clip_gradient, self.rho, self.epsilon

        def kernel(w: np.ndarray, g: np.ndarray, acc_g: np.ndarray,
                   acc_delta: np.ndarray) -> None:
            step = clipped(rescale * g, clip)   # MXNet scales the gradient in place; not here
            acc_g[...] = rho * acc_g + (1.0 - rho) * step * step
            delta = np.sqrt(acc_delta + eps) / np.sqrt(acc_g + eps) * step
            acc_delta[...] = rho * acc_delta + (1.0 - rho) * delta * delta
            w -= delta + wd * w
        push_update(kernel, weight, grad, state, "adadelta_update")


@register
class Adamax(_PerElement):
    """Adamax (Kingma and Ba): Adam with the infinity norm."""

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999,
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, t = self._begin_update(index)
        lr /= 1.0 - self.beta1 ** t
        rescale, clip, beta1, beta2 = (self.rescale_grad, self.clip_gradient, self.beta1,
                                        self.beta2)

        def kernel(w: np.ndarray, g: np.ndarray, m: np.ndarray, u: np.ndarray) -> None:
            step = clipped(rescale * g + wd * w, clip)
            m[...] = beta1 * m + (1.0 - beta1) * step
            u[...] = np.maximum(beta2 * u, np.abs(step))
            w -= lr * m / u
        push_update(kernel, weight, grad, state, "adamax_update")


@register
class Nadam(_Moments):
    """Nadam (Dozat): Adam with Nesterov momentum, on MXNet's momentum schedule."""

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, schedule_decay: float = 0.004, **kwargs: Any) -> None:
        super().__init__(beta1, beta2, epsilon, learning_rate=learning_rate, **kwargs)
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, t = self._begin_update(index)
        mu = self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        mu_next = self.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule *= mu
        schedule, schedule_next = self.m_schedule, self.m_schedule * mu_next
        rescale, clip = self.rescale_grad, self.clip_gradient
        beta1, beta2, eps = self.beta1, self.beta2, self.epsilon
        v_scale = 1.0 - beta2 ** t

        def kernel(w: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray) -> None:
            step = clipped(rescale * g + wd * w, clip)
            m[...] = beta1 * m + (1.0 - beta1) * step
            v[...] = beta2 * v + (1.0 - beta2) * step * step
            m_bar = (1.0 - mu) * step / (1.0 - schedule) + mu_next * m / (1.0 - schedule_next)
            w -= lr * m_bar / (np.sqrt(v / v_scale) + eps)
        push_update(kernel, weight, grad, state, "nadam_update")
