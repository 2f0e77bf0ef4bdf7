"""Nested inputs and outputs of a block as flat lists and back (MXNet's `_flatten`
and `_regroup`).

A format mirrors the nesting: 0 stands for one NDArray or one single-output
Symbol, k > 1 for a Symbol of k outputs (k arrays), -1 for None, and a list for
a list or tuple.
"""
from __future__ import annotations

from typing import Any

from ..ndarray import NDArray
from ..symbol import Symbol
from .errors import InputError

Format = int | list


def flatten(args: Any, what: str) -> tuple[list, Format]:
    """(the NDArrays / Symbols / Nones of `args` in order, its format); anything else
    raises InputError naming `what` ('input', or the block's name)."""
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        count = len(args.list_outputs())
        return [args], count if count > 1 else 0
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise InputError(f"When hybridized, the input of HybridBlock {what} must be (nested) list "
                    f"of Symbol or NDArray, but got {args} of type {type(args)}")
    flat: list = []
    fmts: list = []
    for item in args:
        items, fmt = flatten(item, what)
        flat.extend(items)
        fmts.append(fmt)
    return flat, fmts


def regroup(flat: list, fmt: Format) -> Any:
    """`flat` nested again as `fmt` says."""
    def merge(items: list, fmt: Format) -> tuple[Any, list]:
        if isinstance(fmt, int):
            if fmt == 0:
                return items[0], items[1:]
            if fmt == -1:
                return None, items[1:]
            return items[:fmt], items[fmt:]
        nested = []
        for sub in fmt:
            value, items = merge(items, sub)
            nested.append(value)
        return nested, items
    return merge(flat, fmt)[0]
