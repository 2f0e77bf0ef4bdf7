"""A CNN's first convolution quantized on the way out, by a kernel of minimx's own
(``native/first_conv.c``).

MXNet's quantize_model_mkldnn leaves an INT8 MobileNet's first convolution
(3x3, stride 2, three input channels) in float32 and quantizes its output.
oneDNN 3.2 has no float32 convolution with an integer dst, so that takes
three steps: the NCHW input reordered to NHWC, the convolution, and a
binary multiply into uint8. The kernel does all three in one pass over the
input planes: 55 against 87 us for one 224x224 image, 976 against 2443 for
16 (AMD Zen 5, ``avx512_core_bf16``, the two plans alternating in one
process; docs/measurements.md). Each output is
``saturate(rint(min(max(conv + bias, lo), hi) * scale))`` (a NaN becoming
``lo`` under an activation, and without one what quantizing NaN gives: 127 in
int8, 0 in uint8, as MXNet's quantize_v2), the float32 sum
taken tap by tap from the bias: oneDNN's values but for the last bit of a
few, which can move a quantized value by one on a rounding boundary (2 of
401408 in a 224x224 test image).

>>> first_conv_weights(np.arange(54, dtype=np.float32).reshape(2, 3, 3, 3))[:3]
array([[ 0., 27.],
       [ 1., 28.],
       [ 2., 29.]], dtype=float32)
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import BackendError
from ._loader import native
from .primitives import Primitive, build_primitive, spatial_param
from .runtime import FLOAT32, as_dims

CHANNELS = 3     # input channels: RGB images
BLOCK = 16       # output channels come in multiples of this (VL in first_conv.c)
INT8 = (np.dtype(np.uint8), np.dtype(np.int8))


def first_conv_available() -> bool:
    """Whether this build has the kernel: the CPU that built minimx has AVX-512."""
    return bool(native().lib.mmx_first_conv_available())


def first_conv_supports(src_shape: Sequence[int], weight_shape: Sequence[int], *,
                        stride=None, pad=None, dilate=None, num_group: int = 1) -> bool:
    """Whether ``first_conv`` runs this float32 convolution: 2-D, three input
    channels, 3x3, stride 2, padding 1, no dilation or groups, output
    channels a multiple of 16, and a build with the kernel."""
    if len(src_shape) != 4 or len(weight_shape) != 4:
        return False
    return (src_shape[1] == CHANNELS and num_group == 1
            and tuple(weight_shape[1:]) == (CHANNELS, 3, 3) and weight_shape[0] % BLOCK == 0
            and spatial_param(stride, 2, 1, "stride", 1) == (2, 2)
            and spatial_param(pad, 2, 0, "pad", 0) == (1, 1)
            and spatial_param(dilate, 2, 1, "dilate", 1) == (1, 1)
            and first_conv_available())


def first_conv_weights(w: np.ndarray) -> np.ndarray:
    """Weights ``(O, 3, 3, 3)`` as the kernel reads them, ``(27, O)``: tap
    ``(c * 3 + ky) * 3 + kx``, then output channel."""
    return np.ascontiguousarray(w.reshape(w.shape[0], -1).T, dtype=FLOAT32)


def first_conv(src_shape: Sequence[int], out_channels: int, *, lo: float, hi: float,
               scale: float, dst_dtype: np.dtype) -> Primitive:
    """The quantized first convolution (see ``first_conv_supports``): src NCHW
    float32, dst NHWC (``acdb``) uint8 or int8, each
    ``saturate(rint(min(max(conv + bias, lo), hi) * scale))``. Arguments: src,
    weights (MXNet's ``(O, 3, 3, 3)``), bias, dst."""
    src = as_dims(src_shape, "first_conv src")
    dst = np.dtype(dst_dtype)
    if dst not in INT8:
        raise BackendError(f"first_conv: dst must be uint8 or int8, not {dst}")
    return build_primitive(
        "first_conv", f"src {src} out_channels {out_channels} dst {dst}",
        native().lib.mmx_first_conv_init, list(src), int(out_channels), float(lo), float(hi),
        float(scale), int(dst == np.int8),
        user={"weights": ((out_channels, CHANNELS, 3, 3), first_conv_weights)})
