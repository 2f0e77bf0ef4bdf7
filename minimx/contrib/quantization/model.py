"""MXNet 1.9's user-level API: ``quantize_model``, ``quantize_model_mkldnn``, and the
two steps they are made of, ``quantize_graph`` and ``calib_graph``.

A float model in, ``(qsym, qarg_params, aux_params)`` out. `quantize_graph`
quantizes the graph (the `quantize_graph` module) and, to calibrate it, gives a
collector (`collectors`) of the float layer outputs whose ranges the quantized
graph needs; the float model runs over calibration data with
``collector.collect`` as its executor's monitor callback (``monitor_all=True``);
`calib_graph` writes the ranges the collector chose onto the graph.
`quantize_model` is the three steps on the user's data (`calibration` runs the
float model). Either way, the parameters the graph reads are quantized once:
each ``<name>_quantize`` argument is ``<name>`` quantized to int8 over its own
min and max (``_contrib_quantize``), with ``_min`` and ``_max`` beside it.
``quantize_model_mkldnn`` fuses before and after, as MXNet's
``MKLDNN_QUANTIZE`` backend does (`mkldnn_fusion`).
"""
from __future__ import annotations

import copy
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ...base import DTypeError, MinimxError
from ...context import Context, cpu
from ...graph.node import topo_order
from ...ndarray import NDArray, invoke_by_name
from ...ndarray import array as nd_array
from ...symbol import Symbol
from .calibration import CALIB_MODES, run_calibration
from .collectors import Ranges, _get_optimal_thresholds, make_collector
from .entropy import QUANTIZED_DTYPES
from .mkldnn_fusion import mkldnn_quantize
from .quantize_graph import calibrated_nodes, check_choices, quantize_symbol, set_calib_table

QuantizedModel = tuple[Symbol, dict[str, NDArray], dict[str, NDArray]]
_GRAPH_CALIB_MODES = (*CALIB_MODES, "customize")


def quantize_model(sym: Symbol, arg_params: Mapping[str, NDArray],
                   aux_params: Mapping[str, NDArray], data_names: Sequence[str] = ("data",),
                   label_names: Sequence[str] | None = ("softmax_label",),
                   ctx: Context | None = None, excluded_sym_names: Sequence[str] | None = None,
                   excluded_op_names: Sequence[str] | None = None,
                   calib_mode: str | None = "entropy",
                   calib_data: Any = None, num_calib_examples: int | None = None,
                   quantized_dtype: str = "int8", quantize_mode: str = "smart",
                   quantize_granularity: str = "tensor-wise",
                   logger: logging.Logger | None = None) -> QuantizedModel:
    """`sym` quantized to INT8, calibrated on `calib_data` with `calib_mode`
    (``'none'``: ranges at run time; ``'naive'``: min/max; ``'entropy'``: KL
    divergence; None is ``'none'``, as in MXNet). `label_names` and `ctx` are
    accepted as MXNet takes them; calibration runs on the CPU and reads only
    `data_names`. The same as `quantize_graph`, a run of the float model over
    `calib_data` feeding its collector, then `calib_graph`."""
    calib_mode = "none" if calib_mode is None else calib_mode
    _check_call(ctx, calib_mode, calib_data, quantized_dtype, quantize_mode,
                quantize_granularity)
    if logger is not None:
        logger.info("Quantizing symbol")
    return quantize_calibrated(sym, arg_params, aux_params, data_names, label_names,
                               excluded_sym_names, excluded_op_names, calib_mode, calib_data,
                               num_calib_examples, quantized_dtype, quantize_mode,
                               quantize_granularity, None, logger)


