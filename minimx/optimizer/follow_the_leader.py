"""Follow-the-leader rules, computed as MXNet 1.9's kernels compute them: `Ftrl`
(follow the regularized leader, proximal, with L1 and L2 terms) and `FTML`
(follow the moving leader). Both keep a running sum `z` and solve for the
weight in closed form instead of stepping from the previous one.

- Ftrl, with g = clip(rescale*grad):
  ``z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr; n += g^2;
  w = (sign(z)*lamda1 - z) / ((beta + sqrt(n)) / lr + wd)`` where
  ``|z| > lamda1``, else 0.
- FTML, with g = clip(rescale*grad + wd*w), at the parameter's t-th update:
  ``v = b2*v + (1-b2)*g^2; d' = (1 - b1^t) / lr * (sqrt(v / (1 - b2^t)) + eps);
  z = b1*z + (1-b1)*g - (d' - b1*d) * w; d = d'; w = -z / d``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ndarray import NDArray
from ..ops import update_rules as rules
from .adaptive import _Moments, _PerElement
from .optimizer import State, push_update, register


@register
class Ftrl(_PerElement):
    """FTRL-Proximal (McMahan et al.): sparse weights through the L1 term `lamda1`;
    `beta` enters the per-coordinate learning rate. Its state is (z, n).

    >>> import minimx as mx
    >>> opt = Ftrl(lamda1=0.5, learning_rate=1.0)
    >>> w = mx.nd.zeros((2,))
    >>> opt.update(0, w, mx.nd.array([0.2, -3.0]), opt.create_state(0, w))
    >>> [round(float(v), 6) for v in w.asnumpy()]   # |z| = 0.2 is under lamda1
    [0.0, 0.625]
    """

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate   # as MXNet: an lr_scheduler still decides

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, _ = self._begin_update(index)
        kwargs: dict[str, Any] = dict(lr=lr, lamda1=self.lamda1, beta=self.beta, wd=wd,
                      rescale_grad=self.rescale_grad, clip_gradient=self._clip())

        def kernel(w: np.ndarray, g: np.ndarray, z: np.ndarray, n: np.ndarray) -> None:
            rules.ftrl(w, g, z, n, **kwargs)
        push_update(kernel, weight, grad, state, "ftrl_update")


@register
class FTML(_Moments):
    """FTML (Zheng and Kwok): Adam-like second moments with a leader that moves with
    them. Its state is (d, v, z)."""

    states = 3

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8,
                 **kwargs: Any) -> None:
        super().__init__(beta1, beta2, epsilon, **kwargs)

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, t = self._begin_update(index)
        kwargs: dict[str, Any] = dict(
            lr=lr, t=t, beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
            wd=wd, rescale_grad=self.rescale_grad, clip_grad=self._clip())

        def kernel(w: np.ndarray, g: np.ndarray, d: np.ndarray, v: np.ndarray,
                   z: np.ndarray) -> None:
            rules.ftml(w, g, d, v, z, **kwargs)
        push_update(kernel, weight, grad, state, "ftml_update")
