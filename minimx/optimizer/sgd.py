"""Stochastic gradient descent and its variants, computed as MXNet 1.9's kernels
and Python rules compute them: `SGD` (plain or with momentum; `ccSGD` is its deprecated
other name), `NAG` (Nesterov's
momentum), `Signum` (the sign of the gradient or of its momentum), `DCASGD`
(delay-compensated) and `SGLD` (Langevin dynamics: SGD plus Gaussian noise).

With g the rescaled (and clipped) gradient, lr and wd the parameter's:

- SGD: ``w = (1 - lr*wd) * w - lr * g``; with momentum
  ``mom = momentum*mom - lr*wd*w - lr*g; w += mom``.
- NAG: ``mom *= momentum; w' = w - mom + (1+momentum) * (mom - lr*(g + wd*w));
  mom -= lr*(g + wd*w')``. MXNet's kernel writes the new weight over the old one
  before it updates the momentum, so the momentum's decay term sees the new
  weight; minimx does the same, so that training matches.
- Signum: ``mom = momentum*mom - (1-momentum)*(wd*w + g);
  w = (1 - lr*wd_lh) * w + lr * sign(mom)``; without momentum (signSGD)
  ``w = (1 - lr*wd) * w - lr * sign(grad)``, the raw gradient's sign (MXNet's
  kernel neither rescales nor clips it there).
- DCASGD: ``step = g + wd*w + lamda * g^2 * (w - w_prev); mom = momentum*mom - lr*step;
  w_prev = w; w += mom`` (without momentum ``mom = -lr*step``). Here a
  `clip_gradient` of any value clips, as in MXNet's Python rule.
- SGLD: ``w -= lr/2 * (g + wd*w)``, then ``w += N(0, sqrt(lr))`` drawn from
  `mx.random.seed`'s generator (MXNet's statistics, not its numbers).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import OperatorError
from ..ndarray import NDArray, random, zeros
from ..ops import update_rules as rules
from .optimizer import Optimizer, State, clipped, push_update, register

Kernel = tuple[Callable[..., None], str]   # a kernel over numpy buffers, and its name


class _Momentum(Optimizer):
    """A rule whose state is one momentum array, when `momentum` is not zero; without
    one, the rule's plain step (SGD's, unless the rule says otherwise)."""

    def __init__(self, momentum: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index: int, weight: NDArray) -> State:
        return zeros(weight.shape, dtype=weight.dtype) if self.momentum != 0.0 else None

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, _ = self._begin_update(index)
        rescale, clip = self.rescale_grad, self._clip()
        if state is None:
            kernel, name = self._plain(lr, wd, rescale, clip)
        else:
            kernel, name = self._with_momentum(lr, wd, rescale, clip)
        push_update(kernel, weight, grad, [] if state is None else [state], name)

    def _plain(self, lr: float, wd: float, rescale: float, clip: float | None) -> Kernel:
        """The kernel ``(w, g)`` of one update without momentum, and its name."""
        def kernel(w: np.ndarray, g: np.ndarray) -> None:
            rules.sgd(w, g, lr=lr, wd=wd, rescale_grad=rescale, clip_gradient=clip)
        return kernel, "sgd_update"

    def _with_momentum(self, lr: float, wd: float, rescale: float, clip: float | None
                       ) -> Kernel:
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

    master_copy_last = True

    aggregate_num = 4

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(momentum, **kwargs)
        self.lazy_update = lazy_update   # dense arrays only: nothing is lazy here

    def _with_momentum(self, lr: float, wd: float, rescale: float, clip: float | None
                       ) -> Kernel:
        momentum = self.momentum

        def kernel(w: np.ndarray, g: np.ndarray, mom: np.ndarray) -> None:
            rules.sgd(w, g, mom, lr=lr, momentum=momentum, wd=wd, rescale_grad=rescale,
                      clip_gradient=clip)
        return kernel, "sgd_mom_update"


@register
class ccSGD(SGD):  # noqa: N801  (MXNet's name)
    """[DEPRECATED] Same as `SGD`. Left here for backward compatibility (MXNet 1.9.1's
    words: it is SGD under another name, and warns of nothing)."""


@register
class NAG(_Momentum):
    """SGD with Nesterov's accelerated gradient (plain SGD without momentum)."""

    master_copy_last = True

    def _with_momentum(self, lr: float, wd: float, rescale: float, clip: float | None
                       ) -> Kernel:
        momentum = self.momentum

        def kernel(w: np.ndarray, g: np.ndarray, mom: np.ndarray) -> None:
            rules.nag_mom(w, g, mom, lr=lr, momentum=momentum, wd=wd, rescale_grad=rescale,
                          clip_gradient=clip)
        return kernel, "nag_mom_update"


