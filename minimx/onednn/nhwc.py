"""A three-channel NCHW input written NHWC by a kernel of minimx's own (``native/nhwc_input.c``).

Where a network's convolutions run in NHWC (INT8 and bfloat16 always, and
float32 where the first convolution's output outgrows a core's L2 cache),
its first step turns the user's NCHW batch of RGB images into NHWC. oneDNN
3.2 does that with its generic reorder kernel, one channel at a time. The
kernel here loads 16 pixels of each of the three planes and interleaves them
with two permutes per output vector: 7.4 against 20.1 us for one 224x224
image in float32, 6.6 against 27.4 in bfloat16, 246 against 371 and 116
against 445 for 16 (AMD Zen 5, ``avx512_core_bf16``, two threads, the two
plans alternating in one process; docs/measurements.md). Its values are
oneDNN's in float32 (a copy) and ml_dtypes' in bfloat16 (rounded to nearest
even).

`Plan.reorder` runs it wherever it applies, unless the plan was made without
kernels of minimx's own (MINIMX_DNNL_NHWC_INPUT=0 for the DNNL backend's).

>>> from minimx.onednn import MemoryDesc
>>> nhwc_input_supports(MemoryDesc.plain((2, 3, 8, 8)),
...                     MemoryDesc.ordered((2, 3, 8, 8), "acdb", FLOAT32))
True
"""
from __future__ import annotations

from collections.abc import Sequence

from ..base import BackendError
from ._loader import native
from .primitives import FLOATS, Primitive, build_primitive
from .runtime import FLOAT32, MemoryDesc, as_dims, as_dtype

CHANNELS = 3   # the kernel's one channel count: RGB images


def nhwc_input_available() -> bool:
    """Whether this build has the kernel: the CPU that built minimx has AVX-512."""
    return bool(native().lib.mmx_nhwc_input_available())


def nhwc_input_supports(src: MemoryDesc, dst: MemoryDesc) -> bool:
    """Whether `nhwc_input` converts `src` to `dst`: src a dense NCHW float32
    tensor of three channels, dst the same dims in NHWC (``acdb``), float32 or
    bfloat16, and a build with the kernel."""
    shape = src.shape
    return (len(shape) == 4 and shape[1] == CHANNELS and dst.dtype in FLOATS
            and src == MemoryDesc.plain(shape, FLOAT32)
            and dst == MemoryDesc.ordered(shape, "acdb", dst.dtype)
            and nhwc_input_available())


def nhwc_input(shape: Sequence[int], dtype: object = FLOAT32) -> Primitive:
    """The reorder of a dense NCHW float32 tensor of `shape` (N, 3, H, W) to NHWC in
    `dtype` (float32, or bfloat16 rounded to nearest even) by minimx's kernel.
    Arguments: src, dst."""
    dims = as_dims(shape, "nhwc_input src")
    dst = as_dtype(dtype, "nhwc_input dst")
    if len(dims) != 4 or dims[1] != CHANNELS or dst not in FLOATS:
        raise BackendError(f"nhwc_input: takes (N, {CHANNELS}, H, W) float32 to float32 or "
                           f"bfloat16, not {dims} to {dst}")
    lib = native().lib
    dtype_code = lib.MMX_BF16 if dst != FLOAT32 else lib.MMX_F32
    return build_primitive("reorder", f"nhwc_input {dims} -> {dst}",
                           lib.mmx_nhwc_input_init, list(dims), dtype_code)
