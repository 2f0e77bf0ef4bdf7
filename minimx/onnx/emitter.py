"""The ONNX graph under construction, kept free of the `onnx` package.

Translations (`registry`) append `OnnxNode` records and constant tensors to an `Emitter`;
only `minimx.onnx.export` turns them into protobuf messages, so the
translations can be read (and tested) without `onnx` installed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph.node import Node
from ..ops.params import Params


class Unsupported(Exception):
    """A node that the exporter cannot express in ONNX; the message says why."""


@dataclass
class OnnxNode:
    """One ONNX operator application: ``op_type(inputs) -> outputs`` with `attrs`.

    Attribute values are Python numbers, strings, lists of them, or numpy dtypes
    (written as ONNX tensor types)."""

    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    name: str


@dataclass
class Site:
    """What a translation sees of one minimx node: its parameters, the ONNX names of
    its inputs and outputs, and the shapes and dtypes inference gave them."""

    node: Node
    p: Params
    inputs: list[str]
    outputs: list[str]
    in_shapes: list[tuple[int, ...]]
    out_shapes: list[tuple[int, ...]]
    in_dtypes: list[np.dtype]
    dtype: np.dtype       # of the first input (of the output for nodes with no input)
    dynamic: bool         # the exported inputs have free dimensions

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def ndim(self) -> int:
        """Rank of the first input."""
        return len(self.in_shapes[0])

    def needs_fixed_shapes(self) -> None:
        """For translations that write the export's shapes into the graph: refuse when
        the inputs' dimensions are left free, rather than give wrong numbers."""
        if self.dynamic:
            raise Unsupported("needs fixed input shapes (dynamic=True)")


@dataclass
class Emitter:
    """The nodes and constants of the ONNX graph, with the names they already use."""

    nodes: list[OnnxNode] = field(default_factory=list)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def fresh(self, hint: str) -> str:
        """A tensor name not used yet: `hint` itself, or `hint` with a number."""
        name, k = hint, 0
        while name in self.used:
            k += 1
            name = f"{hint}_{k}"
        self.used.add(name)
        return name

    def const(self, hint: str, value: Any, dtype: Any = None) -> str:
        """A constant tensor (an initializer); returns its name."""
        name = self.fresh(hint)
        self.constants[name] = np.array(value, dtype=dtype)
        return name

    def ints(self, hint: str, values: list[int] | tuple[int, ...]) -> str:
        """A 1-D int64 constant, the form ONNX takes shapes, axes and indices in."""
        return self.const(hint, list(values), np.int64)

    def add(self, op_type: str, inputs: list[str], output: str | None = None,
            hint: str = "", **attrs: Any) -> str:
        """Append ``op_type(inputs)``; returns its (single) output's name.

        `output` is a name already reserved (a node's final output); otherwise a fresh
        name is made from `hint`."""
        out = output if output is not None else self.fresh(hint or op_type.lower())
        self.nodes.append(OnnxNode(op_type, list(inputs), [out], attrs, out))
        return out
