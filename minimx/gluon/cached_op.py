"""A block's graph run for inference: one executor per input signature.

The role of MXNet's CachedOp for a Gluon block. The first call with inputs of
given shapes and dtypes on a context binds an executor (``grad_req='null'``);
later calls with the same signature reuse it. The parameters are bound as their
own arrays, not copies, so writes to them reach the next call; an array that
was replaced (a parameter re-initialized or moved) is swapped in before the
run. The inputs are copied into the executor's arrays and the outputs copied
out: every call returns new arrays, as MXNet's does.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..context import Context
from ..executor import Executor
from ..ndarray import NDArray, empty
from ..symbol import Symbol

Signature = tuple[Context, tuple[tuple[tuple[int, ...], np.dtype], ...]]


class CachedOp:
    """Runs `sym`, whose inputs `data_names` are given at each call and whose other
    inputs are parameters."""

    def __init__(self, sym: Symbol, data_names: list[str]) -> None:
        self._sym = sym
        self._data_names = data_names
        self._arg_names = sym.list_arguments()
        self._aux_names = sym.list_auxiliary_states()
        # Auxiliary states given as inputs (BatchNorm's statistics, as MXNet takes them)
        # are written into the executor's own before each run; the other inputs go to
        # forward.
        self._aux_inputs = [n for n in data_names if n in self._aux_names]
        self._forward_inputs = [n for n in data_names if n not in self._aux_names]
        self._executors: dict[Signature, Executor] = {}
        # The parameter mapping each executor's arrays were last checked against.
        self._checked: dict[Signature, Mapping[str, NDArray]] = {}

    def __len__(self) -> int:
        """How many executors are bound (one per signature seen)."""
        return len(self._executors)

    def __call__(self, data: Mapping[str, NDArray], params: Mapping[str, NDArray],
                 ctx: Context) -> list[NDArray]:
        """The outputs for the inputs `data` and parameter arrays `params` (by name)."""
        key = (ctx, tuple((data[n].shape, data[n].dtype) for n in self._data_names))
        executor = self._executors.get(key)
        if executor is None:
            executor = self._executors[key] = self._bind(data, params, ctx)
        elif self._checked[key] is not params:   # the caller gathered the arrays anew
            self._swap_replaced(executor, params)
        self._checked[key] = params
        if self._aux_inputs:
            aux = executor.aux_dict
            for name in self._aux_inputs:
                aux[name][:] = data[name]
        outputs = executor.forward(is_train=False, **{n: data[n] for n in self._forward_inputs})
        return [_copied(out) for out in outputs]

    def _bind(self, data: Mapping[str, NDArray], params: Mapping[str, NDArray],
              ctx: Context) -> Executor:
        arrays = dict(params)
        arrays.update({n: empty(data[n].shape, ctx, data[n].dtype) for n in self._data_names})
        return self._sym.bind(ctx, {n: arrays[n] for n in self._arg_names}, grad_req="null",
                              aux_states={n: arrays[n] for n in self._aux_names})

    def _swap_replaced(self, executor: Executor, params: Mapping[str, NDArray]) -> None:
        for names, bound in ((self._arg_names, executor.arg_arrays),
                             (self._aux_names, executor.aux_arrays)):
            for k, name in enumerate(names):
                if name in params and bound[k] is not params[name]:
                    bound[k] = params[name]


def _copied(out: NDArray) -> NDArray:
    """A new array of `out`'s values, copied on the calling thread when nothing is pending
    on it (after a forward that ran there; a hop to an engine worker cost a MobileNet v1
    forward at batch 1 30-37 us, 1.1-1.4%)."""
    new = empty(out.shape, out.context, out.dtype)
    out._copy_into(new, here_if_ready=True)
    return new
