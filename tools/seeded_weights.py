"""Seeded weights that both MXNet (tools/mxnet_fixtures.py) and minimx's tests can make.

Full-size GluonCV / GluonNLP graphs have too many weights to commit as ``.params``; their
fixtures commit the graph and MXNet's outputs instead, and each side makes the same weights
from the names and shapes. Pure numpy (``RandomState`` streams are stable across numpy
versions), importing neither MXNet nor minimx.
"""
from __future__ import annotations

import zlib

import numpy as np


def _rng(name: str, seed: int) -> np.random.RandomState:
    # Seeded per name: the weights do not depend on the order the names come in.
    return np.random.RandomState((zlib.crc32(name.encode()) ^ seed) & 0x7FFFFFFF)


def seeded_weight(name: str, shape: tuple[int, ...], seed: int, gain: float = 1.0
                  ) -> np.ndarray:
    """One parameter: He-scaled normal weights (activations keep their size through deep
    nets) times `gain`, normalization layers near identity with some spread, small biases."""
    rng = _rng(name, seed)
    if name.endswith(("running_var", "moving_var")):
        values = rng.uniform(0.5, 1.5, shape)
    elif name.endswith("gamma"):
        values = rng.uniform(0.8, 1.2, shape)
    elif name.endswith(("beta", "bias", "running_mean", "moving_mean")) or len(shape) < 2:
        values = rng.uniform(-0.1, 0.1, shape)
    else:
        fan_in = int(np.prod(shape[1:]))
        values = rng.normal(0.0, gain * np.sqrt(2.0 / fan_in), shape)
    return values.astype("float32")


def seeded_weights(shapes: dict[str, tuple[int, ...]], seed: int, gain: float = 1.0
                   ) -> dict[str, np.ndarray]:
    """Every parameter named in ``shapes``; `gain` scales the weights of deep nets whose
    activations would otherwise grow past float32's range."""
    return {name: seeded_weight(name, tuple(shape), seed, gain)
            for name, shape in shapes.items()}
