"""`mx.nd.random` and `mx.sym.random`, as MXNet 1.9's python/mxnet/{ndarray,symbol}/random.py.

Each distribution's function takes its parameters as numbers, and then runs
`_random_<d>` (samples of `shape`), or as arrays (NDArrays / Symbols), and then
runs `_sample_<d>` (`shape` samples per parameter set). `multinomial`, `shuffle`,
`randint`, `randn` and the `<d>_like` functions wrap their operators. One class
serves both packages, given their tensor type and generated functions;
`mx.random.seed` (this namespace's `seed`) reseeds the operators' generator.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import engine
from ..base import MinimxError, OperatorError, as_shape
from ..context import as_context
from ..ops import get_op
from ..ops.random import DISTRIBUTIONS
from ..ops.registry import GENERATOR, OpDef


def _bind(what: str, names: Sequence[str], args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Add the positional `args` to `kwargs` under `names`, as Python would bind them."""
    if len(args) > len(names):
        raise MinimxError(f"{what}: takes at most {len(names)} positional arguments "
                          f"({', '.join(names)}) after its inputs, got {len(args)}")
    twice = sorted(set(names[:len(args)]) & set(kwargs))
    if twice:
        raise MinimxError(f"{what}: {', '.join(twice)} given twice")
    kwargs.update(zip(names[:len(args)], args, strict=True))


