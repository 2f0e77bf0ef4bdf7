"""Devices: minimx runs on the CPU only."""
from __future__ import annotations

import re
import threading

from .base import MinimxError


class Context:
    """A device; only ``cpu`` exists. Equal contexts compare equal."""

    device_type: str
    device_id: int

    def __init__(self, device_type: str | Context = "cpu", device_id: int = 0) -> None:
        if isinstance(device_type, Context):   # a copy, as MXNet's Context(ctx)
            device_id = device_type.device_id
            device_type = device_type.device_type
        if device_type not in ("cpu", "cpu_pinned", "cpu_shared"):
            raise MinimxError(f"device {device_type}({device_id}) is not supported: "
                              "minimx runs on the CPU only (use mx.cpu())")
        self.device_type = device_type
        self.device_id = device_id

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Context) and other.device_type == self.device_type
                and other.device_id == self.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    # ``with mx.cpu(1): ...`` makes it the current context in the block, as in MXNet.
    # The contexts outside are kept per thread, not on the object: arrays share
    # their Context objects, and ``with a.context:`` may nest or run in two threads.
    def __enter__(self) -> Context:
        _outer_contexts().append(current_context())
        set_current_context(self)
        return self

    def __exit__(self, *exc: object) -> None:
        set_current_context(_outer_contexts().pop())


_current = threading.local()   # each thread's current context, as MXNet's


def _outer_contexts() -> list[Context]:
    """This thread's contexts current outside its open ``with`` blocks."""
    if not hasattr(_current, "outer"):
        _current.outer = []
    return _current.outer


def cpu(device_id: int = 0) -> Context:
    return Context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    """MXNet's page-locked CPU memory (for copies to a GPU): plain CPU memory here."""
    return Context("cpu_pinned", device_id)


def no_gpu(device_id: int) -> MinimxError:
    """The error of every request for a GPU: minimx has none."""
    return MinimxError(f"gpu({device_id}) is not supported: minimx runs on the CPU only "
                       "(use mx.cpu())")


def gpu(device_id: int = 0) -> Context:
    """Always raises: minimx has no GPU support."""
    raise no_gpu(device_id)


def num_gpus() -> int:
    """The number of GPUs minimx can use: 0."""
    return 0


def gpu_memory_info(device_id: int = 0) -> tuple[int, int]:
    """MXNet's (free, total) bytes of a GPU's memory: always raises, as `gpu` does."""
    raise no_gpu(device_id)


def current_context() -> Context:
    """This thread's current context: mx.cpu() unless a ``with`` block or
    `mx.test_utils.set_default_context` chose another."""
    return getattr(_current, "value", None) or cpu()


def set_current_context(ctx: Context) -> None:
    _current.value = ctx


def context_from_str(text: str, what: str = "ctx") -> Context:
    """A context written as MXNet writes it in operator attributes (``"cpu(1)"``);
    the current one for ``""``."""
    if not text:
        return current_context()
    match = re.fullmatch(r"\s*(\w+)\((\d+)\)\s*", text)
    if match is None:
        raise MinimxError(f"{what}: {text!r} is not a context such as 'cpu(0)'")
    return Context(match[1], int(match[2]))


def as_context(value: object, what: str = "ctx") -> Context:
    """`value` checked as a device: a Context, None (the current one), or a list of
    Contexts as MXNet's Module takes (only one CPU context runs here)."""
    if value is None:
        return current_context()
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if not isinstance(value, Context):
        raise MinimxError(f"{what} must be a Context such as mx.cpu(), got {value!r}")
    return value
