"""Checkpoints in MXNet's layout: ``prefix-symbol.json`` and ``prefix-%04d.params``.

Parameters are saved in one NDArray file as a dict whose keys carry MXNet's
``arg:`` / ``aux:`` prefixes.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from .base import GraphFormatError
from .ndarray import NDArray, load, save
from .symbol import Symbol
from .symbol import load as load_symbol


class BatchEndParam(NamedTuple):
    """What `Module.fit` and `score` hand to batch-end callbacks."""

    epoch: int
    nbatch: int
    eval_metric: Any
    locals: dict[str, Any]


def save_checkpoint(prefix: str, epoch: int, symbol: Symbol | None,
                    arg_params: Mapping[str, NDArray], aux_params: Mapping[str, NDArray]) -> None:
    """Write ``prefix-symbol.json`` (if `symbol` is given) and ``prefix-%04d.params``."""
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json")
    params = {f"arg:{k}": v for k, v in arg_params.items()}
    params.update({f"aux:{k}": v for k, v in aux_params.items()})
    save(f"{prefix}-{epoch:04d}.params", params)


def load_params(fname: str) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """(arg_params, aux_params) of an MXNet params file with ``arg:``/``aux:`` keys."""
    data = load(fname)
    if not isinstance(data, dict):
        raise GraphFormatError(f"{fname}: holds an unnamed list; a checkpoint needs "
                               "'arg:'/'aux:' names")
    arg_params: dict[str, NDArray] = {}
    aux_params: dict[str, NDArray] = {}
    for key, value in data.items():
        kind, _, name = key.partition(":")
        if kind == "arg" and name:
            arg_params[name] = value
        elif kind == "aux" and name:
            aux_params[name] = value
        else:
            raise GraphFormatError(f"{fname}: key {key!r} has neither an 'arg:' nor an "
                                   "'aux:' prefix")
    return arg_params, aux_params


def load_checkpoint(prefix: str, epoch: int
                    ) -> tuple[Symbol, dict[str, NDArray], dict[str, NDArray]]:
    """(symbol, arg_params, aux_params) saved by `save_checkpoint` or by MXNet."""
    symbol = load_symbol(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(f"{prefix}-{epoch:04d}.params")
    return symbol, arg_params, aux_params
