"""Symbols (`mx.sym`): graph building, inference, JSON, binding.

One function per registered operator (and alias) is generated here from the
registry, e.g. ``mx.sym.Convolution``.
"""
from typing import Any

from ..ndarray.random_namespace import RandomFunctions
from ..ops import op_functions
from . import control_flow, functions
from .functions import (
    arange,
    eye,
    full,
    histogram,
    hypot,
    linspace,
    maximum,
    minimum,
    ones,
    pow,
    power,
    split_v2,
    zeros,
)
from .json_format import load, load_json
from .register import Group, Variable, make_op_function, var
from .symbol import NotImplementedForSymbol, Symbol

# mx.sym.<Op>, mx.sym.op, and mx.sym.contrib and mx.sym.linalg (the _contrib_ and _linalg_
# operators by MXNet's short names: mx.sym.contrib.box_nms), as MXNet's.
globals().update(op_functions(__name__, make_op_function))
# ... and MXNet's Python control flow, which builds _foreach, _while_loop and _cond nodes,
# and its rand_zipfian and AdamW fronts.
for _fn in (control_flow.foreach, control_flow.while_loop, control_flow.cond,
            functions.rand_zipfian, functions.adamw_update, functions.mp_adamw_update):
    setattr(globals()["contrib"], _fn.__name__, _fn)
del _fn
# mx.sym.random: the samplers by MXNet's names.
random = RandomFunctions(Symbol, make_op_function, imperative=False)

__all__ = ["NotImplementedForSymbol", "Symbol", "contrib", "linalg", "random", "Variable", "var",
           "Group", "load", "load_json", "zeros", "ones", "full", "arange", "eye", "linspace",
           "maximum", "minimum", "power", "pow", "hypot", "split_v2", "histogram",
           "op"]


def __getattr__(name: str) -> Any:
    # Tells type checkers that the generated operator functions above exist;
    # at run time it is reached only for names that do not.
    raise AttributeError(f"module 'minimx.symbol' has no attribute {name!r}")
