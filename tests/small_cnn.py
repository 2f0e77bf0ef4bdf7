"""A small image classifier for tests of the user's surface: conv-bn-relu-pool-fc."""
from __future__ import annotations

import minimx as mx


def small_cnn(filters: int = 8, classes: int = 10) -> mx.sym.Symbol:
    """conv0 (3x3, pad 1) -> bn0 -> relu0 -> pool0 (2x2 max) -> fc0, on ``data``."""
    x = mx.sym.Convolution(mx.sym.var("data"), kernel=(3, 3), pad=(1, 1), num_filter=filters,
                           name="conv0")
    x = mx.sym.Activation(mx.sym.BatchNorm(x, name="bn0"), act_type="relu", name="relu0")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    return mx.sym.FullyConnected(x, num_hidden=classes, name="fc0")
