"""MXNet 1.9's Gluon entry to INT8: ``quantize_net_v2`` (and ``quantize_net``, its
older name), a float `SymbolBlock` in, a quantized `SymbolBlock` out.

As MXNet's: the block's graph and parameters are exported, fused for oneDNN
(``MKLDNN_QUANTIZE``), quantized and calibrated over `calib_data` by the float
graph where `calib_mode` asks for it (`model.quantize_calibrated`, as
`quantize_model`), fused again, and wrapped with its parameters, int8 as quantized, in a new
SymbolBlock whose inputs are the block's. minimx's Gluon blocks are
SymbolBlocks (``SymbolBlock.imports`` of a HybridBlock MXNet exported).
"""
from __future__ import annotations

import logging
import tempfile
import warnings
from collections.abc import Sequence
from typing import Any

from ...backends.dnnl.patterns import FUSED_OPS
from ...base import MinimxError
from ...context import Context
from ...gluon import DeferredInitializationError, InputError, SymbolBlock
from ...io import DataIter
from ...model import load_checkpoint
from ...ndarray import zeros
from ...subgraph.lift import inline
from ...symbol import var
from .mkldnn_fusion import mkldnn_quantize
from .model import _check_ctx, _check_graph_mode, quantize_calibrated


def quantize_net_v2(network: SymbolBlock, quantized_dtype: str = "auto",
                    quantize_mode: str = "full", quantize_granularity: str = "tensor-wise",
                    exclude_layers: Sequence[str] | None = None,
                    exclude_layers_match: Sequence[str] | None = None,
                    exclude_operators: Sequence[str] | None = None, calib_data: Any = None,
                    data_shapes: Sequence[Any] | None = None, calib_mode: str | None = "none",
                    num_calib_examples: int | None = None, ctx: Context | None = None,
                    LayerOutputCollector: Any = None,  # noqa: N803 (MXNet's name)
                    logger: logging.Logger | None = None) -> SymbolBlock:
    """`network` quantized, as a new SymbolBlock (`network` is left as it was).
    `exclude_layers` names nodes to keep in float32, `exclude_layers_match`
    adds every node whose name contains one of its strings, `exclude_operators`
    operator names. `calib_data` is a DataIter or an iterable of batches (a
    Gluon DataLoader of ``(data, label)``: the first arrays of a batch feed the
    block's inputs in order). `data_shapes`, which MXNet needs to run a
    HybridBlock before exporting it, may name the inputs (DataDescs or
    ``(name, shape)`` pairs); they must be the block's."""
    calib_mode = "none" if calib_mode is None else calib_mode
    if not isinstance(network, SymbolBlock):
        raise InputError(f"quantize_net_v2 takes a gluon SymbolBlock (minimx's Gluon blocks "
                         f"are SymbolBlocks: SymbolBlock.imports of an exported model), not "
                         f"{type(network).__name__}")
    _check_ctx(ctx)
    _check_graph_mode(calib_mode, LayerOutputCollector)
    if calib_mode != "none" and calib_data is None:
        raise MinimxError(f"calib_data must be provided when calib_mode={calib_mode}")
    data_names = network.input_names
    _check_data_shapes(data_shapes, data_names)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            network.export(f"{tmp}/net", 0)
        except DeferredInitializationError:   # as MXNet, a run on zeros gives their shapes
            network(*[zeros(shape) for shape in _input_shapes(data_shapes, calib_data)])
            network.export(f"{tmp}/net", 0)
        sym, args, auxs = load_checkpoint(f"{tmp}/net", 0)
    # A block partitioned for oneDNN (hybridize(backend='MKLDNN')) has its layers in
    # `_sg_dnnl` nodes, which the pass does not read: they go back to the layers, which
    # MKLDNN_QUANTIZE fuses as MXNet's pass meets its own fused nodes.
    sym = inline(sym, {"_sg_dnnl", *FUSED_OPS})
    excluded = list(exclude_layers or [])
    # MXNet's match also takes the variables it meets (weights), which its pass
    # then ignores; only operators can be excluded here.
    names = [str(s.name) for s in sym.get_internals() if s.get_children() is not None]
    for part in exclude_layers_match or []:
        excluded += [name for name in names if part in name]
    if logger is not None:
        logger.info("These layers have been excluded %s", excluded)
    qsym, qargs, qauxs = quantize_calibrated(
        mkldnn_quantize(sym), args, auxs, data_names, None, excluded, exclude_operators,
        calib_mode, calib_data, num_calib_examples, quantized_dtype, quantize_mode,
        quantize_granularity, LayerOutputCollector, logger)
    net = SymbolBlock(mkldnn_quantize(qsym), [var(name) for name in data_names])
    net.collect_params().load_dict({**{f"arg:{k}": v for k, v in qargs.items()},
                                    **{f"aux:{k}": v for k, v in qauxs.items()}},
                                   cast_dtype=True, dtype_source="saved")
    return net


def quantize_net(network: SymbolBlock, quantized_dtype: str = "auto",
                 quantize_mode: str = "full", exclude_layers: Sequence[str] | None = None,
                 exclude_layers_match: Sequence[str] | None = None,
                 exclude_operators: Sequence[str] | None = None, calib_data: Any = None,
                 data_shapes: Sequence[Any] | None = None, calib_mode: str | None = "none",
                 num_calib_examples: int | None = None, ctx: Context | None = None,
                 logger: logging.Logger | None = None) -> SymbolBlock:
    """`quantize_net_v2` with tensor-wise scales, under the name MXNet 1.9.1 marks
    as to be deprecated (with its warning)."""
    warnings.warn("WARNING: This will be deprecated after MXNet 2.0, please use "
                  "quantize_net_v2.", stacklevel=2)
    return quantize_net_v2(network, quantized_dtype, quantize_mode, "tensor-wise",
                           exclude_layers, exclude_layers_match, exclude_operators,
                           calib_data, data_shapes, calib_mode, num_calib_examples, ctx,
                           None, logger)


def _input_shapes(data_shapes: Sequence[Any] | None, calib_data: Any) -> list[tuple[int, ...]]:
    """The inputs' shapes, from `data_shapes` or a DataIter's `provide_data` (MXNet runs
    the block on zeros of them before exporting it)."""
    given = data_shapes or (calib_data.provide_data if isinstance(calib_data, DataIter)
                            else None)
    if not given:
        raise InputError("parameters wait for their shapes (deferred initialization): "
                         "give data_shapes, or calib_data as a DataIter")
    return [tuple(d.shape if hasattr(d, "shape") else d[1]) for d in given]


def _check_data_shapes(data_shapes: Sequence[Any] | None, data_names: list[str]) -> None:
    """`data_shapes`, where given, must name the block's inputs, in order."""
    if not data_shapes:
        return
    names = [d.name if hasattr(d, "name") else d[0] for d in data_shapes]
    if names != data_names[:len(names)]:
        raise InputError(f"data_shapes name {names}, but the block's inputs are {data_names}")
