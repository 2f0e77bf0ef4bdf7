"""`_histogram` (`mx.nd.histogram`): counts of the flattened data in bins, and the
bin edges, as MXNet 1.9's src/operator/tensor/histogram-inl.h.

The bins are either `bin_cnt` equal bins over `range` (one input) or the edges
given as a second input `bins`. Values outside the edges are not counted; the
last bin includes its right edge. Counts are int64, edges keep their dtype.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError
from .infer import Shape, merge, merge_dtype
from .params import Params
from .registry import OpContext, OpDef, Param, register

Array = np.ndarray


def _equal_bins(p: Params) -> bool:
    if p.bin_cnt is None:
        return False
    if p.range is None or len(p.range) != 2 or not p.range[0] <= p.range[1] or p.bin_cnt < 1:
        raise OperatorError(f"_histogram: bin_cnt={p.bin_cnt} needs a range (low, high) with "
                            f"low <= high and at least one bin, got range={p.range}")
    return True


def _edges(p: Params, inputs: list[Array]) -> Array:
    if _equal_bins(p):
        low, high = p.range
        return np.linspace(low, high, p.bin_cnt + 1).astype(inputs[0].dtype)
    bins = inputs[1]
    if bins.ndim != 1 or bins.size < 2:
        raise OperatorError(f"_histogram: bins must be a vector of at least 2 edges, got "
                            f"shape {bins.shape}")
    return bins


def _histogram_forward(p: Params, ctx: OpContext, inputs: list[Array]) -> list[Array]:
    edges = _edges(p, inputs)
    counts, _ = np.histogram(inputs[0], edges)
    return [counts.astype(np.int64), edges.copy()]


def _infer_histogram(p: Params, in_shapes: list[Shape], out_shapes: list[Shape]):
    edges = (p.bin_cnt + 1,) if _equal_bins(p) else in_shapes[1]
    if edges is None or not edges[0]:
        return in_shapes, out_shapes
    return in_shapes, [merge(out_shapes[0], (edges[0] - 1,)), merge(out_shapes[1], edges)]


def _infer_histogram_type(p: Params, in_types: list, out_types: list):
    edge_type = in_types[0] if _equal_bins(p) else in_types[1]
    return in_types, [merge_dtype(out_types[0], np.dtype(np.int64)),
                      merge_dtype(out_types[1], edge_type)]


register(OpDef(
    "_histogram", _histogram_forward,
    inputs=lambda p: ("data",) if _equal_bins(p) else ("data", "bins"),
    outputs=("output0", "output1"),
    params=(Param("bin_cnt", "int", None, "Number of bins for uniform case"),
            Param("range", "floats", None, "The lower and upper range of the bins. if not "
                  "provided, range is simply (a.min(), a.max()). values outside the range are "
                  "ignored. the first element of the range must be less than or equal to the "
                  "second. range affects the automatic bin computation as well. while bin "
                  "width is computed to be optimal based on the actual data within range, the "
                  "bin count will fill the entire range including portions containing no "
                  "data.")),
    infer_shape=_infer_histogram, infer_type=_infer_histogram_type,
    doc="Counts of the data in bin_cnt equal bins over range, or in the bins given, and "
        "the bin edges."))
