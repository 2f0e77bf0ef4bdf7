"""Special functions numpy lacks, elementwise and vectorized: erf, its inverse
erfinv, gamma, gammaln and digamma (gammaln's derivative). They compute in
float64; the operators in `elemwise` round to the input's dtype, as MXNet
rounds its double-precision results.
"""
from __future__ import annotations

import math

import numpy as np

Array = np.ndarray


def erf(x: Array) -> Array:
    """The error function, elementwise, to about 1e-15 (numpy has none).

    Below 2.5 a series of positive terms, erf(z) = 2/sqrt(pi) exp(-z^2)
    sum_n 2^n z^(2n+1) / (2n+1)!!; above, the Laplace continued fraction of
    erfc. Forty terms of either reach float64 precision.
    """
    x = np.asarray(x)
    a = np.abs(x).astype(np.float64)
    out = np.empty_like(a)
    small = a < 2.5
    z = a[small]
    z2 = z * z
    term, total = z.copy(), z.copy()
    for n in range(1, 40):
        term *= 2 * z2 / (2 * n + 1)
        total += term
    out[small] = 2 / math.sqrt(math.pi) * np.exp(-z2) * total
    out[~small] = 1 - _erfc_tail(a[~small])[0]
    return np.copysign(out, x).astype(x.dtype if x.dtype.kind == "f" else np.float64)


def _erfc_tail(z: Array) -> tuple[Array, Array]:
    """erfc(z) for z >= 2.5, to float64 precision, as exp(-z^2) / (sqrt(pi) F) with F
    the Laplace continued fraction z + (1/2)/(z + 1/(z + (3/2)/(z + ...))); and F."""
    frac = z.copy()
    for k in range(45, 0, -1):
        frac = z + (k / 2) / frac
    return np.exp(-z * z) / (math.sqrt(math.pi) * frac), frac


def _scalar_gamma(v: float) -> float:
    """math.gamma, with MXNet's values where it raises: inf at +0 and -inf at -0 (C's
    tgamma), inf on overflow, NaN at the negative integers."""
    try:
        return math.gamma(v)
    except ValueError:
        return math.copysign(math.inf, v) if v == 0 else math.nan
    except OverflowError:
        return math.inf


def _scalar_lgamma(v: float) -> float:
    """log |gamma(v)|; inf at the poles, as MXNet."""
    try:
        return math.lgamma(v)
    except ValueError:
        return math.inf


def gamma(x: Array) -> Array:
    """The gamma function, elementwise (numpy has none)."""
    with np.errstate(over="ignore"):  # inf is the value, as in MXNet
        return np.asarray(np.frompyfunc(_scalar_gamma, 1, 1)(np.asarray(x, np.float64)), np.float64)


def gammaln(x: Array) -> Array:
    """log |gamma(x)|, elementwise."""
    return np.asarray(np.frompyfunc(_scalar_lgamma, 1, 1)(np.asarray(x, np.float64)), np.float64)


def digamma(x: Array) -> Array:
    """The derivative of gammaln, to about 1e-12: six steps of psi(z) = psi(z + 1) - 1/z,
    then the asymptotic series; below 1/2 the reflection psi(1 - x) - pi / tan(pi x).
    inf at the poles (0 and the negative integers), as MXNet's gradient gives."""
    x = np.asarray(x, np.float64)
    reflect = x < 0.5
    z = np.where(reflect, 1 - x, x)
    acc = np.zeros_like(z)
    for _ in range(6):
        acc -= 1 / z
        z = z + 1
    w = 1 / (z * z)
    acc += np.log(z) - 0.5 / z - w * (1 / 12 - w * (1 / 120 - w * (1 / 252 - w * (
        1 / 240 - w / 132))))
    with np.errstate(divide="ignore"):
        out = np.where(reflect, acc - math.pi / np.tan(math.pi * x), acc)
    return np.where((x <= 0) & (x == np.floor(x)), np.inf, out)


# Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing
# Gems, 2011): polynomials in w = -log(1 - y^2), one for the centre and one for the
# tails, each coefficient list highest power first.
_GILES_CENTRE = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erfinv(y: Array) -> Array:
    """The inverse error function, elementwise, to about 1e-14: Giles' approximation
    (relative error below 4e-7 where float32 reaches) refined by Newton steps, each of
    which about squares the error. Beyond |x| = 2.5 a step solves log erfc(|x|) =
    log(1 - |y|), which stays accurate (and nearly linear) where erf(x) rounds to 1.
    As MXNet's: +-inf at +-1 and NaN outside [-1, 1]."""
    y = np.asarray(y)
    v = y.astype(np.float64)
    inside = np.abs(v) < 1
    t = np.where(inside, v, 0.0)
    w = -np.log((1 - t) * (1 + t))
    centre, tail = w - 2.5, np.sqrt(w) - 3
    pc, pt = np.zeros_like(v), np.zeros_like(v)
    for c, d in zip(_GILES_CENTRE, _GILES_TAIL, strict=True):
        pc, pt = pc * centre + c, pt * tail + d
    x = np.where(w < 5, pc, pt) * t
    for _ in range(4):  # enough from Giles' guess down to 1 - y = 2^-53
        a = np.abs(x)
        erfc, frac = _erfc_tail(np.maximum(a, 2.5))
        # d log erfc(z) / dz = -2 F
        tail_step = np.sign(t) * (np.log(erfc) - np.log1p(-np.abs(t))) / (2 * frac)
        head_step = (t - erf(x)) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
        x = x + np.where(a >= 2.5, tail_step, head_step)
    with np.errstate(invalid="ignore"):
        x = np.where(inside, x, np.where(np.abs(v) == 1, v * np.inf, np.nan))
    return x.astype(y.dtype if y.dtype.kind == "f" else np.float64)
