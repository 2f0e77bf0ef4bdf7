"""Errors, warnings, dtype tables and environment settings: the layer everything else imports.

Nothing here imports from the rest of minimx.
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import FrameType

import ml_dtypes
import numpy as np


class MinimxError(RuntimeError):
    """Base of every error minimx raises on purpose."""


# MXNet's name for its errors, so that a script's ``except mx.MXNetError`` (or
# ``mx.base.MXNetError``) catches what minimx raises where MXNet would.
MXNetError = MinimxError


class ShapeError(MinimxError, ValueError):
    """Shapes that contradict each other or an operator's rules."""


class DTypeError(MinimxError, ValueError):
    """Dtypes that contradict each other or an operator's rules."""


class GraphFormatError(MinimxError):
    """A malformed symbol JSON or NDArray (.params) file."""


class OperatorError(MinimxError):
    """An unknown operator or a bad operator parameter."""


class IndexRangeError(OperatorError, IndexError):
    """An index past the array, axis or outputs it indexes (NDArray indexing, gather_nd,
    a symbol's outputs). Also an IndexError, as MXNet raises, which ends Python's iteration
    over ``a[0], a[1], ...``."""


class GraphOperatorError(GraphFormatError, OperatorError):
    """An unknown operator or a bad parameter found while loading a graph file:
    both a format error of the file and an operator error."""


class BackendError(MinimxError):
    """A subgraph backend problem, or the native library missing or failing."""


class AssertedError(MinimxError, AssertionError):
    """An argument refused where MXNet 1.9.1 refuses it with an ``assert`` (AMP's
    operator lists, TopKAccuracy's top_k): a script's ``except AssertionError``
    still catches it."""


class ArgumentError(MinimxError, ValueError):
    """An argument value refused where MXNet 1.9.1's Python raises ValueError (a
    parameter the symbol lacks in `set_params`, imrotate's zoom flags)."""


class ArgumentTypeError(MinimxError, TypeError):
    """An argument of a kind refused where MXNet 1.9.1's Python raises TypeError."""


class DataFileError(MinimxError, OSError):
    """A data file that cannot be read as asked: missing, or not a RecordIO, MNIST idx or
    image file (bad magic number, truncated or corrupt record)."""


def py_str(value: bytes) -> str:
    """UTF-8 bytes as a str: MXNet's `mx.base.py_str`, which scripts and tests import."""
    return value.decode("utf-8")


def node_label(name: str, op: str | None) -> str:
    """How every message names a node: ``conv0 (Convolution)``."""
    return f"{name} ({op or 'Variable'})"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn at the user's line: the innermost caller outside minimx (the
    `simple_bind` or `partition` call that led here), wherever in the package
    the warning is raised and whichever way the call came in."""
    frame: FrameType | None = sys._getframe(1)
    level = 2   # warn_user's caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


# bfloat16: ml_dtypes' numpy dtype (as JAX and TensorFlow use). MXNet 1.9.1's Python
# names it by a structured dtype holding the raw bits; `as_dtype` takes that too.
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
MXNET_BFLOAT16 = np.dtype([("bfloat16", "<u2")])

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
    BFLOAT16: 12,
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
    except (TypeError, ValueError) as exc:  # ValueError: e.g. "(10**12,)i4", too big
        raise DTypeError(f"not a dtype: {value!r}") from exc
    if dt == MXNET_BFLOAT16:
        return BFLOAT16
    if dt not in DTYPE_TO_FLAG:
        raise DTypeError(f"dtype {dt} is not supported (supported: "
                         f"{', '.join(str(d) for d in DTYPE_TO_FLAG)})")
    return dt


def is_numeric(dtype: np.dtype) -> bool:
    """Whether arrays of `dtype` hold numbers: bool, integers, floats, bfloat16."""
    return dtype.kind in "biuf" or dtype == BFLOAT16


def to_bfloat16(values: object) -> np.ndarray:
    """`values` rounded to bfloat16, to nearest with ties to even (as oneDNN, and
    MXNet's oneDNN casts, round; MXNet's mshadow `Cast` truncates instead)."""
    return np.asarray(values, dtype=np.float32).astype(BFLOAT16)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a kernel computes in for data of `dtype`: float32 for the 16-bit
    floats (MXNet's AccReal), `dtype` itself otherwise."""
    return np.dtype(np.float32) if dtype in (BFLOAT16, np.float16) else dtype


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not every platform reports it
        return 1 << 48


