"""MXNet 1.x's symbolic RNN cells: the base class and the three step cells.

A cell builds symbols, one time step per call; `unroll` chains the steps. The
cells name their variables and nodes as MXNet 1.9.1's do (``lstm_i2h_weight``,
``lstm_t0_i2h``, ``lstm_begin_state_0``), so checkpoints and scripts move over.

>>> import minimx as mx
>>> cell = mx.rnn.LSTMCell(8, prefix="lstm_")
>>> outputs, states = cell.unroll(3, mx.sym.Variable("data"), merge_outputs=True)
>>> outputs.list_arguments()
['data', 'lstm_i2h_weight', 'lstm_i2h_bias', 'lstm_h2h_weight', 'lstm_h2h_bias']
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from .. import ndarray as nd
from .. import symbol
from ..base import MinimxError
from ..initializer import LSTMBias
from ..ndarray import NDArray
from ..symbol import Symbol

Inputs = Symbol | Sequence[Symbol]
Act = str | Callable[..., Symbol]  # an Activation act_type, or a symbol function
LAYOUTS = ("NTC", "TNC")


def normalize_sequence(length: int | None, inputs: Inputs, layout: str, merge: bool | None,
                       in_layout: str | None = None) -> tuple[Any, int]:
    """`inputs` as one symbol (`merge` True), a list of per-step symbols (False) or
    whichever it is (None), and the time axis of `layout` (MXNet's
    `_normalize_sequence`)."""
    if layout not in LAYOUTS:
        raise MinimxError(f"unroll: layout={layout!r}: must be one of {', '.join(LAYOUTS)}")
    if inputs is None:
        raise MinimxError("unroll(inputs=None) has been deprecated; create the input "
                          "variables outside unroll")
    axis = layout.find("T")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise MinimxError("unroll does not take a grouped symbol as input: pass "
                                  "list(inputs), or let unroll split it")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise MinimxError(f"unroll: {len(inputs)} inputs given for length={length}")
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(i, axis=axis) for i in inputs],
                                   dim=axis)
            in_axis = axis
    if isinstance(inputs, Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class RNNParams:
    """The variables of cells, by name, so that cells given the same container
    share them."""

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self._params: dict[str, Symbol] = {}

    def get(self, name: str, **kwargs: Any) -> Symbol:
        """The variable ``prefix + name``, made (with `kwargs`) on first use."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """A recurrent cell: `__call__` is one step, `unroll` many.

    `prefix` starts the names of the cell's nodes (and of its weights when it
    makes its own `params`)."""

    # Whether `__call__` works: fused and bidirectional cells only unroll.
    can_step = True
    _num_hidden: int   # the units of a cell with gates (set by the cell, as in MXNet)

    def __init__(self, prefix: str = "", params: RNNParams | None = None) -> None:
        self._own_params = params is None
        self._prefix = prefix
        self._params = RNNParams(prefix) if params is None else params
        self._modified = False
        self._cells: list[BaseRNNCell] = []
        self.reset()

    def reset(self) -> None:
        """Restart the step and state counters before building another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._cells:
            cell.reset()

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        raise MinimxError(f"{type(self).__name__} cannot be stepped; use unroll")

    @property
    def params(self) -> RNNParams:
        """The cell's variable container (handing it out means it is shared)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list[dict[str, Any]]:
        """Shape (0 for the batch) and layout of each state."""
        raise NotImplementedError

    @property
    def state_shape(self) -> list[tuple[int, ...]]:
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ()

    def begin_state(self, func: Callable[..., Symbol] = symbol.zeros,
                    **kwargs: Any) -> list[Symbol]:
        """The first step's states, made by `func` (``mx.sym.zeros``, or
        ``mx.sym.Variable`` to feed them) as ``<prefix>begin_state_<k>``."""
        if self._modified:
            raise MinimxError("after applying a modifier cell (e.g. ZoneoutCell) the base "
                              "cell cannot be called directly; call the modifier cell")
        states = []
        for info in self.state_info:
            self._init_counter += 1
            kwargs.update(info)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}",
                               **kwargs))
        return states

    def unpack_weights(self, args: dict[str, NDArray]) -> dict[str, NDArray]:
        """`args` with each i2h / h2h weight and bias split into one per gate
        (``lstm_i2h_i_weight``, ...); `pack_weights` joins them again."""
        args = dict(args)
        if not self._gate_names:
            return args
        hidden = self._num_hidden
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                packed = args.pop(f"{self._prefix}{group}_{kind}")
                for j, gate in enumerate(self._gate_names):
                    args[f"{self._prefix}{group}{gate}_{kind}"] = \
                        packed[j * hidden:(j + 1) * hidden].copy()
        return args

    def pack_weights(self, args: dict[str, NDArray]) -> dict[str, NDArray]:
        """`args` with the per-gate weights and biases joined (see `unpack_weights`)."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            for kind in ("weight", "bias"):
                parts = [args.pop(f"{self._prefix}{group}{gate}_{kind}")
                         for gate in self._gate_names]
                args[f"{self._prefix}{group}_{kind}"] = nd.concat(*parts, dim=0)
        return args

    def _get_activation(self, inputs: Symbol, act: Act, **kwargs: Any) -> Symbol:
        """`act` applied to `inputs` (MXNet's helper for cells written by users)."""
        return activation(inputs, act, **kwargs)

    def unroll(self, length: int, inputs: Inputs, begin_state: list[Symbol] | None = None,
               layout: str = "NTC", merge_outputs: bool | None = None
               ) -> tuple[Any, list[Symbol]]:
        """Run `length` steps over `inputs` (one symbol laid out as `layout`, or a
        list of per-step symbols); the outputs (one symbol with `merge_outputs`,
        else a list) and the last states."""
        self.reset()
        steps, _ = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for step in steps:
            output, states = self(step, states)
            outputs.append(output)
        merged, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return merged, states


