"""`mx.util`: MXNet 1.9's python/mxnet/util.py functions that mean something without
``mx.np``.

minimx runs MXNet's legacy semantics only (no `mx.np` arrays, no NumPy shape semantics in
the operators), so NumPy shape and array semantics are always off: `is_np_shape` and
`is_np_array` say False, turning them off is allowed, and turning either on (`set_np_shape`,
`set_np`, a `np_shape` / `np_array` scope, or calling what `use_np_shape`, `use_np_array`
or `use_np` decorated) raises `MinimxError`. `getenv` / `setenv` read and write
`os.environ`, which minimx's settings read at each use. There is no GPU: `get_gpu_count`
is 0 and `get_gpu_memory` raises as `mx.gpu()` does.
"""
from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

from .base import MinimxError
from .context import Context, no_gpu, num_gpus


def _no_numpy_semantics(what: str) -> MinimxError:
    return MinimxError(f"{what}: minimx has no NumPy semantics (mx.np arrays, scalar and "
                       "zero-size shapes); it runs MXNet's legacy mx.nd / mx.sym semantics only")


def get_gpu_count() -> int:
    """The number of GPUs: 0."""
    return num_gpus()


def get_gpu_memory(gpu_dev_id: int) -> tuple[int, int]:
    """MXNet's (free, total) bytes of a GPU: always raises, as `mx.gpu()` does."""
    raise no_gpu(gpu_dev_id)


def is_np_shape() -> bool:
    """Whether NumPy shape semantics is on: never here."""
    return False


def set_np_shape(active: bool) -> bool:
    """Turn NumPy shape semantics off (a no-op; returns the previous state, False);
    turning it on raises."""
    if active:
        raise _no_numpy_semantics("set_np_shape(True)")
    return False


def is_np_array() -> bool:
    """Whether NumPy array semantics is on: never here."""
    return False


class _Scope:
    """`np_shape` / `np_array`'s scope: entering one that turns the semantics on raises."""

    def __init__(self, what: str, active: bool) -> None:
        self._what, self._active = what, active

    def __enter__(self) -> _Scope:
        if self._active:
            raise _no_numpy_semantics(f"{self._what}(active=True)")
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def np_shape(active: bool = True) -> _Scope:
    """A ``with`` scope of NumPy shape semantics on (raises when entered) or off."""
    return _Scope("np_shape", active)


def np_array(active: bool = True) -> _Scope:
    """A ``with`` scope of NumPy array semantics on (raises when entered) or off."""
    return _Scope("np_array", active)


def _within(scope: Callable[..., _Scope], what: str) -> Callable[[Any], Any]:
    """A decorator, as MXNet's: a function, or each method and property of a class, runs
    inside ``scope(active=True)``."""
    def decorate(func: Any) -> Any:
        if inspect.isclass(func):
            for name, method in inspect.getmembers(func, predicate=lambda f: (
                    inspect.isfunction(f) or inspect.ismethod(f) or isinstance(f, property))):
                if isinstance(method, property):
                    setattr(func, name, property(decorate(method.__get__), method.__set__,
                                                 method.__delattr__, method.__doc__))
                else:
                    setattr(func, name, decorate(method))
            return func
        if callable(func):
            @functools.wraps(func)
            def scoped(*args: Any, **kwargs: Any) -> Any:
                with scope(active=True):
                    return func(*args, **kwargs)
            return scoped
        raise MinimxError(f"{what} can only decorate classes and callable objects, while "
                          f"received a {type(func)}")
    return decorate


use_np_shape = _within(np_shape, "use_np_shape")
use_np_array = _within(np_array, "use_np_array")


def use_np(func: Any) -> Any:
    """`use_np_shape` and `use_np_array` together."""
    return use_np_shape(use_np_array(func))


def set_np(shape: bool = True, array: bool = True) -> None:
    """Turn NumPy shape and array semantics off (``set_np(False, False)``); turning
    either on raises."""
    if not shape and array:
        raise MinimxError("NumPy Shape semantics is required in using NumPy array semantics.")
    if array:
        raise _no_numpy_semantics("set_np(array=True)")
    set_np_shape(shape)


def reset_np() -> None:
    """Turn NumPy shape and array semantics off (they always are here)."""
    set_np(shape=False, array=False)


def set_module(module: str | None) -> Callable[[Any], Any]:
    """A decorator setting the ``__module__`` of a function or class (unless None)."""
    def decorator(func: Any) -> Any:
        if module is not None:
            func.__module__ = module
        return func
    return decorator


def get_cuda_compute_capability(ctx: Context) -> int:
    """A GPU's CUDA compute capability: always raises, there being no GPU context."""
    raise MinimxError(f"Expecting a gpu context to get cuda compute capability, while "
                      f"received ctx {ctx}")


def getenv(name: str) -> str | None:
    """The environment variable `name`, or None when it is not set."""
    return os.environ.get(name)


def setenv(name: str, value: str | None) -> None:
    """Set the environment variable `name` to `value`, or unset it when `value` is None."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


__all__ = ["get_cuda_compute_capability", "get_gpu_count", "get_gpu_memory", "getenv",
           "is_np_array", "is_np_shape", "np_array", "np_shape", "reset_np", "set_module",
           "set_np", "set_np_shape", "setenv", "use_np", "use_np_array", "use_np_shape"]
