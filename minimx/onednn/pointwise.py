"""INT8 1x1 convolution of few input channels by a kernel of minimx's own
(``native/pointwise_u8.c``).

MobileNet v2 expands 16, 24 and 32 channels to six times as many with 1x1
convolutions of few products per output: each output takes four to eight
``vpdpbusd`` lanes and a float32 requantization of its own. oneDNN 3.2's
``brgconv_1x1`` runs them at 17-20% of the VNNI peak. The kernel sums a tile
of four pixels by 64 channels in 16 registers and narrows the four vectors
with saturating packs into one store; the packs interleave their operands'
128-bit lanes, so the weights hold each group of 64 output channels in the
order the packs undo (`pw8_order`). Where float32 would add the bias
exactly, it starts the integer sums instead. Its layers took 0.60-0.63 of
MXNet 1.9.1's time at batch 1 and 0.65-0.72 at batch 16, where oneDNN's had
taken 0.94-1.21 (profiled before the kernel), and the whole INT8 MobileNet
v2 forward ran 1.08x (batch 1) and 1.10x (batch 16) as fast with it (Intel
Xeon without AMX, `avx512_core_vnni` kernels: docs/measurements.md, a
twenty-sixth session). Where a layer
expands less (MobileNet v1's 32 to 64, v2's 32 to 32, both on uint8 data),
oneDNN's kernel was as fast or faster alone (``benchmarks/int8_kernels.py``),
hence `POINTWISE_MIN_EXPANSION` where the lowering decides.

The integers are the numpy kernel's (``backends.mkldnn_ops.QuantizedConv``),
as `dw8_conv`'s: uint8 or int8 data times int8 weights summed in int32, then
``(float32(acc) + float32(bias)) * factor`` per channel, relu where asked,
rounded half to even and saturated.

MobileNet v2's expansions read its linear projections' int8 outputs; the
kernel reads them as uint8 with 128 added (a tile's bytes flipped once into
a buffer), each sum starting at -128 times its weights' sum, as oneDNN's
VNNI kernels do.

>>> pw8_order(64)[:8]
array([ 0,  1,  2,  3, 16, 17, 18, 19])
>>> pw8_weights(np.ones((16, 8, 1, 1), np.int8)).shape
(2, 16, 4)
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import BackendError
from ._loader import native
from .primitives import Primitive, build_primitive, spatial_param
from .runtime import as_dims

PW8_MAX_K = 32      # input channels at most (PW8_MAX_K in pointwise_u8.h)
PW8_K_STEP = 4      # input channels a vpdpbusd lane
PW8_CHANNELS = 16   # output channels must be multiples of this (VL in pointwise_u8.c)
PW8_GROUP = 64      # output channels the packs narrow to one store
PW8_MIN_PIXELS = 4  # a tile of pixels (PIX in pointwise_u8.c)
INT8_TYPES = (np.dtype(np.uint8), np.dtype(np.int8))


def pw8_available() -> bool:
    """Whether this build has the kernel: the CPU that built minimx has AVX512-VNNI."""
    return bool(native().lib.mmx_pw8_available())


def pw8_supports(src_shape: Sequence[int], weight_shape: Sequence[int], src_dtype: np.dtype,
                 *, stride=None, pad=None, dilate=None, num_group: int = 1) -> bool:
    """Whether ``pw8_conv`` runs this quantized convolution: 8-bit data, 2-D 1x1,
    stride 1, no padding, one group, input channels a multiple of 4 up to 32,
    output channels a multiple of 16, and a build with the kernel. (Where it
    pays is the caller's choice.)"""
    if len(src_shape) != 4 or len(weight_shape) != 4:
        return False
    oc, k = weight_shape[:2]
    return (np.dtype(src_dtype) in INT8_TYPES and num_group == 1
            and tuple(weight_shape[2:]) == (1, 1) and src_shape[1] == k
            and k % PW8_K_STEP == 0 and k <= PW8_MAX_K and oc % PW8_CHANNELS == 0
            and spatial_param(stride, 2, 1, "stride", 1) == (1, 1)
            and spatial_param(pad, 2, 0, "pad", 0) == (0, 0)
            and spatial_param(dilate, 2, 1, "dilate", 1) == (1, 1)
            and src_shape[0] * src_shape[2] * src_shape[3] >= PW8_MIN_PIXELS
            and pw8_available())


def pw8_order(oc: int) -> np.ndarray:
    """The output channel the kernel holds at each place: in a whole group of
    64, vector v's lane e holds channel ``16 * (e // 4) + 4 * v + e % 4``
    (two packs of int32 to int16, then one to bytes, keep the 128-bit lanes of
    their operands apart); the channels after the last whole group in order."""
    order = np.arange(oc)
    whole = oc - oc % PW8_GROUP
    v, e = np.divmod(np.arange(PW8_GROUP), PW8_CHANNELS)
    within = 16 * (e // 4) + 4 * v + e % 4
    order[:whole] = (np.arange(0, whole, PW8_GROUP)[:, None] + within).ravel()
    return order


def pw8_weights(w: np.ndarray) -> np.ndarray:
    """1x1 weights ``(OC, K, 1, 1)`` as the kernel reads them, ``(K / 4, OC, 4)``:
    four input channels of an output channel a lane, the output channels in
    `pw8_order`."""
    oc, k = w.shape[:2]
    lanes = w[pw8_order(oc), :, 0, 0].reshape(oc, k // PW8_K_STEP, PW8_K_STEP)
    return np.ascontiguousarray(lanes.transpose(1, 0, 2))


def pw8_conv(src_shape: Sequence[int], oc: int, *, src_dtype: np.dtype, bias: bool,
             relu: bool, dst_dtype: np.dtype) -> Primitive:
    """A 1x1 convolution of ``oc`` output channels, stride 1 (see
    ``pw8_supports``): src and dst NHWC (``acdb``), each uint8 or int8; weights
    take MXNet's ``(OC, K, 1, 1)`` int8 weights, bias their int32 bias (made
    float32, as the numpy kernel adds it), ``post0_src1`` the per-channel
    float32 requantization factor, each in MXNet's channel order. Arguments:
    src, weights, [bias], post0_src1, dst."""
    src = as_dims(src_shape, "pw8_conv src")
    src_type, dst = np.dtype(src_dtype), np.dtype(dst_dtype)
    for what, dtype in (("src", src_type), ("dst", dst)):
        if dtype not in INT8_TYPES:
            raise BackendError(f"pw8_conv: {what} must be uint8 or int8, not {dtype}")
    order = pw8_order(oc)
    return build_primitive(
        "pw8_conv", f"src {src} {src_type} oc {oc} bias {bias} relu {relu} dst {dst}",
        native().lib.mmx_pw8_conv_init, list(src), int(src_type == np.int8), int(oc),
        int(bias), int(relu), int(dst == np.int8),
        user={"weights": ((oc, src[1], 1, 1), pw8_weights),
              "bias": ((oc,), lambda b: b[order]),
              "post0_src1": ((1, oc, 1, 1), lambda f: f[:, order])})
