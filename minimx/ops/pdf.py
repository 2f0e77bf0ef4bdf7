"""Densities of samples: `_random_pdf_<d>` (aliases `random_pdf_<d>`), MXNet 1.9's
(src/operator/random/pdf_op.h), with `is_log` for the log-density.

The parameter arrays share one shape P; the samples have shape P + S (each
parameter set has its samples in the trailing axes S) and so has the density. The
Dirichlet's parameters and samples are vectors along one more, last, axis, which
the density drops. Each row of the table gives the log-density and its partial
derivatives in the sample and each parameter; the density's gradient is the
log-density's times the density. Parameter gradients sum over the samples of each
set. As in MXNet: the uniform's density is 1 / (high - low) with no check of the
support, the gamma's beta is a rate here (a scale in the samplers), and the
samples of the discrete distributions get a zero gradient.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..base import ShapeError
from .infer import merge, merge_all
from .params import Params
from .registry import GradReads, OpContext, OpDef, Param, register
from .special import digamma, gammaln

Array = np.ndarray


class Density(NamedTuple):
    """``log_pdf(x, *params)`` and ``grads(x, *params) -> (d/dx, d/dparam, ...)`` of
    the log-density, elementwise over broadcast arrays (vector distributions: the
    last axis is the event's, and log_pdf sums over it)."""

    params: tuple[str, ...]
    log_pdf: Callable[..., Array]
    grads: Callable[..., tuple]
    vector: bool = False


def _nb_log_pdf(x: Array, k: Array, p: Array) -> Array:
    return gammaln(x + k) - gammaln(x + 1) - gammaln(k) + k * np.log(p) + x * np.log1p(-p)


def _nb_grads(x: Array, k: Array, p: Array) -> tuple:
    return 0 * x, digamma(x + k) - digamma(k) + np.log(p), k / p - x / (1 - p)


def _gnb_as_nb(mu: Array, alpha: Array) -> tuple[Array, Array]:
    """MXNet's reparameterization: k = 1 / alpha, p = 1 / (mu alpha + 1)."""
    return 1 / alpha, 1 / (mu * alpha + 1)


def _gnb_grads(x: Array, mu: Array, alpha: Array) -> tuple:
    dx, dk, dp = _nb_grads(x, *_gnb_as_nb(mu, alpha))
    den = mu * alpha + 1
    return dx, -dp * alpha / den ** 2, -dk / alpha ** 2 - dp * mu / den ** 2


def _dirichlet_log_pdf(x: Array, alpha: Array) -> Array:
    return (np.sum((alpha - 1) * np.log(x), axis=-1) + gammaln(np.sum(alpha, axis=-1))
            - np.sum(gammaln(alpha), axis=-1))


def _dirichlet_grads(x: Array, alpha: Array) -> tuple:
    total = digamma(np.sum(alpha, axis=-1, keepdims=True))
    return (alpha - 1) / x, np.log(x) + total - digamma(alpha)


DENSITIES: dict[str, Density] = {
    "uniform": Density(
        ("low", "high"), lambda x, low, high: -np.log(high - low) + 0 * x,
        lambda x, low, high: (0 * x, 1 / (high - low) + 0 * x, 1 / (low - high) + 0 * x)),
    "normal": Density(
        ("mu", "sigma"),
        lambda x, mu, sigma: -0.5 * ((x - mu) / sigma) ** 2 - np.log(math.sqrt(2 * math.pi)
                                                                    * sigma),
        lambda x, mu, sigma: ((mu - x) / sigma ** 2, (x - mu) / sigma ** 2,
                              ((x - mu) ** 2 - sigma ** 2) / sigma ** 3)),
    "gamma": Density(
        ("alpha", "beta"),
        lambda x, a, b: a * np.log(b) + (a - 1) * np.log(x) - b * x - gammaln(a),
        lambda x, a, b: ((a - 1) / x - b, np.log(b) + np.log(x) - digamma(a), a / b - x)),
    "exponential": Density(
        ("lam",), lambda x, lam: np.log(lam) - lam * x,
        lambda x, lam: (-lam + 0 * x, 1 / lam - x)),
    "poisson": Density(
        ("lam",), lambda x, lam: x * np.log(lam) - gammaln(x + 1) - lam,
        lambda x, lam: (0 * x, x / lam - 1)),
    "negative_binomial": Density(("k", "p"), _nb_log_pdf, _nb_grads),
    "generalized_negative_binomial": Density(
        ("mu", "alpha"), lambda x, mu, alpha: _nb_log_pdf(x, *_gnb_as_nb(mu, alpha)),
        _gnb_grads),
    "dirichlet": Density(("alpha",), _dirichlet_log_pdf, _dirichlet_grads, vector=True),
}


def _pdf_op(key: str, density: Density) -> OpDef:
    name = f"_random_pdf_{key}"

    def infer_shape(p: Params, in_shapes: list, out_shapes: list):
        sample, params = in_shapes[0], merge_all(in_shapes[1:])
        if sample is None or params is None:
            return [sample, *[params] * len(density.params)], out_shapes
        if len(params) > len(sample) or not params:
            raise ShapeError(f"{name}: the parameters {params} must have at least one axis "
                             f"and at most as many as the samples {sample}")
        lead = sample[:len(params)]
        if density.vector:
            lead = (*lead[:-1], sample[-1])
        params = merge(params, lead)
        out = (sample[:-1] or (1,)) if density.vector else sample
        return [sample, *[params] * len(density.params)], [merge(out_shapes[0], out)]

    def broadcast(inputs: list) -> tuple[Array, list[Array], tuple[int, ...]]:
        """The samples and the parameters widened to the samples' axes, in float64, and
        the sample axes of each parameter set."""
        x = inputs[0].astype(np.float64)
        params = [a.astype(np.float64) for a in inputs[1:]]
        lead = params[0].ndim - density.vector
        sample_axes = tuple(range(lead, lead + x.ndim - params[0].ndim))
        shape = params[0].shape[:lead] + (1,) * len(sample_axes) + params[0].shape[lead:]
        return x, [a.reshape(shape) for a in params], sample_axes

    def forward(p: Params, ctx: OpContext, inputs: list) -> Array:
        x, params, _ = broadcast(inputs)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pdf = density.log_pdf(x, *params)
        out = log_pdf if p.is_log else np.exp(log_pdf)
        shape = (x.shape[:-1] or (1,)) if density.vector else x.shape
        return np.reshape(out, shape).astype(inputs[0].dtype)

    def backward(p: Params, ctx: OpContext, inputs: list, outputs: list,
                 out_grads: list) -> list:
        x, params, sample_axes = broadcast(inputs)
        scale = out_grads[0].astype(np.float64)
        if not p.is_log:
            scale = scale * outputs[0]
        scale = scale.reshape(x.shape[:-1] + (1,) if density.vector else x.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            grads = [scale * g for g in density.grads(x, *params)]
        return [grads[0].astype(inputs[0].dtype),
                *(g.sum(axis=sample_axes).reshape(a.shape).astype(a.dtype)
                  for g, a in zip(grads[1:], inputs[1:], strict=True))]

    return OpDef(name, forward, inputs=("sample", *density.params),
                 params=(Param("is_log", "bool", False, "Compute the log-density rather than "
                               "the density."),),
                 infer_shape=infer_shape, backward=backward,
                 backward_reads=GradReads(inputs=("sample", *density.params),
                                          outputs=("output",)),
                 aliases=(name[1:],), bfloat16="refuse",
                 doc=f"The density of the {key.replace('_', ' ')} "
                     "distribution at the samples (the log-density with is_log).")


for _key, _density in DENSITIES.items():
    register(_pdf_op(_key, _density))

