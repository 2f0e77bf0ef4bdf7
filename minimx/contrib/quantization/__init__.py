"""INT8 quantization, as ``mxnet.contrib.quantization``.

`quantize_model` and `quantize_model_mkldnn` quantize a float model as MXNet
1.9.1 does (`quantize_graph`, `mkldnn_fusion`, `model`); `quantize_graph` and
`calib_graph` are the same in two steps, the user feeding the collector by
running the float model in between; `quantize_net_v2` (and `quantize_net`)
quantize a Gluon SymbolBlock (`net`).

`collect_ranges` runs a float symbol over calibration data and chooses each
layer output's ``(min, max)``: naive (min/max) or entropy (KL divergence), as
MXNet 1.9.1 computes them. `get_optimal_threshold` is the entropy search on
its own; `MinMaxCollector` and `HistogramCollector` (under MXNet's names
`_LayerOutputMinMaxCollector` and `_LayerHistogramCollector`) are what the two
modes gather; `run_calibration` drives any collector.
"""
# MXNet's module has no __all__, so `from mxnet.contrib.quantization import *` also
# brings what it imports, and MXNet's quantization examples call `cpu()` from there.
import logging
import os

import numpy as np

from ... import ndarray
from ...base import py_str
from ...context import Context, cpu
from ...io import DataBatch, DataDesc, DataIter
from ...module import Module
from ...ndarray import NDArray
from ...ndarray import load as nd_load
from ...ndarray import save as nd_save
from ...symbol import Symbol
from ...symbol import load as sym_load
from .calibration import CALIB_MODES, collect_ranges, run_calibration
from .collectors import (
    Collector,
    HistogramCollector,
    MinMaxCollector,
    _get_optimal_thresholds,
    _LayerHistogramCollector,
    _LayerOutputMinMaxCollector,
)
from .entropy import (
    Histogram,
    OptimalThreshold,
    _get_optimal_threshold,
    combine_histogram,
    get_optimal_threshold,
    smooth_distribution,
)
from .model import calib_graph, quantize_graph, quantize_model, quantize_model_mkldnn
from .net import quantize_net, quantize_net_v2

__all__ = ["CALIB_MODES", "Collector", "Histogram", "HistogramCollector", "MinMaxCollector",
           "OptimalThreshold", "_LayerHistogramCollector", "_LayerOutputMinMaxCollector",
           "_get_optimal_threshold", "_get_optimal_thresholds", "calib_graph",
           "collect_ranges", "combine_histogram", "get_optimal_threshold", "quantize_graph",
           "quantize_model", "quantize_model_mkldnn", "quantize_net", "quantize_net_v2",
           "run_calibration", "smooth_distribution",
           # MXNet's module's own imports, as its star import gives them
           "Context", "DataBatch", "DataDesc", "DataIter", "Module", "NDArray", "Symbol", "cpu",
           "logging", "nd_load", "nd_save", "ndarray", "np", "os", "py_str", "sym_load"]
