"""Contributed APIs, as in ``mxnet.contrib``: INT8 quantization, bfloat16 AMP."""
from . import amp, quantization

__all__ = ["amp", "quantization"]
