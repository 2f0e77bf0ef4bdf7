"""Rules with per-element step sizes: `Adam` and `RMSProp` (plain and centered),
computed as MXNet 1.9's kernels compute them. Here the weight decay joins the
gradient before clipping: g = clip(rescale*grad + wd*w).

- Adam: ``mean = b1*mean + (1-b1)*g; var = b2*var + (1-b2)*g^2;
  w -= lr_t * mean / (sqrt(var) + eps)`` with
  ``lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t)`` at the parameter's t-th update.
- RMSProp: ``n = (1-g1)*g^2 + g1*n; w -= lr * g / sqrt(n + eps)``; centered
  (Graves'): also ``m = (1-g1)*g + g1*m``,
  ``delta = g2*delta - lr * g / sqrt(n - m^2 + eps); w += delta``. Weights are
  then clipped to [-clip_weights, clip_weights] if given.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ndarray import NDArray, zeros
from .optimizer import Optimizer, State, clipped, push_update, register


@register
class Adam(Optimizer):
    """Adam (Kingma and Ba), with MXNet's defaults."""

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update   # dense arrays only: nothing is lazy here

    def create_state(self, index: int, weight: NDArray) -> State:
        return (zeros(weight.shape, dtype=weight.dtype), zeros(weight.shape, dtype=weight.dtype))

    def update(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        rescale, clip = self.rescale_grad, self._clip()
        beta1, beta2, eps = self.beta1, self.beta2, self.epsilon

        def kernel(w: np.ndarray, g: np.ndarray, mean: np.ndarray, var: np.ndarray) -> None:
            step = clipped(rescale * g + wd * w, clip)
            mean[...] = beta1 * mean + (1.0 - beta1) * step
            var[...] = beta2 * var + (1.0 - beta2) * np.square(step)
            w -= lr * mean / (np.sqrt(var) + eps)
        push_update(kernel, weight, grad, state, "adam_update")


@register
class RMSProp(Optimizer):
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

    def create_state(self, index: int, weight: NDArray) -> State:
        return tuple(zeros(weight.shape, dtype=weight.dtype)
                     for _ in range(3 if self.centered else 1))

    def update(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        rescale, clip = self.rescale_grad, self._clip()
        gamma1, gamma2, eps = self.gamma1, self.gamma2, self.epsilon
        bound = self.clip_weights if self.clip_weights and self.clip_weights >= 0 else None

        def plain(w: np.ndarray, g: np.ndarray, n: np.ndarray) -> None:
            step = clipped(rescale * g + wd * w, clip)
            n[...] = (1.0 - gamma1) * np.square(step) + gamma1 * n
            w[...] = clipped(w - lr * (step / np.sqrt(n + eps)), bound)

        def centered(w: np.ndarray, g: np.ndarray, n: np.ndarray, m: np.ndarray,
                     delta: np.ndarray) -> None:
            step = clipped(rescale * g + wd * w, clip)
            n[...] = (1.0 - gamma1) * np.square(step) + gamma1 * n
            m[...] = (1.0 - gamma1) * step + gamma1 * m
            delta[...] = gamma2 * delta - lr * (step / np.sqrt(n - np.square(m) + eps))
            w[...] = clipped(w + delta, bound)
        kernel, name = (centered, "rmspropalex_update") if self.centered else \
            (plain, "rmsprop_update")
        push_update(kernel, weight, grad, state, name)
