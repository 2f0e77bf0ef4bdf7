"""Inception v3 as in MXNet's gluon model zoo (``inceptionv3``, 299x299 inputs).

>>> inception_v3().infer_shape(data=(1, 3, 299, 299))[1]
[(1, 1000)]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import symbol as sym
from ..symbol import Symbol
from .layers import IntPair, Scope, builder, concat, conv_bn_act, dense, dropout, pool2d

# A basic conv (conv, BN eps 1e-3, relu): (channels, kernel[, stride[, pad]]).
Conv = tuple[int, IntPair] | tuple[int, IntPair, int] | tuple[int, IntPair, int, IntPair]
# A branch: an optional first pool ("avg" 3x3/1 pad 1, "max" 3x3/2), then basic convs.
Branch = tuple[str | None, list[Conv]]


def basic_conv(s: Scope, x: Symbol, channels: int, kernel: IntPair, stride: int = 1,
               pad: IntPair = 0) -> Symbol:
    """Inception's conv-BN-relu unit (BatchNorm epsilon 1e-3)."""
    return conv_bn_act(s, x, channels, kernel, stride, pad, eps=1e-3)


def branch(s: Scope, x: Symbol, pool: str | None, convs: Sequence[Conv]) -> Symbol:
    """One path of a mixed block, counted in the block's scope `s`."""
    if pool == "avg":
        x = pool2d(s.child("pool"), x, "avg", 3, 1, 1)
    elif pool == "max":
        x = pool2d(s.child("pool"), x, "max", 3, 2)
    for conv in convs:
        x = basic_conv(s, x, *conv)
    return x


def mixed(s: Scope, x: Symbol, branches: Sequence[Branch]) -> Symbol:
    """A mixed block: its branches applied to `x` and concatenated along channels."""
    return concat(s, [branch(s, x, pool, convs) for pool, convs in branches])


def _block_a(pool_features: int) -> list[Branch]:
    return [(None, [(64, 1)]),
            (None, [(48, 1), (64, 5, 1, 2)]),
            (None, [(64, 1), (96, 3, 1, 1), (96, 3, 1, 1)]),
            ("avg", [(pool_features, 1)])]


_BLOCK_B: list[Branch] = [(None, [(384, 3, 2)]),
                          (None, [(64, 1), (96, 3, 1, 1), (96, 3, 2)]),
                          ("max", [])]


def _block_c(c7: int) -> list[Branch]:
    return [(None, [(192, 1)]),
            (None, [(c7, 1), (c7, (1, 7), 1, (0, 3)), (192, (7, 1), 1, (3, 0))]),
            (None, [(c7, 1), (c7, (7, 1), 1, (3, 0)), (c7, (1, 7), 1, (0, 3)),
                    (c7, (7, 1), 1, (3, 0)), (192, (1, 7), 1, (0, 3))]),
            ("avg", [(192, 1)])]


_BLOCK_D: list[Branch] = [(None, [(192, 1), (320, 3, 2)]),
                          (None, [(192, 1), (192, (1, 7), 1, (0, 3)), (192, (7, 1), 1, (3, 0)),
                                  (192, 3, 2)]),
                          ("max", [])]
# Block E splits two of its paths into a 1x3 and a 3x1 convolution, concatenated.
_SPLIT_3X3: list[Branch] = [(None, [(384, (1, 3), 1, (0, 1))]), (None, [(384, (3, 1), 1, (1, 0))])]


def block_e(s: Scope, x: Symbol) -> Symbol:
    """The last mixed blocks (E1, E2), whose 3x3 paths end in a split mixed block."""
    paths = [branch(s, x, None, [(320, 1)]),
             mixed(s, branch(s, x, None, [(384, 1)]), _SPLIT_3X3),
             mixed(s, branch(s, x, None, [(448, 1), (384, 3, 1, 1)]), _SPLIT_3X3),
             branch(s, x, "avg", [(192, 1)])]
    return concat(s, paths)


@builder
def inception_v3(classes: int = 1000, prefix: str = "inception30_") -> Symbol:
    """gluon's ``Inception3()``."""
    net = Scope(prefix)
    x = sym.Variable("data")
    for conv in [(32, 3, 2), (32, 3), (64, 3, 1, 1)]:
        x = basic_conv(net, x, *conv)
    x = pool2d(net.child("pool"), x, "max", 3, 2)
    for conv in [(80, 1), (192, 3)]:
        x = basic_conv(net, x, *conv)
    x = pool2d(net.child("pool"), x, "max", 3, 2)
    # Each mixed block is a HybridConcurrent with its own prefix.
    blocks = ([(f"A{i}_", _block_a(pf)) for i, pf in enumerate([32, 64, 64], 1)]
              + [("B_", _BLOCK_B)]
              + [(f"C{i}_", _block_c(c7)) for i, c7 in enumerate([128, 160, 160, 192], 1)]
              + [("D_", _BLOCK_D)])
    for block_prefix, branches in blocks:
        x = mixed(net.named(block_prefix), x, branches)
    for block_prefix in ("E1_", "E2_"):
        x = block_e(net.named(block_prefix), x)
    x = dropout(net.child("dropout"), pool2d(net.child("pool"), x, "avg", 8), 0.5)
    return dense(net.child("dense"), x, classes)


MODELS: dict[str, Callable[..., Symbol]] = {"inceptionv3": inception_v3}
