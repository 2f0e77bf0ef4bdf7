"""Checkpoints of networks built from RNN cells, as MXNet 1.9.1's `mx.rnn`:
parameters are saved unpacked (per gate, ``lstm_l0_i2h_i_weight``; a fused
cell's vector cut into its layers) so that fused and unfused cells read the
same files, and packed again on loading.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..model import load_checkpoint, save_checkpoint
from ..ndarray import NDArray
from ..symbol import Symbol
from .rnn_cell import BaseRNNCell

Cells = BaseRNNCell | Sequence[BaseRNNCell]


def _as_cells(cells: Cells) -> list[BaseRNNCell]:
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def save_rnn_checkpoint(cells: Cells, prefix: str, epoch: int, symbol: Symbol | None,
                        arg_params: Mapping[str, NDArray],
                        aux_params: Mapping[str, NDArray]) -> None:
    """`mx.model.save_checkpoint` with the cells' weights unpacked first."""
    args = dict(arg_params)
    for cell in _as_cells(cells):
        args = cell.unpack_weights(args)
    save_checkpoint(prefix, epoch, symbol, args, aux_params)


def load_rnn_checkpoint(cells: Cells, prefix: str, epoch: int
                        ) -> tuple[Symbol, dict[str, NDArray], dict[str, NDArray]]:
    """`mx.model.load_checkpoint` with the cells' weights packed again."""
    sym, args, aux = load_checkpoint(prefix, epoch)
    for cell in _as_cells(cells):
        args = cell.pack_weights(args)
    return sym, args, aux


def do_rnn_checkpoint(cells: Cells, prefix: str, period: int = 1
                      ) -> Callable[[int, Symbol | None, dict, dict], None]:
    """An epoch-end callback for `fit` that saves every `period` epochs (epoch
    numbers from 1) with `save_rnn_checkpoint`."""
    period = int(max(1, period))

    def _callback(iter_no: int, sym: Symbol | None = None, arg: dict | None = None,
                  aux: dict | None = None) -> None:
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg or {}, aux or {})
    return _callback
