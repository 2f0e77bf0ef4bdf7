"""Random sampling operators, with MXNet 1.9's names, parameters and defaults
(src/operator/random/sample_op.cc, multisample_op.cc, sample_multinomial_op.cc,
shuffle_op.cc):

- `_random_<d>` (no inputs): samples of `shape` from the distribution d with
  scalar parameters; `_random_randint`;
- `_random_<d>_like`: samples of the input's shape and dtype;
- `_sample_<d>`: one set of samples of `shape` per element of the parameter
  arrays (output shape: the parameters' shape + `shape`);
- `_sample_multinomial` (indices drawn from the rows of the last axis, with their
  log-probabilities when `get_prob`) and `_shuffle` (a permutation of the first axis).

Values come from `GENERATOR` (`mx.random.seed` seeds it): MXNet's distributions, not
its numbers. Parameters out of a distribution's domain raise `OperatorError`, where
MXNet checks the scalar ones and computes garbage for bad arrays. Samplers send zero
gradients back, as MXNet's; the multinomial's log-probabilities differentiate.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError, as_shape
from .infer import Shape, known, merge, merge_all, merge_dtype, same_shape
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register, zero_gradients

Array = np.ndarray
F32 = np.dtype(np.float32)
FLOAT_DTYPES = ("float16", "float32", "float64")


class Distribution(NamedTuple):
    """One distribution: its parameters as the `_random_` operator takes them, a
    vectorized sampler ``draw(rng, size, *params) -> samples`` (parameters broadcast
    against `size`), and the rules its parameters must follow, each a test of all
    parameter values and what it says, with ``{i}`` standing for ``name=value`` of
    parameter i."""

    params: tuple[Param, ...]
    draw: Callable[..., Array]
    rules: tuple[tuple[Callable[..., Any], str], ...]
    sample_inputs: tuple[str, ...] = ()   # the _sample_ operator's inputs, if named otherwise


def _negative_binomial(rng: np.random.Generator, size: tuple, k: Any, p: Any) -> Array:
    # Failures before the k-th success as a gamma-Poisson mixture (as MXNet draws it),
    # which, unlike numpy's sampler, takes k = 0 and p = 1.
    return rng.poisson(rng.gamma(k, (1 - np.asarray(p, np.float64)) / p, size))


def _generalized_negative_binomial(rng: np.random.Generator, size: tuple, mu: Any,
                                   alpha: Any) -> Array:
    """Mean mu, variance mu + alpha mu^2: Poisson(mu) when alpha is 0."""
    alpha = np.asarray(alpha, np.float64)
    positive = np.where(alpha > 0, alpha, 1.0)
    lam = np.where(alpha > 0, rng.gamma(1 / positive, mu * positive, size),
                   np.broadcast_to(mu, size))
    return rng.poisson(lam)


def _param(name: str, default: float, doc: str, kind: str = "float") -> Param:
    return Param(name, kind, default, doc)


_POSITIVE = "{0} must be positive"
_NON_NEGATIVE = "{0} must not be negative"
DISTRIBUTIONS: dict[str, Distribution] = {
    "uniform": Distribution(
        (_param("low", 0.0, "Lower bound of the distribution."),
         _param("high", 1.0, "Upper bound of the distribution.")),
        lambda rng, size, low, high: rng.uniform(low, high, size),
        ((lambda low, high: low <= high, "{0} must not exceed {1}"),)),
    # scale 0 gives loc (MXNet refuses it), which SGLD at learning rate 0 relies on.
    "normal": Distribution(
        (_param("loc", 0.0, "Mean of the distribution."),
         _param("scale", 1.0, "Standard deviation of the distribution.")),
        lambda rng, size, loc, scale: rng.normal(loc, scale, size),
        ((lambda loc, scale: scale >= 0, "{1} must not be negative"),), ("mu", "sigma")),
    "gamma": Distribution(
        (_param("alpha", 1.0, "Alpha parameter (shape) of the gamma distribution."),
         _param("beta", 1.0, "Beta parameter (scale) of the gamma distribution.")),
        lambda rng, size, alpha, beta: rng.gamma(alpha, beta, size),
        ((lambda alpha, beta: alpha > 0, _POSITIVE), (lambda alpha, beta: beta > 0,
                                                      "{1} must be positive"))),
    "exponential": Distribution(
        (_param("lam", 1.0, "Lambda parameter (rate) of the exponential distribution."),),
        lambda rng, size, lam: rng.exponential(1 / np.asarray(lam, np.float64), size),
        ((lambda lam: lam > 0, _POSITIVE),)),
    "poisson": Distribution(
        (_param("lam", 1.0, "Lambda parameter (rate) of the Poisson distribution."),),
        lambda rng, size, lam: rng.poisson(lam, size),
        ((lambda lam: lam >= 0, _NON_NEGATIVE),)),
    "negative_binomial": Distribution(
        (_param("k", 1, "Limit of unsuccessful experiments.", "int"),
         _param("p", 1.0, "Failure probability in each experiment.")),
        _negative_binomial,
        ((lambda k, p: k >= 0, _NON_NEGATIVE),
         (lambda k, p: (p > 0) & (p <= 1), "{1} must be in (0, 1]"))),
    "generalized_negative_binomial": Distribution(
        (_param("mu", 1.0, "Mean of the negative binomial distribution."),
         _param("alpha", 1.0, "Alpha (dispersion) parameter of the negative binomial "
                "distribution.")),
        _generalized_negative_binomial,
        ((lambda mu, alpha: mu >= 0, _NON_NEGATIVE),
         (lambda mu, alpha: alpha >= 0, "{1} must not be negative"))),
}


def check_values(what: str, names: Sequence[str], values: Sequence[Any],
                 rules: Sequence[tuple[Callable[..., Any], str]]) -> None:
    """`OperatorError` naming `what` and the first values (scalars, or elements of
    equally shaped arrays) that are not finite or break one of `rules`."""
    arrays = [np.asarray(v, np.float64) for v in values]

    def shown(i: int, at: int) -> str:
        return f"{names[i]}={arrays[i].flat[at]:g}"

    for i, a in enumerate(arrays):
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            raise OperatorError(f"{what}: {shown(i, int(bad[0]))} must be a finite number")
    for test, text in rules:
        bad = np.flatnonzero(~np.broadcast_to(test(*arrays), arrays[0].shape))
        if bad.size:
            at = int(bad[0])
            where = f" (element {at})" if arrays[0].ndim else ""
            raise OperatorError(f"{what}: " + text.format(*(shown(i, at) for i in range(
                len(arrays)))) + where)


# -- _random_<d> and _random_randint: scalar parameters, no inputs -----------------------------

def _out_shape(name: str, p: Params) -> Shape:
    return None if p.shape is None else as_shape(p.shape, f"{name}: shape")


def _resolved(p: Params, out_shapes: list) -> Params:
    """`shape` as inference found it, when the parameter leaves it open (None or 0 dims),
    as MXNet's samplers take their shape from the graph."""
    if (p.shape is not None and known(p.shape)) or out_shapes[0] is None:
        return p
    return Params({**p, "shape": tuple(out_shapes[0])}, label=p.label)


