"""A block's graph run forward: one executor per input signature.

The role of MXNet's CachedOp for a Gluon block. The first call with inputs of
given shapes and dtypes on a context binds an executor (``grad_req='null'``);
later calls with the same signature reuse it. The parameters are bound as their
own arrays, not copies, so writes to them reach the next call; an array that
was replaced (a parameter re-initialized or moved) is swapped in before the
run, and one of another dtype or shape (a parameter cast, or loaded with its
saved dtype) binds the executor anew. The inputs are copied into the executor's
arrays and the outputs copied out: every call returns new arrays, as MXNet's
does. Autograd's training mode has executors of its own (see `CachedOp.__call__`).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import autograd
from ..context import Context
from ..executor import Executor
from ..ndarray import NDArray, empty
from ..symbol import Symbol

Signature = tuple[Context, bool, tuple[tuple[tuple[int, ...], np.dtype], ...]]


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
        """The outputs for the inputs `data` and parameter arrays `params` (by name).

        In autograd's training mode (``train_mode()``, ``record()``) the graph runs as
        in training, as MXNet's CachedOp runs it: BatchNorm takes the batch's
        statistics and Dropout drops. That executor's auxiliary states are its own,
        the parameters' copied in before each run: MXNet's forward leaves them as
        they are (they move in a backward, which a SymbolBlock here has not)."""
        training = autograd.is_training()
        key = (ctx, training, tuple((data[n].shape, data[n].dtype) for n in self._data_names))
        executor = self._executors.get(key)
        if executor is None:
            executor = self._executors[key] = self._bind(data, params, ctx, training)
        elif (self._checked[key] is not params
              and not self._swap_replaced(executor, params, training)):
            # a parameter cast or reshaped since: the executor's types and plan are stale
            executor = self._executors[key] = self._bind(data, params, ctx, training)
        self._checked[key] = params
        written = self._aux_names if training else self._aux_inputs
        if written:   # no aux dict on a plain inference call
            aux = executor.aux_dict
            for name in written:
                aux[name][:] = data[name] if name in data else params[name]
        outputs = executor.forward(is_train=training,
                                   **{n: data[n] for n in self._forward_inputs})
        return [_copied(out) for out in outputs]

    def _bind(self, data: Mapping[str, NDArray], params: Mapping[str, NDArray],
              ctx: Context, training: bool) -> Executor:
        arrays = dict(params)
        arrays.update({n: empty(data[n].shape, ctx, data[n].dtype) for n in self._data_names})
        if training:
            arrays.update({n: empty(arrays[n].shape, ctx, arrays[n].dtype)
                           for n in self._aux_names})
        return self._sym.bind(ctx, {n: arrays[n] for n in self._arg_names}, grad_req="null",
                              aux_states={n: arrays[n] for n in self._aux_names})

    def _swap_replaced(self, executor: Executor, params: Mapping[str, NDArray],
                       training: bool) -> bool:
        """Swap the arrays the caller gathered anew into `executor` (not the auxiliary
        states of a training-mode one, its own); False, swapping none, when one has
        another shape or dtype than the array it replaces."""
        swaps = [(bound, k, params[name], own)
                 for names, bound, own in ((self._arg_names, executor.arg_arrays, False),
                                           (self._aux_names, executor.aux_arrays, training))
                 for k, name in enumerate(names)
                 if name in params and bound[k] is not params[name]]
        if any((new.shape, new.dtype) != (bound[k].shape, bound[k].dtype)
               for bound, k, new, _ in swaps):
            return False
        for bound, k, new, own in swaps:
            if not own:
                bound[k] = new
        return True


def _copied(out: NDArray) -> NDArray:
    """A new array of `out`'s values, copied on the calling thread when nothing is pending
    on it (after a forward that ran there; a hop to an engine worker cost a MobileNet v1
    forward at batch 1 30-37 us, 1.1-1.4%)."""
    new = empty(out.shape, out.context, out.dtype)
    out._copy_into(new, here_if_ready=True)
    return new
