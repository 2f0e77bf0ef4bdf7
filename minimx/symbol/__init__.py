"""Symbols (`mx.sym`): graph building, inference, JSON, binding.

One function per registered operator (and alias) is generated here from the
registry, e.g. ``mx.sym.Convolution``.
"""
from types import ModuleType
from typing import Any

from ..ops import contrib_names, get_op, list_ops
from .functions import arange, full, maximum, minimum, ones, pow, power, zeros
from .json_format import load, load_json
from .register import Group, Variable, make_op_function, var
from .symbol import NotImplementedForSymbol, Symbol

for _name in list_ops():
    globals()[_name] = make_op_function(get_op(_name), _name)
del _name

# mx.sym.contrib: the _contrib_ operators by MXNet's short names (mx.sym.contrib.box_nms).
contrib = ModuleType(f"{__name__}.contrib", "The _contrib_ operators without their prefix.")
for _short, _name in contrib_names().items():
    setattr(contrib, _short, make_op_function(get_op(_name), _name))
del _short, _name

__all__ = ["NotImplementedForSymbol", "Symbol", "contrib", "Variable", "var", "Group", "load",
           "load_json", "zeros", "ones", "full", "arange", "maximum", "minimum", "power", "pow"]


def __getattr__(name: str) -> Any:
    # Tells type checkers that the generated operator functions above exist;
    # at run time it is reached only for names that do not.
    raise AttributeError(f"module 'minimx.symbol' has no attribute {name!r}")