def _drawn_shape(p: Params) -> tuple[int, ...]:
    if p.shape is None or not known(p.shape):
        raise ShapeError(f"{p.label}: shape={p.shape} is not known; give it or let the graph "
                         "infer it")
    return tuple(p.shape)


def _scalar_sampler(name: str, params: tuple[Param, ...], rules: tuple, draw: Callable[..., Array],
                    dtypes: tuple[str, ...], default_dtype: np.dtype, aliases: tuple[str, ...],
                    doc: str) -> OpDef:
    names = [q.name for q in params]

    def infer_shape(p: Params, in_shapes: list, out_shapes: list):
        check_values(name, names, [p[n] for n in names], rules)
        shape = _out_shape(name, p)
        return in_shapes, [out_shapes[0] if shape is None else merge(out_shapes[0], shape)]

    def infer_type(p: Params, in_types: list, out_types: list):
        return in_types, [merge_dtype(out_types[0], p.dtype or default_dtype)]

    def forward(p: Params, ctx: OpContext, inputs: list) -> Array:
        return np.asarray(draw(ctx.rng, _drawn_shape(p), *(p[n] for n in names))).astype(
            p.dtype or default_dtype)

    return OpDef(name, forward, inputs=(), params=(
        *params, Param("shape", "shape", None, "Shape of the output."),
        Param("ctx", "str", "", "Context of output (only used by imperative calls)."),
        Param("dtype", "dtype", None, "Output data type (None: the default).", choices=dtypes)),
        infer_shape=infer_shape, infer_type=infer_type, resolve=_resolved,
        backward=zero_gradients, backward_reads=GradReads(), aliases=aliases, draws=True, doc=doc)


