"""`mx.init`: how parameters get their first values, with MXNet 1.9's names and rules.

An initializer is called with an `InitDesc` (the parameter's name and its symbol
attributes) and the array to fill. A ``__init__`` attribute on the variable
(``mx.sym.Variable('w', init=mx.init.One())``) wins; otherwise the name's ending
decides, as in MXNet: ``weight`` gets the initializer's own rule, ``bias`` and
``beta`` zeros, ``gamma`` ones, and the running statistics of BatchNorm
(``moving_mean`` zeros, ``moving_var`` ones) what BatchNorm declares for them.
Random values come from `mx.random.seed`'s generator, which is not MXNet's:
the same seed gives the same distribution, not the same numbers.

>>> import minimx as mx
>>> arr = mx.nd.zeros((2, 3))
>>> mx.init.Constant(0.5)(mx.init.InitDesc("fc_weight"), arr)
>>> arr.asnumpy()[0].tolist()
[0.5, 0.5, 0.5]
"""
from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import MinimxError, ShapeError
from .ndarray import NDArray, load, random
from .registry import Registry

# Name endings and the rule each gets when the variable declares no `__init__`
# (MXNet's `Initializer.__call__`, with the running statistics its BatchNorm declares).
_BY_ENDING = (("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"),
              ("beta", "_init_beta"), ("min", "_init_zero"), ("max", "_init_one"),
              ("moving_mean", "_init_zero"), ("moving_var", "_init_one"),
              ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"),
              ("running_mean", "_init_zero"), ("running_var", "_init_one"),
              ("weight_quantize", "_init_quantized_weight"), ("bias_quantize", "_init_zero"))

_REGISTRY = Registry("initializer")
register = _REGISTRY.register
alias = _REGISTRY.alias


class InitDesc(str):
    """A parameter's name (the string itself), its symbol attributes and the
    initializer to fall back to.

    >>> desc = InitDesc("fc_weight", {"__init__": '["one", {}]'})
    >>> desc, desc.attrs["__init__"]
    ('fc_weight', '["one", {}]')
    """

    attrs: dict[str, str]
    global_init: Initializer | None

    def __new__(cls, name: str, attrs: dict[str, str] | None = None,
                global_init: Initializer | None = None) -> InitDesc:
        desc = super().__new__(cls, name)
        desc.attrs = attrs or {}
        desc.global_init = global_init
        return desc


class Initializer:
    """The base of initializers: `_init_weight` is each one's own rule."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs

    def dumps(self) -> str:
        """The initializer as MXNet's JSON: ``'["normal", {"sigma": 0.5}]'``."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, desc: str, arr: NDArray) -> None:
        if not isinstance(desc, InitDesc):
            warnings.warn("Calling initializer with init(str, NDArray) has been deprecated; "
                          "please use init(mx.init.InitDesc(...), NDArray) instead.",
                          DeprecationWarning, stacklevel=2)
            desc = InitDesc(desc)
        if desc.global_init is None:
            desc.global_init = self
        declared = desc.attrs.get("__init__", "")
        if declared:
            create(declared)._init_weight(desc, arr)
            return
        for ending, rule in _BY_ENDING:
            if desc.endswith(ending):
                getattr(self, rule)(desc, arr)
                return
        raise MinimxError(f"initializer {self.dumps()}: unknown initialization pattern for "
                          f"{desc!r}: default initialization is limited to names ending in "
                          f"{', '.join(e for e, _ in _BY_ENDING)}; declare one with "
                          "mx.sym.Variable(name, init=mx.init.*)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = None  # type: ignore[assignment]   # mutable, compared by value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._kwargs})"

    def _init_zero(self, _: str, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_one(self, _: str, arr: NDArray) -> None:
        arr[:] = 1.0

    _init_bias = _init_beta = _init_zero
    _init_gamma = _init_one

    def _init_weight(self, name: str, arr: NDArray) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no rule for weights ({name})")

    def _init_quantized_weight(self, _: str, arr: NDArray) -> None:
        """An int8 weight of a quantized graph (MXNet's rule, for running one on dummy
        data): one random integer in [-127, 127) everywhere."""
        arr[:] = random.randint(-127, 127, dtype="int32").asnumpy().astype(np.int8)


def create(init: Initializer | str, **kwargs: Any) -> Initializer:
    """An initializer from an instance, a registered name (``'xavier'``) or MXNet's
    JSON (``'["xavier", {"magnitude": 2}]'``, what `dumps` and ``__init__`` hold)."""
    if isinstance(init, Initializer):
        return init
    if not isinstance(init, str):
        raise MinimxError(f"mx.init.create: expected an Initializer or a name, got {init!r}")
    return _REGISTRY.create(init, **kwargs)


@register
@alias("zeros")
class Zero(Initializer):
    """Weights of zeros."""

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 0.0


@register
@alias("ones")
class One(Initializer):
    """Weights of ones."""

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = 1.0


@register
class Constant(Initializer):
    """Weights set to `value` (a number, or an array of the weight's shape)."""

    def __init__(self, value: Any) -> None:
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = self.value

    def dumps(self) -> str:
        value = self.value
        if not np.isscalar(value):
            value = np.asarray(value).tolist()
        return json.dumps(["constant", {"value": value}])


@register
class Uniform(Initializer):
    """Weights drawn uniformly from [-scale, scale]."""

    def __init__(self, scale: float = 0.07) -> None:
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = random.uniform(-self.scale, self.scale, arr.shape, dtype=arr.dtype)


@register
class Normal(Initializer):
    """Weights drawn from a normal distribution of mean 0 and deviation `sigma`."""

    def __init__(self, sigma: float = 0.01) -> None:
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _: str, arr: NDArray) -> None:
        arr[:] = random.normal(0.0, self.sigma, arr.shape, dtype=arr.dtype)


@register
class Xavier(Initializer):
    """Xavier (Glorot) weights: values of scale sqrt(magnitude / factor), where the
    factor is the weight's fan-in, fan-out or their mean (`factor_type`), drawn
    uniformly in [-scale, scale] or normally with that deviation (`rnd_type`
    ``'uniform'`` or ``'gaussian'``)."""

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg",
                 magnitude: float = 3) -> None:
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise MinimxError(f"Xavier: rnd_type={rnd_type!r} is not 'uniform' or 'gaussian'")
        if factor_type not in ("avg", "in", "out"):
            raise MinimxError(f"Xavier: factor_type={factor_type!r} is not 'avg', 'in' or 'out'")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name: str, arr: NDArray) -> None:
        scale = np.sqrt(self.magnitude / _fan_factor(arr.shape, self.factor_type, name))
        if self.rnd_type == "uniform":
            arr[:] = random.uniform(-scale, scale, arr.shape, dtype=arr.dtype)
        else:
            arr[:] = random.normal(0.0, scale, arr.shape, dtype=arr.dtype)


