"""`mx.gluon.utils`, as MXNet 1.9.1's: a batch split across contexts
(`split_data`, `split_and_load`, as evaluation loops use them), gradients
clipped by their global norm (`clip_global_norm`), a file's SHA-1 checked
(`check_sha1`). MXNet's `download` is not here: minimx fetches nothing."""
from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..context import Context
from ..ndarray import NDArray
from .errors import InputError
from .parameter import shape_is_known

__all__ = ["check_sha1", "clip_global_norm", "shape_is_known", "split_and_load", "split_data"]


def split_data(data: NDArray, num_slice: int, batch_axis: int = 0,
               even_split: bool = True) -> list[NDArray]:
    """`data` in `num_slice` parts along `batch_axis`; with ``even_split=False`` the
    first ``size % num_slice`` parts hold one more."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise InputError(f"data with shape {data.shape} cannot be evenly split into "
                         f"{num_slice} slices along axis {batch_axis}. Use a batch size that's "
                         f"multiple of {num_slice} or set even_split=False to allow uneven "
                         f"partitioning of data.")
    each, extras = divmod(size, num_slice)
    ends = np.cumsum([0] + [each + 1] * extras + [each] * (num_slice - extras)).tolist()
    if batch_axis == 0:
        return [data[ends[i]:ends[i + 1]] for i in range(num_slice)]
    return [nd.slice_axis(data, axis=batch_axis, begin=ends[i], end=ends[i + 1])
            for i in range(num_slice)]


def split_and_load(data: Any, ctx_list: Sequence[Context], batch_axis: int = 0,
                   even_split: bool = True) -> list[NDArray]:
    """`data` (an NDArray, or anything ``nd.array`` takes) split as `split_data`
    does, one part on each context of `ctx_list` (all of it for one)."""
    if not isinstance(data, NDArray):
        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    parts = split_data(data, len(ctx_list), batch_axis, even_split)
    return [part.as_in_context(ctx) for part, ctx in zip(parts, ctx_list, strict=True)]


def clip_global_norm(arrays: Sequence[NDArray], max_norm: float,
                     check_isfinite: bool = True) -> np.float32 | NDArray:
    """Scale `arrays` in place so that their joint 2-norm is at most `max_norm`
    (each times ``min(max_norm / (norm + 1e-8), 1)``, in float32 as MXNet); the
    norm before, a numpy float32 (an NDArray with ``check_isfinite=False``). A norm that
    is NaN or infinite is warned of."""
    if not arrays:
        raise InputError("clip_global_norm needs at least one array")
    ctx = arrays[0].context
    squares = [nd.dot(a.reshape((-1,)), a.reshape((-1,))).as_in_context(ctx) for a in arrays]
    total = nd.sqrt(nd.add_n(*squares))
    if check_isfinite and not math.isfinite(float(total.asscalar())):
        warnings.warn(UserWarning("nan or inf is detected. Clipping results will be "
                                  "undefined."), stacklevel=2)
    scale = nd.min(nd.concat(max_norm / (total + 1e-8), nd.ones(1, ctx=ctx), dim=0))
    for a in arrays:
        a *= scale.as_in_context(a.context)
    return total.asscalar() if check_isfinite else total


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Whether the file's SHA-1 (hex) is `sha1_hash`."""
    digest = hashlib.sha1()
    with open(filename, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest() == sha1_hash
