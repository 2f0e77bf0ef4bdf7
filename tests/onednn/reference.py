"""Naive numpy references for the oneDNN primitives, in float64.

Written for clarity, not speed: loops over output positions and one einsum
per window, on the small shapes the tests use.
"""
from __future__ import annotations

import itertools
import math

import numpy as np


def _window(pos, stride, kernel, dilate):
    return tuple(slice(p * s, p * s + d * (k - 1) + 1, d)
                 for p, s, k, d in zip(pos, stride, kernel, dilate, strict=True))


def conv(x, w, b, stride, pad, dilate, groups):
    """MXNet Convolution: x (N, C, *S), w (O, C/groups, *K), symmetric pad."""
    n, c, *size = x.shape
    o, cg, *k = w.shape
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out = [(s + 2 * p - (d * (kk - 1) + 1)) // st + 1
           for s, p, d, kk, st in zip(size, pad, dilate, k, stride, strict=True)]
    wg = w.astype(np.float64).reshape(groups, o // groups, cg, -1)
    y = np.zeros((n, o, *out))
    for pos in itertools.product(*map(range, out)):
        win = xp[(slice(None), slice(None)) + _window(pos, stride, k, dilate)]
        win = win.reshape(n, groups, cg, -1)
        y[(slice(None), slice(None)) + pos] = np.einsum("ngcK,gocK->ngo", win, wg).reshape(n, o)
    if b is not None:
        y += b.reshape((1, o) + (1,) * len(out))
    return y


def deconv(x, w, b, stride, pad, adj, dilate, groups):
    """MXNet Deconvolution: x (N, C, *S), w (C, O/groups, *K)."""
    n, c, *size = x.shape
    _, og, *k = w.shape
    full = [(s - 1) * st + d * (kk - 1) + 1 + a
            for s, st, d, kk, a in zip(size, stride, dilate, k, adj, strict=True)]
    y = np.zeros((n, og * groups, *full))
    xg = x.astype(np.float64).reshape(n, groups, c // groups, *size)
    wg = w.astype(np.float64).reshape(groups, c // groups, og, -1)
    for pos in itertools.product(*map(range, size)):
        contrib = np.einsum("ngc,gcoK->ngoK", xg[(slice(None),) * 3 + pos], wg)
        y[(slice(None), slice(None)) + _window(pos, stride, k, dilate)] += \
            contrib.reshape(n, og * groups, *k)
    # full counts adj, so cropping pad at both ends crops pad - adj on the high side.
    crop = tuple(slice(p, f - p) for p, f in zip(pad, full, strict=True))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * len(size))
    return y


def pooling(x, kernel, stride, pad_l, pad_r, mode):
    """oneDNN pooling: mode max, avg_include (divide by the kernel volume) or
    avg_exclude (divide by the real elements in the window)."""
    n, c, *size = x.shape
    widths = [(0, 0), (0, 0)] + list(zip(pad_l, pad_r, strict=True))
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x.astype(np.float64), widths, constant_values=fill)
    ones = np.pad(np.ones(size), list(zip(pad_l, pad_r, strict=True)))
    out = [(s + pl + pr - k) // st + 1 for s, pl, pr, k, st in zip(size, pad_l, pad_r, kernel,
                                                                     stride, strict=True)]
    y = np.zeros((n, c, *out))
    for pos in itertools.product(*map(range, out)):
        win = _window(pos, stride, kernel, (1,) * len(kernel))
        block = xp[(slice(None), slice(None)) + win].reshape(n, c, -1)
        if mode == "max":
            value = block.max(axis=2)
        elif mode == "avg_include":
            value = block.sum(axis=2) / math.prod(kernel)
        else:
            value = block.sum(axis=2) / ones[win].sum()
        y[(slice(None), slice(None)) + pos] = value
    return y


def softmax(x, axis, log=False):
    z = x.astype(np.float64) - x.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return z - lse if log else np.exp(z - lse)


def lrn(x, nsize, alpha, beta, knorm):
    """Across channels, window [c - nsize//2, c + nsize//2] (odd nsize)."""
    sq = np.pad(x.astype(np.float64) ** 2, [(0, 0), (nsize // 2, nsize // 2)]
                + [(0, 0)] * (x.ndim - 2))
    total = sum(sq[:, i:i + x.shape[1]] for i in range(nsize))
    return x / (knorm + alpha / nsize * total) ** beta


def batch_norm(x, mean, var, scale, shift, eps):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if scale is not None:
        y = y * scale.reshape(shape)
    if shift is not None:
        y = y + shift.reshape(shape)
    return y


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_erf = np.vectorize(math.erf)

# name -> f(x, alpha, beta), in oneDNN's definitions.
ELTWISE = {
    "relu": lambda x, a, b: np.where(x > 0, x, a * x),
    "tanh": lambda x, a, b: np.tanh(x),
    "elu": lambda x, a, b: np.where(x > 0, x, a * (np.exp(x) - 1)),
    "square": lambda x, a, b: x * x,
    "abs": lambda x, a, b: np.abs(x),
    "sqrt": lambda x, a, b: np.sqrt(x),
    "linear": lambda x, a, b: a * x + b,
    "soft_relu": lambda x, a, b: np.logaddexp(0, a * x) / a,
    "logistic": lambda x, a, b: _sigmoid(x),
    "exp": lambda x, a, b: np.exp(x),
    "gelu_tanh": lambda x, a, b: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi)
                                                        * (x + 0.044715 * x ** 3))),
    "swish": lambda x, a, b: x * _sigmoid(a * x),
    "log": lambda x, a, b: np.log(x),
    "clip": lambda x, a, b: np.clip(x, a, b),
    "gelu_erf": lambda x, a, b: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
    "round": lambda x, a, b: np.rint(x.astype(np.float32)),  # half to even
}
POSITIVE_ONLY = {"sqrt", "log"}
