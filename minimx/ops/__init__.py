"""Operators: the registry and the numpy kernels of every operator.

Importing this package registers every operator module below.
"""
from .registry import OpContext, OpDef, canonical_ops, get_op, list_ops, register
from . import activation, elemwise  # noqa: F401
from . import tensor, reduce, linalg  # noqa: F401
from . import conv, nn, norm, pooling  # noqa: F401

__all__ = ["OpContext", "OpDef", "canonical_ops", "get_op", "list_ops", "register"]