# No array may ask for more bytes than the machine has: a shape beyond this is
# a bad file or a typo, refused before numpy tries (and fails, or swaps).
MAX_ARRAY_BYTES = _physical_memory()


def as_shape(value: object, what: str) -> tuple[int, ...]:
    """`value` checked as a concrete shape: a sequence of non-negative integers
    (Python or numpy; integral floats are refused, as a truncation would hide a bug).

    `what` names the array in the message, e.g. ``"argument data"``.
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise ShapeError(f"{what}: not a shape: {value!r}")
    dims = []
    for d in value:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise ShapeError(f"{what}: shape {tuple(value)!r} has a dimension {d!r} "
                             "that is not an integer")
        if d < 0:
            raise ShapeError(f"{what}: shape {tuple(value)!r} has a negative dimension")
        dims.append(int(d))
    return tuple(dims)


def check_array_size(shape: Sequence[int], dtype: np.dtype, what: str) -> None:
    """Raise ShapeError if an array of `shape` and `dtype` cannot fit in memory."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > MAX_ARRAY_BYTES:
        raise ShapeError(f"{what}: shape {tuple(shape)} of {np.dtype(dtype)} needs "
                         f"{nbytes:.3g} bytes, more than this machine's memory "
                         f"({MAX_ARRAY_BYTES:.3g} bytes)")


@dataclass(frozen=True)
class Settings:
    """Every MINIMX_* environment variable, read in this one place (and MXNet's
    MXNET_HOME and MXNET_SUBGRAPH_BACKEND, which minimx honours as MXNet does)."""

    subgraph_backends: tuple[str, ...]
    subgraph_default_ops: tuple[str, ...]
    engine_type: str
    cpu_worker_nthreads: int
    exec_enable_inplace: bool
    exec_bulk_inference: bool
    dnnl_root: str | None
    dnnl_winograd: bool
    dnnl_batch_parts: bool   # a large batch's first layers run image by image
    dnnl_depthwise_int8: bool   # INT8 depthwise 3x3 convolutions by minimx's kernel
    dnnl_pointwise_int8: bool   # INT8 1x1 convolutions expanding channels, minimx's
    dnnl_nhwc_input: bool   # a 3-channel NCHW input made NHWC by minimx's kernel
    dnnl_first_conv_int8: bool   # a float first convolution and its quantizing, minimx's
    dnnl_pointwise_depthwise: bool   # a float 1x1 convolution and the depthwise one reading it
    dnnl_blocked_layout: bool   # depthwise networks' float convolutions in channel blocks
    dnnl_dtype: str   # what DNNL subgraphs compute in: float32, or bfloat16
    dnnl_fusions_off: frozenset[str]   # lower-cased <NAME>s of MINIMX_DNNL_FUSE_<NAME>=0
    data_dir: str   # MXNET_HOME (default ~/.mxnet): where Gluon's datasets are looked for


def _csv(value: str | None) -> tuple[str, ...]:
    items = tuple(v.strip() for v in (value or "").split(",") if v.strip())
    return () if items == ("NONE",) else items


_TRUE = ("1", "true", "on", "yes")
_FALSE = ("0", "false", "off", "no")


def env_flag(name: str, default: bool) -> bool:
    """The boolean environment variable `name`: 1/0, true/false, on/off, yes/no
    in any case; unset or empty gives `default`. Anything else is refused."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise MinimxError(f"{name}={os.environ[name]!r} is not a boolean "
                      f"(use one of {'/'.join(_TRUE)} or {'/'.join(_FALSE)})")


_log = logging.getLogger("minimx")
_mxnet_backend_told: set[str] = set()


def _subgraph_backends(env: os._Environ[str]) -> tuple[str, ...]:
    """MINIMX_SUBGRAPH_BACKEND; MXNet users' MXNET_SUBGRAPH_BACKEND when it is unset."""
    if "MINIMX_SUBGRAPH_BACKEND" in env or "MXNET_SUBGRAPH_BACKEND" not in env:
        return _csv(env.get("MINIMX_SUBGRAPH_BACKEND"))
    value = env["MXNET_SUBGRAPH_BACKEND"]
    if value not in _mxnet_backend_told:
        _mxnet_backend_told.add(value)
        _log.info("MINIMX_SUBGRAPH_BACKEND is not set: using MXNET_SUBGRAPH_BACKEND=%s", value)
    return _csv(value)