for _name, _dist in DISTRIBUTIONS.items():
    register(_scalar_sampler(
        f"_random_{_name}", _dist.params, _dist.rules, _dist.draw, FLOAT_DTYPES, F32,
        (f"random_{_name}", *((_name,) if _name in ("uniform", "normal") else ())),
        f"Samples of `shape` from the {_name.replace('_', ' ')} distribution."))

register(_scalar_sampler(
    "_random_randint", (Param("low", "int", doc="Lower bound of the distribution."),
                        Param("high", "int", doc="Upper bound of the distribution (excluded).")),
    ((lambda low, high: low < high, "{0} must be below {1}"),),
    lambda rng, size, low, high: rng.integers(low, high, size), ("int32", "int64"),
    np.dtype(np.int32), ("random_randint",),
    "Integers of `shape` drawn uniformly from [low, high)."))


# -- _random_<d>_like: the input's shape and dtype ----------------------------------------------

def _like_sampler(name: str, dist: Distribution) -> OpDef:
    names = [q.name for q in dist.params]

    def infer_type(p: Params, in_types: list, out_types: list):
        dtype = merge_dtype(in_types[0], out_types[0])
        if dtype is not None and dtype.kind != "f":
            raise DTypeError(f"{name}: samples a float distribution; the input is {dtype}")
        return [dtype], [dtype]

    def infer_shape(p: Params, in_shapes: list, out_shapes: list):
        check_values(name, names, [p[n] for n in names], dist.rules)
        shape = merge_all([in_shapes[0], out_shapes[0]])
        return [shape], [shape]

    def forward(p: Params, ctx: OpContext, inputs: list) -> Array:
        x = inputs[0]
        return np.asarray(dist.draw(ctx.rng, x.shape, *(p[n] for n in names))).astype(x.dtype)

    return OpDef(name, forward, params=dist.params, infer_shape=infer_shape,
                 infer_type=infer_type, backward=zero_gradients, backward_reads=GradReads(),
                 bfloat16="refuse", draws=True,
                 doc=f"Samples of the {name[8:-5].replace('_', ' ')} distribution in the "
                     "input's shape and dtype.")


for _name, _dist in DISTRIBUTIONS.items():
    register(_like_sampler(f"_random_{_name}_like", _dist))


# -- _sample_<d>: parameters as arrays -----------------------------------------------------------

def _extra(p: Params) -> tuple[int, ...]:
    return tuple(p.shape or ())


def _array_sampler(name: str, dist: Distribution) -> OpDef:
    inputs = dist.sample_inputs or tuple(q.name for q in dist.params)

    def infer_shape(p: Params, in_shapes: list, out_shapes: list):
        shape = merge_all(in_shapes)
        if shape is None:
            return in_shapes, out_shapes
        return [shape] * len(in_shapes), [merge(out_shapes[0], (*shape, *_extra(p)))]

    def infer_type(p: Params, in_types: list, out_types: list):
        return in_types, [merge_dtype(out_types[0], p.dtype or F32)]

    def forward(p: Params, ctx: OpContext, arrays: list) -> Array:
        check_values(p.label, inputs, arrays, dist.rules)
        lead, extra = arrays[0].shape, _extra(p)
        values = [a.astype(np.float64).reshape(lead + (1,) * len(extra)) for a in arrays]
        return np.asarray(dist.draw(ctx.rng, lead + extra, *values)).astype(p.dtype or F32)

    return OpDef(name, forward, inputs=inputs, params=(
        Param("shape", "shape", (), "Shape to be sampled from each random distribution."),
        Param("dtype", "dtype", None, "Output data type (None: float32).",
              choices=FLOAT_DTYPES)),
        infer_shape=infer_shape, infer_type=infer_type, backward=zero_gradients,
        backward_reads=GradReads(), aliases=(name[1:],), draws=True,
        doc=f"Samples of `shape` from {name[8:].replace('_', ' ')} distributions, one set "
            "per element of the parameter arrays.")


for _name, _dist in DISTRIBUTIONS.items():
    register(_array_sampler(f"_sample_{_name}", _dist))


# -- _sample_multinomial and _shuffle ------------------------------------------------------------

def _multinomial_shape(p: Params, in_shapes: list, out_shapes: list):
    data = in_shapes[0]
    if data is None:
        return in_shapes, out_shapes
    if not data:
        raise ShapeError("_sample_multinomial: data must have at least one axis (the "
                         "categories)")
    return in_shapes, [merge(o, _multinomial_shape_of(p, data)) for o in out_shapes]


