"""`mx.gluon.nn`: here only `SymbolBlock`, so that ``mx.gluon.nn.SymbolBlock`` and
``from mxnet.gluon import nn`` work (MXNet's layers are not part of minimx)."""
from .symbol_block import SymbolBlock

__all__ = ["SymbolBlock"]