DNNL_DTYPES = ("float32", "bfloat16")


def _dnnl_dtype(env: os._Environ[str]) -> str:
    """MINIMX_DNNL_DTYPE: float32 (unset or empty) or bfloat16."""
    value = env.get("MINIMX_DNNL_DTYPE", "").strip().lower() or "float32"
    if value not in DNNL_DTYPES:
        raise MinimxError(f"MINIMX_DNNL_DTYPE={env['MINIMX_DNNL_DTYPE']!r} is not one of "
                          f"{', '.join(DNNL_DTYPES)}")
    return value


_FUSE = "MINIMX_DNNL_FUSE_"


def _fusions_off(env: os._Environ[str]) -> frozenset[str]:
    """The DNNL fusion steps turned off, by name: MINIMX_DNNL_FUSE_CONV_BN=0 gives
    ``conv_bn`` (the backend checks the names against its pattern table)."""
    return frozenset(name.removeprefix(_FUSE).lower() for name in env
                     if name.startswith(_FUSE) and not env_flag(name, True))


def settings() -> Settings:
    """The current settings. Read at each use, so tests may change os.environ."""
    env = os.environ
    try:
        nthreads = int(env.get("MINIMX_CPU_WORKER_NTHREADS", "2"))
    except ValueError as exc:
        raise MinimxError("MINIMX_CPU_WORKER_NTHREADS must be an integer, got "
                          f"{env['MINIMX_CPU_WORKER_NTHREADS']!r}") from exc
    return Settings(
        subgraph_backends=_subgraph_backends(env),
        subgraph_default_ops=_csv(env.get("MINIMX_SUBGRAPH_DEFAULT_OPS")),
        engine_type=env.get("MINIMX_ENGINE_TYPE", "ThreadedEngine") or "ThreadedEngine",
        cpu_worker_nthreads=max(1, nthreads),
        exec_enable_inplace=env_flag("MINIMX_EXEC_ENABLE_INPLACE", True),
        exec_bulk_inference=env_flag("MINIMX_EXEC_BULK_EXEC_INFERENCE", True),
        dnnl_root=env.get("MINIMX_DNNL_ROOT") or None,
        dnnl_winograd=env_flag("MINIMX_DNNL_WINOGRAD", True),
        dnnl_batch_parts=env_flag("MINIMX_DNNL_BATCH_PARTS", True),
        dnnl_depthwise_int8=env_flag("MINIMX_DNNL_DEPTHWISE_INT8", True),
        dnnl_pointwise_int8=env_flag("MINIMX_DNNL_POINTWISE_INT8", True),
        dnnl_nhwc_input=env_flag("MINIMX_DNNL_NHWC_INPUT", True),
        dnnl_first_conv_int8=env_flag("MINIMX_DNNL_FIRST_CONV_INT8", True),
        dnnl_pointwise_depthwise=env_flag("MINIMX_DNNL_POINTWISE_DEPTHWISE", True),
        dnnl_blocked_layout=env_flag("MINIMX_DNNL_BLOCKED_LAYOUT", True),
        dnnl_dtype=_dnnl_dtype(env),
        dnnl_fusions_off=_fusions_off(env),
        data_dir=os.path.expanduser(env.get("MXNET_HOME") or os.path.join("~", ".mxnet")),
    )


@contextlib.contextmanager
def subgraph_backend(name: str) -> Iterator[None]:
    """Within it, binds partition with backend(s) `name` (``NONE``: none), as if
    MINIMX_SUBGRAPH_BACKEND said so; the variable is restored after."""
    old = os.environ.get("MINIMX_SUBGRAPH_BACKEND")
    os.environ["MINIMX_SUBGRAPH_BACKEND"] = name
    try:
        yield
    finally:
        if old is None:
            del os.environ["MINIMX_SUBGRAPH_BACKEND"]
        else:
            os.environ["MINIMX_SUBGRAPH_BACKEND"] = old
