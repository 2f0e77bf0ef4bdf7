"""minimx: a lightweight runtime for MXNet-style symbolic models on CPUs.

>>> import minimx as mx
>>> x = mx.sym.Variable('x')
>>> y = mx.sym.relu(x * 2)
>>> y.eval(x=mx.nd.array([-1.0, 3.0]))[0].asnumpy()
array([0., 6.], dtype=float32)
"""
from . import (
    attribute,
    backends,  # noqa: F401  (registers the built-in subgraph backends: default, DNNL)
    callback,
    contrib,  # quantization (calibration)
    initializer,
    io,
    kvstore,
    lr_scheduler,
    metric,
    model,
    models,  # symbol builders of the gluon model zoo
    module,
    monitor,
    name,
    ndarray,
    onnx,  # mx.onnx.export_model (needs the optional onnx package only when called)
    operator,  # mx.operator: Python custom operators
    optimizer,
    profiler,
    rnn,  # mx.rnn: symbolic RNN cells, BucketSentenceIter
    subgraph,
    symbol,
    viz,
)
from .attribute import AttrScope
from .base import BackendError, DTypeError, GraphFormatError, MinimxError, OperatorError, ShapeError
from .context import Context, cpu, current_context, gpu
from .executor import Executor

nd = ndarray
sym = symbol
init = initializer
mod = module
mon = monitor
kv = kvstore
random = ndarray.random
visualization = viz

__version__ = "0.1.0"

__all__ = ["AttrScope", "BackendError", "Context", "DTypeError", "Executor", "GraphFormatError",
           "MinimxError", "OperatorError", "ShapeError", "attribute", "callback", "contrib", "cpu",
           "current_context", "gpu", "init", "initializer", "io", "kv", "kvstore", "lr_scheduler",
           "metric", "mod", "model", "models", "module", "mon", "monitor", "name", "nd", "ndarray",
           "onnx", "operator", "optimizer", "profiler", "random", "rnn", "subgraph", "sym",
           "symbol", "visualization", "viz"]
