"""MobileNet v1 and v2 as in MXNet's gluon model zoo (``mobilenet1.0``, ``mobilenetv2_0.25``...).

>>> net = mobilenet_v2(0.25)
>>> net.list_arguments()[1]
'mobilenetv20_features_conv0_weight'
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial

from .. import symbol as sym
from ..symbol import Symbol
from .layers import Scope, add, builder, conv2d, conv_bn_act, dense, flatten, global_avg_pool2d

MULTIPLIERS = ("1.0", "0.75", "0.5", "0.25")


@builder
def mobilenet(multiplier: float = 1.0, classes: int = 1000,
              prefix: str = "mobilenet0_") -> Symbol:
    """gluon's ``MobileNet(multiplier)``: depthwise-separable convolutions with relu."""
    def width(counts: list[int]) -> list[int]:
        return [int(c * multiplier) for c in counts]
    dw_channels = width([32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024])
    channels = width([64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2)
    strides = [1, 2] * 3 + [1] * 5 + [2, 1]
    # The features sequence has prefix '' and so counts its layers in the net's scope.
    net = Scope(prefix)
    x = conv_bn_act(net, sym.Variable("data"), int(32 * multiplier), 3, 2, 1)
    for dwc, c, stride in zip(dw_channels, channels, strides, strict=True):
        x = conv_bn_act(net, x, dwc, 3, stride, 1, groups=dwc)
        x = conv_bn_act(net, x, c, 1)
    x = flatten(net.child("flatten"), global_avg_pool2d(net.child("pool"), x))
    return dense(net.child("dense"), x, classes)


def linear_bottleneck(s: Scope, x: Symbol, in_channels: int, channels: int, expansion: int,
                      stride: int) -> Symbol:
    """MobileNetV2's inverted residual: expand 1x1, depthwise 3x3, linear project 1x1."""
    hidden = in_channels * expansion
    y = conv_bn_act(s, x, hidden, 1, act="relu6")
    y = conv_bn_act(s, y, hidden, 3, stride, 1, groups=hidden, act="relu6")
    y = conv_bn_act(s, y, channels, 1, act=None)
    if stride == 1 and in_channels == channels:
        return add(s, y, x, hint="elemwise_add")
    return y


@builder
def mobilenet_v2(multiplier: float = 1.0, classes: int = 1000,
                 prefix: str = "mobilenetv20_") -> Symbol:
    """gluon's ``MobileNetV2(multiplier)``: linear bottlenecks with relu6."""
    def width(counts: list[int]) -> list[int]:
        return [int(c * multiplier) for c in counts]
    in_channels = width([32] + [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3)
    channels = width([16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3 + [320])
    expansions = [1] + [6] * 16
    strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
    net = Scope(prefix)
    features = net.named("features_")
    x = conv_bn_act(features, sym.Variable("data"), int(32 * multiplier), 3, 2, 1, act="relu6")
    for in_c, c, t, stride in zip(in_channels, channels, expansions, strides, strict=True):
        x = linear_bottleneck(features.child("linearbottleneck"), x, in_c, c, t, stride)
    last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
    x = conv_bn_act(features, x, last_channels, 1, act="relu6")
    x = global_avg_pool2d(features.child("pool"), x)
    output = net.named("output_")
    x = conv2d(output.named("pred_"), x, classes, 1, use_bias=False)
    return flatten(output.child("flatten"), x)


MODELS: dict[str, Callable[..., Symbol]] = {
    **{f"mobilenet{m}": partial(mobilenet, float(m)) for m in MULTIPLIERS},
    **{f"mobilenetv2_{m}": partial(mobilenet_v2, float(m)) for m in MULTIPLIERS},
}
