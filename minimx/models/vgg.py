"""VGG 11/13/16/19, with and without BatchNorm, as in MXNet's gluon model zoo.

>>> vgg(16, batch_norm=True).list_arguments()[1:3]
['vgg0_conv0_weight', 'vgg0_conv0_bias']
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from .. import symbol as sym
from ..symbol import Symbol
from .layers import ModelError, Scope, activation, builder, classifier, conv2d, pool2d
from .layers import batch_norm as batch_norm_layer

# Per depth: 3x3 convolutions per stage, and their channels.
VGG_SPEC: dict[int, tuple[list[int], list[int]]] = {
    11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
    13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
    16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
    19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512]),
}


@builder
def vgg_net(layers: Sequence[int], filters: Sequence[int], classes: int = 1000,
            batch_norm: bool = False, prefix: str = "vgg0_") -> Symbol:
    """gluon's ``VGG(layers, filters, batch_norm=batch_norm)``."""
    net = Scope(prefix)
    x = sym.Variable("data")
    for num_convs, channels in zip(layers, filters, strict=True):
        for _ in range(num_convs):
            x = conv2d(net.child("conv"), x, channels, 3, pad=1)
            if batch_norm:
                x = batch_norm_layer(net.child("batchnorm"), x)
            x = activation(net.child("relu"), x)
        x = pool2d(net.child("pool"), x, "max", 2, 2)
    return classifier(net, x, classes)


def vgg(num_layers: int, classes: int = 1000, batch_norm: bool = False,
        prefix: str = "vgg0_") -> Symbol:
    """``vgg{num_layers}`` (``_bn`` with `batch_norm`) of the model zoo."""
    if num_layers not in VGG_SPEC:
        raise ModelError(f"vgg: no {num_layers}-layer net; layers {sorted(VGG_SPEC)}")
    layers, filters = VGG_SPEC[num_layers]
    return vgg_net(layers, filters, classes, batch_norm, prefix)


MODELS: dict[str, Callable[..., Symbol]] = {
    f"vgg{depth}{suffix}": partial(vgg, depth, batch_norm=bool(suffix))
    for depth in VGG_SPEC for suffix in ("", "_bn")
}
