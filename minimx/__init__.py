"""minimx: a lightweight runtime for MXNet-style symbolic models on CPUs.

>>> import minimx as mx
>>> x = mx.sym.Variable('x')
>>> y = mx.sym.relu(x * 2)
>>> y.eval(x=mx.nd.array([-1.0, 3.0]))[0].asnumpy()
array([0., 6.], dtype=float32)
"""
from . import (
    attribute,
    autograd,  # mx.autograd: recording NDArray operations, backward, grad
    backends,  # noqa: F401  (registers the built-in subgraph backends: default, DNNL)
    callback,
    contrib,  # quantization (calibration)
    engine,  # also MXNet's mx.engine: bulk, set_bulk_size
    feedforward,  # mx.model.FeedForward, MXNet 1.x's legacy model API (set below)
    gluon,  # mx.gluon.SymbolBlock: exported models for inference, and their parameters
    image,  # mx.image: decode, resize, crop, augment; ImageIter
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
    recordio,  # mx.recordio: MXNet's .rec / .idx files
    rnn,  # mx.rnn: symbolic RNN cells, BucketSentenceIter
    runtime,  # mx.runtime: Features
    subgraph,
    symbol,
    test_utils,  # mx.test_utils: the checks users' tests call
    util,
    viz,
)
from .attribute import AttrScope
from .base import (
    ArgumentError,
    ArgumentTypeError,
    AssertedError,
    BackendError,
    DataFileError,
    DTypeError,
    GraphFormatError,
    MinimxError,
    MXNetError,
    OperatorError,
    ShapeError,
)
from .context import Context, cpu, cpu_pinned, current_context, gpu
from .executor import Executor
from .util import (
    is_np_array,
    is_np_shape,
    np_array,
    np_shape,
    set_np_shape,
    use_np,
    use_np_array,
    use_np_shape,
)

# FeedForward is built on Module, a layer above model, so it joins mx.model from here.
setattr(model, "FeedForward", feedforward.FeedForward)  # noqa: B010
# mx.init.FusedRNN needs FusedRNNCell, a layer above the initializers: it joins mx.init here.
setattr(initializer, "FusedRNN", rnn.FusedRNN)  # noqa: B010

nd = ndarray
sym = symbol
init = initializer
mod = module
mon = monitor
kv = kvstore
img = image
random = ndarray.random
visualization = viz

__version__ = "0.1.0"

__all__ = ["ArgumentError", "ArgumentTypeError", "AssertedError", "AttrScope", "BackendError",
           "Context", "DataFileError", "DTypeError", "Executor",
           "GraphFormatError", "MinimxError", "MXNetError", "OperatorError", "ShapeError",
           "attribute", "autograd", "callback", "contrib", "cpu", "cpu_pinned", "current_context",
           "engine", "gluon", "gpu", "img", "init", "initializer", "image", "io",
           "is_np_array", "is_np_shape",
           "np_array", "np_shape", "runtime", "set_np_shape", "use_np", "use_np_array",
           "use_np_shape", "util",
           "kv", "kvstore", "lr_scheduler", "metric", "mod", "model", "models", "module", "mon",
           "monitor", "name", "nd", "ndarray", "onnx", "operator", "optimizer", "profiler",
           "random", "recordio", "rnn", "subgraph", "sym", "symbol", "test_utils", "visualization",
           "viz"]
