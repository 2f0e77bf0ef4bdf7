"""The optional bias of Convolution, Deconvolution and FullyConnected.

Each takes inputs (data, weight) or (data, weight, bias) by `no_bias`, and
its output has the bias's channels on axis 1.
"""
from __future__ import annotations

import numpy as np

from .registry import Params


def inputs_with_bias(p: Params) -> tuple[str, ...]:
    return ("data", "weight") if p.no_bias else ("data", "weight", "bias")


def add_bias(p: Params, y: np.ndarray, inputs: list) -> np.ndarray:
    """`y` plus the bias input (unless no_bias), broadcast along axis 1."""
    if not p.no_bias:
        y += inputs[2].reshape((1, -1) + (1,) * (y.ndim - 2))
    return y


def with_bias_grad(p: Params, grads: list, dy: np.ndarray) -> list:
    """The data and weight gradients, and the bias gradient unless no_bias."""
    return grads if p.no_bias else grads + [dy.sum(axis=(0, *range(2, dy.ndim)))]
