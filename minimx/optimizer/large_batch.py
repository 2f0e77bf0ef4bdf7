"""`LBSGD`: MXNet 1.9.1's large-batch SGD, which emulates a batch `batch_scale` times
larger by summing that many gradients of a parameter before it steps, and warms its
learning rate up to `batch_scale` times the base.

Each update adds the gradient to the parameter's sum and counts it (from
``begin_epoch * updates_per_epoch``); the update that brings the count to a multiple of
`batch_scale` takes SGD's step (``sgd_update``, or ``sgd_mom_update`` with momentum)
along the mean gradient with ``lr * mult`` and empties the sum; the others take a step
of learning rate 0 (which leaves the weight as it is, unless the gradient is not finite).
With count n and ``N = warmup_epochs * updates_per_epoch`` warm-up updates, ``mult`` is
`batch_scale` from n >= N on, 1 if N <= 1, and before that, by `warmup_strategy`:
``'linear'`` ``1 + (batch_scale-1) * n/N``, ``'power2'`` ``1 + (batch_scale-1) *
n^2/N^2``, ``'sqrt'`` ``1 + (batch_scale-1) * sqrt(n/N)``, anything else 1; ``'lars'``
replaces the schedule by the layer's ratio ``sqrt(|w|^2 / (|g|^2 + wd*|w|^2 + 1e-18))``
bounded to [0.01, 100].

As MXNet's rule does, the learning rate is read before the update is counted (a
scheduler sees the count of the previous update), and the first sum of a parameter is
its gradient array itself, not a copy.
"""
from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from ..ndarray import NDArray, zeros
from ..ops import update_rules as rules
from .optimizer import Optimizer, State, push_update, register

_log = logging.getLogger(__name__)


@register
class LBSGD(Optimizer):
    """Large-batch SGD with momentum and a learning rate warmed up over
    `warmup_epochs` epochs of `updates_per_epoch` updates (see the module's notes).

    >>> import minimx as mx
    >>> opt = LBSGD(learning_rate=0.1, batch_scale=2, warmup_epochs=1, updates_per_epoch=4)
    >>> w = mx.nd.ones((1,))
    >>> opt.update(0, w, mx.nd.array([1.0]), None)   # summed, no step
    >>> opt.update(0, w, mx.nd.array([3.0]), None)   # mean 2, lr 0.1 * (1 + 2/4)
    >>> round(float(w.asscalar()), 6)
    0.7
    """

    def __init__(self, momentum: float = 0.0, multi_precision: bool = False,
                 warmup_strategy: str = "linear", warmup_epochs: int = 5, batch_scale: int = 1,
                 updates_per_epoch: int = 32, begin_epoch: int = 0, num_epochs: int = 60,
                 **kwargs: Any) -> None:
        super().__init__(multi_precision=multi_precision, **kwargs)
        _log.info("Running Large-Batch SGD Algorithm")
        _log.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, "
                  "updates_per_epoch=%d)", batch_scale, warmup_epochs, warmup_strategy,
                  updates_per_epoch)
        self.momentum = momentum
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.cumgrads: dict[int, dict[str, Any]] = {}

    def create_state(self, index: int, weight: NDArray) -> State:
        return zeros(weight.shape, dtype=weight.dtype) if self.momentum != 0.0 else None

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        lr, wd = self._get_lr(index), self._get_wd(index)   # before counting, as MXNet
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            def still(w: np.ndarray, g: np.ndarray) -> None:
                rules.sgd(w, g, lr=0.0, wd=wd)
            push_update(still, weight, grad, [], "sgd_update")
            return
        mean = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lr *= self._get_lars(weight, mean, wd)
        else:
            lr *= self._get_lbmult(cgrad["num_cums"])
        rescale, clip = self.rescale_grad, self._clip()
        # MXNet passes the momentum only when positive (else the operator's default, 0).
        momentum = self.momentum if self.momentum > 0 else 0.0

        def step(w: np.ndarray, g: np.ndarray, *moms: np.ndarray) -> None:
            rules.sgd(w, g, *moms, lr=lr, momentum=momentum, wd=wd, rescale_grad=rescale,
                      clip_gradient=clip)
        push_update(step, weight, mean, [] if state is None else [state],
                    "sgd_update" if state is None else "sgd_mom_update")
        self.cumgrads[index]["cum_grad"] = 0

    def _get_lbmult(self, nup: int) -> float:
        """The warm-up's factor of the learning rate after `nup` updates."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        growth = {"linear": nup / nwup, "power2": (nup * nup) / (nwup * nwup),
                  "sqrt": math.sqrt(float(nup) / nwup)}.get(self.warmup_strategy)
        return 1.0 if growth is None else 1.0 + (maxmult - 1) * growth

    @staticmethod
    def _get_lars(weight: NDArray, grad: NDArray, wd: float) -> float:
        """LARS's ratio for this layer, from float32 sums of squares, bounded to
        [0.01, 100]."""
        weight2, grad2 = (float(np.multiply(a, a).sum()) for a in (weight.asnumpy(),
                                                                   grad.asnumpy()))
        lars = math.sqrt(weight2 / (grad2 + wd * weight2 + 1e-18))
        return 0.01 if lars < 0.01 else 100.0 if lars > 100 else lars

    def _cumulate_gradient(self, grad: NDArray, index: int) -> dict[str, Any]:
        """Add `grad` to the parameter's sum (its first sum is `grad` itself) and count it."""
        cgrad = self.cumgrads.get(index)
        if cgrad and cgrad["num_cums"] > 0:
            cgrad = {"cum_grad": cgrad["cum_grad"] + grad, "num_cums": cgrad["num_cums"] + 1}
        else:
            cgrad = {"cum_grad": grad, "num_cums": self.init_updates + 1}
        self.cumgrads[index] = cgrad
        return cgrad
