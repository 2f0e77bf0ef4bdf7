"""`mx.model.FeedForward`: MXNet 1.x's legacy model API (deprecated there in favour of
`mx.mod.Module`), kept for old training scripts. It is a thin layer over `Module`: `fit`
is `Module.fit` with FeedForward's arguments, `predict` and `score` bind a Module for
inference. The parameters live in the model (`arg_params`, `aux_params`) between calls.

What FeedForward adds to Module, as MXNet's does: numpy or NDArray data (wrapped in an
`NDArrayIter` of `numpy_batch_size` rows, shuffled for training), `epoch_size` batches per
epoch (the data iterator is not reset between epochs then), batch-end callbacks counting
batches from 1, and optimizer keyword arguments given to the constructor.

>>> import numpy as np, minimx as mx, warnings
>>> net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2,
...                                                  name="fc"), name="softmax")
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", DeprecationWarning)
...     model = FeedForward(net, num_epoch=1, numpy_batch_size=4, learning_rate=0.1)
>>> model.fit(np.ones((8, 3), np.float32), np.zeros(8, np.float32))
>>> model.predict(np.ones((2, 3), np.float32)).shape
(2, 2)
"""
from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import metric
from .base import MinimxError, ShapeError
from .context import Context
from .initializer import Initializer
from .io import DataIter, NDArrayIter, ResizeIter
from .model import BatchEndParam, load_checkpoint, save_checkpoint
from .module import Module
from .module.base_module import DEFAULT_INIT
from .module.module import as_contexts
from .ndarray import NDArray
from .symbol import Symbol

Data = DataIter | np.ndarray | NDArray
Callbacks = Callable | list[Callable] | None


