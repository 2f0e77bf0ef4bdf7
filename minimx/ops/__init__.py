"""Operators: the registry and the numpy kernels of every operator.

Importing this package registers every operator module below.
"""
# Imported for their side effect: each module registers its operators.
from . import (  # noqa: F401
    activation,
    amp,
    conv,
    elemwise,
    linalg,
    nn,
    norm,
    pooling,
    quantization,
    reduce,
    tensor,
)
from .registry import OpContext, OpDef, canonical_ops, get_op, list_ops, register

__all__ = ["OpContext", "OpDef", "canonical_ops", "get_op", "list_ops", "register"]
