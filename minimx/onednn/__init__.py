"""minimx's binding to oneDNN v3: primitives, and plans that run them in one call.

The native part (``minimx._dnnl``, built from ``native/``) is optional:
``available()`` says whether it loaded, ``unavailable_reason()`` says why not
and how to fix it, ``require()`` raises BackendError with that fix. The
library is loaded on first use, not when minimx is imported.

Typical use (what the DNNL subgraph operator does)::

    from minimx import onednn
    onednn.require()
    op = onednn.conv((1, 3, 32, 32), (16, 3, 3, 3), pad=1, bias=True,
                     post_ops=[onednn.PostOp.eltwise("relu")])
    fc = onednn.inner_product(op.desc("dst"), 10)          # consumes the blocked layout
    plan = onednn.Plan()
    x = plan.input((1, 3, 32, 32))
    h = plan.add(op, src=plan.reorder(x, op.desc("src")),
                 weights=plan.constant(onednn.constant(op, "weights", w)),  # reordered once
                 bias=plan.constant(b))                                   # zero copy
    y = plan.add(fc, src=h, weights=plan.constant(onednn.constant(fc, "weights", w2)))
    plan.output(y)
    (out,) = plan.run([data])                             # one C call
    print(plan)                                           # steps and implementations

INT8 (u8 src, s8 weights, scales as dequantization factors bound per run)::

    q = onednn.conv(onednn.MemoryDesc.any(shape, np.uint8), wshape, pad=1,
                    int8=onednn.Int8(dst=np.uint8, weight_scales="channel"))
    w8 = onednn.constant(q, "weights", w, scales=w_scales)  # quantized once, per channel
    y = plan.add(q, src=..., weights=plan.constant(w8),
                 src_scale=plan.constant(np.array([s_in], np.float32)),
                 weights_scale=plan.constant(w_scales),
                 dst_scale=plan.constant(np.array([s_out], np.float32)))
"""
from __future__ import annotations

from ..base import BackendError
from ._loader import native, state
from .convert import constant, to_layout, to_numpy
from .depthwise import dw8_conv, dw8_supports, dw8_weights
from .nhwc import nhwc_input, nhwc_input_supports
from .plan import BoundRun, Plan, Slot
from .pointwise import pw8_conv, pw8_supports, pw8_weights
from .pointwise_depthwise import pwdw_conv, pwdw_projects, pwdw_supports
from .primitives import (
    ELTWISE_ALGS,
    FLOATS,
    Int8,
    PostOp,
    Primitive,
    RnnInt8,
    batch_norm,
    binary,
    concat,
    conv,
    deconv,
    eltwise,
    inner_product,
    layer_norm,
    lrn,
    matmul,
    pool_output_size,
    pooling,
    reduction,
    reorder,
    resampling,
    rnn,
    softmax,
)
from .runtime import BFLOAT16, FLOAT32, Memory, MemoryDesc, c_order_strides, engine
from .stem import first_conv, first_conv_supports, first_conv_weights
from .winograd import wino_conv, winograd_supports, winograd_weights

__all__ = ["BF16_ISAS", "BFLOAT16", "BoundRun", "ELTWISE_ALGS", "FLOAT32", "FLOATS",
           "BackendError", "Int8", "Memory", "MemoryDesc", "Plan", "PostOp", "Primitive",
           "RnnInt8", "Slot", "available", "batch_norm", "bf16_native", "binary",
           "c_order_strides", "concat", "constant", "conv", "deconv", "dw8_conv", "dw8_supports",
           "dw8_weights", "eltwise", "engine", "first_conv", "first_conv_supports",
           "first_conv_weights",
           "exact_int8", "inner_product", "isa", "layer_norm", "lrn", "matmul", "nhwc_input",
           "nhwc_input_supports", "pool_output_size", "pooling", "pw8_conv", "pw8_supports",
           "pw8_weights", "pwdw_conv", "pwdw_projects",
           "pwdw_supports",
           "reduction", "reorder", "require", "resampling", "rnn", "softmax",
           "to_layout", "to_numpy", "unavailable_reason", "version", "wino_conv",
           "winograd_supports", "winograd_weights"]


def available() -> bool:
    """Whether the native oneDNN backend loaded (loads it on the first call)."""
    return state()[0] is not None


def unavailable_reason() -> str:
    """Why the backend is unavailable and how to get it; "" when it is available."""
    return state()[1]


def require() -> None:
    """Raise BackendError (with the fix) unless the backend is available."""
    native()


def version() -> str:
    """The loaded oneDNN's version, e.g. ``"3.2.0"``."""
    ffi, lib = native().ffi, native().lib
    major, minor, patch = (ffi.new("int *") for _ in range(3))
    lib.mmx_version(major, minor, patch, ffi.new("char **"))
    return f"{major[0]}.{minor[0]}.{patch[0]}"


def isa() -> str:
    """The instruction set oneDNN dispatches to here, e.g. ``"avx512_core_bf16"``."""
    ffi, lib = native().ffi, native().lib
    return ffi.string(lib.mmx_isa()).decode().removeprefix("cpu_isa_")


# oneDNN's ISAs from which on int8 products are summed exactly (VNNI's dot
# products, AMX's tiles): every ISA named after these extensions, or after the
# AVX-512 generations that have VNNI (bf16, fp16; AVX10).
_EXACT_INT8_ISAS = ("vnni", "amx", "bf16", "fp16", "avx10")


def exact_int8(isa_name: str | None = None) -> bool:
    """Whether oneDNN's INT8 kernels on `isa_name` (default: this CPU's) sum int8
    products exactly. Without VNNI they multiply in 16-bit pairs, which saturate,
    and halve the weights of signed-data layers against it."""
    name = isa() if isa_name is None else isa_name
    return any(part in name for part in _EXACT_INT8_ISAS)


# oneDNN's effective ISAs with bfloat16 dot products in hardware (AVX512-BF16,
# AMX, AVX2-VNNI-2, AVX10); below them oneDNN emulates bf16, slower than
# float32. oneDNN 3.6 renamed the AVX512-FP16 and AMX ISAs after AVX10.1
# (avx512_core_amx is reported as avx10_1_512_amx); both spellings are here.
BF16_ISAS = ("avx512_core_bf16", "avx512_core_fp16", "avx512_core_amx",
             "avx512_core_amx_fp16", "avx2_vnni_2", "avx10_1_512", "avx10_1_512_amx",
             "avx10_1_512_amx_fp16", "avx10_2_512", "avx10_2_512_amx_2")


def bf16_native() -> bool:
    """Whether oneDNN runs bfloat16 in hardware here (the effective ISA is one
    of BF16_ISAS)."""
    return isa() in BF16_ISAS
