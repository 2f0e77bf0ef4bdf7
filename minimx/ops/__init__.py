"""Operators: the registry and the numpy kernels of every operator.

Importing this package registers every operator module below.
"""
# Imported for their side effect: each module registers its operators.
from . import (  # noqa: F401
    activation,
    amp,
    attention,
    boxes,
    broadcast,
    conv,
    creation,
    elemwise,
    indexing,
    layout,
    linalg,
    nn,
    norm,
    ordering,
    pooling,
    quantization,
    reduce,
    resampling,
    rnn,
    roi,
    sequence,
    slicing,
    tensor,
)
from .registry import (
    OpContext,
    OpDef,
    canonical_ops,
    contrib_names,
    get_op,
    list_ops,
    register,
)

__all__ = ["OpContext", "OpDef", "canonical_ops", "contrib_names", "get_op", "list_ops",
           "register"]