def _fan_factor(shape: Sequence[int], factor_type: str, name: str) -> float:
    """MXNet's Xavier factor: fan-in, fan-out (each times the kernel's size) or their mean."""
    if len(shape) < 2:
        raise ShapeError(f"Xavier initializer cannot be applied to vector {name} of shape "
                         f"{tuple(shape)}: it requires at least 2D")
    receptive = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    return {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[factor_type]


@register
class MSRAPrelu(Xavier):
    """He (MSRA) weights for rectifiers: gaussian Xavier with magnitude
    2 / (1 + slope^2)."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25) -> None:
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Orthogonal(Initializer):
    """Weights whose rows (or columns, for a wide weight) are orthonormal, times
    `scale`: the singular vectors of a random matrix drawn uniformly in [-1, 1]
    or normally (`rand_type`), as in Saxe et al."""

    def __init__(self, scale: float = 1.414, rand_type: str = "uniform") -> None:
        super().__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise MinimxError(f"Orthogonal: rand_type={rand_type!r} is not 'uniform' or "
                              "'normal'")
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _: str, arr: NDArray) -> None:
        shape = (arr.shape[0], int(np.prod(arr.shape[1:])))
        draw = (random.uniform(-1.0, 1.0, shape) if self.rand_type == "uniform"
                else random.normal(0.0, 1.0, shape))
        u, _s, v = np.linalg.svd(draw.asnumpy(), full_matrices=False)
        arr[:] = self.scale * (u if u.shape == shape else v).reshape(arr.shape)


@register
class Bilinear(Initializer):
    """Bilinear interpolation kernels for an upsampling Deconvolution's weight
    (every output and input channel pair gets the same 2-d kernel)."""

    def _init_weight(self, _: str, arr: NDArray) -> None:
        height, width = arr.shape[2], arr.shape[3]
        f = np.ceil(width / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        rows = 1 - np.abs(np.arange(height) / f - c)
        cols = 1 - np.abs(np.arange(width) / f - c)
        arr[:] = np.broadcast_to(np.outer(rows, cols), arr.shape).astype(np.float32)


@register
class LSTMBias(Initializer):
    """An LSTM cell's biases: 0, but `forget_bias` for the forget gate (the second
    quarter). Given as a bias's ``__init__`` attribute, as MXNet's."""

    def __init__(self, forget_bias: float = 1.0) -> None:
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _: str, arr: NDArray) -> None:
        hidden = arr.shape[0] // 4
        arr[:] = 0.0
        arr[hidden:2 * hidden] = self.forget_bias


class Mixed:
    """The first initializer whose pattern (a regular expression matched at the
    start of the name) fits each parameter.

    >>> init = Mixed(["bias", ".*"], [Zero(), Uniform(0.1)])
    """

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Initializer]) -> None:
        if len(patterns) != len(initializers):
            raise MinimxError(f"Mixed: {len(patterns)} patterns for {len(initializers)} "
                              "initializers")
        self.map = list(zip([re.compile(p) for p in patterns], initializers, strict=True))

    def __call__(self, name: str, arr: NDArray) -> None:
        for pattern, init in self.map:
            if pattern.match(name):
                init(name, arr)
                return
        raise MinimxError(f"Mixed: parameter name {name} did not match any pattern "
                          f"({', '.join(p.pattern for p, _ in self.map)}); consider adding "
                          "a '.*' pattern at the end with a default initializer")


class Load:
    """Values from a params file or dict (``arg:``/``aux:`` prefixes dropped), and
    `default_init` for the names it lacks."""

    def __init__(self, param: str | dict[str, NDArray],
                 default_init: Initializer | None = None, verbose: bool = False) -> None:
        loaded = load(param) if isinstance(param, str) else param
        if not isinstance(loaded, dict):
            raise MinimxError("Load: the params hold an unnamed list; names are needed")
        self.param = {name[4:] if name[:4] in ("arg:", "aux:") else name: arr
                      for name, arr in loaded.items()}
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name: str, arr: NDArray) -> None:
        if name in self.param:
            if arr.shape != self.param[name].shape:
                raise ShapeError(f"Parameter {name} cannot be initialized from loading: shape "
                                 f"mismatch, target {arr.shape} vs loaded "
                                 f"{self.param[name].shape}")
            arr[:] = self.param[name]
        elif self.default_init is not None:
            self.default_init(name, arr)
        else:
            raise MinimxError(f"Cannot initialize {name}: not found in the loaded params "
                              "and no default initializer is given")