@register
class Signum(_Momentum):
    """Signum (Bernstein et al.): steps of size lr along the sign of the momentum;
    signSGD without momentum. `wd_lh` is a decoupled weight decay (with momentum
    only, as MXNet's kernels take it).

    >>> import minimx as mx
    >>> opt = Signum(learning_rate=0.1, momentum=0.0)
    >>> w = mx.nd.array([1.0, 1.0])
    >>> opt.update(0, w, mx.nd.array([3.0, -0.5]), opt.create_state(0, w))
    >>> [round(float(v), 6) for v in w.asnumpy()]
    [0.9, 1.1]
    """

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0,
                 **kwargs: Any) -> None:
        super().__init__(momentum, learning_rate=learning_rate, **kwargs)
        self.wd_lh = wd_lh

    def _plain(self, lr: float, wd: float, rescale: float, clip: float | None) -> Kernel:
        if self.wd_lh:   # MXNet 1.9.1's signsgd_update has no wd_lh: it refuses one
            raise OperatorError(f"Signum: wd_lh={self.wd_lh} needs momentum (signSGD, "
                                "momentum=0, has no decoupled weight decay)")

        def kernel(w: np.ndarray, g: np.ndarray) -> None:
            rules.signsgd(w, g, lr=lr, wd=wd)
        return kernel, "signsgd_update"

    def _with_momentum(self, lr: float, wd: float, rescale: float, clip: float | None
                       ) -> Kernel:
        momentum, wd_lh = self.momentum, self.wd_lh

        def kernel(w: np.ndarray, g: np.ndarray, mom: np.ndarray) -> None:
            rules.signum(w, g, mom, lr=lr, momentum=momentum, wd=wd, rescale_grad=rescale,
                         clip_gradient=clip, wd_lh=wd_lh)
        return kernel, "signum_update"


@register
class DCASGD(Optimizer):
    """DCASGD (Zheng et al.): SGD whose gradient is compensated, through `lamda`, for
    the change of the weight since the previous update. Its state is (momentum or
    None, the previous weight)."""

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lamda = lamda

    def create_state(self, index: int, weight: NDArray) -> State:
        mom = zeros(weight.shape, dtype=weight.dtype) if self.momentum != 0.0 else None
        return mom, weight.copy()

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, _ = self._begin_update(index)
        rescale, clip, momentum, lamda = (self.rescale_grad, self.clip_gradient,
                                          self.momentum, self.lamda)
        mom, previous = state

        def kernel(w: np.ndarray, g: np.ndarray, prev: np.ndarray, *moms: np.ndarray) -> None:
            grad = clipped(rescale * g, clip)
            step = -lr * (grad + wd * w + lamda * grad * grad * (w - prev))
            for m in moms:   # the momentum, if the rule keeps one
                m[...] = momentum * m + step
                step = m
            prev[...] = w
            w += step
        push_update(kernel, weight, grad, [previous] + ([] if mom is None else [mom]),
                    "dcasgd_update")


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics (Welling and Teh): half an SGD step, then
    Gaussian noise of variance lr, so that the weights sample a posterior."""

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd, _ = self._begin_update(index)
        rescale, clip = self.rescale_grad, self.clip_gradient
        # Drawn here, in update order, so that a seed gives the same noise however
        # the engine schedules the kernels.
        noise = random.normal(0.0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype)

        def kernel(w: np.ndarray, g: np.ndarray, n: np.ndarray) -> None:
            w -= lr / 2 * (clipped(rescale * g, clip) + wd * w)
            w += n
        push_update(kernel, weight, grad, [noise], "sgld_update")
