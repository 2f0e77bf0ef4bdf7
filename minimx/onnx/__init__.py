"""Export to ONNX, as MXNet 1.9's ``mxnet.onnx``: ``mx.onnx.export_model``.

Needs the optional `onnx` package (``pip install 'minimx[onnx]'``); minimx imports
without it, and `export_model` says how to get it when it is missing.

>>> import minimx as mx
>>> "Convolution" in mx.onnx.get_operator_support()
True
"""
from __future__ import annotations

from .export import OnnxNotInstalledError, export_model
from .registry import OPSET, TRANSLATIONS


def get_operator_support(opset_version: int | None = None) -> list[str]:
    """The operators `export_model` translates, sorted (MXNet's function of the same
    name; every translation writes opset `OPSET`, so `opset_version` is ignored)."""
    return sorted(TRANSLATIONS)


__all__ = ["OPSET", "OnnxNotInstalledError", "export_model", "get_operator_support"]
