"""Cells made of cells, as MXNet 1.9.1's: a stack, both directions, dropout
between layers, and the modifiers (zoneout, residual connections).

>>> import minimx as mx
>>> stack = mx.rnn.SequentialRNNCell()
>>> stack.add(mx.rnn.LSTMCell(4, prefix="l0_"))
>>> stack.add(mx.rnn.DropoutCell(0.5, prefix="d0_"))
>>> stack.add(mx.rnn.LSTMCell(4, prefix="l1_"))
>>> len(stack.state_info)
4
"""
from __future__ import annotations

from typing import Any

from .. import symbol
from ..base import MinimxError
from ..ndarray import NDArray
from ..symbol import Symbol
from .rnn_cell import BaseRNNCell, Inputs, RNNParams, normalize_sequence


class _CellGroup(BaseRNNCell):
    """A cell over child cells (`_cells`), whose states are theirs in order."""

    # Whether variables given to the group override those of its cells.
    _override_cell_params = False

    def _adopt(self, cells: list[BaseRNNCell]) -> None:
        """Share variables with `cells`: those given to this group (when it was made
        with `params`) go to cells that own theirs, and all of theirs come here."""
        for cell in cells:
            if self._override_cell_params:
                if not cell._own_params:
                    raise MinimxError(f"{type(self).__name__}: give params to the group or "
                                      f"to its cells ({cell._prefix!r}), not both")
                cell.params._params.update(self.params._params)
            self.params._params.update(cell.params._params)

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs: Any) -> list[Symbol]:  # type: ignore[override]
        """The children's begin states, in order."""
        if self._modified:
            raise MinimxError("after applying a modifier cell (e.g. ZoneoutCell) the base "
                              "cell cannot be called directly; call the modifier cell")
        return [s for cell in self._cells for s in cell.begin_state(**kwargs)]

    def unpack_weights(self, args: dict[str, NDArray]) -> dict[str, NDArray]:
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args: dict[str, NDArray]) -> dict[str, NDArray]:
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def _split_states(self, states: list[Symbol]) -> list[list[Symbol]]:
        """`states` cut into each child's share."""
        parts, start = [], 0
        for cell in self._cells:
            count = len(cell.state_info)
            parts.append(list(states[start:start + count]))
            start += count
        return parts


class SequentialRNNCell(_CellGroup):
    """Cells stacked: each one's output is the next one's input."""

    def __init__(self, params: RNNParams | None = None) -> None:
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None

    def add(self, cell: BaseRNNCell) -> None:
        """Put `cell` on top of the stack."""
        self._cells.append(cell)
        self._adopt([cell])

    @property
    def can_step(self) -> bool:  # type: ignore[override]
        return all(cell.can_step for cell in self._cells)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        self._counter += 1
        next_states: list[Symbol] = []
        for cell, state in zip(self._cells, self._split_states(states), strict=True):
            if not cell.can_step:
                raise MinimxError(f"SequentialRNNCell: {type(cell).__name__} "
                                  f"{cell._prefix!r} cannot be stepped; use unroll")
            inputs, state = cell(inputs, state)
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length: int, inputs: Inputs, begin_state: list[Symbol] | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None
               ) -> tuple[Any, list[Symbol]]:
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        last = len(self._cells) - 1
        next_states: list[Symbol] = []
        outputs: Any = inputs
        for i, (cell, states) in enumerate(zip(self._cells, self._split_states(begin_state),
                                               strict=True)):
            outputs, states = cell.unroll(length, inputs=outputs, begin_state=states,
                                          layout=layout,
                                          merge_outputs=merge_outputs if i == last else None)
            next_states.extend(states)
        return outputs, next_states


