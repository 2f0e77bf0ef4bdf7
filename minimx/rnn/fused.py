"""`FusedRNNCell`: every layer and step in one `RNN` operator, with one packed
parameter vector (``<prefix>parameters``) laid out as MXNet 1.9.1's (all
weights layer by layer, direction by direction, gate by gate, i2h before h2h;
then the biases in the same order), and its initializer `FusedRNN`.

`unfuse()` gives the same network as separate cells, whose weights
`unpack_weights` cuts out of the vector (``lstm_l0_i2h_i_weight``, ...).

>>> import minimx as mx
>>> cell = mx.rnn.FusedRNNCell(8, num_layers=2, mode="gru", prefix="gru_")
>>> out, _ = cell.unroll(5, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
>>> out.list_arguments(), out.infer_shape(data=(5, 3, 4))[1]
(['data', 'gru_parameters'], [(5, 3, 8)])
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .. import symbol
from ..base import MinimxError
from ..initializer import InitDesc, Initializer, create, register
from ..ndarray import NDArray, zeros
from ..symbol import Symbol
from .composite import BidirectionalCell, DropoutCell, SequentialRNNCell
from .rnn_cell import (
    BaseRNNCell,
    GRUCell,
    Inputs,
    LSTMCell,
    RNNCell,
    RNNParams,
    normalize_sequence,
)

GATES = {"rnn_relu": ("",), "rnn_tanh": ("",), "lstm": ("_i", "_f", "_c", "_o"),
         "gru": ("_r", "_z", "_o")}


class FusedRNNCell(BaseRNNCell):
    """`num_layers` layers of `mode` ('rnn_relu', 'rnn_tanh', 'lstm', 'gru') as one
    `RNN` node; `get_next_state` makes the last states outputs too."""

    can_step = False

    def __init__(self, num_hidden: int, num_layers: int = 1, mode: str = "lstm",
                 bidirectional: bool = False, dropout: float = 0.,
                 get_next_state: bool = False, forget_bias: float = 1.0,
                 prefix: str | None = None, params: RNNParams | None = None) -> None:
        if mode not in GATES:
            raise MinimxError(f"FusedRNNCell: mode={mode!r}: must be one of "
                              f"{', '.join(GATES)}")
        super().__init__(prefix=f"{mode}_" if prefix is None else prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        initializer = FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=initializer)

    @property
    def _parameter_name(self) -> str:
        return str(self._parameter.name)

    @property
    def state_info(self) -> list[dict[str, Any]]:
        shape = (len(self._directions) * self._num_layers, 0, self._num_hidden)
        return [{"shape": shape, "__layout__": "LNC"}
                for _ in range(2 if self._mode == "lstm" else 1)]

    @property
    def _gate_names(self) -> Sequence[str]:
        return GATES[self._mode]

    def _layout(self, num_input: int) -> dict[str, tuple[int, tuple[int, ...]]]:
        """Where each unfused weight and bias sits in the packed vector: (offset,
        shape), for an input `num_input` wide."""
        hidden, layout, position = self._num_hidden, {}, 0
        width = len(self._directions) * hidden
        for kind in ("weight", "bias"):
            for layer in range(self._num_layers):
                for direction in self._directions:
                    for group in ("i2h", "h2h"):
                        for gate in self._gate_names:
                            name = f"{self._prefix}{direction}{layer}_{group}{gate}_{kind}"
                            shape: tuple[int, ...] = (hidden,) if kind == "bias" else (
                                hidden, hidden if group == "h2h" else
                                num_input if layer == 0 else width)
                            layout[name] = (position, shape)
                            position += math.prod(shape)
        return layout

    def _checked_layout(self, size: int, num_input: int
                        ) -> dict[str, tuple[int, tuple[int, ...]]]:
        layout = self._layout(num_input)
        offset, shape = layout[next(reversed(layout))]
        if offset + math.prod(shape) != size:
            raise MinimxError(f"FusedRNNCell {self._prefix!r}: parameters of size {size} do "
                              f"not fit the cell ({self._num_layers} layers of "
                              f"{self._num_hidden} {self._mode} units)")
        return layout

    def unpack_weights(self, args: dict[str, NDArray]) -> dict[str, NDArray]:
        args = dict(args)
        arr = args.pop(self._parameter_name)
        b, m, h = len(self._directions), len(self._gate_names), self._num_hidden
        num_input = arr.size // b // h // m - (self._num_layers - 1) * (h + b * h + 2) - h - 2
        for name, (offset, shape) in self._checked_layout(arr.size, num_input).items():
            args[name] = arr[offset:offset + math.prod(shape)].reshape(shape).copy()
        return args

    def pack_weights(self, args: dict[str, NDArray]) -> dict[str, NDArray]:
        args = dict(args)
        first = args[f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"]
        layout = self._layout(first.shape[1])
        offset, shape = layout[next(reversed(layout))]
        arr = zeros((offset + math.prod(shape),), dtype=first.dtype)
        for name, (offset, shape) in layout.items():
            size = math.prod(shape)
            arr[offset:offset + size] = args.pop(name).reshape((size,))
        args[self._parameter_name] = arr
        return args

    def unroll(self, length: int, inputs: Inputs, begin_state: list[Symbol] | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None
               ) -> tuple[Any, list[Symbol]]:
        self.reset()
        data, axis = normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for "
                          "faster speed", stacklevel=2)
            data = symbol.swapaxes(data, dim1=0, dim2=1)
        begin_state = self.begin_state() if begin_state is None else begin_state
        names = ("state", "state_cell") if self._mode == "lstm" else ("state",)
        rnn = symbol.RNN(data=data, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional,
                         p=self._dropout, state_outputs=self._get_next_state,
                         mode=self._mode, name=f"{self._prefix}rnn",
                         **dict(zip(names, begin_state, strict=True)))
        if self._get_next_state:
            states = [rnn[k + 1] for k in range(len(names))]
            for state in states:
                state._set_attr(__layout__="LNC")
            outputs = rnn[0]
        else:
            outputs, states = rnn, []
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self) -> SequentialRNNCell:
        """The same network as a stack of step cells (``<prefix>l<k>_``, and
        ``<prefix>r<k>_`` backwards), with dropout between layers."""
        make: Callable[[str], BaseRNNCell] = {
            "rnn_relu": lambda p: RNNCell(self._num_hidden, activation="relu", prefix=p),
            "rnn_tanh": lambda p: RNNCell(self._num_hidden, activation="tanh", prefix=p),
            "lstm": lambda p: LSTMCell(self._num_hidden, prefix=p),
            "gru": lambda p: GRUCell(self._num_hidden, prefix=p)}[self._mode]
        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make(f"{self._prefix}l{i}_"),
                                            make(f"{self._prefix}r{i}_"),
                                            output_prefix=f"{self._prefix}bi_l{i}_"))
            else:
                stack.add(make(f"{self._prefix}l{i}_"))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{i}_"))
        return stack


@register
class FusedRNN(Initializer):
    """Initializes a FusedRNNCell's packed vector piece by piece: `init` (or the
    initializer of the call) for each unfused weight and bias, `forget_bias`
    for an LSTM's forget-gate biases. MXNet's ``mx.init.FusedRNN``; its JSON
    is what the cell's ``parameters`` variable carries as ``__init__``."""

    def __init__(self, init: Initializer | str | None, num_hidden: int, num_layers: int,
                 mode: str, bidirectional: bool = False, forget_bias: float = 1.0) -> None:
        init = create(init) if init is not None else None
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._cell_args = (num_hidden, num_layers, mode, bidirectional)
        self._forget_bias = forget_bias

    def _init_weight(self, desc: str, arr: NDArray) -> None:
        cell = FusedRNNCell(*self._cell_args, forget_bias=self._forget_bias, prefix="")
        args = cell.unpack_weights({"parameters": arr})
        fallback = getattr(desc, "global_init", None)
        for name, piece in args.items():
            if cell._mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
                continue
            chosen = self._init or fallback
            if chosen is None:
                raise MinimxError(f"FusedRNN: no initializer for {desc!r} ({name}): give one "
                                  "to FusedRNN or call it through another initializer")
            chosen(InitDesc(name, global_init=fallback), piece)
        arr[:] = cell.pack_weights(args)["parameters"]
