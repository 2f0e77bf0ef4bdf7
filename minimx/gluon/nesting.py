"""Nested inputs and outputs of a block as flat lists and back: MXNet's `_flatten` and
`_regroup` (`ndarray.control_flow`'s) with NDArrays and Symbols as leaves, and None.

A format mirrors the nesting: 0 stands for one NDArray or one single-output
Symbol, k > 1 for a Symbol of k outputs (k arrays), -1 for None, and a list for
a list or tuple.
"""
from __future__ import annotations

from typing import Any

from ..ndarray import NDArray, control_flow
from ..symbol import Symbol
from .errors import InputError

Format = int | list


def _width(leaf: Any) -> int:
    count = len(leaf.list_outputs()) if isinstance(leaf, Symbol) else 0
    return count if count > 1 else 0


def flatten(args: Any, what: str) -> tuple[list, Format]:
    """(the NDArrays / Symbols / Nones of `args` in order, its format); anything else
    raises InputError naming `what` ('input', or the block's name)."""
    def refuse(arg: Any) -> InputError:
        return InputError(f"When hybridized, the input of HybridBlock {what} must be (nested) "
                          f"list of Symbol or NDArray, but got {arg} of type {type(arg)}")
    return control_flow.flatten(args, what, (NDArray, Symbol), _width, allow_none=True,
                                refuse=refuse)


def regroup(flat: list, fmt: Format) -> Any:
    """`flat` nested again as `fmt` says."""
    return control_flow.regroup(flat, fmt)[0]
