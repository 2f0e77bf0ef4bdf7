"""Rules that scale each parameter's step by a trust ratio of norms, computed as
MXNet 1.9's kernels compute them: `LARS` (SGD with layer-wise rate scaling) and
`LAMB` (Adam's direction, scaled likewise). The ratio is taken over the whole
array, so these rules see a parameter as one layer.

With g the rescaled (and clipped) gradient, lr and wd the parameter's:

- LARS: ``lr' = lr * eta * |w| / (|grad| * rescale_grad + wd * |w| + eps)`` when
  both norms are positive (lr otherwise, and for names ending in ``gamma``,
  ``beta`` or ``bias``); then SGD's update with lr'. With
  `momentum_correction`, the momentum is scaled by the change of the
  learning rate since the previous update. Only names ending in ``_weight``
  decay.
- LAMB: ``mean = b1*mean + (1-b1)*g; var = b2*var + (1-b2)*g^2``;
  ``u = mean_hat / (sqrt(var_hat) + eps) + wd*w`` (hats: divided by
  ``1 - b^t`` with `bias_correction`); ``r1 = |w|`` bounded to
  [lower_bound, upper_bound] when given, ``r2 = |u|``;
  ``w -= lr * (r1 / r2 if r1 and r2 else 1) * u``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ndarray import NDArray
from ..ops import update_rules as rules
from .adaptive import _Moments
from .optimizer import State, push_update, register
from .sgd import _Momentum


@register
class LARS(_Momentum):
    """LARS (You et al.): SGD with each layer's learning rate scaled by the ratio of
    its weight's norm to its gradient's.

    >>> import minimx as mx
    >>> opt = LARS(learning_rate=1.0, eta=0.5)
    >>> w = mx.nd.array([3.0, 4.0])                  # |w| = 5
    >>> opt.update(0, w, mx.nd.array([0.0, 10.0]), None)   # |g| = 10: lr' = 0.25
    >>> [round(float(v), 6) for v in w.asnumpy()]
    [3.0, 1.5]
    """

    master_copy_last = True

    DECAYED_SUFFIXES = ("_weight",)

    aggregate_num = 4

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, eta: float = 0.001,
                 eps: float = 0, momentum_correction: bool = True, **kwargs: Any) -> None:
        super().__init__(momentum, **kwargs)
        self.lazy_update = lazy_update   # dense arrays only: nothing is lazy here
        self.eta = eta
        self.eps = eps
        self.momentum_correction = momentum_correction
        self.last_lr: float | None = None
        self.cur_lr: float | None = None

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, _ = self._begin_update(index)
        momentum = self._corrected_momentum()
        rescale, clip, eta, eps = self.rescale_grad, self._clip(), self.eta, self.eps
        scaled = not self.idx2name.get(index, str(index)).endswith(("gamma", "beta", "bias"))

        def kernel(w: np.ndarray, g: np.ndarray, *moms: np.ndarray) -> None:
            rate = lr
            w_norm, g_norm = rules.norm(w), rules.norm(g)
            if scaled and w_norm > 0 and g_norm > 0:
                rate = lr * eta * w_norm / (g_norm * rescale + wd * w_norm + eps)
            rules.sgd(w, g, *moms, lr=rate, momentum=momentum, wd=wd, rescale_grad=rescale,
                      clip_gradient=clip)
        push_update(kernel, weight, grad, [] if state is None else [state], "lars_update")

    def _corrected_momentum(self) -> float:
        """The momentum of this update: with `momentum_correction`, scaled by the ratio
        of the learning rate (before multipliers) to that of the previous update."""
        lr = self.learning_rate
        self.last_lr = lr if self.cur_lr is None else self.cur_lr
        self.cur_lr = lr
        if self.momentum_correction and self.last_lr != 0:
            return self.momentum * self.cur_lr / self.last_lr
        return self.momentum


@register
class LAMB(_Moments):
    """LAMB (You et al.): Adam's step, scaled per layer by the ratio of the weight's
    norm to the step's; its state is (mean, var)."""

    aggregate_num = 45

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound: float | None = None,
                 upper_bound: float | None = None, bias_correction: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(beta1, beta2, epsilon, learning_rate=learning_rate, **kwargs)
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, t = self._begin_update(index)
        phase1: dict[str, Any] = dict(
            t=t, wd=wd, beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
            bias_correction=self.bias_correction, rescale_grad=self.rescale_grad,
            clip_gradient=self._clip())
        # MXNet passes a bound to its kernel only when it is set and non-zero.
        phase2: dict[str, Any] = dict(lr=lr, lower_bound=self.lower_bound or None,
                                      upper_bound=self.upper_bound or None)

        def kernel(w: np.ndarray, g: np.ndarray, mean: np.ndarray, var: np.ndarray) -> None:
            r1 = rules.norm(w)   # before phase 1, as MXNet's rule takes it
            direction = rules.lamb_phase1(w, g, mean, var, **phase1)
            rules.lamb_phase2(w, direction, r1, rules.norm(direction), **phase2)
        push_update(kernel, weight, grad, state, "lamb_update")