def quantize_calibrated(sym: Symbol, arg_params: Mapping[str, NDArray],
                        aux_params: Mapping[str, NDArray], data_names: Sequence[str],
                        label_names: Sequence[str] | None,
                        excluded_sym_names: Sequence[str] | None,
                        excluded_op_names: Sequence[str] | None, calib_mode: str,
                        calib_data: Any, num_calib_examples: int | None, quantized_dtype: str,
                        quantize_mode: str, quantize_granularity: str, given_collector: Any,
                        logger: logging.Logger | None) -> QuantizedModel:
    """The steps of `quantize_model` after its checks (`quantize_net_v2` takes them
    too): the graph quantized, the float model run over `calib_data` feeding the
    collector of `calib_mode` (`given_collector` for ``'customize'``), the ranges
    written by `calib_graph`; the parameters quantized once, at the end."""
    qsym, collector = _quantize_graph(sym, arg_params, excluded_sym_names, excluded_op_names,
                                      calib_mode, quantized_dtype, quantize_mode,
                                      quantize_granularity, given_collector, logger)
    if collector is None:
        return _with_params(qsym, arg_params, aux_params, logger)
    _check_params(sym, arg_params, aux_params, data_names, label_names)
    count = run_calibration(sym, arg_params, aux_params, calib_data, collector, data_names,
                            num_calib_examples, logger)
    if logger is not None:
        logger.info("Collected layer outputs from FP32 model using %d examples", count)
    return calib_graph(qsym, arg_params, aux_params, collector, calib_mode, quantized_dtype,
                       logger)


def quantize_model_mkldnn(sym: Symbol, arg_params: Mapping[str, NDArray],
                          aux_params: Mapping[str, NDArray], data_names: Sequence[str] = ("data",),
                          label_names: Sequence[str] | None = ("softmax_label",),
                          ctx: Context | None = None,
                          excluded_sym_names: Sequence[str] | None = None,
                          excluded_op_names: Sequence[str] | None = None,
                          calib_mode: str | None = "entropy", calib_data: Any = None,
                          num_calib_examples: int | None = None, quantized_dtype: str = "int8",
                          quantize_mode: str = "smart",
                          quantize_granularity: str = "tensor-wise",
                          logger: logging.Logger | None = None) -> QuantizedModel:
    """`quantize_model` between MXNet's two ``MKLDNN_QUANTIZE`` fusions: the result
    has MXNet's ``_sg_mkldnn_conv`` / ``_sg_mkldnn_fully_connected`` nodes, names
    and attributes (see `mkldnn_fusion`)."""
    if isinstance(ctx, Context) and ctx.device_type != "cpu":
        raise MinimxError(f"quantize_model_mkldnn runs on the CPU only, got ctx={ctx}")
    qsym, qargs, auxs = quantize_model(
        mkldnn_quantize(sym), arg_params, aux_params, data_names, label_names, ctx,
        excluded_sym_names, excluded_op_names, calib_mode, calib_data, num_calib_examples,
        quantized_dtype, quantize_mode, quantize_granularity, logger)
    return mkldnn_quantize(qsym), qargs, auxs


