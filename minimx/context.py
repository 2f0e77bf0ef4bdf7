"""Devices: minimx runs on the CPU only."""
from __future__ import annotations

import threading

from .base import MinimxError


class Context:
    """A device; only ``cpu`` exists. Equal contexts compare equal."""

    def __init__(self, device_type: str = "cpu", device_id: int = 0) -> None:
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
    def __enter__(self) -> Context:
        self._outer = current_context()
        set_current_context(self)
        return self

    def __exit__(self, *exc: object) -> None:
        set_current_context(self._outer)


_current = threading.local()   # each thread's current context, as MXNet's


def cpu(device_id: int = 0) -> Context:
    return Context("cpu", device_id)


def gpu(device_id: int = 0) -> Context:
    """Always raises: minimx has no GPU support."""
    raise MinimxError(f"gpu({device_id}) is not supported: minimx runs on the CPU only "
                      "(use mx.cpu())")


def current_context() -> Context:
    """This thread's current context: mx.cpu() unless a ``with`` block or
    `mx.test_utils.set_default_context` chose another."""
    return getattr(_current, "value", None) or cpu()


def set_current_context(ctx: Context) -> None:
    _current.value = ctx


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
