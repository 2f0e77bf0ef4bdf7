"""`mx.rnn`: MXNet 1.x's symbolic recurrent cells, bucketed sentence data and
RNN checkpoints, for scripts such as MXNet's ``example/rnn/bucketing``.

>>> import minimx as mx
>>> stack = mx.rnn.SequentialRNNCell()
>>> for i in range(2):
...     stack.add(mx.rnn.LSTMCell(num_hidden=16, prefix=f"lstm_l{i}_"))
>>> out, states = stack.unroll(4, inputs=mx.sym.Variable("data"), merge_outputs=True)
>>> len(states), out.infer_shape(data=(3, 4, 5))[1]
(4, [(3, 4, 16)])
"""
from ..model import load_checkpoint, save_checkpoint  # in mx.rnn too, as MXNet's
from .checkpoint import do_rnn_checkpoint, load_rnn_checkpoint, save_rnn_checkpoint
from .composite import (
    BidirectionalCell,
    DropoutCell,
    ModifierCell,
    ResidualCell,
    SequentialRNNCell,
    ZoneoutCell,
)
from .conv_cells import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from .fused import FusedRNN, FusedRNNCell
from .io import BucketSentenceIter, encode_sentences
from .rnn_cell import BaseRNNCell, GRUCell, LSTMCell, RNNCell, RNNParams, rnn_unroll

__all__ = ["BaseConvRNNCell", "BaseRNNCell", "BidirectionalCell", "BucketSentenceIter",
           "ConvGRUCell", "ConvLSTMCell", "ConvRNNCell", "DropoutCell", "FusedRNN",
           "FusedRNNCell", "GRUCell", "LSTMCell", "ModifierCell", "RNNCell", "RNNParams",
           "ResidualCell", "SequentialRNNCell", "ZoneoutCell", "do_rnn_checkpoint",
           "encode_sentences", "load_checkpoint", "load_rnn_checkpoint", "rnn_unroll",
           "save_checkpoint", "save_rnn_checkpoint"]
