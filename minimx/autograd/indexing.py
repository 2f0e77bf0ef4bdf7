"""Indexing a recorded array while recording, as recorded operators.

MXNet records ``x[1:3]`` as a ``slice`` node; minimx records basic indexing (ints,
slices, ``...``, ``None``) as ``slice`` then ``Reshape`` to numpy's result shape (an
element as shape (1,), as MXNet 1.x), and an integer array on the first axis as
``take``. The result is a copy rather than a view of the recorded array.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import ndarray as nd
from ..ndarray.ndarray import NDArray
from .tape import AutogradError


def getitem(a: NDArray, key: Any) -> NDArray:
    if isinstance(key, (NDArray, list, np.ndarray)):
        index = key if isinstance(key, NDArray) else nd.array(np.asarray(key), ctx=a.context)
        return nd.take(a, index, axis=0)
    keys = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(k, (int, np.integer, slice, type(Ellipsis), type(None))) for k in keys):
        raise AutogradError(f"getitem: indexing a recorded array by {key!r} is not recorded: "
                            "index it by ints, slices, ..., None, or one integer array "
                            "on the first axis")
    try:
        target = np.broadcast_to(np.zeros((), np.int8), a.shape)[key].shape or (1,)
    except IndexError as exc:
        raise AutogradError(f"getitem: index {key!r} of shape {a.shape}: {exc}") from None
    begin, end, step = [], [], []
    axes = [k for k in keys if k is not None]
    if any(k is Ellipsis for k in axes):
        at = next(i for i, k in enumerate(axes) if k is Ellipsis)
        axes[at:at + 1] = [slice(None)] * (a.ndim - len(axes) + 1)
    for dim, k in zip(a.shape, axes, strict=False):
        if isinstance(k, slice):
            lo, hi, st = k.indices(dim)
            begin.append(lo)
            end.append(hi if hi >= 0 or st > 0 else None)
            step.append(st)
        else:
            i = int(k) + dim if k < 0 else int(k)
            begin.append(i)
            end.append(i + 1)
            step.append(1)
    out = nd.slice(a, begin=tuple(begin), end=tuple(end), step=tuple(step))
    return out if out.shape == target else out.reshape(target)