def quantize_graph(sym: Symbol, arg_params: Mapping[str, NDArray],
                   aux_params: Mapping[str, NDArray], ctx: Context | None = None,
                   excluded_sym_names: Sequence[str] | None = None,
                   excluded_op_names: Sequence[str] | None = None,
                   calib_mode: str | None = "entropy", quantized_dtype: str = "int8",
                   quantize_mode: str = "full", quantize_granularity: str = "tensor-wise",
                   LayerOutputCollector: Any = None,  # noqa: N803 (MXNet's name)
                   logger: logging.Logger | None = None
                   ) -> tuple[Symbol, dict[str, NDArray], dict[str, NDArray], Any]:
    """`sym` quantized, its quantized parameters, `aux_params`, and the collector that
    calibration is to feed: None for ``calib_mode='none'`` (the graph is final),
    a `_LayerHistogramCollector` (``'entropy'``) or `_LayerOutputMinMaxCollector`
    (``'naive'``) of the layers to calibrate, or `LayerOutputCollector` itself for
    ``'customize'`` (an object whose ``collect(name, arr)`` fills ``min_max_dict``).

    Feed it by running the float model with ``collector.collect`` as the monitor
    callback (``monitor_all=True``, bound without a subgraph backend, which would
    hide the outputs it fuses), then give it to `calib_graph`:

    >>> import minimx as mx, numpy as np
    >>> fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc0')
    >>> args = {'fc0_weight': mx.nd.array([[1, -1], [0.5, 2]]), 'fc0_bias': mx.nd.zeros(2)}
    >>> qsym, qargs, auxs, collector = quantize_graph(fc, args, {}, calib_mode='naive')
    >>> exe = fc.simple_bind(mx.cpu(), grad_req='null', data=(1, 2))
    >>> exe.copy_params_from(args)
    >>> exe.set_monitor_callback(collector.collect, monitor_all=True)
    >>> _ = exe.forward(data=mx.nd.array([[1.0, -2.0]]))
    >>> qsym, qargs, auxs = calib_graph(qsym, args, auxs, collector, 'naive', logger=None)
    >>> sorted(collector.min_max_dict)
    ['data', 'fc0_output']
    """
    calib_mode = "none" if calib_mode is None else calib_mode
    _check_ctx(ctx)
    _check_graph_mode(calib_mode, LayerOutputCollector)
    if logger is not None:
        logger.info("Quantizing graph")
    qsym, collector = _quantize_graph(sym, arg_params, excluded_sym_names, excluded_op_names,
                                      calib_mode, quantized_dtype, quantize_mode,
                                      quantize_granularity, LayerOutputCollector, logger)
    if collector is None:
        return (*_with_params(qsym, arg_params, aux_params, logger), None)
    if logger is not None:
        logger.info("Collector created, please use set_monitor_callback to collect "
                    "calibration information.")
        logger.info("Quantizing parameters")
    return qsym, quantize_params(qsym, arg_params), dict(aux_params), collector


def calib_graph(qsym: Symbol, arg_params: Mapping[str, NDArray],
                aux_params: Mapping[str, NDArray], collector: Any,
                calib_mode: str = "entropy", quantized_dtype: str = "int8",
                logger: Any = logging) -> QuantizedModel:
    """`qsym` (from `quantize_graph`, not changed) with the ranges `collector` chose
    written onto it, the parameters it reads quantized from the float `arg_params`
    (the ones given to `quantize_graph`), and `aux_params`. ``'entropy'`` finds the
    KL-divergence thresholds of ``collector.hist_dict``; ``'naive'`` and
    ``'customize'`` take ``collector.min_max_dict`` as it is. `logger` defaults to
    the `logging` module, as in MXNet."""
    ranges = _collected_ranges(collector, calib_mode, quantized_dtype, logger)
    _check_covered(qsym, ranges)
    return _with_params(set_calib_table(copy.deepcopy(qsym), ranges), arg_params, aux_params,
                        logger)


def _quantize_graph(sym: Symbol, arg_params: Mapping[str, NDArray],
                    excluded_sym_names: Sequence[str] | None,
                    excluded_op_names: Sequence[str] | None, calib_mode: str,
                    quantized_dtype: str, quantize_mode: str, quantize_granularity: str,
                    given_collector: Any, logger: logging.Logger | None) -> tuple[Symbol, Any]:
    """The quantized symbol, and the collector of `calib_mode` (None for 'none')."""
    qsym, layers = quantize_symbol(sym, excluded_sym_names or (), excluded_op_names or (),
                                   offline_params=list(arg_params), quantized_dtype=quantized_dtype,
                                   quantize_mode=quantize_mode,
                                   quantize_granularity=quantize_granularity)
    if calib_mode == "none":
        _check_runtime_ranges(qsym)
        return qsym, None
    if calib_mode == "customize":
        return qsym, given_collector
    return qsym, make_collector(calib_mode, layers, quantized_dtype, logger)