def activation(inputs: Symbol, act: Act, **kwargs: Any) -> Symbol:
    """`act` applied to `inputs`: an Activation's act_type, or a symbol function."""
    if isinstance(act, str):
        return symbol.Activation(inputs, act_type=act, **kwargs)
    return act(inputs, **kwargs)


def lstm_update(gates: Symbol, prev_c: Symbol, name: str, act: Act
                ) -> tuple[Symbol, Symbol]:
    """The next hidden and cell states from the summed projections `gates` (MXNet's
    order i, f, c, o along axis 1); `act` squashes the candidate and the cell
    (tanh in LSTMCell, the cell's own in ConvLSTMCell)."""
    parts = symbol.SliceChannel(gates, num_outputs=4, name=f"{name}slice")
    in_gate = symbol.Activation(parts[0], act_type="sigmoid", name=f"{name}i")
    forget_gate = symbol.Activation(parts[1], act_type="sigmoid", name=f"{name}f")
    in_transform = activation(parts[2], act, name=f"{name}c")
    out_gate = symbol.Activation(parts[3], act_type="sigmoid", name=f"{name}o")
    next_c = symbol._plus(forget_gate * prev_c, in_gate * in_transform, name=f"{name}state")
    next_h = symbol._mul(out_gate, activation(next_c, act), name=f"{name}out")
    return next_h, next_c


def gru_update(i2h: Symbol, h2h: Symbol, prev: Symbol, name: str, act: Act) -> Symbol:
    """The next state from the input and state projections (gates r, z, o along
    axis 1), as cuDNN computes it: the reset gate scales ``h2h``'s candidate
    part; `act` squashes the candidate."""
    i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
    h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
    reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
    update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
    candidate = activation(i2h + reset_gate * h2h, act, name=f"{name}_h_act")
    return symbol._plus((1. - update_gate) * candidate, update_gate * prev, name=f"{name}out")