class RandomFunctions:
    """The functions of `mx.nd.random` (``imperative``: with ctx, out, and one sample
    when no shape is given, as MXNet's) or of `mx.sym.random`.

    >>> import minimx as mx
    >>> mx.random.seed(1)
    >>> mx.nd.random.uniform(0, 1, shape=(2,)).shape
    (2,)
    >>> mx.nd.random.normal(mx.nd.array([0, 10]), mx.nd.array([1, 1]), shape=3).shape
    (2, 3)
    """

    def __init__(self, tensor: type, make: Callable[[OpDef, str], Callable],
                 imperative: bool) -> None:
        self._tensor, self._make, self._imperative = tensor, make, imperative
        self._space = "mx.nd.random" if imperative else "mx.sym.random"
        self._extra = ("ctx", "out") if imperative else ()
        for key, dist in DISTRIBUTIONS.items():
            setattr(self, key, self._distribution(
                key, tuple(q.name for q in dist.params), tuple(q.default for q in dist.params)))
            setattr(self, f"{key}_like", self._op(f"_random_{key}_like"))
        # MXNet's exponential takes the scale, 1 / lam.
        self.exponential = self._distribution("exponential", ("scale",), (1.0,),
                                              lambda scale: [1.0 / scale])

    def __getattr__(self, name: str) -> Any:
        # Tells type checkers that the distributions set in __init__ exist; at run time
        # it is reached only for names that do not.
        raise AttributeError(f"{self._space} has no function {name!r}")

    def _op(self, name: str) -> Callable:
        return self._make(get_op(name), name)

    def _distribution(self, key: str, names: tuple[str, ...], defaults: tuple,
                      convert: Callable[..., list] | None = None) -> Callable:
        what = f"{self._space}.{key}"
        positional = (*names, "shape", "dtype", *self._extra)

        def draw(*args: Any, **kwargs: Any) -> Any:
            _bind(what, positional, args, kwargs)
            values = [kwargs.pop(n, d) for n, d in zip(names, defaults, strict=True)]
            if convert is not None:
                values = convert(*values)
            return self._draw(what, key, values, kwargs)
        draw.__name__ = draw.__qualname__ = key
        draw.__doc__ = (f"Samples of the {key.replace('_', ' ')} distribution: arguments "
                        f"{', '.join(positional)}; number parameters run _random_{key}, "
                        f"arrays _sample_{key}.")
        return draw

    def _draw(self, what: str, key: str, values: list, kwargs: dict[str, Any]) -> Any:
        kinds = {isinstance(v, self._tensor) for v in values}
        if kinds == {True}:
            return self._call(f"_sample_{key}", values, self._options(what, kwargs, False))
        if kinds == {False} and all(isinstance(v, numbers.Real) for v in values):
            names = [q.name for q in DISTRIBUTIONS[key].params]
            return self._call(f"_random_{key}", [], {**self._options(what, kwargs, True),
                                                     **dict(zip(names, values, strict=True))})
        raise OperatorError(f"{what}: the parameters must be all numbers or all "
                            f"{self._tensor.__name__}s, got "
                            f"{', '.join(type(v).__name__ for v in values)}")

    def _options(self, what: str, kwargs: dict[str, Any], scalar: bool) -> dict[str, Any]:
        """The shape and ctx checked. An imperative draw of number parameters is made
        on ctx (the current context when None), and without a shape has out's, or
        one sample (MXNet's defaults); one of array parameters is on their context,
        whatever ctx says (as MXNet's)."""
        if kwargs.get("shape") is not None:
            kwargs["shape"] = as_shape(kwargs["shape"], what)
        if self._imperative:
            ctx = kwargs.pop("ctx", None)
            as_context(ctx, f"{what}: ctx")
            if scalar:
                kwargs["ctx"] = ctx   # None (not passed on): the current context
            if scalar and kwargs.get("shape") is None:
                out = kwargs.get("out")
                kwargs["shape"] = (1,) if out is None else out.shape
        return kwargs

    def _call(self, name: str, inputs: list, kwargs: dict[str, Any]) -> Any:
        return self._op(name)(*inputs, **{k: v for k, v in kwargs.items() if v is not None})

    def randint(self, low: int, high: int, *args: Any, **kwargs: Any) -> Any:
        """Integers drawn uniformly from [low, high), int32 unless dtype is int64;
        then shape, dtype (and ctx, out for NDArrays)."""
        what = f"{self._space}.randint"
        _bind(what, ("shape", "dtype", *self._extra), args, kwargs)
        return self._call("_random_randint", [], {**self._options(what, kwargs, True),
                                                  "low": low, "high": high})

    def randn(self, *shape: int, **kwargs: Any) -> Any:
        """Normal samples of the given shape: ``randn(2, 3, loc=0, scale=1)``."""
        return self.normal(kwargs.pop("loc", 0.0), kwargs.pop("scale", 1.0),
                           shape or None, **kwargs)

    def multinomial(self, data: Any, *args: Any, **kwargs: Any) -> Any:
        """Indices drawn from the distributions along data's last axis; then shape,
        get_prob (log-probabilities too: by default for Symbols, as MXNet's), dtype
        (int32), and out before dtype for NDArrays."""
        _bind(f"{self._space}.multinomial", ("shape", "get_prob", *(
            ("out", "dtype") if self._imperative else ("dtype",))), args, kwargs)
        kwargs.setdefault("get_prob", not self._imperative)
        kwargs.setdefault("dtype", "int32")
        return self._call("_sample_multinomial", [data], kwargs)

    def shuffle(self, data: Any, **kwargs: Any) -> Any:
        """The data with its first axis randomly permuted."""
        return self._op("_shuffle")(data, **kwargs)

    def seed(self, seed_state: int, ctx: Any = "all") -> None:
        """Reseed the random operators (and Dropout, the initializers, NDArrayIter's
        shuffle), once the work already pushed has drawn from the old seed."""
        if isinstance(seed_state, bool) or not isinstance(seed_state, (int, np.integer)):
            raise MinimxError(f"mx.random.seed: seed_state={seed_state!r} must be an integer")
        current = engine.get_engine()
        if isinstance(current, engine.ThreadedEngine):
            current.drain()  # work pushed before draws from the old seed; its errors wait
        # MXNet takes the seed as a C int: any integer, wrapped to 32 bits (-1 is 2**32 - 1).
        GENERATOR.seed(int(seed_state) % 2 ** 32)

    @property
    def rng(self) -> np.random.Generator:
        """The generator the random operators draw from."""
        return GENERATOR.rng