def _with_params(qsym: Symbol, arg_params: Mapping[str, NDArray],
                 aux_params: Mapping[str, NDArray], logger: Any) -> QuantizedModel:
    """The final model: `qsym`, once checked that it can run, with its parameters."""
    if logger is not None:
        logger.info("Quantizing parameters")
    qargs = quantize_params(qsym, arg_params)
    _check_int8_types(qsym, [name for name in qsym.list_arguments() if name not in qargs])
    return qsym, qargs, dict(aux_params)


def _check_call(ctx: Context | None, calib_mode: str, calib_data: Any, quantized_dtype: str,
                quantize_mode: str, quantize_granularity: str) -> None:
    _check_ctx(ctx)
    check_choices(quantized_dtype, quantize_mode, quantize_granularity)
    if calib_mode not in CALIB_MODES:
        raise MinimxError(f"quantization: unknown calib_mode {calib_mode!r}, expected one of "
                          f"{', '.join(CALIB_MODES)}")
    if calib_mode != "none" and calib_data is None:
        raise MinimxError(f"quantization: calib_data must be given when calib_mode="
                          f"{calib_mode!r}")


def _check_ctx(ctx: Context | None) -> None:
    if ctx is not None and not isinstance(ctx, Context):
        raise MinimxError(f"quantization: ctx must be one Context, got {ctx!r}")


def _check_graph_mode(calib_mode: str, collector: Any) -> None:
    if calib_mode not in _GRAPH_CALIB_MODES:
        raise MinimxError(f"quantize_graph: unknown calib_mode {calib_mode!r}, expected one "
                          f"of {', '.join(_GRAPH_CALIB_MODES)}")
    if calib_mode == "customize" and not callable(getattr(collector, "collect", None)):
        raise MinimxError("quantize_graph: calib_mode='customize' needs LayerOutputCollector, "
                          "an object with collect(name, arr) that fills min_max_dict; got "
                          f"{collector!r}")


def _collected_ranges(collector: Any, calib_mode: str, quantized_dtype: str,
                      logger: Any) -> Ranges:
    """The ``(min, max)`` of each layer `collector` gathered, as `calib_mode` reads it."""
    if calib_mode not in _GRAPH_CALIB_MODES or calib_mode == "none":
        raise MinimxError(f"calib_graph: calib_mode must be naive, entropy or customize, got "
                          f"{calib_mode!r} (a graph quantized with calib_mode='none' is final "
                          "as quantize_graph returns it)")
    if quantized_dtype not in QUANTIZED_DTYPES:
        raise MinimxError(f"calib_graph: unknown quantized_dtype {quantized_dtype!r}, expected "
                          f"one of {', '.join(QUANTIZED_DTYPES)}")
    field = "hist_dict" if calib_mode == "entropy" else "min_max_dict"
    table = getattr(collector, field, None)
    if not isinstance(table, Mapping):
        raise MinimxError(f"calib_graph: calib_mode={calib_mode!r} reads the collector's "
                          f"{field}, which {type(collector).__name__} does not have")
    if calib_mode == "entropy":
        if logger is not None:
            logger.info("Calculating optimal thresholds for quantization")
        return _get_optimal_thresholds(table, quantized_dtype, logger=logger)
    return {name: _range(name, value) for name, value in table.items()}


def _range(name: str, value: Any) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        low = high = math.nan
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise MinimxError(f"calib_graph: the range of {name} must be (min, max), two finite "
                          f"numbers with min <= max; the collector has {value!r}")
    return low, high


def _check_covered(qsym: Symbol, ranges: Ranges) -> None:
    """MinimxError for nodes that would be left without the range they were quantized
    for (MXNet leaves them to run-time ranges, or to fail at the first forward)."""
    missing = {name: node.name for name, node in calibrated_nodes(qsym) if name not in ranges}
    if missing:
        raise MinimxError(
            f"calib_graph: the collector has no range for {', '.join(missing)} (read by "
            f"{', '.join(missing.values())}); run the float model over the calibration data "
            "with collector.collect as its executor's monitor callback (monitor_all=True), "
            "bound without a subgraph backend (MINIMX_SUBGRAPH_BACKEND=NONE), which would "
            "hide the outputs of the layers it fuses")


