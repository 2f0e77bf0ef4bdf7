"""INT8 depthwise 3x3 convolution by a kernel of minimx's own (``native/depthwise_u8.c``).

MobileNets spend a fifth to a third of an INT8 forward in depthwise
convolutions, which oneDNN 3.2 runs with ``brdgmm_dw`` at ~100 GMAC/s. The
kernel here interleaves each input row so that one ``vpdpbusd`` lane
multiplies a whole kernel row (three taps), and keeps the interleaved rows
in cache for the output rows that read them; it takes 64 bytes of a row at
once (64 channels, or two pixels of 32, four of 16) with byte unpacks. At
batch 1 (AMD Zen 5, `avx512_core_vnni`, the plan's profile; docs/measurements.md,
a thirteenth session) MobileNet v1's stride-1 layers took 19.8
against 21.9 us at 112x112 (32 channels), 18.4 against 23.5 at 56x56, 10.0
against 12.9 at 28x28 and 5.5 against 8.2 at 14x14 with the kernel's first
version, which took 16 channels at a time (the two builds in alternating
processes); its stride-2 layers took 0.76-0.88 of ``brdgmm_dw``'s time,
MobileNet v2's 7x7 ones 0.63-0.67 (each pair profiled one after the other
in one process). On the whole INT8 forward the kernel on against off (fresh
processes alternating) gives MobileNet v1 1.10x / 1.09x (batch 1 / 16), v2
1.10x / 1.07x. Stride 2 takes one pixel a block, so whole blocks of
``DW8_STRIDE2_CHANNELS`` channels: MobileNet v2's stride-2 layers of 96 and
144 channels, whose last block is part of one, took 111 and 50 us in the
kernel against 79 and 34 in ``brdgmm_dw`` at batch 1 (1708 and 568 against
1253 and 466 at batch 16; Intel Xeon with AMX, the plans' profiles,
alternating), and the whole forward ran 1.007-1.013x as fast with oneDNN's
kernel there (docs/measurements.md, a seventeenth session). Below
``DW8_MIN_SIZE`` output pixels a side nothing was measured. Where float32
would add a block's bias exactly, the sums start at it and the epilogue
skips that addition (as ``pw8_conv``'s): alone at batch 1 against
``brdgmm_dw``, stride 1 on 32 to 512 channels went from 0.99-1.18x to
1.11-1.31x (a throwaway script timing two builds, each alternating with
oneDNN's kernel in one run; Intel Xeon without AMX, `avx512_core_vnni`
kernels, a twenty-sixth session). ``benchmarks/int8_kernels.py`` times the
kernel as it is against oneDNN's.

The integers are the numpy kernel's (``backends.mkldnn_ops.QuantizedConv``):
uint8 data times int8 weights summed in int32, then
``(float32(acc) + float32(bias)) * factor`` per channel, relu where asked,
rounded half to even and saturated.

>>> dw8_supports((1, 32, 56, 56), (32, 1, 3, 3), np.uint8, stride=(1, 1), pad=(1, 1),
...              num_group=32)
True
>>> dw8_weights(np.arange(9, dtype=np.int8).reshape(1, 1, 3, 3))[:, 0]
array([[0, 1, 2, 0],
       [3, 4, 5, 0],
       [6, 7, 8, 0]], dtype=int8)
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..base import BackendError
from ._loader import native
from .primitives import Primitive, build_primitive, spatial_param
from .runtime import as_dims

DW8_CHANNELS = 16   # channel counts must be multiples of this (VL in depthwise_u8.c)
DW8_STRIDE2_CHANNELS = 64   # at stride 2, a multiple of this (a block: CB in depthwise_u8.c)
DW8_MIN_SIZE = 7    # output rows and columns below which nothing was measured


def dw8_supports(src_shape: Sequence[int], weight_shape: Sequence[int], src_dtype: np.dtype,
                 *, stride=None, pad=None, dilate=None, num_group: int = 1) -> bool:
    """Whether ``dw8_conv`` runs this quantized convolution, and pays: uint8 data,
    2-D depthwise 3x3 (one filter per channel), stride 1 or 2, padding 1,
    channels a multiple of 16 (of 64 at stride 2), an output of at least
    7x7, and a build with the kernel (`dw8_available`)."""
    if len(src_shape) != 4 or len(weight_shape) != 4:
        return False
    channels = src_shape[1]
    strides = spatial_param(stride, 2, 1, "stride", 1)
    s = strides[0]
    return (np.dtype(src_dtype) == np.uint8 and num_group == channels
            and tuple(weight_shape) == (channels, 1, 3, 3)
            and channels % DW8_CHANNELS == 0
            and strides in ((1, 1), (2, 2))
            and (s == 1 or channels % DW8_STRIDE2_CHANNELS == 0)
            and spatial_param(pad, 2, 0, "pad", 0) == (1, 1)
            and spatial_param(dilate, 2, 1, "dilate", 1) == (1, 1)
            and min((n - 1) // s + 1 for n in src_shape[2:]) >= DW8_MIN_SIZE
            and dw8_available())


def dw8_available() -> bool:
    """Whether this build has the kernel: the CPU that built minimx has AVX512-VNNI."""
    return bool(native().lib.mmx_dw8_available())


def dw8_weights(w: np.ndarray) -> np.ndarray:
    """Depthwise weights ``(C, 1, 3, 3)`` as the kernel reads them, ``(3, C, 4)``:
    for kernel row k and channel c, the row's three taps and a zero."""
    rows = np.zeros((3, w.shape[0], 4), np.int8)
    rows[:, :, :3] = w[:, 0].transpose(1, 0, 2)
    return rows


def dw8_conv(src_shape: Sequence[int], *, stride: int = 1, bias: bool, relu: bool,
             dst_dtype: np.dtype) -> Primitive:
    """A uint8 depthwise 3x3 convolution, stride 1 or 2, padding 1 (see
    ``dw8_supports``): src and dst NHWC (``acdb``), dst uint8 or int8; weights
    take MXNet's ``(C, 1, 3, 3)`` int8 weights, bias their int32 bias (made
    float32, as the numpy kernel adds it), ``post0_src1`` the per-channel
    float32 requantization factor. Arguments: src, weights, [bias],
    post0_src1, dst."""
    src = as_dims(src_shape, "dw8_conv src")
    channels = src[1]
    dst = np.dtype(dst_dtype)
    if dst not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise BackendError(f"dw8_conv: dst must be uint8 or int8, not {dst}")
    if stride not in (1, 2) or (stride == 2 and channels % DW8_STRIDE2_CHANNELS):
        raise BackendError(f"dw8_conv: stride {stride} with {channels} channels: the kernel "
                           f"takes stride 1, or 2 with a multiple of {DW8_STRIDE2_CHANNELS} "
                           "channels")
    return build_primitive(
        "dw8_conv", f"src {src} stride {stride} bias {bias} relu {relu} dst {dst}",
        native().lib.mmx_dw8_conv_init, list(src), int(stride), int(bias), int(relu),
        int(dst == np.int8),
        user={"weights": ((channels, 1, 3, 3), dw8_weights)})
