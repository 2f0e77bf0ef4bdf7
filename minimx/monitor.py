"""`mx.monitor` (alias `mx.mon`): MXNet 1.x's `Monitor`, statistics of an
executor's arrays every `interval` batches, for debugging a training run.

`tic()` before a batch's forward starts collecting (on every `interval`-th
call); the executor's monitor callback hands over each operator output whose
name matches `pattern` (inputs too with `monitor_all`); `toc()` after the
update adds the arguments and auxiliary states and returns ``(step, name,
statistic)`` rows, which `toc_print()` logs as MXNet's does. The default
statistic is MXNet's: norm(x) / sqrt(size(x)).

The callback runs during the forward and the backward (MXNet's backward nodes,
``fc_backward_output1``, ``sum_grad_output``: see `executor.backward_monitor`);
it keeps the arrays, and the statistics are computed in `toc()`.
"""
from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from typing import Any

from . import ndarray
from .executor import Executor
from .ndarray import NDArray

Stat = Callable[[NDArray], Any]


def _rms(x: NDArray) -> NDArray:
    return ndarray.norm(x) / math.sqrt(x.size)


class Monitor:
    """Statistics of the arrays of the executors it is installed on."""

    def __init__(self, interval: int, stat_func: Stat | None = None, pattern: str = ".*",
                 sort: bool = False, monitor_all: bool = False) -> None:
        self.interval = interval
        self.stat_func = stat_func or _rms
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all
        self.activated = False
        self.step = 0
        self.exes: list[Executor] = []
        self.queue: list[tuple[int, str, NDArray]] = []

    def stat_helper(self, name: str, array: NDArray) -> None:
        """The executors' monitor callback: keeps what `pattern` matches while active."""
        if self.activated and self.re_prog.match(name):
            self.queue.append((self.step, name, array))

    def install(self, exe: Executor) -> None:
        """Watch `exe` too (a monitor may watch several executors)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self) -> None:
        """Before a batch: start collecting, every `interval` batches."""
        if self.step % self.interval == 0:
            self._wait()   # earlier forwards hand over nothing once this one collects
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self) -> list[tuple[int, str, str]]:
        """After a batch: ``(step, name, statistic as text)`` for what was collected
        and for the arguments and auxiliary states; [] when not collecting."""
        if not self.activated:
            return []
        self._wait()   # the batch's forward has run, and handed over its arrays
        for exe in self.exes:
            for name, array in (*exe.arg_dict.items(), *exe.aux_dict.items()):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, array))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda row: row[1])
        rows = [(step, name, _text(self.stat_func(array))) for step, name, array in self.queue]
        self.queue = []
        return rows

    def _wait(self) -> None:
        """Until the executors' pending work on their arrays is done (as MXNet's
        tic and toc wait): a backward's rows are handed over when it ends."""
        for exe in self.exes:
            for array in (*exe.outputs, *exe.arg_arrays, *exe.aux_arrays, *exe.grad_arrays):
                if array is not None:   # (a null grad_req's gradient)
                    array.wait_to_read()

    def toc_print(self) -> None:
        """`toc`, logged as MXNet's: ``Batch:       1 fc_output   0.42``."""
        for step, name, value in self.toc():
            logging.info("Batch: %7d %-30s %s", step, name, value)


def _text(values: Any) -> str:
    """MXNet's form: each statistic followed by a tab, a one-element one as a number
    (str of the float32, as MXNet prints it: ``0.41442412``, not its float64 digits)."""
    values = values if isinstance(values, list) else [values]
    return "".join(f"{v.asscalar() if v.shape == (1,) else v.asnumpy()!s}\t" for v in values)