class _GatedCell(BaseRNNCell):
    """A cell whose step projects its input and state by FullyConnected layers
    (``i2h``, ``h2h``) to `len(_gate_names)` gates of `num_hidden` units;
    `_activation` squashes the candidate (and an LSTM's cell)."""

    _activation: Act = "tanh"

    def __init__(self, num_hidden: int, prefix: str, params: RNNParams | None,
                 inits: dict[str, Any] | None = None) -> None:
        """`inits` maps a weight's name (``i2h_bias``) to its initializer."""
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        inits = inits or {}
        self._iW, self._iB, self._hW, self._hB = (
            self.params.get(n, init=inits.get(n))
            for n in ("i2h_weight", "i2h_bias", "h2h_weight", "h2h_bias"))

    def _projections(self, inputs: Symbol, state: Symbol, name: str
                     ) -> tuple[Symbol, Symbol]:
        width = self._num_hidden * len(self._gate_names)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=width, name=f"{name}i2h")
        h2h = symbol.FullyConnected(data=state, weight=self._hW, bias=self._hB,
                                    num_hidden=width, name=f"{name}h2h")
        return i2h, h2h

    def _step_name(self) -> str:
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"


class _ElmanStep(_GatedCell):
    """The Elman step: ``h' = act(i2h + h2h)`` (RNNCell, ConvRNNCell)."""

    @property
    def _gate_names(self) -> Sequence[str]:
        return ("",)

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        output = activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class _LSTMStep(_GatedCell):
    """The LSTM step, gates i, f, c, o; states h, c (LSTMCell, ConvLSTMCell)."""

    @property
    def _gate_names(self) -> Sequence[str]:
        return ("_i", "_f", "_c", "_o")

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        next_h, next_c = lstm_update(i2h + h2h, states[1], name, self._activation)
        return next_h, [next_h, next_c]


class _GRUStep(_GatedCell):
    """The GRU step, gates r, z, o (GRUCell, ConvGRUCell)."""

    @property
    def _gate_names(self) -> Sequence[str]:
        return ("_r", "_z", "_o")

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        next_h = gru_update(i2h, h2h, states[0], name, self._activation)
        return next_h, [next_h]


class RNNCell(_ElmanStep):
    """Elman RNN: ``h' = act(W_i x + b_i + W_h h + b_h)``."""

    def __init__(self, num_hidden: int, activation: Act = "tanh",
                 prefix: str = "rnn_", params: RNNParams | None = None) -> None:
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]


class LSTMCell(_LSTMStep):
    """LSTM with gates in MXNet's order i, f, c, o; `forget_bias` initializes the
    forget gate's part of ``i2h_bias`` (an `LSTMBias` ``__init__`` attribute)."""

    def __init__(self, num_hidden: int, prefix: str = "lstm_", params: RNNParams | None = None,
                 forget_bias: float = 1.0) -> None:
        super().__init__(num_hidden, prefix, params,
                         inits={"i2h_bias": LSTMBias(forget_bias=forget_bias)})

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"} for _ in range(2)]


class GRUCell(_GRUStep):
    """GRU as cuDNN computes it (the reset gate scales ``h2h``'s candidate part),
    gates in MXNet's order r, z, o."""

    def __init__(self, num_hidden: int, prefix: str = "gru_",
                 params: RNNParams | None = None) -> None:
        super().__init__(num_hidden, prefix, params)

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    def _projections(self, inputs: Symbol, state: Symbol, name: str
                     ) -> tuple[Symbol, Symbol]:
        # MXNet's GRU names its layers "<prefix>t<k>__i2h" (one underscore more).
        return super()._projections(inputs, state, f"{name}_")


def rnn_unroll(cell: BaseRNNCell, length: int, inputs: Inputs | None = None,
               begin_state: list[Symbol] | None = None, input_prefix: str = "",
               layout: str = "NTC") -> tuple[Any, list[Symbol]]:
    """Deprecated: ``cell.unroll(length, inputs, begin_state, layout)``. MXNet 1.9.1's
    passes `input_prefix` on, which its cells' `unroll` does not take (a TypeError);
    here it is accepted and unused."""
    warnings.warn("rnn_unroll is deprecated. Please call cell.unroll directly.",
                  stacklevel=2)
    if inputs is None:
        raise MinimxError("rnn_unroll: unroll(inputs=None) has been deprecated. Please create "
                          "input variables outside unroll.")
    return cell.unroll(length, inputs, begin_state=begin_state, layout=layout)
