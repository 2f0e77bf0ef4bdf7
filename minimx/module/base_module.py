"""`BaseModule`: the loops MXNet 1.x writes once over any module - `fit`, `score`,
`predict` - and saving and loading parameters, in MXNet 1.9's order of calls.

`fit` binds for training, initializes parameters and the optimizer, and for
each epoch: forward, backward, update and the metric for every batch (the
next batch is fetched before the callbacks run, as in MXNet), the batch-end
callbacks, the epoch's training metric logged, the epoch-end callbacks with
the current parameters, and `score` on the validation data.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import metric
from .. import ndarray as nd
from ..base import MinimxError, warn_user
from ..initializer import Initializer, Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam, read_params
from ..ndarray import NDArray, array, save
from ..symbol import Symbol

ShapesArg = Sequence[DataDesc | tuple[str, Sequence[int]]]

# MXNet's default initializer of `fit` and `init_params` (one instance, as its default argument).
DEFAULT_INIT = Uniform(0.01)


def as_list(value: Any) -> list:
    """`value` as a list: None is empty, a list stays, anything else is one item."""
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def check_input_names(symbol: Symbol, names: Sequence[str], typename: str, throw: bool) -> None:
    """Refuse (or, not `throw`ing, warn about) `names` that are not arguments of `symbol`."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        message = (f"You created Module with Module(..., {typename}_names={list(names)}) but "
                   f"input with name {name!r} is not found in symbol.list_arguments(). "
                   f"Did you mean one of: {', '.join(candidates)}")
        if throw:
            raise MinimxError(message)
        # A warning, as MXNet's (logging's root handler would swallow a later basicConfig).
        warn_user(message)


def parse_data_desc(data_names: Sequence[str], label_names: Sequence[str],
                    data_shapes: ShapesArg, label_shapes: ShapesArg | None
                    ) -> tuple[list[DataDesc], list[DataDesc] | None]:
    """The shapes as DataDescs, checked against the module's input names."""
    data = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in data_shapes]
    if sorted(data_names) != sorted(d.name for d in data):
        raise MinimxError(f"Data provided by data_shapes don't match names specified by "
                          f"data_names ({data} vs. {list(data_names)})")
    labels = None if label_shapes is None else \
        [d if isinstance(d, DataDesc) else DataDesc(*d) for d in label_shapes]
    if sorted(label_names) != sorted(d.name for d in labels or []):
        warn_user(f"Data provided by label_shapes don't match names specified by "
                  f"label_names ({labels} vs. {list(label_names)})")
    return data, labels


