"""NDArrays (`mx.nd`): asynchronous arrays and one function per operator.

The functions ``mx.nd.<Op>`` are generated from the operator registry.
"""
from typing import Any

from ..ops import op_functions
from . import control_flow, functions
from .creation import arange, array, eye, full, linspace, ones, zeros
from .dlpack import from_dlpack, to_dlpack_for_read, to_dlpack_for_write
from .functions import (
    add,
    concatenate,
    divide,
    equal,
    from_numpy,
    greater,
    greater_equal,
    histogram,
    imdecode,
    lesser,
    lesser_equal,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    modulo,
    moveaxis,
    multiply,
    not_equal,
    onehot_encode,
    pow,
    power,
    split_v2,
    subtract,
    true_divide,
)
from .imperative import invoke, invoke_by_name, make_op_function
from .ndarray import NDArray, empty, waitall
from .random_namespace import RandomFunctions
from .serialization import load, load_frombuffer, save

# mx.nd.<Op>, mx.nd.op, and mx.nd.contrib and mx.nd.linalg (the _contrib_ and _linalg_
# operators by MXNet's short names: mx.nd.contrib.box_nms), as MXNet's.
globals().update(op_functions(__name__, make_op_function))
# ... and MXNet's eager control flow, which runs the user's functions in Python, and its
# other Python functions there.
for _fn in (control_flow.foreach, control_flow.while_loop, control_flow.cond, functions.isinf,
            functions.isfinite, functions.isnan, functions.rand_zipfian,
            functions.adamw_update, functions.mp_adamw_update,
            functions.multi_adamw_update, functions.multi_mp_adamw_update,
            functions.multi_lamb_update, functions.multi_mp_lamb_update):
    setattr(globals()["contrib"], _fn.__name__, _fn)
del _fn
# mx.nd.random: the samplers by MXNet's names; also mx.random (its seed).
random = RandomFunctions(NDArray, make_op_function, imperative=True)



__all__ = ["NDArray", "contrib", "linalg", "array", "empty", "zeros", "ones", "full", "arange",
           "linspace", "eye", "random",
           "invoke", "invoke_by_name", "save", "load", "load_frombuffer", "waitall", "maximum",
           "minimum", "power", "pow", "split_v2", "histogram", "add", "subtract", "multiply",
           "divide", "true_divide", "modulo", "equal", "not_equal", "greater", "greater_equal",
           "lesser", "lesser_equal", "logical_and", "logical_or", "logical_xor", "concatenate",
           "moveaxis", "onehot_encode", "from_numpy", "op", "to_dlpack_for_read",
           "to_dlpack_for_write", "from_dlpack", "imdecode"]


def __getattr__(name: str) -> Any:
    # Tells type checkers that the generated operator functions above exist;
    # at run time it is reached only for names that do not.
    raise AttributeError(f"module 'minimx.ndarray' has no attribute {name!r}")
