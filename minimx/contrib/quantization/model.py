"""``quantize_model`` and ``quantize_model_mkldnn``: MXNet 1.9's user-level API.

A float model in, ``(qsym, qarg_params, aux_params)`` out: the graph
quantized (`quantize_graph`), ranges calibrated on the user's data
(`calibration`, on the float graph the quantized one came from) and written
onto the graph, and the parameters the graph now reads quantized once:
each ``<name>_quantize`` argument is ``<name>`` quantized to int8 over its own
min and max (``_contrib_quantize``), with ``_min`` and ``_max`` beside it.
``quantize_model_mkldnn`` fuses before and after, as MXNet's
``MKLDNN_QUANTIZE`` backend does (`mkldnn_fusion`).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ...base import DTypeError, MinimxError
from ...context import Context, cpu
from ...graph.node import topo_order
from ...ndarray import NDArray, invoke_by_name
from ...ndarray import array as nd_array
from ...symbol import Symbol
from .calibration import CALIB_MODES, collect_ranges
from .mkldnn_fusion import align_concat_scales, fuse_float, fuse_requantize
from .quantize_graph import check_choices, quantize_symbol, set_calib_table

QuantizedModel = tuple[Symbol, dict[str, NDArray], dict[str, NDArray]]


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
    `data_names`."""
    calib_mode = "none" if calib_mode is None else calib_mode
    _check_call(ctx, calib_mode, calib_data, quantized_dtype, quantize_mode,
                quantize_granularity)
    if logger is not None:
        logger.info("Quantizing symbol")
    qsym, layers = quantize_symbol(sym, excluded_sym_names or (), excluded_op_names or (),
                                   offline_params=list(arg_params), quantized_dtype=quantized_dtype,
                                   quantize_mode=quantize_mode,
                                   quantize_granularity=quantize_granularity)
    if calib_mode == "none":
        _check_runtime_ranges(qsym)
    else:
        _check_params(sym, arg_params, aux_params, data_names, label_names)
        ranges = collect_ranges(sym, arg_params, aux_params, calib_data, calib_mode, layers,
                                data_names, num_calib_examples, quantized_dtype, logger)
        qsym = set_calib_table(qsym, ranges)
    _check_int8_types(qsym, data_names)
    if logger is not None:
        logger.info("Quantizing parameters")
    return qsym, quantize_params(qsym, arg_params), dict(aux_params)


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
        fuse_float(sym), arg_params, aux_params, data_names, label_names, ctx,
        excluded_sym_names, excluded_op_names, calib_mode, calib_data, num_calib_examples,
        quantized_dtype, quantize_mode, quantize_granularity, logger)
    return align_concat_scales(fuse_requantize(qsym)), qargs, auxs


def _check_call(ctx: Context | None, calib_mode: str, calib_data: Any, quantized_dtype: str,
                quantize_mode: str, quantize_granularity: str) -> None:
    if ctx is not None and not isinstance(ctx, Context):
        raise MinimxError(f"quantization: ctx must be one Context, got {ctx!r}")
    check_choices(quantized_dtype, quantize_mode, quantize_granularity)
    if calib_mode not in CALIB_MODES:
        raise MinimxError(f"quantization: unknown calib_mode {calib_mode!r}, expected one of "
                          f"{', '.join(CALIB_MODES)}")
    if calib_mode != "none" and calib_data is None:
        raise MinimxError(f"quantization: calib_data must be given when calib_mode="
                          f"{calib_mode!r}")


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
            value = params[name[:-len("_quantize")]].asnumpy()
            lo, hi = (nd_array([v], ctx=cpu()) for v in (value.min(), value.max()))
            outputs = invoke_by_name("_contrib_quantize",
                                     [nd_array(value, ctx=cpu()), lo, hi],
                                     {"out_type": "int8"})
            q, qmin, qmax = outputs if isinstance(outputs, list) else [outputs]
            out.update({name: q, f"{name}_min": qmin, f"{name}_max": qmax})
        elif name in params:
            out[name] = params[name]
    return out
