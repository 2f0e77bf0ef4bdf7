"""Errors, dtype tables and environment settings: the layer everything else imports.

Nothing here imports from the rest of minimx.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np


class MinimxError(RuntimeError):
    """Base of every error minimx raises on purpose."""


class ShapeError(MinimxError, ValueError):
    """Shapes that contradict each other or an operator's rules."""


class DTypeError(MinimxError, ValueError):
    """Dtypes that contradict each other or an operator's rules."""


class GraphFormatError(MinimxError):
    """A malformed symbol JSON or NDArray (.params) file."""


class OperatorError(MinimxError):
    """An unknown operator or a bad operator parameter."""


class GraphOperatorError(GraphFormatError, OperatorError):
    """An unknown operator or a bad parameter found while loading a graph file:
    both a format error of the file and an operator error."""


class BackendError(MinimxError):
    """A subgraph backend problem, or the native library missing or failing."""


def node_label(name: str, op: str | None) -> str:
    """How every message names a node: ``conv0 (Convolution)``."""
    return f"{name} ({op or 'Variable'})"


# MXNet's type flags (mshadow::TypeFlag), as written in .params files and `__dtype__`.
DTYPE_TO_FLAG: dict[np.dtype, int] = {
    np.dtype(np.float32): 0,
    np.dtype(np.float64): 1,
    np.dtype(np.float16): 2,
    np.dtype(np.uint8): 3,
    np.dtype(np.int32): 4,
    np.dtype(np.int8): 5,
    np.dtype(np.int64): 6,
    np.dtype(np.bool_): 7,
    np.dtype(np.int16): 8,
    np.dtype(np.uint16): 9,
    np.dtype(np.uint32): 10,
    np.dtype(np.uint64): 11,
}
FLAG_TO_DTYPE: dict[int, np.dtype] = {flag: dt for dt, flag in DTYPE_TO_FLAG.items()}
DEFAULT_DTYPE = np.dtype(np.float32)


def as_dtype(value: object) -> np.dtype:
    """A numpy dtype from a dtype, a type, a name (``'float32'``) or an MXNet flag."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if int(value) not in FLAG_TO_DTYPE:
            raise DTypeError(f"unknown MXNet type flag {value}")
        return FLAG_TO_DTYPE[int(value)]
    try:
        dt = np.dtype(value)  # type: ignore[call-overload]
    except TypeError as exc:
        raise DTypeError(f"not a dtype: {value!r}") from exc
    if dt not in DTYPE_TO_FLAG:
        raise DTypeError(f"dtype {dt} is not supported (supported: "
                         f"{', '.join(str(d) for d in DTYPE_TO_FLAG)})")
    return dt


@dataclass(frozen=True)
class Settings:
    """Every MINIMX_* environment variable, read in this one place."""

    subgraph_backends: tuple[str, ...]
    subgraph_default_ops: tuple[str, ...]
    engine_type: str
    cpu_worker_nthreads: int
    exec_enable_inplace: bool
    exec_bulk_inference: bool
    dnnl_root: str | None
    dnnl_winograd: bool


def _csv(value: str | None) -> tuple[str, ...]:
    items = tuple(v.strip() for v in (value or "").split(",") if v.strip())
    return () if items == ("NONE",) else items


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip() not in ("0", "false", "False", "")


def settings() -> Settings:
    """The current settings. Read at each use, so tests may change os.environ."""
    env = os.environ
    try:
        nthreads = int(env.get("MINIMX_CPU_WORKER_NTHREADS", "2"))
    except ValueError as exc:
        raise MinimxError("MINIMX_CPU_WORKER_NTHREADS must be an integer, got "
                          f"{env['MINIMX_CPU_WORKER_NTHREADS']!r}") from exc
    return Settings(
        subgraph_backends=_csv(env.get("MINIMX_SUBGRAPH_BACKEND")),
        subgraph_default_ops=_csv(env.get("MINIMX_SUBGRAPH_DEFAULT_OPS")),
        engine_type=env.get("MINIMX_ENGINE_TYPE", "ThreadedEngine") or "ThreadedEngine",
        cpu_worker_nthreads=max(1, nthreads),
        exec_enable_inplace=_flag("MINIMX_EXEC_ENABLE_INPLACE", True),
        exec_bulk_inference=_flag("MINIMX_EXEC_BULK_EXEC_INFERENCE", True),
        dnnl_root=env.get("MINIMX_DNNL_ROOT") or None,
        dnnl_winograd=_flag("MINIMX_DNNL_WINOGRAD", True),
    )
