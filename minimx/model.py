"""Checkpoints in MXNet's layout: ``prefix-symbol.json`` and ``prefix-%04d.params``.

Parameters are saved in one NDArray file as a dict whose keys carry MXNet's
``arg:`` / ``aux:`` prefixes.
"""
from __future__ import annotations

import logging
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
    """Write ``prefix-symbol.json`` (if `symbol` is given) and ``prefix-%04d.params``,
    and log ``Saved checkpoint to "prefix-%04d.params"`` as MXNet does."""
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json")
    params = {f"arg:{k}": v for k, v in arg_params.items()}
    params.update({f"aux:{k}": v for k, v in aux_params.items()})
    save(_params_file(prefix, epoch), params)
    logging.info('Saved checkpoint to "%s"', _params_file(prefix, epoch))


def read_params(fname: str) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """(arg_params, aux_params) of the params file `fname`, split by the key
    prefixes ``arg:`` and ``aux:``. As in MXNet, an empty file gives two empty
    dicts and keys with another prefix (``opt:``) are skipped."""
    data = load(fname)
    if not data:  # MXNet saves an empty dict as an empty, unnamed list
        return {}, {}
    if not isinstance(data, dict):
        raise GraphFormatError(f"{fname}: holds an unnamed list; a checkpoint needs "
                               "'arg:'/'aux:' names")
    params: dict[str, dict[str, NDArray]] = {"arg": {}, "aux": {}}
    for key, value in data.items():
        kind, colon, name = key.partition(":")
        if not colon:
            raise GraphFormatError(f"{fname}: key {key!r} has neither an 'arg:' nor an "
                                   "'aux:' prefix")
        if kind in params:
            params[kind][name] = value
    return params["arg"], params["aux"]


def load_params(prefix: str, epoch: int) -> tuple[dict[str, NDArray], dict[str, NDArray]]:
    """(arg_params, aux_params) saved in ``prefix-%04d.params`` (MXNet's signature).

    >>> import minimx as mx
    >>> mx.model.save_checkpoint("net", 3, None, {"w": mx.nd.ones((2,))}, {})
    >>> mx.model.load_params("net", 3)[0]["w"].asnumpy()
    array([1., 1.], dtype=float32)
    """
    return read_params(_params_file(prefix, epoch))


def _params_file(prefix: str, epoch: int) -> str:
    return f"{prefix}-{epoch:04d}.params"


def load_checkpoint(prefix: str, epoch: int
                    ) -> tuple[Symbol, dict[str, NDArray], dict[str, NDArray]]:
    """(symbol, arg_params, aux_params) saved by `save_checkpoint` or by MXNet."""
    symbol = load_symbol(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