class BidirectionalCell(_CellGroup):
    """`l_cell` over the sequence and `r_cell` over it reversed, their outputs
    joined on the feature axis (``<output_prefix>t<k>``, or ``<output_prefix>out``
    merged)."""

    can_step = False

    def __init__(self, l_cell: BaseRNNCell, r_cell: BaseRNNCell,
                 params: RNNParams | None = None, output_prefix: str = "bi_") -> None:
        super().__init__("", params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        self._adopt([l_cell, r_cell])
        self._cells = [l_cell, r_cell]

    def unroll(self, length: int, inputs: Inputs, begin_state: list[Symbol] | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None
               ) -> tuple[Any, list[Symbol]]:
        self.reset()
        steps, axis = normalize_sequence(length, inputs, layout, False)
        begin_state = self.begin_state() if begin_state is None else begin_state
        (l_cell, r_cell), (l_begin, r_begin) = self._cells, self._split_states(begin_state)
        l_outputs, l_states = l_cell.unroll(length, inputs=steps, begin_state=l_begin,
                                            layout=layout, merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(steps)),
                                            begin_state=r_begin, layout=layout,
                                            merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, Symbol) and isinstance(r_outputs, Symbol)
            if not merge_outputs:
                l_outputs, r_outputs = (
                    list(symbol.SliceChannel(o, axis=axis, num_outputs=length, squeeze_axis=1))
                    if isinstance(o, Symbol) else o for o in (l_outputs, r_outputs))
        states: list[Any] = [l_states, r_states]   # nested, as MXNet's
        if merge_outputs:
            out = symbol.Concat(l_outputs, symbol.reverse(r_outputs, axis=axis), dim=2,
                                name=f"{self._output_prefix}out")
            return out, states
        outputs = [symbol.Concat(l_o, r_o, dim=1, name=f"{self._output_prefix}t{i}")
                   for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed(r_outputs),
                                                      strict=True))]
        return outputs, states


class DropoutCell(BaseRNNCell):
    """Dropout (probability `dropout`) on the input; no state."""

    def __init__(self, dropout: float, prefix: str = "dropout_",
                 params: RNNParams | None = None) -> None:
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
            raise MinimxError(f"DropoutCell: dropout={dropout!r} must be a number")
        super().__init__(prefix, params)
        self.dropout = dropout

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return []

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length: int, inputs: Inputs, begin_state: list[Symbol] | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None
               ) -> tuple[Any, list[Symbol]]:
        self.reset()
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class ModifierCell(BaseRNNCell):
    """A cell that changes what `base_cell` computes; the base cell is then used
    only through it."""

    def __init__(self, base_cell: BaseRNNCell) -> None:
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return self.base_cell.state_info

    def begin_state(self, func: Any = symbol.zeros, **kwargs: Any) -> list[Symbol]:
        if self._modified:
            raise MinimxError("after applying a modifier cell (e.g. ZoneoutCell) the base "
                              "cell cannot be called directly; call the modifier cell")
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args: dict[str, NDArray]) -> dict[str, NDArray]:
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict[str, NDArray]) -> dict[str, NDArray]:
        return self.base_cell.pack_weights(args)


class ZoneoutCell(ModifierCell):
    """Zoneout: in training, each output unit keeps the previous step's value with
    probability `zoneout_outputs`, each state unit with `zoneout_states`."""

    def __init__(self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.,
                 zoneout_states: float = 0.) -> None:
        if not base_cell.can_step:
            raise MinimxError(f"ZoneoutCell: {type(base_cell).__name__} cannot be stepped; "
                              "unfuse it, or apply zoneout to the cells underneath")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output: Symbol | None = None

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        next_output, next_states = self.base_cell(inputs, states)

        def zoneout(p: float, new: Symbol, old: Symbol) -> Symbol:
            if p == 0.:
                return new
            return symbol.where(symbol.Dropout(symbol.ones_like(new), p=p), new, old)

        prev = self.prev_output if self.prev_output is not None else symbol.zeros((0, 0))
        output = zoneout(self.zoneout_outputs, next_output, prev)
        states = [zoneout(self.zoneout_states, new, old)
                  for new, old in zip(next_states, states, strict=True)]
        self.prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """The base cell's output plus its input (Wu et al., 2016)."""

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        output, states = self.base_cell(inputs, states)
        return symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual"), states

    def unroll(self, length: int, inputs: Inputs, begin_state: list[Symbol] | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None
               ) -> tuple[Any, list[Symbol]]:
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        merge = isinstance(outputs, Symbol) if merge_outputs is None else merge_outputs
        inputs, _ = normalize_sequence(length, inputs, layout, merge)
        if merge:
            return symbol.elemwise_add(outputs, inputs,
                                       name=f"{outputs.name}_plus_residual"), states
        return [symbol.elemwise_add(o, i, name=f"{o.name}_plus_residual")
                for o, i in zip(outputs, inputs, strict=True)], states
