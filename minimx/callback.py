"""`mx.callback`: what `Module.fit` calls at the end of each batch or epoch, with
MXNet 1.9's names and messages, logged through Python's `logging` (root
logger, INFO) as MXNet logs them.

Batch-end callbacks take a `mx.model.BatchEndParam` (epoch, nbatch,
eval_metric, locals); epoch-end callbacks take ``(epoch, symbol, arg_params,
aux_params)``.
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

from .model import BatchEndParam, save_checkpoint
from .ndarray import NDArray
from .symbol import Symbol

EpochEndCallback = Callable[[int, Symbol, dict[str, NDArray], dict[str, NDArray]], None]


def module_checkpoint(mod: Any, prefix: str, period: int = 1,
                      save_optimizer_states: bool = False) -> EpochEndCallback:
    """Save `mod`'s checkpoint (and optimizer states) every `period` epochs."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Any = None, arg: Any = None, aux: Any = None) -> None:
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix: str, period: int = 1) -> EpochEndCallback:
    """Save ``prefix-symbol.json`` and ``prefix-%04d.params`` (numbered from 1) every
    `period` epochs (`mx.model.save_checkpoint`, which logs it)."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Symbol, arg: dict[str, NDArray],
                  aux: dict[str, NDArray]) -> None:
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Callable[[BatchEndParam], None]:
    """Log the training metric every `period` batches (then clear its local sums if
    `auto_reset`)."""
    def _callback(param: BatchEndParam) -> None:
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Log the training speed (samples/sec) and metric every `frequent` batches;
    with `auto_reset`, the metric over those batches only."""

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True) -> None:
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0

    def __call__(self, param: BatchEndParam) -> None:
        count = param.nbatch
        if self.last_count > count:   # a new epoch
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
        else:
            name_value = param.eval_metric.get_name_value()
            first = count - self.frequent if self.auto_reset else 0
            if self.auto_reset:
                param.eval_metric.reset_local()
            msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(name_value)
            logging.info(msg, param.epoch, first, count, speed, *sum(name_value, ()))
        self.tic = time.time()


class ProgressBar:
    """Log a text progress bar of `length` characters over `total` batches."""

    def __init__(self, total: int, length: int = 80) -> None:
        self.bar_len = length
        self.total = total

    def __call__(self, param: BatchEndParam) -> None:
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        logging.info("[%s] %s%s\r", "=" * filled + "-" * (self.bar_len - filled), percents, "%")


class LogValidationMetricsCallback:
    """An `eval_end_callback` that logs the validation metric, as `fit` does too."""

    def __call__(self, param: BatchEndParam) -> None:
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