def _check_params(sym: Symbol, arg_params: Mapping[str, NDArray],
                  aux_params: Mapping[str, NDArray], data_names: Sequence[str],
                  label_names: Sequence[str] | None) -> None:
    """MinimxError for parameters calibration would run without (MXNet's
    ``set_params`` refuses them too): it would calibrate on zeros in their place."""
    arguments = sym.list_arguments()
    if not set(data_names) <= set(arguments):
        return   # calibration refuses the data_names first, naming them
    fed = {*data_names, *(label_names or ())}
    missing = [name for name in arguments if name not in fed and name not in arg_params]
    missing += [name for name in sym.list_auxiliary_states() if name not in aux_params]
    if missing:
        raise MinimxError(f"quantization: calibration needs every parameter, and "
                          f"{', '.join(missing)} are in neither arg_params nor aux_params "
                          f"(data_names: {', '.join(data_names)}; label_names: "
                          f"{', '.join(label_names or ()) or 'none'})")


def _check_runtime_ranges(qsym: Symbol) -> None:
    """MinimxError for quantized operators that cannot find their output range at
    run time (MXNet's quantized BatchNorm fails at the first forward)."""
    needing = [n.name for n in topo_order(qsym.outputs)
               if n.op == "_contrib_quantized_batch_norm"]
    if needing:
        raise MinimxError(f"quantization: calib_mode='none' leaves {', '.join(needing)} "
                          "(_contrib_quantized_batch_norm) without the calibrated output range "
                          "it needs; calibrate (calib_mode='naive' or 'entropy') or exclude "
                          "those BatchNorms")


def _check_int8_types(qsym: Symbol, data_names: Sequence[str]) -> None:
    """DTypeError now for what MXNet refuses at the first forward: int8 data into a
    quantized operator that takes uint8 only (`_contrib_quantized_conv`: MXNet's
    CPU convolution outside the fused ``_sg_mkldnn_conv``)."""
    try:
        qsym.infer_type(**{name: "float32" for name in data_names})
    except DTypeError as exc:
        if "(_contrib_quantized_conv)" not in str(exc):
            raise
        raise DTypeError(f"quantization: {exc}. int8 comes from quantized_dtype='int8', "
                         "from 'auto' on a range below 0 or not calibrated, and from a "
                         "quantized BatchNorm: use quantize_model_mkldnn, or "
                         "quantized_dtype='uint8', or exclude the layer or the BatchNorm "
                         "before it") from None


def quantize_params(qsym: Symbol, params: Mapping[str, NDArray]) -> dict[str, NDArray]:
    """The arguments `qsym` reads: ``<p>_quantize`` (with ``_min``, ``_max``) computed
    from ``<p>`` as MXNet's ``_quantize_params`` does, the others as given."""
    out: dict[str, NDArray] = {}
    for name in qsym.list_arguments():
        if name.endswith(("weight_quantize", "bias_quantize")):
            value = _float_param(params, name).asnumpy()
            lo, hi = (nd_array([v], ctx=cpu()) for v in (value.min(), value.max()))
            outputs = invoke_by_name("_contrib_quantize",
                                     [nd_array(value, ctx=cpu()), lo, hi],
                                     {"out_type": "int8"})
            q, qmin, qmax = outputs if isinstance(outputs, list) else [outputs]
            out.update({name: q, f"{name}_min": qmin, f"{name}_max": qmax})
        elif name in params:
            out[name] = params[name]
    return out


def _float_param(params: Mapping[str, NDArray], name: str) -> NDArray:
    source = name[:-len("_quantize")]
    if source not in params:
        raise MinimxError(f"quantization: {name} is {source} quantized, and arg_params has no "
                          f"{source} (give the float model's arg_params, not quantized ones)")
    return params[source]
