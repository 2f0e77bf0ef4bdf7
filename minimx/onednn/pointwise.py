"""INT8 1x1 convolution by a kernel of minimx's own (``native/pointwise_u8.c``).

MobileNet v2 expands 16 to 160 channels to six times as many with 1x1
convolutions of few products per output: each output takes K / 4
``vpdpbusd`` lanes and a float32 requantization of its own. oneDNN 3.2's
``brgconv_1x1`` runs those of 16 to 32 input channels at 17-20% of the VNNI
peak. The kernel sums a tile of four pixels by 64 channels in 16 registers
and narrows the four vectors with saturating packs into one store; the
packs interleave their operands' 128-bit lanes, so the weights hold each
group of 64 output channels in the order the packs undo (`pw8_order`).
Where float32 would add the bias exactly, it starts the integer sums
instead. Blocks of sixteen tiles go through all the output channels while
their bytes stay in L1, each vector's weights for all input channels one
after the other (`pw8_weights`); with few blocks the threads split the
channels instead. Alone, it ran MobileNet v2's expansions 1.09-1.59x as
fast as oneDNN's kernel, and v1's twofold ones 1.01-1.23x; on layers that do
not expand it was 0.72-1.11x (Intel Xeon without AMX, `avx512_core_vnni`
kernels, ``benchmarks/int8_kernels.py``: docs/measurements.md, a
twenty-seventh session), hence `POINTWISE_MIN_EXPANSION` and
`POINTWISE_MAX_IN` where the lowering decides.

The integers are the numpy kernel's (``backends.mkldnn_ops.QuantizedConv``),
as `dw8_conv`'s: uint8 or int8 data times int8 weights summed in int32, then
``(float32(acc) + float32(bias)) * factor`` per channel, relu where asked,
rounded half to even and saturated.

MobileNet v2's expansions read its linear projections' int8 outputs; the
kernel reads them as uint8 with 128 added (a block's bytes flipped once into
a buffer), each sum starting at -128 times its weights' sum, as oneDNN's
VNNI kernels do.

>>> pw8_order(64)[:8]
array([ 0,  1,  2,  3, 16, 17, 18, 19])
>>> pw8_weights(np.ones((32, 8, 1, 1), np.int8)).shape
(2, 2, 64)
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import BackendError
from ._loader import native
from .primitives import Primitive, build_primitive, spatial_param
from .runtime import as_dims

PW8_MAX_K = 1024    # input channels at most (PW8_MAX_K in pointwise_u8.h)
PW8_WIDE_STEP = 32  # input channels above 32 come in multiples of this (STEP lanes)
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
    stride 1, no padding, one group, input channels a multiple of 4 up to 32
    or of 32 up to 1024, output channels a multiple of 16, and a build with
    the kernel. (Where it pays is the caller's choice.)"""
    if len(src_shape) != 4 or len(weight_shape) != 4:
        return False
    oc, k = weight_shape[:2]
    return (np.dtype(src_dtype) in INT8_TYPES and num_group == 1
            and tuple(weight_shape[2:]) == (1, 1) and src_shape[1] == k
            and k % PW8_K_STEP == 0 and k <= PW8_MAX_K and oc % PW8_CHANNELS == 0
            and (k <= PW8_WIDE_STEP or k % PW8_WIDE_STEP == 0)
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
    """1x1 weights ``(OC, K, 1, 1)`` as the kernel reads them, ``(OC / 16, K / 4,
    64)``: a vector of 16 output channels (in `pw8_order`) after another, each
    with all its input channels, four input channels of an output channel a
    lane."""
    oc, k = w.shape[:2]
    lanes = w[pw8_order(oc), :, 0, 0].reshape(oc // PW8_CHANNELS, PW8_CHANNELS,
                                              k // PW8_K_STEP, PW8_K_STEP)
    return np.ascontiguousarray(lanes.transpose(0, 2, 1, 3)).reshape(
        oc // PW8_CHANNELS, k // PW8_K_STEP, PW8_CHANNELS * PW8_K_STEP)


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
