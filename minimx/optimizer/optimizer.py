"""The `Optimizer` base: learning rate and weight decay per parameter, update
counts, the registry of rules by name, and how a rule's arithmetic reaches the
engine.

Each parameter has an index (the `Updater`'s key) and, through `idx2name`, a
name. Its learning rate is the scheduler's (or `learning_rate`) times its
`lr_mult`, its weight decay `wd` times its `wd_mult`. As in MXNet, the
multipliers come from the symbol's ``__lr_mult__`` / ``__wd_mult__``
attributes, then from `set_lr_mult` / `set_wd_mult`; a parameter whose name
ends in neither ``_weight`` nor ``_gamma`` (biases, betas) gets no weight
decay.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from .. import engine
from ..base import MinimxError, warn_user
from ..ndarray import NDArray, zeros
from ..registry import Registry
from ..symbol import Symbol

State = Any   # None, an NDArray, or a tuple of them: what `create_state` makes

_REGISTRY = Registry("optimizer")
register = _REGISTRY.register


class ScheduledRateError(MinimxError, UserWarning):
    """`set_learning_rate` on an optimizer whose lr_scheduler sets the rate: MXNet 1.9.1
    raises a UserWarning there, which scripts catch."""


class Optimizer:
    """The base of update rules. A rule gives `create_state(index, weight)` and
    `update(index, weight, grad, state)`, which changes `weight` and `state` in place."""

    # Parameters decayed by default: names ending so (MXNet's base rule; LARS's differs).
    DECAYED_SUFFIXES: tuple[str, ...] = ("_weight", "_gamma")
    # How many parameters MXNet's rule updates in one kernel when an Updater gets a
    # list (0: one at a time). Such a rule counts a whole chunk's updates first, so
    # every parameter of the chunk sees the scheduler at the chunk's num_update.
    aggregate_num = 0
    # Where create_state_multi_precision puts the float32 master copy, as MXNet's rule does.
    master_copy_last = False

    def __init__(self, rescale_grad: float = 1.0, param_idx2name: Mapping[int, str] | None = None,
                 wd: float = 0.0, clip_gradient: float | None = None,
                 learning_rate: float | None = None, lr_scheduler: Any = None,
                 sym: Symbol | None = None, begin_num_update: int = 0,
                 multi_precision: bool = False) -> None:
        self.rescale_grad = rescale_grad
        self.multi_precision = multi_precision
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        if lr_scheduler is not None and learning_rate is not None:
            lr_scheduler.base_lr = learning_rate   # MXNet: learning_rate wins
        self.lr: float = learning_rate if learning_rate is not None else lr_scheduler.base_lr
        self.wd = wd
        self.clip_gradient = clip_gradient
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._index_update_count: dict[int, int] = {}
        self._counted_ahead: set[int] = set()
        self.idx2name = dict(param_idx2name or {})
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.lr_mult: dict[Any, float] = {}
        self.wd_mult: dict[Any, float] = {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # -- what a rule gives -------------------------------------------------------------
    def create_state(self, index: int, weight: NDArray) -> State:
        """The state the rule keeps for one parameter (None if it keeps none)."""
        return None

    def create_state_multi_precision(self, index: int, weight: NDArray) -> State:
        """`create_state`, and with `multi_precision` for a float16 weight, a float32
        master copy with it: ``(weight32, state of weight32)``, or the other way round
        where `master_copy_last` (MXNet's SGD, NAG and LARS)."""
        if weight.dtype == np.float16:
            if self.multi_precision:
                master = weight.astype(np.float32)
                state = self.create_state(index, master)
                return (state, master) if self.master_copy_last else (master, state)
            warn_user("Accumulating with float16 in optimizer can lead to poor accuracy or "
                      "slow convergence. Consider using multi_precision=True option of the "
                      "optimizer")
        return self.create_state(index, weight)

    def update(self, index: int | Sequence[int], weight: NDArray | Sequence[NDArray],
               grad: NDArray | Sequence[NDArray], state: State | Sequence[State]) -> None:
        """Update `weight` in place from `grad` and the parameter's `state`; or, as
        MXNet's aggregated rules take them, lists of each, every update of the list
        counted before the first is made."""
        self._each(self._update_one, index, weight, grad, state)

    def update_multi_precision(self, index: int | Sequence[int],
                               weight: NDArray | Sequence[NDArray],
                               grad: NDArray | Sequence[NDArray],
                               state: State | Sequence[State]) -> None:
        """`update` on the float32 master copy of a float16 weight (a state of
        `create_state_multi_precision` with `multi_precision`), which is then cast
        into the weight; other weights as `update`."""
        self._each(self._update_mixed, index, weight, grad, state)

    def _each(self, update: Callable[[int, NDArray, NDArray, State], None],
              index: int | Sequence[int], weight: NDArray | Sequence[NDArray],
              grad: NDArray | Sequence[NDArray], state: State | Sequence[State]) -> None:
        if not isinstance(index, (list, tuple)):
            update(cast(int, index), cast(NDArray, weight), cast(NDArray, grad), state)
            return
        weight, grad, state = (cast(Sequence, x) for x in (weight, grad, state))
        if not len(index) == len(weight) == len(grad) == len(state):
            raise MinimxError(f"{type(self).__name__}.update: {len(index)} indices, "
                              f"{len(weight)} weights, {len(grad)} gradients and "
                              f"{len(state)} states")
        self.count_ahead(index)
        for i, w, g, s in zip(index, weight, grad, state, strict=True):
            update(i, w, g, s)

    def _update_mixed(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        if not (self.multi_precision and weight.dtype == np.float16):
            self.update(index, weight, grad, state)
            return
        inner, master = state if self.master_copy_last else state[::-1]
        # `update`, not `_update_one`: a user's rule overrides `update`, as in MXNet.
        self.update(index, master, grad.astype(np.float32), inner)
        weight[:] = master.astype(weight.dtype)

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        """One parameter's update: the rule itself."""
        raise NotImplementedError(f"{type(self).__name__} must define update")

    # -- learning rates and weight decay ---------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """The learning rate of the next update (before `lr_mult`)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        if self.lr_scheduler is not None:
            raise ScheduledRateError("set_learning_rate: the optimizer has an lr_scheduler, "
                                     "which decides the learning rate")
        self.lr = lr

    def set_lr_mult(self, args_lr_mult: Mapping[Any, float]) -> None:
        """Learning-rate multipliers by name or index, over the symbol's ``__lr_mult__``."""
        self.lr_mult = self._symbol_mults("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: Mapping[Any, float]) -> None:
        """Weight-decay multipliers by name or index, over the symbol's ``__wd_mult__``;
        no decay for names ending in none of `DECAYED_SUFFIXES`."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values()
                        if not n.endswith(self.DECAYED_SUFFIXES)}
        self.wd_mult.update(self._symbol_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _symbol_mults(self, key: str) -> dict[Any, float]:
        if not self.sym_info:
            return {}
        attrs, arg_names = self.sym_info
        return {n: float(attrs[n][key]) for n in arg_names if key in attrs.get(n, {})}

    def _update_count(self, index: int) -> None:
        count = self._index_update_count.get(index, self.begin_num_update) + 1
        self._index_update_count[index] = count
        self.num_update = max(count, self.num_update)

    def count_ahead(self, indices: Iterable[int]) -> None:
        """Count the coming updates of `indices` now, as MXNet's aggregated rules do
        for a chunk (see `aggregate_num`); their updates then count nothing more."""
        for index in indices:
            self._update_count(index)
            self._counted_ahead.add(index)

    def _begin_update(self, index: int) -> tuple[float, float, int]:
        """Count an update of parameter `index` (unless counted ahead); its learning
        rate and weight decay for this update, and how many updates it has had (t, from 1)."""
        if index in self._counted_ahead:
            self._counted_ahead.discard(index)
        else:
            self._update_count(index)
        return self._get_lr(index), self._get_wd(index), self._index_update_count[index]

    def _get_lr(self, index: int) -> float:
        return self.learning_rate * self._mult(self.lr_mult, index)

    def _get_wd(self, index: int) -> float:
        return self.wd * self._mult(self.wd_mult, index)

    def _mult(self, mults: Mapping[Any, float], index: int) -> float:
        if index in mults:
            return mults[index]
        return mults.get(self.idx2name.get(index), 1.0)

    # -- the arithmetic ------------------------------------------------------------------------
    def _clip(self) -> float | None:
        """The gradient clip MXNet's kernels apply: a positive `clip_gradient`, else none."""
        clip = self.clip_gradient
        return clip if clip and clip >= 0 else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(learning_rate={self.lr}, wd={self.wd})"


@register
class Test(Optimizer):
    """MXNet's test rule: ``weight += rescale_grad * grad``, and its state, a float32
    array, copies the new weight. It counts no updates (nor reads a learning rate)."""

    def create_state(self, index: int, weight: NDArray) -> State:
        return zeros(weight.shape)

    def _update_one(self, index: int, weight: NDArray, grad: NDArray, state: State) -> None:
        weight += grad * self.rescale_grad
        state[:] = weight


def clipped(values: np.ndarray, clip: float | None) -> np.ndarray:
    """`values` through MXNet's ``clip(values, -clip, clip)``, as its Python rules clip
    (unchanged without a clip): above `clip` becomes `clip`, else below `-clip` becomes
    `-clip`. So 0 clips to zero, and a negative clip, whose bounds cross, gives `clip`
    where ``values > clip`` and `-clip` elsewhere (np.clip would give `clip` everywhere)."""
    if clip is None:
        return values
    return np.where(values > clip, clip, np.where(values < -clip, -clip, values))


def push_update(kernel: Callable[..., None], weight: NDArray, grad: NDArray,
                states: Iterable[NDArray], name: str) -> None:
    """Run ``kernel(weight, grad, *states)`` on the numpy buffers on the engine,
    after pending writes to the gradient and before later reads of the weight
    and the states, which it changes in place."""
    states = list(states)
    buffers = [weight._data, grad._data, *(s._data for s in states)]
    engine.push(lambda: kernel(*buffers), [grad._var], [weight._var, *(s._var for s in states)],
                name=name)


def create(name: str, **kwargs: Any) -> Optimizer:
    """A registered optimizer by name (any case), made with `kwargs`."""
    return _REGISTRY.get(name)(**kwargs)

