"""Making symbols: Variable, Group, arithmetic, and one function per operator.

`make_op_function` turns an `OpDef` into ``mx.sym.<Name>(*inputs, name=None,
attr=None, **params)``; missing inputs become Variables named
``<name>_<input>`` that carry the op's attributes, as MXNet makes them.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..attribute import HIDDEN_KEYS, stored_key
from ..attribute import current as current_attr_scope
from ..base import DTYPE_TO_FLAG, ArgumentError, ArgumentTypeError, MinimxError, as_dtype
from ..formats.params_file import STORAGE_TYPE_IDS
from ..graph import Node, NodeEntry
from ..name import current as current_name_manager
from ..ops.calling import split_call
from ..ops.fluent import FLUENT
from ..ops.params import format_value
from ..ops.registry import OpDef, get_op, is_hidden_attr
from .symbol import Symbol


def Variable(name: str, attr: dict | None = None, shape: Sequence[int] | int | None = None,
             lr_mult: float | None = None, wd_mult: float | None = None,
             dtype: Any = None, init: Any = None, stype: str | None = None,
             **kwargs: Any) -> Symbol:
    """A named input of a graph (an argument, or an auxiliary state once an op mutates it).

    `attr` and the active ``mx.AttrScope`` add attributes; further keywords are
    attributes too, of the form ``__key__`` or one of MXNet's hidden keys
    (``ctx_group='dev1'`` is stored as ``__ctx_group__``).
    """
    if not isinstance(name, str):
        raise ArgumentTypeError(f"Variable name must be a string, got {name!r}")
    if not name:
        raise ArgumentError("Variable name must not be empty")
    attrs = {stored_key(k): str(v) for k, v in current_attr_scope().get(attr).items()}
    if shape is not None:
        # One number is a 1-D shape, as MXNet reads `shape=(5)`.
        dims = (shape,) if isinstance(shape, int | np.integer) else shape
        attrs["__shape__"] = format_value(tuple(int(d) for d in dims))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(DTYPE_TO_FLAG[as_dtype(dtype)])
    if init is not None:
        # An mx.init.Initializer (a layer above) writes its own JSON.
        attrs["__init__"] = init if isinstance(init, str) else \
            init.dumps() if hasattr(init, "dumps") else json.dumps(init)
    if stype is not None:  # stored as MXNet's storage type id
        if stype not in STORAGE_TYPE_IDS:
            raise MinimxError(f"Variable {name}: unknown stype {stype!r} (one of "
                              f"{', '.join(STORAGE_TYPE_IDS)})")
        attrs["__storage_type__"] = str(STORAGE_TYPE_IDS[stype])
    for key, value in kwargs.items():
        stored = stored_key(key)
        if not is_hidden_attr(stored):
            raise ArgumentError(f"Variable {name}: attribute {key!r} must be of the form "
                                f"__key__ or one of {', '.join(HIDDEN_KEYS)}")
        attrs[stored] = str(value)
    return Symbol([NodeEntry(Node(None, name, attrs))])


var = Variable


def Group(symbols: Sequence[Symbol]) -> Symbol:
    """One symbol whose outputs are the outputs of `symbols`, in order."""
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise ArgumentTypeError("Group needs a non-empty list of Symbols")
    return Symbol([e for s in symbols for e in s.outputs])


_ZERO, _ONE = '["zero", {}]', '["one", {}]'
_BN_STATS = {3: _ZERO, 4: _ONE}  # moving_mean, moving_var
# The __init__ attributes MXNet 1.9.1's operators give their input variables, by input index.
_INPUT_VAR_INIT: dict[str, dict[int, str]] = {
    "BatchNorm": _BN_STATS,
    "_contrib_SyncBatchNorm": _BN_STATS,
    "_contrib_BatchNormWithReLU": _BN_STATS,
    "LeakyReLU": {1: '["Constant", {"value": 0.25}]'},  # prelu's gamma
    "UpSampling": {1: '["bilinear", {}]'},  # bilinear's weight (and nearest's arg1, as MXNet)
}


def set_input_var_init(node: Node) -> None:
    """MXNet's FSetInputVarAttrOnCompose: some operators give the variables at some
    inputs (made for them or the caller's) an ``__init__`` attribute unless they have one."""
    for index, init in _INPUT_VAR_INIT.get(node.op or "", {}).items():
        if index < len(node.inputs) and node.inputs[index].node.is_variable:
            node.inputs[index].node.attrs.setdefault("__init__", init)


def _single_entry(sym: Symbol, op: OpDef, input_name: str) -> NodeEntry:
    if len(sym.outputs) != 1:
        raise MinimxError(f"{op.name}: input {input_name} is a group of {len(sym.outputs)} "
                          "outputs; pass one output")
    return sym.outputs[0]


def create(op: OpDef, args: Sequence[Any], kwargs: dict[str, Any], hint: str) -> Symbol:
    """A new node of `op` applied to symbol inputs, as `mx.sym.<op>` makes it."""
    # MXNet's operator functions lower the hint; the name manager takes it as it is.
    name = current_name_manager().get(kwargs.pop("name", None), hint.lower())
    # As MXNet: `attr` and the active AttrScope join the keywords; hidden keys
    # such as lr_mult are stored as __lr_mult__, which no operator parses.
    kwargs.update(current_attr_scope().get(kwargs.pop("attr", None)))
    kwargs = {stored_key(k): v for k, v in kwargs.items()}
    names, tensors, attrs = split_call(op, args, kwargs, Symbol, name)
    inputs = []
    for input_name in names:
        if input_name in tensors:
            inputs.append(_single_entry(tensors[input_name], op, input_name))
        else:  # MXNet copies the op's attributes onto the variables it creates
            inputs.append(Variable(f"{name}_{input_name}", attr=attrs).outputs[0])
    node = Node(op, name, attrs, inputs)
    set_input_var_init(node)
    return Symbol([NodeEntry(node, i) for i in range(node.num_visible_outputs())])


def make_op_function(op: OpDef, called: str) -> Callable[..., Symbol]:
    """The generated ``mx.sym.<called>`` function of `op` (`called` may be an alias)."""
    def fn(*args: Any, **kwargs: Any) -> Symbol:
        return create(op, args, kwargs, hint=called)
    fn.__name__ = called
    fn.__qualname__ = called
    fn.__doc__ = op.docstring()
    return fn


def arith(lhs: Symbol, rhs: Any, sym_op: str, scalar_op: str, reverse: bool) -> Symbol:
    """``lhs <op> rhs`` (or ``rhs <op> lhs`` when `reverse`) as MXNet maps Python operators.

    The ops are called by MXNet's internal names (``_Plus``, ``_PlusScalar``), which
    give MXNet's automatic names: ``_plus0``, ``_plusscalar0``.
    """
    if isinstance(rhs, Symbol):
        a, b = (rhs, lhs) if reverse else (lhs, rhs)
        return create(get_op(sym_op), [a, b], {}, hint=sym_op)
    if isinstance(rhs, (int, float, np.number)):
        # MXNet writes the scalar as str() of the number given: ``x + 1`` has scalar "1",
        # ``x + np.float32(0.1)`` "0.1".
        scalar = str(rhs) if isinstance(rhs, np.number) else rhs
        return create(get_op(scalar_op), [lhs], {"scalar": scalar}, hint=scalar_op)
    return NotImplemented


# Fluent methods (ops.fluent): ``x.reshape((0, -1))``, ``x.sum(axis=1)``.
def _fluent(name: str, op_name: str) -> Callable[..., Symbol]:
    def method(self: Symbol, *args: Any, **kwargs: Any) -> Symbol:
        return create(get_op(op_name), [self, *args], kwargs, hint=op_name)
    method.__name__ = name
    method.__doc__ = f"``{op_name}`` applied to this symbol (see ``mx.sym.{op_name}``)."
    return method


for _name, _op in FLUENT.items():
    setattr(Symbol, _name, _fluent(_name, _op))