def _multinomial_shape_of(p: Params, data: tuple[int, ...]) -> tuple[int, ...]:
    # One distribution and no shape still gives one sample, as in MXNet.
    return (*data[:-1], *_extra(p)) or (1,)


def _multinomial_type(p: Params, in_types: list, out_types: list):
    return in_types, [merge_dtype(out_types[0], p.dtype), *(
        [merge_dtype(out_types[1], in_types[0])] if p.get_prob else [])]


def _multinomial_rows(p: Params, data: Array) -> tuple[Array, int]:
    """The distributions as rows (categories last), and the samples per row."""
    return data.reshape(-1, data.shape[-1]), int(np.prod(_extra(p), dtype=np.int64))


def _multinomial_forward(p: Params, ctx: OpContext, inputs: list) -> list[Array]:
    data = inputs[0]
    rows, count = _multinomial_rows(p, data)
    if np.any(rows < 0) or not np.all(np.isfinite(rows)):
        raise OperatorError(f"{p.label}: probabilities must be finite and not negative")
    # MXNet's walk: the first category whose running sum passes a uniform draw; the
    # last one when the row sums to less than the draw.
    draws = ctx.rng.random((rows.shape[0], count))
    cumulative = np.cumsum(rows.astype(np.float64), axis=1)
    picked = np.minimum((cumulative[:, None, :] <= draws[..., None]).sum(-1),
                        rows.shape[1] - 1)
    shape = _multinomial_shape_of(p, data.shape)
    outputs = [picked.reshape(shape).astype(p.dtype)]
    if p.get_prob:
        with np.errstate(divide="ignore"):
            outputs.append(np.log(np.take_along_axis(rows, picked, 1)).reshape(shape)
                           .astype(data.dtype))
    return outputs


def _multinomial_backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                          out_grads: list) -> list:
    """d log(p[i]) / dp[i] = 1 / p[i], summed over the samples that drew category i."""
    data = inputs[0]
    if not p.get_prob:
        return [np.zeros(data.shape, data.dtype)]
    rows, count = _multinomial_rows(p, data)
    picked = np.asarray(outputs[0]).astype(np.int64).reshape(rows.shape[0], count)
    heads = np.asarray(out_grads[1], np.float64).reshape(rows.shape[0], count)
    hits = (picked[..., None] == np.arange(rows.shape[1])) * heads[..., None]
    # Only drawn categories take 1 / p (as MXNet's kernel adds it per draw): one of
    # probability 0 is never drawn and gets 0, not 0 / 0.
    summed = hits.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        grad = np.where(summed != 0, summed / rows, 0.0)
    return [grad.reshape(data.shape).astype(data.dtype)]


register(OpDef(
    "_sample_multinomial", _multinomial_forward,
    params=(Param("shape", "shape", (), "Shape to be sampled from each random distribution."),
            Param("get_prob", "bool", False, "Also output the log-likelihood of each sample "
                  "(a differentiable output, for REINFORCE-style training)."),
            Param("dtype", "dtype", np.dtype(np.int32), "Data type of the sampled indices.",
                  choices=("float16", "float32", "float64", "int32", "uint8"))),
    outputs=lambda p: ("output0", "output1") if p.get_prob else ("output",),
    infer_shape=_multinomial_shape, infer_type=_multinomial_type,
    backward=_multinomial_backward,
    backward_reads=lambda p: GradReads(inputs=("data",) if p.get_prob else (),
                                       outputs=("output0",) if p.get_prob else ()),
    aliases=("sample_multinomial",), bfloat16="refuse", draws=True,
    doc="Indices drawn from the categorical distributions along the last axis of data "
        "(one set of `shape` per distribution).", named_inputs=False))


def _shuffle_shape(p: Params, in_shapes: list, out_shapes: list):
    if in_shapes[0] == ():
        raise ShapeError("_shuffle: cannot shuffle a scalar (0-d input)")
    return same_shape(p, in_shapes, out_shapes)


def _shuffle_forward(p: Params, ctx: OpContext, inputs: list) -> Array:
    return inputs[0][ctx.rng.permutation(inputs[0].shape[0])]


register(OpDef("_shuffle", _shuffle_forward, infer_shape=_shuffle_shape, aliases=("shuffle",),
               bfloat16="native", draws=True,
               doc="The input with its first axis randomly permuted (no gradient, as in MXNet).",
               named_inputs=False))
