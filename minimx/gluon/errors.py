"""The errors of `mx.gluon`: MinimxErrors that are also the Python type MXNet 1.9.1
raises in the same place (its checks there are ``assert``s and ValueErrors)."""
from __future__ import annotations

from ..base import MinimxError


class DeferredInitializationError(MinimxError):
    """A Parameter whose initialization waits for its shape (the first forward)."""


class ParameterError(MinimxError, AssertionError):
    """A Parameter used in a way its state or a file does not allow: not
    initialized, a name missing from or extra in a file, a shape or dtype that does
    not match."""


class InputError(MinimxError, ValueError):
    """What a block is given does not fit it: the number or nesting of its inputs,
    something other than NDArrays or Symbols, a name that is not an input; or a
    dataset, sampler, loader or transform given arguments that do not fit it."""


class WorkerTimeout(MinimxError, TimeoutError):
    """A DataLoader's worker took longer than its `timeout` over a batch."""
