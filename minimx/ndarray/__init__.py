"""NDArrays (`mx.nd`): asynchronous arrays and one function per operator.

The functions ``mx.nd.<Op>`` are generated from the operator registry.
"""
from types import ModuleType
from typing import Any

from ..ops import contrib_names, get_op, list_ops
from .creation import arange, array, eye, full, linspace, ones, random, zeros
from .functions import maximum, minimum, pow, power
from .imperative import invoke, invoke_by_name, make_op_function
from .ndarray import NDArray, empty, waitall
from .serialization import load, save

for _name in list_ops():
    globals()[_name] = make_op_function(get_op(_name), _name)
del _name

# mx.nd.contrib: the _contrib_ operators by MXNet's short names (mx.nd.contrib.box_nms).
contrib = ModuleType(f"{__name__}.contrib", "The _contrib_ operators without their prefix.")
for _short, _name in contrib_names().items():
    setattr(contrib, _short, make_op_function(get_op(_name), _name))
del _short, _name

__all__ = ["NDArray", "contrib", "array", "empty", "zeros", "ones", "full", "arange", "linspace",
           "eye", "random",
           "invoke", "invoke_by_name", "save", "load", "waitall", "maximum", "minimum", "power",
           "pow"]


def __getattr__(name: str) -> Any:
    # Tells type checkers that the generated operator functions above exist;
    # at run time it is reached only for names that do not.
    raise AttributeError(f"module 'minimx.ndarray' has no attribute {name!r}")
