"""MXNet 1.x's convolutional recurrent cells: `ConvRNNCell`, `ConvLSTMCell` and
`ConvGRUCell` (Shi et al., NIPS 2015), on their base `BaseConvRNNCell`.

They are the step cells of `rnn_cell` with the FullyConnected projections
replaced by convolutions: ``i2h`` over the input (its kernel, stride, pad and
dilation set the state's spatial size) and ``h2h`` over the state (stride 1,
padded to keep the size, so its kernel must be odd). The gate arithmetic is
`rnn_cell`'s; only the squashing activation differs (leaky ReLU by default).
Names follow MXNet 1.9.1 (``ConvLSTM_i2h_weight``, ``ConvLSTM_t0_i2h``).

>>> import minimx as mx
>>> cell = mx.rnn.ConvLSTMCell(input_shape=(2, 3, 8, 8), num_hidden=4)
>>> out, states = cell.unroll(3, mx.sym.Variable("data"), merge_outputs=True)
>>> out.infer_shape(data=(2, 3, 3, 8, 8))[1], cell.state_info[0]["shape"]
([(2, 3, 4, 8, 8)], (0, 4, 8, 8))
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import symbol
from ..base import MinimxError
from ..symbol import Symbol
from .rnn_cell import Act, RNNParams, _ElmanStep, _GatedCell, _GRUStep, _LSTMStep

Pair = tuple[int, int]


def leaky_relu(inputs: Symbol, **kwargs: Any) -> Symbol:
    """The conv cells' default activation, as MXNet's: LeakyReLU with slope 0.2."""
    return symbol.LeakyReLU(inputs, act_type="leaky", slope=0.2, **kwargs)


class BaseConvRNNCell(_GatedCell):
    """The base of the convolutional cells (MXNet's public, abstract one: it has no step
    of its own): a gated cell whose ``i2h`` and ``h2h`` projections are 2-D convolutions
    (NCHW) to `len(_gate_names) * num_hidden` channels. Its arguments are MXNet's, in
    MXNet's order; they default as the cells' do (MXNet's base requires them).

    `input_shape` is one step's input, batch included; it fixes the state's shape
    through the ``i2h`` convolution. `prefix` None means the class's own
    (``ConvRNN_``, ``ConvLSTM_``, ``ConvGRU_``); the initializers become the
    weights' ``__init__`` attributes."""

    _default_prefix = ""
    _num_states = 1

    def __init__(self, input_shape: Sequence[int], num_hidden: int,
                 h2h_kernel: Pair = (3, 3), h2h_dilate: Pair = (1, 1),
                 i2h_kernel: Pair = (3, 3), i2h_stride: Pair = (1, 1),
                 i2h_pad: Pair = (1, 1), i2h_dilate: Pair = (1, 1),
                 i2h_weight_initializer: Any = None, h2h_weight_initializer: Any = None,
                 i2h_bias_initializer: Any = "zeros", h2h_bias_initializer: Any = "zeros",
                 activation: Act = leaky_relu, prefix: str | None = None,
                 params: RNNParams | None = None, conv_layout: str = "NCHW") -> None:
        if conv_layout != "NCHW":
            raise MinimxError(f"{type(self).__name__}: conv_layout={conv_layout!r}: "
                              "only NCHW is supported")
        if h2h_kernel[0] % 2 == 0 or h2h_kernel[1] % 2 == 0:
            raise MinimxError(f"{type(self).__name__}: h2h_kernel={tuple(h2h_kernel)}: "
                              "must be odd, to keep the state's size")
        super().__init__(num_hidden, self._default_prefix if prefix is None else prefix,
                         params, inits={
                             "i2h_weight": i2h_weight_initializer,
                             "i2h_bias": i2h_bias_initializer,
                             "h2h_weight": h2h_weight_initializer,
                             "h2h_bias": h2h_bias_initializer})
        self._activation = activation
        self._i2h_conv = dict(kernel=tuple(i2h_kernel), stride=tuple(i2h_stride),
                              pad=tuple(i2h_pad), dilate=tuple(i2h_dilate))
        self._h2h_conv = dict(kernel=tuple(h2h_kernel), stride=(1, 1),
                              dilate=tuple(h2h_dilate),
                              pad=tuple(d * (k - 1) // 2
                                        for d, k in zip(h2h_dilate, h2h_kernel, strict=True)))
        probe = symbol.Convolution(data=symbol.Variable("data"), num_filter=num_hidden,
                                   **self._i2h_conv)
        state = probe.infer_shape(data=tuple(input_shape))[1][0]
        self._state_shape = (0, *state[1:])

    @property
    def state_info(self) -> list[dict[str, Any]]:
        return [{"shape": self._state_shape, "__layout__": "NCHW"}
                for _ in range(self._num_states)]

    def __call__(self, inputs: Symbol, states: list[Symbol]) -> tuple[Symbol, list[Symbol]]:
        raise NotImplementedError("BaseConvRNNCell is abstract class for convolutional RNN")

    def _projections(self, inputs: Symbol, state: Symbol, name: str
                     ) -> tuple[Symbol, Symbol]:
        width = self._num_hidden * len(self._gate_names)
        i2h = symbol.Convolution(data=inputs, weight=self._iW, bias=self._iB, num_filter=width,
                                 name=f"{name}i2h", **self._i2h_conv)
        h2h = symbol.Convolution(data=state, weight=self._hW, bias=self._hB, num_filter=width,
                                 name=f"{name}h2h", **self._h2h_conv)
        return i2h, h2h


class ConvRNNCell(_ElmanStep, BaseConvRNNCell):
    """Convolutional Elman RNN: ``h' = act(conv_i(x) + conv_h(h))``.

    >>> import minimx as mx
    >>> cell = mx.rnn.ConvRNNCell((1, 2, 5, 5), 3, i2h_kernel=(3, 3), i2h_pad=(0, 0))
    >>> cell.state_info
    [{'shape': (0, 3, 3, 3), '__layout__': 'NCHW'}]
    """

    _default_prefix = "ConvRNN_"


class ConvLSTMCell(_LSTMStep, BaseConvRNNCell):
    """Convolutional LSTM (gates i, f, c, o; states h and c); `activation` squashes
    the candidate and the cell where LSTMCell uses tanh. Arguments as ConvRNNCell's,
    prefix ``ConvLSTM_``."""

    _default_prefix = "ConvLSTM_"
    _num_states = 2


class ConvGRUCell(_GRUStep, BaseConvRNNCell):
    """Convolutional GRU (gates r, z, o), as GRUCell with `activation` for the
    candidate's tanh. Arguments as ConvRNNCell's, prefix ``ConvGRU_``."""

    _default_prefix = "ConvGRU_"
