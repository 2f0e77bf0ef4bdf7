"""Stochastic gradient descent, plain or with momentum (`SGD`), and with Nesterov's
momentum (`NAG`), computed as MXNet 1.9's kernels compute them.

With g the rescaled (and clipped) gradient, lr and wd the parameter's:

- SGD: ``w = (1 - lr*wd) * w - lr * g``; with momentum
  ``mom = momentum*mom - lr*wd*w - lr*g; w += mom``.
- NAG: ``mom *= momentum; w' = w - mom + (1+momentum) * (mom - lr*(g + wd*w));
  mom -= lr*(g + wd*w')``. MXNet's kernel writes the new weight over the old one
  before it updates the momentum, so the momentum's decay term sees the new
  weight; minimx does the same, so that training matches.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ndarray import NDArray, zeros
from .optimizer import Optimizer, State, clipped, push_update, register


class _Momentum(Optimizer):
    """A rule whose state is one momentum array, when `momentum` is not zero; without
    one, plain SGD."""

    def __init__(self, momentum: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index: int, weight: NDArray) -> State:
        return zeros(weight.shape, dtype=weight.dtype) if self.momentum != 0.0 else None

    def update(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        rescale, clip = self.rescale_grad, self._clip()
        if state is not None:
            kernel, name = self._with_momentum(lr, wd, rescale, clip)
            push_update(kernel, weight, grad, [state], name)
            return

        def plain(w: np.ndarray, g: np.ndarray) -> None:
            w[...] = (1.0 - lr * wd) * w - lr * clipped(rescale * g, clip)
        push_update(plain, weight, grad, [], "sgd_update")

    def _with_momentum(self, lr: float, wd: float, rescale: float, clip: float | None
                       ) -> tuple[Callable[..., None], str]:
        """The kernel ``(w, g, mom)`` of one update with momentum, and its name."""
        raise NotImplementedError


@register
class SGD(_Momentum):
    """SGD with optional momentum, weight decay, gradient rescaling and clipping.

    >>> import minimx as mx
    >>> opt = SGD(learning_rate=0.1, momentum=0.9)
    >>> w, g = mx.nd.ones((1,)), mx.nd.ones((1,))
    >>> state = opt.create_state(0, w)
    >>> for _ in range(2):
    ...     opt.update(0, w, g, state)
    >>> round(float(w.asscalar()), 6)   # 1 - 0.1 - (0.9 * 0.1 + 0.1)
    0.71
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(momentum, **kwargs)
        self.lazy_update = lazy_update   # dense arrays only: nothing is lazy here

    def _with_momentum(self, lr: float, wd: float, rescale: float, clip: float | None
                       ) -> tuple[Callable[..., None], str]:
        momentum = self.momentum

        def kernel(w: np.ndarray, g: np.ndarray, mom: np.ndarray) -> None:
            mom[...] = momentum * mom - lr * wd * w - lr * clipped(rescale * g, clip)
            w += mom
        return kernel, "sgd_mom_update"


@register
class NAG(_Momentum):
    """SGD with Nesterov's accelerated gradient (plain SGD without momentum)."""

    def _with_momentum(self, lr: float, wd: float, rescale: float, clip: float | None
                       ) -> tuple[Callable[..., None], str]:
        momentum = self.momentum

        def kernel(w: np.ndarray, g: np.ndarray, mom: np.ndarray) -> None:
            grad = clipped(rescale * g, clip)
            mom *= momentum
            w[...] = w - mom + (momentum + 1) * (mom - lr * (grad + wd * w))
            mom -= lr * (grad + wd * w)
        return kernel, "nag_mom_update"
