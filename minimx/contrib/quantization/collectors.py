"""What calibration gathers per layer output, and the range it chooses from that.

A collector is handed each batch's value of each layer output it was asked for
(`collect`), in the order the graph computes them, and afterwards gives one
``(min, max)`` range per layer (`ranges`):

- `MinMaxCollector` (``calib_mode='naive'``): the smallest and largest value over
  all batches, in ``min_max_dict``, as MXNet's ``_LayerOutputMinMaxCollector``;
- `HistogramCollector` (``calib_mode='entropy'``): a histogram per layer, merged
  across batches, in ``hist_dict``, and the KL-divergence threshold ``th`` of it:
  ``(-th, th)``, or ``(0, th)`` for a non-negative layer quantized to uint8
  (``auto`` included), as MXNet's ``_LayerHistogramCollector`` and
  ``_get_optimal_thresholds``.

``collect(name, arr)`` is also an executor's monitor callback (MXNet's hook for
the two-step ``quantize_graph`` / ``calib_graph`` flow): it takes what the
monitor reports (an NDArray) and ignores the names it was not asked for.
`_LayerOutputMinMaxCollector` and `_LayerHistogramCollector` are the two under
MXNet's names and constructor arguments.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import numpy as np

from ...base import MinimxError
from ...ndarray import NDArray
from .entropy import Histogram, as_histogram, get_optimal_threshold

Ranges = dict[str, tuple[float, float]]


class Collector(Protocol):
    """The layer outputs it wants, what it does with each value, and the ranges."""

    names: frozenset[str]

    def collect(self, name: str, arr: Any) -> None: ...

    def ranges(self, quantized_dtype: str, logger: logging.Logger | None = None) -> Ranges: ...


def _values(arr: Any) -> np.ndarray:
    return arr.asnumpy() if isinstance(arr, NDArray) else np.asarray(arr)


class MinMaxCollector:
    """Per layer, the smallest and largest value over all batches."""

    def __init__(self, names: Iterable[str], logger: logging.Logger | None = None) -> None:
        self.names = frozenset(names)
        self.logger = logger
        self.min_max_dict: dict[str, tuple[np.floating, np.floating]] = {}

    def collect(self, name: str, arr: Any) -> None:
        """Widen `name`'s range by `arr` (an NDArray or numpy array); other names pass."""
        if name not in self.names:
            return
        values = _values(arr)
        low, high = np.min(values), np.max(values)
        if self.logger is not None:
            self.logger.debug("Collecting layer %s min_range=%f, max_range=%f", name, low, high)
        if name in self.min_max_dict:
            old_low, old_high = self.min_max_dict[name]
            low, high = min(old_low, low), max(old_high, high)
        self.min_max_dict[name] = (low, high)

    def ranges(self, quantized_dtype: str, logger: logging.Logger | None = None) -> Ranges:
        """The min/max of each layer, whatever the quantized dtype (as MXNet's naive mode)."""
        chosen = {name: (float(low), float(high))
                  for name, (low, high) in self.min_max_dict.items()}
        if logger is not None:
            for name, (low, high) in chosen.items():
                logger.info("layer=%s, min=%f, max=%f", name, low, high)
        return chosen


class HistogramCollector:
    """Per layer, the histogram of its values (`num_bins` to start with), merged
    across batches as MXNet merges them."""

    def __init__(self, names: Iterable[str], num_bins: int = 8001,
                 logger: logging.Logger | None = None) -> None:
        self.names = frozenset(names)
        self.num_bins = num_bins
        self.logger = logger
        self.hist_dict: dict[str, Histogram] = {}

    def collect(self, name: str, arr: Any) -> None:
        """Add `arr` (an NDArray or numpy array) to `name`'s histogram; other names pass."""
        if name not in self.names:
            return
        values = _values(arr)
        if self.logger is not None:
            self.logger.debug("Collecting layer %s histogram of shape %s", name, values.shape)
        old = self.hist_dict.get(name)
        self.hist_dict[name] = (Histogram.of(values, self.num_bins) if old is None
                                else old.merge(values))

    def ranges(self, quantized_dtype: str, logger: logging.Logger | None = None,
               num_quantized_bins: int = 255) -> Ranges:
        """The KL-divergence threshold of each layer as its range."""
        return _get_optimal_thresholds(self.hist_dict, quantized_dtype, num_quantized_bins,
                                       logger)


def _get_optimal_thresholds(hist_dict: Mapping[str, Any], quantized_dtype: str,
                            num_quantized_bins: int = 255,
                            logger: logging.Logger | None = None) -> Ranges:
    """MXNet 1.9.1's ``_get_optimal_thresholds``: the range of each histogram of
    `hist_dict` (a `Histogram` or MXNet's ``(counts, edges, min, max, threshold)``
    tuple): ``(-th, th)``, or ``(0, th)`` for a non-negative layer with ``uint8`` or
    ``auto``. Unlike MXNet's, it leaves `hist_dict` as it was."""
    chosen = {}
    for name, hist in hist_dict.items():
        best = get_optimal_threshold(as_histogram(hist, f"the histogram of {name}"),
                                     quantized_dtype, num_quantized_bins=num_quantized_bins)
        unsigned = best.min >= 0 and quantized_dtype in ("auto", "uint8")
        chosen[name] = (0.0 if unsigned else -best.threshold, best.threshold)
        if logger is not None:
            logger.info("layer=%s, min=%f, max=%f, threshold=%f, divergence=%f",
                        name, best.min, best.max, best.threshold, best.divergence)
    return chosen


def _include_layer(include_layer: Iterable[str] | None, what: str) -> Iterable[str]:
    if include_layer is None or isinstance(include_layer, str):
        raise MinimxError(f"{what}: include_layer must list the layer names to collect "
                          f"(quantize_graph's collector has them), got {include_layer!r}")
    return include_layer


class _LayerHistogramCollector(HistogramCollector):
    """`HistogramCollector` with MXNet 1.9.1's name and arguments (what
    ``quantize_graph(calib_mode='entropy')`` returns)."""

    def __init__(self, num_bins: int = 8001, include_layer: Iterable[str] | None = None,
                 logger: logging.Logger | None = None) -> None:
        super().__init__(_include_layer(include_layer, "_LayerHistogramCollector"), num_bins,
                         logger)
        self.include_layer = include_layer


class _LayerOutputMinMaxCollector(MinMaxCollector):
    """`MinMaxCollector` with MXNet 1.9.1's name and arguments (what
    ``quantize_graph(calib_mode='naive')`` returns)."""

    def __init__(self, quantized_dtype: str, include_layer: Iterable[str] | None = None,
                 logger: logging.Logger | None = None) -> None:
        super().__init__(_include_layer(include_layer, "_LayerOutputMinMaxCollector"), logger)
        self.quantized_dtype = quantized_dtype
        self.include_layer = include_layer


def make_collector(calib_mode: str, layer_names: Iterable[str], quantized_dtype: str,
                   logger: logging.Logger | None = None) -> HistogramCollector | MinMaxCollector:
    """The collector of `calib_mode` (``'naive'`` or ``'entropy'``) for `layer_names`."""
    layers = list(layer_names)
    if calib_mode == "naive":
        return _LayerOutputMinMaxCollector(quantized_dtype, include_layer=layers, logger=logger)
    return _LayerHistogramCollector(include_layer=layers, logger=logger)
