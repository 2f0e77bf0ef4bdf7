"""The translated graph as an ONNX ``ModelProto``, checked and saved: the part of
the export that needs the optional `onnx` package (``pip install 'minimx[onnx]'``)."""
from __future__ import annotations

import logging
from typing import Any

import numpy as np
import onnx
from onnx import checker, helper, numpy_helper, shape_inference

from ..formats.atomic import atomic_write
from .emitter import OnnxNode
from .export import Exported
from .registry import OPSET

IR_VERSION = 8  # the IR of opset 17 (onnx 1.12): runtimes of that age read the file

_log = logging.getLogger(__name__)


def _attr(value: Any) -> Any:
    """An attribute value as `helper.make_node` takes it (dtypes as tensor types)."""
    return helper.np_dtype_to_tensor_dtype(value) if isinstance(value, np.dtype) else value


def _node(n: OnnxNode) -> onnx.NodeProto:
    return helper.make_node(n.op_type, n.inputs, n.outputs, name=n.name,
                            **{k: _attr(v) for k, v in n.attrs.items()})


def _value_info(name: str, dtype: np.dtype, dims: Any) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(dtype), dims)


def to_bytes(exported: Exported, run_shape_inference: bool = False) -> bytes:
    """The serialized ONNX model of `exported` (opset `OPSET`), checked by ONNX's checker."""
    e = exported.emitter
    graph = helper.make_graph(
        [_node(n) for n in e.nodes], "minimx_converted_model",
        [_value_info(*i) for i in exported.inputs], [_value_info(*o) for o in exported.outputs],
        initializer=[numpy_helper.from_array(np.asarray(v, order="C"), name)
                     for name, v in e.constants.items()])
    model = helper.make_model(graph, producer_name="minimx", ir_version=IR_VERSION,
                              opset_imports=[helper.make_opsetid("", OPSET)])
    if run_shape_inference:
        # As MXNet's exporter: the model stays as it is if ONNX's inference fails.
        try:
            model = shape_inference.infer_shapes(model)
        except Exception as exc:  # noqa: BLE001  (onnx raises several kinds)
            _log.info("ONNX shape inference failed (%s); the model is kept without it", exc)
    data = model.SerializeToString()  # once: large models take a while
    checker.check_model(data)
    return data


def save(data: bytes, path: str) -> None:
    """Write a serialized model to `path` whole (a failed write leaves the old file)."""
    with atomic_write(path) as f:
        f.write(data)
