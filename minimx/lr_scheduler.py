"""`mx.lr_scheduler`: the learning rate as a function of the number of updates,
with MXNet 1.9's rules (warm-up, then a factor every `step` updates, at given
updates, or along a cosine).

An optimizer calls its scheduler with its update count before each update;
schedulers keep state (`base_lr` moves), as MXNet's do.

>>> sched = FactorScheduler(step=2, factor=0.5, base_lr=1.0)
>>> [sched(n) for n in (1, 2, 3, 5)]
[1.0, 1.0, 0.5, 0.25]
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from math import cos, pi

from .base import MinimxError

WARMUP_MODES = ("linear", "constant")


class LRScheduler:
    """The base of schedulers: `base_lr` after `warmup_steps` updates that go from
    `warmup_begin_lr` to it (linearly, or staying at `warmup_begin_lr`)."""

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear") -> None:
        if not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise MinimxError(f"{type(self).__name__}: warmup_steps={warmup_steps!r} must be "
                              "an integer >= 0")
        if warmup_begin_lr > base_lr:
            raise MinimxError(f"{type(self).__name__}: base_lr={base_lr} has to be higher than "
                              f"warmup_begin_lr={warmup_begin_lr}")
        if warmup_mode not in WARMUP_MODES:
            raise MinimxError(f"{type(self).__name__}: warmup_mode={warmup_mode!r} is not one "
                              f"of {', '.join(WARMUP_MODES)}")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The learning rate of update `num_update` of the warm-up."""
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        rise = (self.warmup_final_lr - self.warmup_begin_lr) * num_update / self.warmup_steps
        return self.warmup_begin_lr + rise

    def __call__(self, num_update: int) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define __call__")


def _check_factor(factor: float, who: str) -> None:
    if factor > 1.0:
        raise MinimxError(f"{who}: factor={factor} must be no more than 1 to make lr reduce")


class FactorScheduler(LRScheduler):
    """`base_lr` times `factor` once every `step` updates, never below `stop_factor_lr`."""

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8,
                 base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise MinimxError(f"FactorScheduler: step={step} must be at least 1 update")
        _check_factor(factor, "FactorScheduler")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not change "
                             "in the future", num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update,
                             self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """`base_lr` times `factor` after each of the updates listed in `step` (increasing)."""

    def __init__(self, step: Sequence[int], factor: float = 1, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        steps = list(step)
        if not steps or any(s < 1 for s in steps) \
                or any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
            raise MinimxError(f"MultiFactorScheduler: step={step!r} must be an increasing "
                              "list of updates, each at least 1")
        _check_factor(factor, "MultiFactorScheduler")
        self.step = steps
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class _Annealing(LRScheduler):
    """From `base_lr` to `final_lr` over `max_update` updates (after the warm-up),
    along the curve `_remaining` gives: 1 at the start, 0 at the end."""

    def __init__(self, max_update: int, base_lr: float, final_lr: float, warmup_steps: int,
                 warmup_begin_lr: float, warmup_mode: str) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int) or max_update < 1:
            raise MinimxError(f"{type(self).__name__}: max_update={max_update!r} must be a "
                              "positive integer")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = max_update - warmup_steps

    def _remaining(self, progress: float) -> float:
        raise NotImplementedError

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            progress = (num_update - self.warmup_steps) / self.max_steps
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) \
                * self._remaining(progress)
        return self.base_lr


class CosineScheduler(_Annealing):
    """From `base_lr` to `final_lr` along half a cosine over `max_update` updates."""

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)

    def _remaining(self, progress: float) -> float:
        return (1 + cos(pi * progress)) / 2


class PolyScheduler(_Annealing):
    """From `base_lr` to `final_lr` along ``(1 - progress) ** pwr`` over `max_update`
    updates."""

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2,
                 final_lr: float = 0, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)
        self.power = pwr

    def _remaining(self, progress: float) -> float:
        return (1 - progress) ** self.power
