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
           "run_calibration", "smooth_distribution"]
