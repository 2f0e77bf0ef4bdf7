"""Contributed APIs, as in ``mxnet.contrib``: INT8 quantization, bfloat16 AMP, and
MXNet's other names of the contrib operators (``mx.contrib.nd.box_nms`` is
``mx.nd.contrib.box_nms``)."""
from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol
from . import amp, quantization

nd = ndarray
sym = symbol
quant = quantization   # MXNet's older name, which its example scripts import

__all__ = ["amp", "nd", "ndarray", "quant", "quantization", "sym", "symbol"]
