"""`mx.nd.save` / `mx.nd.load` / `mx.nd.load_frombuffer`: MXNet's binary NDArray list format.

The format itself lives in `minimx.formats.params_file`; this module converts
between NDArrays and the numpy arrays it reads and writes.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..base import GraphFormatError, MinimxError
from ..context import cpu
from ..formats.params_file import load_arrays, save_arrays
from .creation import array
from .ndarray import NDArray


def save(fname: str, data: NDArray | Sequence[NDArray] | Mapping[str, NDArray]) -> None:
    """Write one array, a list, or a dict of arrays (e.g. ``arg:``/``aux:`` params)."""
    if isinstance(data, NDArray):
        data = [data]
    values: dict[str, np.ndarray] | list[np.ndarray]
    if isinstance(data, Mapping):
        values = {str(k): _numpy(v, k) for k, v in data.items()}
    elif isinstance(data, Sequence):
        values = [_numpy(v, i) for i, v in enumerate(data)]
    else:
        raise MinimxError(f"save needs an NDArray, a list or a dict of them, "
                          f"got {type(data).__name__}")
    save_arrays(fname, values)


def _numpy(value: object, key: object):
    if not isinstance(value, NDArray):
        raise MinimxError(f"save: item {key!r} is a {type(value).__name__}, not an NDArray")
    return value.asnumpy()


def load(fname: str) -> list[NDArray] | dict[str, NDArray]:
    """The arrays of a file written by `save` or by MXNet (a list, or a dict if named),
    on cpu(0) whatever the file or the current context say, as MXNet's."""
    try:
        data = load_arrays(fname)
    except OSError as exc:
        raise GraphFormatError(f"cannot read NDArray file {fname!r}: {exc}") from None
    return _ndarrays(data)


def load_frombuffer(buf: bytes) -> list[NDArray] | dict[str, NDArray]:
    """The arrays of an NDArray file's contents (what `save` writes), as `load` gives them."""
    if not isinstance(buf, bytes):
        raise MinimxError(f"load_frombuffer: buf required to be bytes (a file's contents; "
                          f"mx.nd.load reads a file), got {type(buf).__name__}")
    return _ndarrays(load_arrays(buf))


def _ndarrays(data: list[np.ndarray] | dict[str, np.ndarray]
              ) -> list[NDArray] | dict[str, NDArray]:
    if isinstance(data, dict):
        return {k: array(v, cpu(), v.dtype) for k, v in data.items()}
    return [array(v, cpu(), v.dtype) for v in data]
