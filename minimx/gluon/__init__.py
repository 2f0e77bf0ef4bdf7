"""`mx.gluon`: the part of MXNet 1.9.1's Gluon that runs exported models for inference.

`SymbolBlock` (``SymbolBlock.imports`` of ``-symbol.json`` / ``-0000.params``
files, forward, ``hybridize(backend='MKLDNN')``, export) and the parameters it
holds (`Parameter`, `Constant`, `ParameterDict`). `data`: datasets,
samplers, the DataLoader and the vision transforms, for the loops that feed
them; `utils`: a batch split across contexts, gradients clipped. Blocks of
layers, ``Trainer``, losses and the model zoo are not part of minimx.
"""
from . import data, nn, utils
from .errors import DeferredInitializationError, InputError, ParameterError
from .parameter import Constant, Parameter, ParameterDict, tensor_types
from .symbol_block import SymbolBlock

__all__ = ["Constant", "DeferredInitializationError", "InputError", "Parameter",
           "ParameterDict", "ParameterError", "SymbolBlock", "data", "nn", "tensor_types", "utils"]