class FeedForward:
    """A symbol and its parameters, trained and run batch by batch (MXNet 1.x's
    constructor arguments; `kwargs` go to the optimizer, e.g. ``learning_rate=0.1``)."""

    def __init__(self, symbol: Symbol, ctx: Context | list[Context] | None = None,
                 num_epoch: int | None = None, epoch_size: int | None = None,
                 optimizer: Any = "sgd", initializer: Initializer | Callable = DEFAULT_INIT,
                 numpy_batch_size: int = 128, arg_params: dict[str, NDArray] | None = None,
                 aux_params: dict[str, NDArray] | None = None, allow_extra_params: bool = False,
                 begin_epoch: int = 0, **kwargs: Any) -> None:
        warnings.warn("mx.model.FeedForward has been deprecated. Please use mx.mod.Module "
                      "instead.", DeprecationWarning, stacklevel=2)
        if not isinstance(symbol, Symbol):
            raise MinimxError(f"FeedForward: symbol must be a Symbol, got "
                              f"{type(symbol).__name__} (a symbol generator, MXNet's bucketing "
                              "form, is not supported: use mx.mod.BucketingModule)")
        if epoch_size is not None and (isinstance(epoch_size, bool) or epoch_size <= 0):
            raise MinimxError(f"FeedForward: epoch_size={epoch_size!r} must be a positive "
                              "number of batches")
        if isinstance(numpy_batch_size, bool) or numpy_batch_size <= 0:
            raise MinimxError(f"FeedForward: numpy_batch_size={numpy_batch_size!r} must be "
                              "positive")
        self.symbol = symbol
        self.ctx, _ = as_contexts(ctx, None)
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self.allow_extra_params = allow_extra_params
        self.begin_epoch = begin_epoch
        self.kwargs = dict(kwargs)
        if allow_extra_params:   # as MXNet: drop what the symbol does not use
            arg_params = _only(arg_params, symbol.list_arguments())
            aux_params = _only(aux_params, symbol.list_auxiliary_states())
        self.arg_params = arg_params
        self.aux_params = aux_params

    # -- data ----------------------------------------------------------------------------
    def _init_iter(self, X: Any, y: Any, is_train: bool) -> DataIter:
        """`X` as a DataIter: arrays are batched by `numpy_batch_size` (shuffled, rolling
        over the last batch, when training); `y` may be (N,) or (N, 1)."""
        if isinstance(X, DataIter):
            return X
        if not isinstance(X, (np.ndarray, NDArray)):
            raise MinimxError(f"FeedForward: X must be a DataIter, NDArray or numpy.ndarray, "
                              f"got {type(X).__name__}")
        if y is None:
            if is_train:
                raise MinimxError("FeedForward.fit: y must be given when X is an array")
            y = np.zeros(X.shape[0], np.float32)
        if not isinstance(y, (np.ndarray, NDArray)):
            raise MinimxError(f"FeedForward: y must be an NDArray or numpy.ndarray when X is "
                              f"an array, got {type(y).__name__}")
        if X.shape[0] != y.shape[0]:
            raise ShapeError(f"FeedForward: X has {X.shape[0]} examples but y has "
                             f"{y.shape[0]} labels")
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.reshape((y.shape[0],))
        if y.ndim != 1:
            raise ShapeError(f"FeedForward: labels of shape {y.shape} must be 1-D or 2-D with "
                             "a second dimension of 1")
        batch_size = min(X.shape[0], self.numpy_batch_size)
        if is_train:
            return NDArrayIter(X, y, batch_size, shuffle=True, last_batch_handle="roll_over")
        return NDArrayIter(X, y, batch_size, shuffle=False)

    def _init_eval_iter(self, eval_data: Any) -> DataIter | None:
        """Validation data: a DataIter, or a (data, labels) pair of arrays or lists."""
        if eval_data is None or isinstance(eval_data, DataIter):
            return eval_data
        if not (isinstance(eval_data, (tuple, list)) and len(eval_data) == 2):
            raise MinimxError("FeedForward.fit: eval_data must be a DataIter or a (data, "
                              f"labels) pair, got {type(eval_data).__name__}")
        data, label = eval_data
        if data is None:
            raise MinimxError("FeedForward.fit: eval_data's data is None")
        if label is None and isinstance(data, DataIter):
            return data
        return self._init_iter(np.array(data) if isinstance(data, list) else data,
                               np.array(label) if isinstance(label, list) else label,
                               is_train=True)

    def _module(self, data: DataIter, contexts: list[Context], logger: Any = logging,
                unfed: Sequence[str] = (), work_load_list: list | None = None) -> Module:
        """A Module of the symbol on `contexts`, reading the iterator's data and the
        labels the symbol takes (and taking the arguments `unfed` as labels that no
        batch gives)."""
        return Module(self.symbol, data_names=[d[0] for d in data.provide_data],
                      label_names=[d[0] for d in self._labels(data)] + list(unfed),
                      logger=logger, context=contexts, work_load_list=work_load_list)

    def _labels(self, data: DataIter) -> list:
        """The iterator's labels that are inputs of the symbol: a model without
        `softmax_label` (a feature layer, a regression) predicts on numpy data, whose
        iterator names one."""
        arguments = set(self.symbol.list_arguments())
        return [d for d in data.provide_label or [] if d[0] in arguments]

    # -- training ------------------------------------------------------------------------
    def fit(self, X: Data, y: Any = None, eval_data: Any = None, eval_metric: Any = "acc",
            epoch_end_callback: Callbacks = None, batch_end_callback: Callbacks = None,
            kvstore: Any = "local", logger: Any = None, work_load_list: list | None = None,
            monitor: Any = None, eval_end_callback: Callbacks = None,
            eval_batch_end_callback: Callbacks = None) -> None:
        """Train for epochs `begin_epoch` .. `num_epoch` - 1 from `arg_params` /
        `aux_params` (the initializer fills what they lack), then keep the trained
        parameters. The validation metric is logged each epoch (MXNet's default
        `eval_end_callback` does that there)."""
        if self.num_epoch is None:
            raise MinimxError("FeedForward.fit: give num_epoch to the constructor")
        data = self._init_iter(X, y, is_train=True)
        if self.epoch_size is not None:
            data = ResizeIter(data, self.epoch_size, reset_internal=False)
        # Over several contexts each trains on its slice of every batch, as MXNet's.
        mod = self._module(data, self.ctx, logger or logging, work_load_list=work_load_list)
        mod.fit(data, eval_data=self._init_eval_iter(eval_data), eval_metric=eval_metric,
                epoch_end_callback=epoch_end_callback,
                batch_end_callback=[_counting_from_one(cb) for cb in _listed(batch_end_callback)],
                kvstore=kvstore, optimizer=self.optimizer, optimizer_params=self.kwargs,
                eval_end_callback=eval_end_callback,
                eval_batch_end_callback=eval_batch_end_callback, initializer=self.initializer,
                arg_params=_only(self.arg_params, self.symbol.list_arguments()),
                aux_params=self.aux_params, allow_missing=True, begin_epoch=self.begin_epoch,
                num_epoch=self.num_epoch, monitor=monitor)
        self.arg_params, self.aux_params = mod.get_params()

    # -- inference -----------------------------------------------------------------------
    def _predictor(self, X: Data) -> tuple[Module, DataIter]:
        """A Module bound for inference on `X`'s shapes, holding the model's parameters."""
        if self.arg_params is None:
            raise MinimxError("FeedForward: the model has no parameters: fit it, or give "
                              "arg_params (or load a checkpoint)")
        extra = sorted(set(self.arg_params) - set(self.symbol.list_arguments())) + sorted(
            set(self.aux_params or {}) - set(self.symbol.list_auxiliary_states()))
        if extra:
            raise MinimxError(f"FeedForward: parameters {extra} are not inputs of the symbol "
                              "(allow_extra_params=True drops them)")
        data = self._init_iter(X, None, is_train=False)
        labels = self._labels(data)
        given = {d[0] for d in data.provide_data + labels}
        # MXNet predicts on the first context alone.
        mod = self._module(data, self.ctx[:1], unfed=[n for n in self.symbol.list_arguments()
                                                      if n not in given
                                                      and n not in self.arg_params])
        mod.bind(data.provide_data, labels or None, for_training=False)
        mod.set_params(self.arg_params, self.aux_params or {}, allow_missing=False)
        return mod, data

    def predict(self, X: Data, num_batch: int | None = None, return_data: bool = False,
                reset: bool = True) -> Any:
        """The outputs for `X` as numpy arrays (one array for one output), without the
        padding of a last batch; with `return_data`, ``(outputs, data, labels)``."""
        mod, data = self._predictor(X)
        outputs: list[list[np.ndarray]] = []
        inputs: list[list[np.ndarray]] = []
        labels: list[list[np.ndarray]] = []
        for outs, _, batch in mod.iter_predict(data, num_batch=num_batch, reset=reset):
            size = outs[0].shape[0]
            outputs.append([o.asnumpy() for o in outs])
            if return_data:
                inputs.append([d[0:size].asnumpy() for d in batch.data or []])
                labels.append([lb[0:size].asnumpy() for lb in batch.label or []])
        joined = [_concat(columns) for columns in (outputs, inputs, labels)]
        return tuple(joined) if return_data else joined[0]

    def score(self, X: Data, eval_metric: Any = "acc", num_batch: int | None = None,
              batch_end_callback: Callbacks = None, reset: bool = True) -> Any:
        """`eval_metric`'s value over `X` (a list of values for a composite metric)."""
        eval_metric = metric.create(eval_metric)
        mod, data = self._predictor(X)
        mod.score(data, eval_metric, num_batch=num_batch,
                  batch_end_callback=batch_end_callback, reset=reset)
        return eval_metric.get()[1]

    # -- checkpoints ---------------------------------------------------------------------
    def save(self, prefix: str, epoch: int | None = None, remove_amp_cast: bool = True) -> None:
        """Write ``prefix-symbol.json`` and ``prefix-%04d.params`` (epoch `num_epoch` by
        default)."""
        epoch = self.num_epoch if epoch is None else epoch
        if epoch is None:
            raise MinimxError("FeedForward.save: give epoch (the model has no num_epoch)")
        if self.arg_params is None:
            raise MinimxError("FeedForward.save: the model has no parameters yet (fit it)")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params or {})

    @staticmethod
    def load(prefix: str, epoch: int, ctx: Context | list[Context] | None = None,
             **kwargs: Any) -> FeedForward:
        """The model of a checkpoint, to predict with or to train on from `epoch`."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol: Symbol, X: Data, y: Any = None, ctx: Context | list[Context] | None = None,
               num_epoch: int | None = None, epoch_size: int | None = None,
               optimizer: Any = "sgd", initializer: Initializer | Callable = DEFAULT_INIT,
               eval_data: Any = None, eval_metric: Any = "acc",
               epoch_end_callback: Callbacks = None, batch_end_callback: Callbacks = None,
               kvstore: Any = "local", logger: Any = None, work_load_list: list | None = None,
               eval_end_callback: Callbacks = None, eval_batch_end_callback: Callbacks = None,
               **kwargs: Any) -> FeedForward:
        """A model made and fitted in one call."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                  kvstore=kvstore, logger=logger, work_load_list=work_load_list,
                  eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model


def _only(params: dict[str, NDArray] | None, names: list[str]) -> dict[str, NDArray] | None:
    return None if params is None else {k: v for k, v in params.items() if k in names}


def _listed(callbacks: Callbacks) -> list[Callable]:
    if callbacks is None:
        return []
    return list(callbacks) if isinstance(callbacks, list) else [callbacks]


def _counting_from_one(callback: Callable) -> Callable[[BatchEndParam], None]:
    """`callback` seeing FeedForward's batch numbers, which count from 1 (Module's from 0)."""
    return lambda param: callback(param._replace(nbatch=param.nbatch + 1))


def _concat(batches: list[list[np.ndarray]]) -> Any:
    """Each column's batches joined; one column alone as an array."""
    columns = [np.concatenate(column) for column in zip(*batches, strict=True)]
    return columns[0] if len(columns) == 1 else columns