class BaseModule:
    """What every module shares; `Module` gives bind, forward, backward, update and
    the parameters."""

    def __init__(self, logger: Any = logging) -> None:
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol: Symbol | None = None

    @property
    def symbol(self) -> Symbol | None:
        return self._symbol

    def _require(self, what: str, *states: str) -> None:
        """Refuse `what` until bind / init_params / init_optimizer have been called."""
        calls = {"binded": "bind", "params_initialized": "init_params",
                 "optimizer_initialized": "init_optimizer"}
        missing = [calls[s] for s in states if not getattr(self, s)]
        if missing:
            raise MinimxError(f"{type(self).__name__}.{what}: call {' and '.join(missing)} first")

    def _wants_optimizer(self, force_init: bool) -> bool:
        """Whether `init_optimizer` should install one: not when it has (unless
        `force_init`), which MXNet's containers warn about."""
        self._require("init_optimizer", "binded", "params_initialized")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return False
        return True

    # -- the high-level loops ------------------------------------------------------------------
    def forward_backward(self, data_batch: DataBatch) -> None:
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data: DataIter, eval_metric: Any, num_batch: int | None = None,
              batch_end_callback: Any = None, score_end_callback: Any = None,
              reset: bool = True, epoch: int = 0, sparse_row_id_fn: Any = None
              ) -> list[tuple[str, float]]:
        """Run `eval_data` through the bound module and give `eval_metric`'s
        (name, value) pairs."""
        self._require("score", "binded", "params_initialized")
        if reset:
            eval_data.reset()
        eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        done = 0
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            self.update_metric(eval_metric, batch.label)
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            done += 1
        _call_all(score_end_callback, BatchEndParam(epoch, done, eval_metric, locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data: DataIter, num_batch: int | None = None,
                     reset: bool = True, sparse_row_id_fn: Any = None
                     ) -> Iterator[tuple[list[NDArray], int, DataBatch]]:
        """(outputs without the padding, batch number, batch) per batch."""
        self._require("iter_predict", "binded", "params_initialized")
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            yield _unpadded(self.get_outputs(), batch.pad), nbatch, batch

    def predict(self, eval_data: DataIter | NDArray | np.ndarray, num_batch: int | None = None,
                merge_batches: bool = True, reset: bool = True,
                always_output_list: bool = False, sparse_row_id_fn: Any = None) -> Any:
        """The outputs for `eval_data` (an iterator, or one batch as an array): with
        `merge_batches`, each output's batches joined (padding dropped)."""
        self._require("predict", "binded", "params_initialized")
        if isinstance(eval_data, (NDArray, np.ndarray)):
            data = eval_data if isinstance(eval_data, NDArray) else array(eval_data)
            self.forward(DataBatch([data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise MinimxError(f"predict: eval_data must be an NDArray or a DataIter, got "
                              f"{type(eval_data).__name__}")
        outputs = [[out.copy() for out in outs]
                   for outs, _, _ in self.iter_predict(eval_data, num_batch, reset)]
        if not outputs or not merge_batches:
            return outputs
        if len({len(outs) for outs in outputs}) > 1:
            raise MinimxError("predict: cannot merge batches, as the number of outputs is "
                              "not the same in every batch")
        merged = [nd.concat(*column, dim=0) for column in zip(*outputs, strict=True)]
        return merged[0] if len(merged) == 1 and not always_output_list else merged

    def fit(self, train_data: DataIter, eval_data: DataIter | None = None,
            eval_metric: Any = "acc", epoch_end_callback: Any = None,
            batch_end_callback: Any = None, kvstore: Any = "local", optimizer: Any = "sgd",
            optimizer_params: Any = (("learning_rate", 0.01),), eval_end_callback: Any = None,
            eval_batch_end_callback: Any = None,
            initializer: Initializer | Callable | None = DEFAULT_INIT,
            arg_params: dict | None = None, aux_params: dict | None = None,
            allow_missing: bool = False, force_rebind: bool = False, force_init: bool = False,
            begin_epoch: int = 0, num_epoch: int | None = None, validation_metric: Any = None,
            monitor: Any = None, sparse_row_id_fn: Any = None) -> None:
        """Train on `train_data` for epochs `begin_epoch` .. `num_epoch` - 1 (MXNet's
        arguments; see the module docstring for the order of events)."""
        if num_epoch is None:
            raise MinimxError("fit: please specify number of epochs (num_epoch)")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        validation_metric = validation_metric if validation_metric is not None else eval_metric
        eval_metric = metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            self._fit_epoch(train_data, epoch, eval_metric, batch_end_callback, monitor)
            for name, value in eval_metric.get_global_name_value():
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            for callback in as_list(epoch_end_callback):
                callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data is not None:
                results = self.score(eval_data, validation_metric, epoch=epoch,
                                     score_end_callback=eval_end_callback,
                                     batch_end_callback=eval_batch_end_callback)
                for name, value in results:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
            train_data.reset()

    def _fit_epoch(self, train_data: DataIter, epoch: int, eval_metric: metric.EvalMetric,
                   batch_end_callback: Any, monitor: Any = None) -> None:
        batches = iter(train_data)
        upcoming: DataBatch | None = next(batches, None)
        nbatch = 0
        while upcoming is not None:
            batch = upcoming
            if monitor is not None:
                monitor.tic()
            self.forward_backward(batch)
            self.update()
            self.update_metric(eval_metric, batch.label)
            if monitor is not None:
                monitor.toc_print()
            upcoming = next(batches, None)
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            nbatch += 1

    # -- parameters on disk ------------------------------------------------------------------
    def save_params(self, fname: str) -> None:
        """Write the parameters to `fname` with MXNet's ``arg:`` / ``aux:`` names."""
        arg_params, aux_params = self.get_params()
        params = {f"arg:{k}": v for k, v in arg_params.items()}
        params.update({f"aux:{k}": v for k, v in aux_params.items()})
        save(fname, params)

    def load_params(self, fname: str) -> None:
        """Set the parameters from a file written by `save_params` (or MXNet)."""
        self.set_params(*read_params(fname))

    # -- what a module gives -------------------------------------------------------------------
    @property
    def data_names(self) -> list[str]:
        raise NotImplementedError

    @property
    def output_names(self) -> list[str]:
        raise NotImplementedError

    @property
    def data_shapes(self) -> list[DataDesc]:
        raise NotImplementedError

    @property
    def label_shapes(self) -> list[DataDesc] | None:
        raise NotImplementedError

    @property
    def output_shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        raise NotImplementedError

    def get_params(self) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
        raise NotImplementedError

    def set_params(self, arg_params: dict[str, NDArray], aux_params: dict[str, NDArray],
                   allow_missing: bool = False, force_init: bool = True,
                   allow_extra: bool = False) -> None:
        """Copy the given parameters in (those missing keep their values with
        `allow_missing`)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=False, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warn_user("Parameters already initialized and force_init=False. "
                      "set_params call ignored.")
            return
        self._set_some_params(arg_params, aux_params, allow_extra)
        self.params_initialized = True

    def _set_some_params(self, arg_params: dict[str, NDArray], aux_params: dict[str, NDArray],
                         allow_extra: bool) -> None:
        """Copy in the parameters given, leaving the others as they are."""
        raise NotImplementedError

    def init_params(self, initializer: Any = None, arg_params: dict | None = None,
                    aux_params: dict | None = None, allow_missing: bool = False,
                    force_init: bool = False, allow_extra: bool = False) -> None:
        raise NotImplementedError

    def bind(self, data_shapes: ShapesArg, label_shapes: ShapesArg | None = None,
             for_training: bool = True, inputs_need_grad: bool = False,
             force_rebind: bool = False, shared_module: Any = None,
             grad_req: Any = "write") -> None:
        raise NotImplementedError

    def install_monitor(self, mon: Any) -> None:
        raise NotImplementedError

    def init_optimizer(self, kvstore: Any = "local", optimizer: Any = "sgd",
                       optimizer_params: Any = (("learning_rate", 0.01),),
                       force_init: bool = False) -> None:
        raise NotImplementedError

    def forward(self, data_batch: Any, is_train: bool | None = None) -> None:
        raise NotImplementedError

    def backward(self, out_grads: Any = None) -> None:
        raise NotImplementedError

    def update(self) -> None:
        raise NotImplementedError

    def get_outputs(self, merge_multi_context: bool = True) -> list[NDArray]:
        raise NotImplementedError

    def get_input_grads(self, merge_multi_context: bool = True) -> list[NDArray]:
        raise NotImplementedError

    def update_metric(self, eval_metric: metric.EvalMetric, labels: Sequence[NDArray] | None,
                      pre_sliced: bool = False) -> None:
        raise NotImplementedError


def _call_all(callbacks: Any, param: BatchEndParam) -> None:
    for callback in as_list(callbacks):
        callback(param)


def _unpadded(outputs: Iterable[NDArray], pad: int | None) -> list[NDArray]:
    """Each output without the `pad` examples that end its batch."""
    return [out[0:out.shape[0] - (pad or 0)] for out in outputs]
