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
    correlation,
    creation,
    ctc,
    custom,
    deformable,
    deformable_psroi,
    elemwise,
    gather,
    im2col,
    indexing,
    la_op,
    layout,
    linalg,
    loss,
    multi_tensor,
    multibox,
    nn,
    norm,
    optimizer_ops,
    ordering,
    pdf,
    pooling,
    proposal,
    quantization,
    quantized_nlp,
    random,
    reduce,
    resampling,
    rnn,
    roi,
    sequence,
    slicing,
    spatial,
    tensor,
)
from .registry import (
    OpContext,
    OpDef,
    canonical_ops,
    get_op,
    list_ops,
    namespace_modules,
    register,
)

__all__ = ["OpContext", "OpDef", "canonical_ops", "get_op", "list_ops", "namespace_modules",
           "register"]
