"""Symbols (`mx.sym`): graph building, inference, JSON, binding.

One function per registered operator (and alias) is generated here from the
registry, e.g. ``mx.sym.Convolution``.
"""
from typing import Any

from ..ndarray.random_namespace import RandomFunctions
from ..ops import get_op, list_ops, namespace_modules
from .functions import arange, full, maximum, minimum, ones, pow, power, zeros
from .json_format import load, load_json
from .register import Group, Variable, make_op_function, var
from .symbol import NotImplementedForSymbol, Symbol

for _name in list_ops():
    globals()[_name] = make_op_function(get_op(_name), _name)
del _name

# mx.sym.contrib and mx.sym.linalg: the _contrib_ and _linalg_ operators by MXNet's short
# names (mx.sym.contrib.box_nms, mx.sym.linalg.gemm2).
globals().update(namespace_modules(__name__, make_op_function))
# mx.sym.random: the samplers by MXNet's names.
random = RandomFunctions(Symbol, make_op_function, imperative=False)

__all__ = ["NotImplementedForSymbol", "Symbol", "contrib", "linalg", "random", "Variable", "var",
           "Group", "load", "load_json", "zeros", "ones", "full", "arange", "maximum",
           "minimum", "power", "pow"]


def __getattr__(name: str) -> Any:
    # Tells type checkers that the generated operator functions above exist;
    # at run time it is reached only for names that do not.
    raise AttributeError(f"module 'minimx.symbol' has no attribute {name!r}")
