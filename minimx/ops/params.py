"""Operator parameters: typed declarations parsed from MXNet's string forms.

MXNet stores every operator parameter as a string (``"(3, 3)"``, ``"True"``,
``"1e-05"``, ``"None"``); a `Param` knows how to parse one and how to write a
Python value back in the form MXNet writes.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import BFLOAT16, MXNET_BFLOAT16, as_dtype

REQUIRED = object()  # default of a parameter the user must give


class ParamParseError(ValueError):
    """A string that is not a valid value of a parameter's type."""


# MXNet's integer parameters are C integers: anything beyond 64 bits is a bad value.
_INT_RANGE = range(-2**63, 2**63)


def _integer(value: Any) -> int:
    """`value` as an integer parameter (integral floats such as ``3.0`` included)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamParseError("not an integer")
    if value not in _INT_RANGE:
        raise ParamParseError("out of the 64-bit integer range")
    return value


def _int(text: str) -> int:
    return _integer(ast.literal_eval(text.strip()))


def _float(text: str) -> float:
    t = text.strip().lower()
    if t in ("inf", "+inf", "infinity"):
        return float("inf")
    if t in ("-inf", "-infinity"):
        return float("-inf")
    return float(t)


def _bool(text: str) -> bool:
    t = text.strip()
    if t in ("True", "true", "1"):
        return True
    if t in ("False", "false", "0"):
        return False
    raise ParamParseError("not a boolean (True/true/1 or False/false/0)")


def _shape(text: str) -> tuple[int, ...]:
    value = ast.literal_eval(text.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        return (_integer(value),)
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ParamParseError("not a tuple of integers")
    return tuple(_integer(v) for v in value)


def _optional_ints(text: str) -> tuple[int | None, ...]:
    """A tuple whose entries are integers or None, as slice's begin, end and step."""
    value = ast.literal_eval(text.strip())
    value = value if isinstance(value, (tuple, list)) else (value,)
    if not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in value):
        raise ParamParseError("not a tuple of integers or None")
    return tuple(None if v is None else _integer(v) for v in value)


def _floats(text: str) -> tuple[float, ...]:
    """A tuple of floats (MXNet's Tuple<float>, e.g. MultiBoxPrior's sizes); one number
    is a tuple of one, as dmlc reads it."""
    value = ast.literal_eval(text.strip())
    value = value if isinstance(value, (tuple, list)) else (value,)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise ParamParseError("not a tuple of numbers")
    return tuple(float(v) for v in value)


def _axis(text: str) -> int | tuple[int, ...]:
    """An axis parameter: one integer or a tuple of them (``()`` means all)."""
    value = ast.literal_eval(text.strip())
    if isinstance(value, (tuple, list)):
        return _shape(text)
    return _int(text)


def _str(text: str) -> str:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    return t


def _dtype(text: str) -> np.dtype:
    return as_dtype(_str(text))


# The parsers by the type name shown in documentation and error messages.
PARSERS: dict[str, Callable[[str], Any]] = {
    "int": _int, "float": _float, "boolean": _bool, "Shape(tuple)": _shape,
    "int or tuple of int": _axis, "string": _str, "dtype": _dtype,
    "tuple of int or None": _optional_ints, "tuple of <float>": _floats,
}
_KIND_NAMES = {"int": "int", "float": "float", "bool": "boolean", "shape": "Shape(tuple)",
               "axis": "int or tuple of int", "str": "string", "dtype": "dtype",
               "optional_ints": "tuple of int or None", "floats": "tuple of <float>"}


def format_value(value: Any) -> str:
    """A Python value in the string form MXNet writes to JSON."""
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        # MXNet's structured bfloat16 dtype is ml_dtypes' here, named 'bfloat16'.
        return BFLOAT16.name if np.dtype(value) == MXNET_BFLOAT16 else np.dtype(value).name
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, np.integer):
        value = int(value)
    if isinstance(value, np.floating):
        value = float(value)
    return str(value)


@dataclass(frozen=True)
class Param:
    """One operator parameter: name, kind, default and documentation.

    kind is one of int, float, bool, shape, axis, str, dtype, optional_ints, floats. A parameter
    whose default is None, or that is `nullable` (None is a value besides the default,
    like slice_axis's required ``end`` or topk's ``axis=-1``), also accepts ``"None"``.
    """

    name: str
    kind: str
    default: Any = REQUIRED
    doc: str = ""
    choices: tuple[str, ...] | None = None
    nullable: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _KIND_NAMES:
            raise ValueError(f"unknown parameter kind {self.kind!r}")

    @property
    def type_name(self) -> str:
        name = _KIND_NAMES[self.kind]
        if self.choices:
            name = "{" + ", ".join(repr(c) for c in self.choices) + "}"
        return f"{name} or None" if self.accepts_none else name

    @property
    def accepts_none(self) -> bool:
        return self.default is None or self.nullable

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def parse(self, text: str) -> Any:
        """The value of one string form; `ParamParseError` when it is not one."""
        if self.accepts_none and text.strip() in ("None", ""):
            return None
        try:
            value = PARSERS[_KIND_NAMES[self.kind]](text)
        except ParamParseError as exc:
            raise ParamParseError(f"{text!r} is not a valid {self.type_name}: {exc}") from None
        # What Python's literal parser and float() raise on text that is no value.
        except (ValueError, SyntaxError, TypeError, ArithmeticError, MemoryError,
                RecursionError) as exc:
            raise ParamParseError(f"{text!r} is not a valid {self.type_name}") from exc
        if self.choices is not None and value not in self.choices:
            raise ParamParseError(f"{text!r} is not one of {', '.join(self.choices)}")
        return value


class Params(Mapping[str, Any]):
    """The parsed, immutable parameters of one node; values read as attributes.

    Like MXNet's NodeAttrs it also carries the node's subgraphs (Symbols), which
    subgraph operators need to name their inputs and outputs and to run, a
    `cache` where operators keep what they derive from these immutable values,
    and the node's `label` (``name (op)``) for kernels' error messages; neither
    takes part in equality.
    """

    __slots__ = ("_values", "_key", "subgraphs", "cache", "label")

    def __init__(self, values: Mapping[str, Any], subgraphs: tuple = (),
                 label: str = "") -> None:
        self._values = dict(values)
        self.subgraphs = tuple(subgraphs)
        self.label = label
        self.cache: dict[str, Any] = {}
        self._key = (tuple(sorted((k, repr(v)) for k, v in self._values.items())),
                     tuple(id(g) for g in self.subgraphs))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no parameter {name!r}") from None

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Params) and self._key == other._key

    def __repr__(self) -> str:
        return "Params(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"
