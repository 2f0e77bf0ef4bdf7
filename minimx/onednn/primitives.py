"""Primitive builders: one function per oneDNN primitive, each returning a Primitive.

Every builder takes fp32 shapes and MXNet-style parameters, validates them
(so bad shapes raise BackendError before oneDNN is asked), and builds the
primitive for forward inference. A tensor argument is either a MemoryDesc
(an exact layout, typically the previous primitive's ``dst``) or a shape.
For convolution, deconvolution and inner product a shape means "layout of
oneDNN's choosing" (format ``any``); elsewhere it means the plain layout.
Weights are always left to oneDNN; convert them once with
``minimx.onednn.constant``.

INT8: convolution and inner product over an s8 or u8 ``src`` descriptor
take s8 weights and, with ``src_scale``/``weight_scales``/``dst_scale``,
f32 scales bound at execution (arguments ``src_scale``, ``weights_scale``,
``dst_scale``). Scales follow oneDNN v3: they are dequantization factors
(real = scale * integer), and the result is
``post_ops(src_scale * weights_scale * int32_sum + bias) / dst_scale``,
rounded to nearest even and saturated to ``dst_dtype``.

>>> op = conv((1, 3, 8, 8), (4, 3, 3, 3), pad=1, bias=True,
...           post_ops=[PostOp.eltwise("relu")])
>>> op.args
('src', 'weights', 'bias', 'dst')
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..base import BackendError
from ._loader import native
from .runtime import BFLOAT16, FLOAT32, MemoryDesc, as_dims, as_dtype, check, dtype_code, engine

SrcLike = MemoryDesc | Sequence[int]

ELTWISE_ALGS = ("relu", "tanh", "elu", "square", "abs", "sqrt", "linear", "soft_relu",
                "logistic", "exp", "gelu_tanh", "swish", "log", "clip", "gelu_erf", "round")
# alpha/beta when not given, where 0 would not be the usual meaning.
_ELTWISE_DEFAULTS = {"soft_relu": (1.0, 0.0), "swish": (1.0, 0.0), "linear": (1.0, 0.0)}
INT8 = frozenset({np.dtype(np.int8), np.dtype(np.uint8)})
WEIGHT_SCALES = ("tensor", "channel")
_ARG_NAMES = {"SRC": "src", "SRC_1": "src1", "DST": "dst", "WEIGHTS": "weights",
              "BIAS": "bias", "MEAN": "mean", "VARIANCE": "variance", "SCALE": "scale",
              "SHIFT": "shift"}
# An RNN's arguments beyond src (src_layer), weights (weights_layer), bias, dst (dst_layer).
_RNN_ARG_NAMES = {"SRC_1": "src_iter", "SRC_ITER_C": "src_iter_c",
                  "WEIGHTS_ITER": "weights_iter", "DST_ITER": "dst_iter",
                  "DST_ITER_C": "dst_iter_c"}
# Arguments a primitive writes besides dst (a plan gives each a temporary).
EXTRA_DSTS = ("dst_iter", "dst_iter_c")
# MXNet's RNN modes as oneDNN cells: (cell, activation of a vanilla cell, gates).
RNN_CELLS = {"rnn_relu": ("VANILLA", "relu", 1), "rnn_tanh": ("VANILLA", "tanh", 1),
             "lstm": ("LSTM", None, 4), "gru": ("LBR_GRU", None, 3)}


def _alg(prefix: str, name: str) -> int:
    try:
        return getattr(native().lib, f"MMX_{prefix}_{name.upper()}")
    except AttributeError:
        raise BackendError(f"unknown {prefix.lower()} algorithm {name!r}") from None


def _eltwise_params(alg: str, alpha: float | None, beta: float | None) -> tuple[float, float]:
    if alg not in ELTWISE_ALGS:
        raise BackendError(f"unknown eltwise algorithm {alg!r} (known: {', '.join(ELTWISE_ALGS)})")
    default_alpha, default_beta = _ELTWISE_DEFAULTS.get(alg, (0.0, 0.0))
    return (default_alpha if alpha is None else float(alpha),
            default_beta if beta is None else float(beta))


@dataclass(frozen=True)
class PostOp:
    """One step of a post-op chain, applied to a primitive's result in order."""

    kind: str
    alg: str = ""
    alpha: float = 0.0
    beta: float = 0.0
    src1: MemoryDesc | None = None
    dtype: np.dtype | None = None

    @classmethod
    def eltwise(cls, alg: str, alpha: float | None = None, beta: float | None = None) -> PostOp:
        """dst = alg(dst); alg is one of ELTWISE_ALGS (relu's alpha is the negative slope)."""
        return cls("eltwise", alg, *_eltwise_params(alg, alpha, beta))

    @classmethod
    def sum(cls, scale: float = 1.0, dtype: object = None) -> PostOp:
        """dst = result + scale * dst: the dst buffer must hold the addend beforehand.

        ``dtype`` reads the addend as another type of the same size (an int8
        residual in a uint8 dst); None reads it as dst's type. In an INT8
        primitive the addend is the stored integer, added before the division
        by the dst scale, so ``scale`` is the addend's dequantization factor.
        """
        return cls("sum", alpha=float(scale),
                   dtype=None if dtype is None else as_dtype(dtype, "sum post-op"))

    @classmethod
    def binary(cls, src1: SrcLike, alg: str = "add") -> PostOp:
        """dst = alg(dst, src1), src1 broadcast; its buffer is an extra primitive argument."""
        desc = src1 if isinstance(src1, MemoryDesc) else MemoryDesc.plain(src1)
        return cls("binary", alg, src1=desc)


def _native_eltwise(alg: str, alpha: float, beta: float,
                    nan_safe: bool = False) -> tuple[int, float, float]:
    """oneDNN's algorithm code and coefficients for eltwise `alg`. A relu without a
    slope runs as clip to [0, inf), unless the kernel is `nan_safe` (sees no NaN,
    or is minimx's own): oneDNN's vector kernels give 0 for NaN either way, but
    relu keeps NaN in others (the post-ops of its gemm convolution), and minimx's
    relu gives 0 for NaN on every path (docs/api.md)."""
    if not nan_safe and alg == "relu" and alpha == 0:
        return _alg("ELTWISE", "clip"), 0.0, float("inf")
    return _alg("ELTWISE", alg), alpha, beta


def _keeping_nan(op: Primitive, build: Callable[[Sequence[PostOp]], Primitive]) -> Primitive:
    """`op`, or where it runs a logistic post-op with oneDNN's reference logistic,
    which gives 0 for NaN (its reference and gemm kernels', and a deconvolution's,
    a backward-data convolution; the convolutions, deconvolutions and inner
    products of a DNNL subgraph), `build` of the same post-ops with each logistic
    as ``0.5 * tanh(x / 2) + 0.5``, which keeps NaN as the numpy path's sigmoid
    does (the two differ by an ulp or so, below 2**-24 where 0.5 + 0.5 * tanh
    rounds to 0). Not where binary post-ops follow: their arguments are numbered."""
    post = op.post_ops
    if not any(p.kind == "eltwise" and p.alg == "logistic" for p in post) \
            or any(p.kind == "binary" for p in post) \
            or not (op.kind == "deconv" or op.impl.startswith(("ref", "gemm", "x64:gemm"))):
        return op
    return build([q for p in post for q in (
        [PostOp.eltwise("linear", 0.5, 0.0), PostOp.eltwise("tanh"),
         PostOp.eltwise("linear", 0.5, 0.5)]
        if p.kind == "eltwise" and p.alg == "logistic" else [p])])


def _post_op_array(post_ops: Sequence[PostOp], nan_safe: bool):
    ffi, lib = native().ffi, native().lib
    kinds = {"eltwise": lib.MMX_POST_ELTWISE, "sum": lib.MMX_POST_SUM,
             "binary": lib.MMX_POST_BINARY}
    array = ffi.new("mmx_post_op[]", max(1, len(post_ops)))
    for entry, op in zip(array, post_ops, strict=False):  # one spare entry if no post-ops
        entry.kind = kinds[op.kind]
        entry.alpha, entry.beta = op.alpha, op.beta
        entry.dtype = lib.MMX_DTYPE_UNDEF if op.dtype is None else dtype_code(op.dtype)
        if op.kind == "eltwise":
            entry.alg, entry.alpha, entry.beta = _native_eltwise(op.alg, op.alpha, op.beta,
                                                                 nan_safe)
        elif op.kind == "binary" and op.src1 is not None:  # post_op_args checked src1
            entry.alg = _alg("BINARY", op.alg)
            entry.src1 = op.src1._md
    return array


class Primitive:
    """A compiled oneDNN primitive and the layouts it chose for its arguments.

    ``args`` names its execution arguments in order (``src``, ``weights``,
    ``bias``, ``dst``, ``mean`` ..., ``src0``.. for concat, ``post{i}_src1``
    for a binary post-op at position i, then ``src_scale``, ``weights_scale``,
    ``dst_scale`` where scales were asked for); ``desc(name)`` gives each
    layout. ``scale_masks`` maps each scaled argument to its oneDNN mask.
    """

    __slots__ = ("kind", "args", "descs", "impl", "scratchpad_nbytes", "post_ops",
                 "scale_masks", "extra_dsts", "_prim", "_user")

    def __init__(self, kind: str, prim, post_ops: Sequence[PostOp],
                 user: dict[str, tuple[tuple[int, ...], Callable]],
                 scale_masks: dict[str, int]) -> None:
        """Wraps a built ``mmx_prim *``; use the builder functions instead."""
        ffi, lib = native().ffi, native().lib
        arg_ids = [lib.mmx_prim_arg(prim, i) for i in range(lib.mmx_prim_nargs(prim))]
        self.kind = kind
        self.args = tuple(_arg_name(a, kind) for a in arg_ids)
        self.extra_dsts = tuple(n for n in self.args if n in EXTRA_DSTS)
        self.descs = {name: MemoryDesc.copy_of(lib.mmx_prim_arg_md(prim, i))
                      for i, name in enumerate(self.args)}
        self.impl = ffi.string(lib.mmx_prim_impl(prim)).decode()
        self.scratchpad_nbytes = int(lib.mmx_prim_scratchpad_size(prim))
        self.post_ops = tuple(post_ops)
        self.scale_masks = scale_masks
        self._prim = prim
        self._user = user

    def desc(self, name: str) -> MemoryDesc:
        """The layout the primitive expects for argument ``name``."""
        try:
            return self.descs[name]
        except KeyError:
            raise BackendError(f"{self.kind} has no argument {name!r} "
                               f"(arguments: {', '.join(self.args)})") from None

    @property
    def has_sum(self) -> bool:
        """Whether a sum post-op reads the dst buffer before writing it."""
        return any(op.kind == "sum" for op in self.post_ops)

    def logical(self, name: str, array: np.ndarray, dtype: object = None) -> np.ndarray:
        """``array``, in MXNet's layout for argument ``name``, as a C-contiguous
        array of the primitive's logical dims (grouped or transposed weights)
        and of ``dtype`` (default: the argument's), ready for ``to_layout``.
        Only casts within a kind are made: float weights for an INT8
        primitive must be quantized (``constant(..., scales=...)``)."""
        desc = self.desc(name)
        user_shape, to_logical = self._user.get(name, (desc.shape, lambda a: a))
        target = desc.dtype if dtype is None else as_dtype(dtype, f"{self.kind} {name}")
        array = np.asarray(array)
        if not np.can_cast(array.dtype, target, casting="same_kind"):
            raise BackendError(f"{self.kind} {name}: {array.dtype} values cannot be given "
                               f"as {target} without quantizing them")
        array = array.astype(target, copy=False)
        if array.shape != user_shape:
            raise BackendError(f"{self.kind} {name}: expected shape {user_shape}, "
                               f"got {array.shape}")
        return np.ascontiguousarray(to_logical(array))

    def __repr__(self) -> str:
        args = ", ".join(f"{n}={d.brief}" for n, d in self.descs.items())
        return f"<{self.kind} [{self.impl}] {args}>"


@dataclass(frozen=True)
class Int8:
    """How a convolution or inner product runs in INT8 (see the module notes).

    ``src`` is the source type when the source is given as a shape (a
    MemoryDesc brings its own); weights are s8. Scales, where asked for, are
    arguments of the primitive: ``src_scale`` and ``dst_scale`` one value,
    ``weights_scale`` one (``"tensor"``) or one per output channel
    (``"channel"``). MXNet's symmetric quantization needs no zero points.
    """

    src: object = np.uint8
    dst: object = FLOAT32
    bias: object = FLOAT32
    src_scale: bool = True
    weight_scales: str | None = "tensor"
    dst_scale: bool = True

    def setup(self, src: SrcLike, kind: str, grouped: bool
              ) -> tuple[MemoryDesc, np.dtype, np.dtype, dict[str, int]]:
        """The source descriptor, the bias and dst data types, and the scale
        masks (``grouped`` weights have their output channels on dims 0 and 1)."""
        src_d = _desc(src, f"{kind} src", any_ok=True, dtype=as_dtype(self.src, f"{kind} src"))
        if src_d.dtype not in INT8:
            raise BackendError(f"{kind}: INT8 needs an int8 or uint8 src, got {src_d.dtype}")
        bias = as_dtype(self.bias, f"{kind} bias")
        if bias not in (FLOAT32, np.dtype(np.int32)):
            raise BackendError(f"{kind}: an INT8 bias is float32 or int32, not {bias}")
        if self.weight_scales not in (None, *WEIGHT_SCALES):
            raise BackendError(f"{kind}: weight_scales {self.weight_scales!r} is not one of "
                               f"{', '.join(WEIGHT_SCALES)} or None")
        weights = {"tensor": 0, "channel": 0b11 if grouped else 0b1}.get(self.weight_scales or "")
        masks = {"src": 0 if self.src_scale else None, "weights": weights,
                 "dst": 0 if self.dst_scale else None}
        return (src_d, bias, as_dtype(self.dst, f"{kind} dst"),
                {name: mask for name, mask in masks.items() if mask is not None})


FLOATS = frozenset({FLOAT32, BFLOAT16})
DEPTHWISE_BF16_KERNEL = "brdgmm"   # oneDNN's batch-reduce depthwise kernel


def _float_type(dtype: object, kind: str) -> np.dtype:
    """The data type a float primitive computes in: float32 or bfloat16."""
    value = as_dtype(dtype, f"{kind} dtype")
    if value not in FLOATS:
        raise BackendError(f"{kind}: a float primitive runs in float32 or bfloat16, not "
                           f"{value} (INT8 takes int8=)")
    return value


def _weighted_descs(kind: str, src: SrcLike, int8: Int8 | None, grouped: bool,
                    dtype: object = FLOAT32
                    ) -> tuple[MemoryDesc, np.dtype, np.dtype, np.dtype, dict[str, int]]:
    """A convolution's or inner product's source descriptor, the data types
    of its weights, bias and dst, and its scale masks. Without `int8`, src,
    weights and dst are of `dtype` (bfloat16 keeps a float32 bias: see `conv` for
    the one exception)."""
    if int8 is None:
        t = _float_type(dtype, kind)
        return _desc(src, f"{kind} src", any_ok=True, dtype=t), t, FLOAT32, t, {}
    src_d, bias, dst, masks = int8.setup(src, kind, grouped)
    return src_d, np.dtype(np.int8), bias, dst, masks


def _arg_name(arg: int, kind: str = "") -> str:
    lib = native().lib
    if kind == "rnn":
        for suffix, name in _RNN_ARG_NAMES.items():
            if arg == getattr(lib, f"MMX_ARG_{suffix}"):
                return name
    if arg >= lib.MMX_ARG_POST_OP_BASE:   # post-op k's argument: its src1, or weights
        base = lib.MMX_ARG_POST_OP_BASE
        return f"post{arg // base - 1}_{_arg_name(arg % base)}"
    if arg & lib.MMX_ARG_ATTR_SCALES:
        return f"{_arg_name(arg & ~lib.MMX_ARG_ATTR_SCALES)}_scale"
    if arg & lib.MMX_ARG_POST_OP_DW:   # a fused depthwise convolution's
        return f"dw_{_arg_name(arg & ~lib.MMX_ARG_POST_OP_DW)}"
    if arg >= lib.MMX_ARG_MULTIPLE_SRC:
        return f"src{arg - lib.MMX_ARG_MULTIPLE_SRC}"
    for suffix, name in _ARG_NAMES.items():
        if arg == getattr(lib, f"MMX_ARG_{suffix}"):
            return name
    raise BackendError(f"unexpected oneDNN argument kind {arg}")


def build_primitive(kind: str, what: str, init: Callable, *args,
                    post_ops: Sequence[PostOp] = (), user: dict | None = None,
                    scale_masks: dict[str, int] | None = None,
                    avoid: str | None = None) -> Primitive:
    """Calls the C builder ``init(prim, engine, *args)`` on a new ``mmx_prim``
    and wraps the result; a failure raises BackendError naming ``kind`` and
    ``what`` (the parameters, for the message) with oneDNN's account of it.
    ``user`` maps an argument to its shape in MXNet's layout and the function
    that brings it to the primitive's logical dims (see `Primitive.logical`).
    With ``scale_masks`` (argument name to oneDNN mask: src, weights, dst),
    the builder's last argument is the matching ``mmx_scales``. With ``avoid``,
    oneDNN's first implementation whose name does not contain it (its last
    where none does; see `conv`)."""
    ffi, lib = native().ffi, native().lib
    prim = ffi.gc(lib.mmx_prim_new(), lib.mmx_prim_destroy)
    if prim == ffi.NULL:
        raise BackendError(f"{kind}: out of memory")
    if avoid:
        check(lib.mmx_prim_avoid(prim, avoid.encode()), f"{kind}: avoiding {avoid!r}")
    if scale_masks is not None:
        masks = ffi.new("mmx_scales *")
        masks.src, masks.weights, masks.dst = (
            scale_masks.get(name, -1) for name in ("src", "weights", "dst"))
        args = (*args, masks)
    check(init(prim, engine(), *args), f"{kind} {what}")
    return Primitive(kind, prim, post_ops, user or {}, scale_masks or {})


def _desc(src: SrcLike, what: str, any_ok: bool, dtype: np.dtype | None = None) -> MemoryDesc:
    """``src`` as a descriptor (a shape: of ``dtype``, float32 by default)."""
    if isinstance(src, MemoryDesc):
        if src.layout == "any" and not any_ok:
            raise BackendError(f"{what}: needs a concrete layout, got {src}")
        if dtype is not None and src.dtype != dtype:
            raise BackendError(f"{what}: expected {dtype} data, got {src}")
        return src
    dtype = dtype or FLOAT32
    return MemoryDesc.any(src, dtype) if any_ok else MemoryDesc.plain(as_dims(src, what), dtype)


def spatial_param(value: int | Sequence[int] | None, n: int, default: int, what: str,
                  minimum: int) -> tuple[int, ...]:
    """An MXNet spatial parameter (stride, pad, ...) as ``n`` ints, each at
    least ``minimum``: None or ``()`` gives ``default`` on every axis, an int
    is repeated; anything else raises BackendError naming ``what``."""
    if value is None:
        return (default,) * n
    try:
        if isinstance(value, (int, np.integer)):
            values = (int(value),) * n
        else:
            values = tuple(int(v) for v in value) or (default,) * n
    except (TypeError, ValueError):
        raise BackendError(f"{what} {value!r}: expected integers") from None
    if len(values) != n or any(v < minimum for v in values):
        raise BackendError(f"{what} {value!r}: expected {n} values >= {minimum}")
    return values


def _spatial_src(desc: MemoryDesc, kind: str) -> int:
    nspatial = len(desc.shape) - 2
    if not 1 <= nspatial <= 3:
        raise BackendError(f"{kind}: data must be 3-D to 5-D (N, C, spatial...), "
                           f"got shape {desc.shape}")
    return nspatial


def post_op_args(post_ops: Sequence[PostOp], dst_shape: Sequence[int], kind: str,
                 nan_safe: bool = False) -> tuple:
    """The C builders' last two arguments, ``(npost, mmx_post_op array)``, once
    each binary operand is known to broadcast to ``dst_shape`` (`nan_safe`: see
    `_native_eltwise`; an INT8 primitive's integer products make no NaN)."""
    # oneDNN accepts some src1 shapes that do not broadcast, and then reads
    # the wrong elements: only exact or size-1 dims are let through.
    for i, op in enumerate(post_ops):
        if not isinstance(op, PostOp):
            raise BackendError(f"{kind}: post_ops[{i}] is not a PostOp: {op!r}")
        if op.kind != "binary":
            continue
        if op.src1 is None:
            raise BackendError(f"{kind}: binary post_ops[{i}] has no operand (src1)")
        if len(op.src1.shape) != len(dst_shape) or any(
                y not in (x, 1) for x, y in zip(dst_shape, op.src1.shape, strict=True)):
            raise BackendError(f"{kind}: binary post-op operand {op.src1.shape} does not "
                               f"broadcast to the output {tuple(dst_shape)}")
    return len(post_ops), _post_op_array(post_ops, nan_safe)


def conv(src: SrcLike, weight_shape: Sequence[int], *, stride=None, pad=None, dilate=None,
         num_group: int = 1, bias: bool = False, post_ops: Sequence[PostOp] = (),
         int8: Int8 | None = None, dtype: object = FLOAT32,
         dst_layout: str | None = None, avoid: str | None = None) -> Primitive:
    """Convolution (MXNet ``Convolution``): weights ``(O, C/num_group, *kernel)``,
    symmetric ``pad``, ``dilate`` 1 = dense; src, weights and dst of ``dtype``
    (float32 or bfloat16; the bias float32, or bfloat16 for a bfloat16 depthwise
    convolution where only that gets oneDNN's fast kernel), or INT8 with
    ``int8``; dst in ``dst_layout`` (``acdb`` is NHWC, ``aBcd16b`` 16-channel
    blocks) rather than oneDNN's choice, src in its descriptor's layout when
    given one (oneDNN's choice for a shape).
    With ``avoid``, oneDNN's first kernel whose name does not contain it
    (``amx``: one for the vector units rather than AMX's tiles), unless only its
    reference kernel is left.
    Arguments: src, weights, [bias], dst, [scales]."""
    src_d, w_dt, bias_dt, dst_dt, masks = _weighted_descs("conv", src, int8, num_group != 1,
                                                          dtype)
    nsp = _spatial_src(src_d, "conv")
    n, c, *size = src_d.shape
    w = as_dims(weight_shape, "conv weights")
    g = int(num_group)
    if len(w) != nsp + 2 or g < 1 or c % g or w[0] % g or w[1] != c // g:
        raise BackendError(f"conv: weights {w} with num_group={g} do not fit data {src_d.shape}"
                           f" (expected (O, {c // max(g, 1)}, *kernel) with O divisible by "
                           f"num_group)")
    s = spatial_param(stride, nsp, 1, "conv stride", 1)
    p = spatial_param(pad, nsp, 0, "conv pad", 0)
    d = spatial_param(dilate, nsp, 1, "conv dilate", 1)
    out = [(x + 2 * pp - (dd * (k - 1) + 1)) // ss + 1
           for x, pp, dd, k, ss in zip(size, p, d, w[2:], s, strict=True)]
    if any(o < 1 for o in out):
        raise BackendError(f"conv: kernel {w[2:]} (dilate {d}, pad {p}) is larger than the "
                           f"padded input {tuple(size)}")
    logical = (g, w[0] // g, w[1], *w[2:]) if g > 1 else w

    def build(bias_dt: np.dtype, avoid: str | None = avoid,
              post_ops: Sequence[PostOp] = post_ops) -> Primitive:
        bias_d = MemoryDesc.plain((w[0],), bias_dt) if bias else None
        return build_primitive(
            "conv", f"src {src_d} weights {w} stride {s} pad {p} dilate {d} groups {g}",
            native().lib.mmx_conv_init, src_d._md, MemoryDesc.any(logical, w_dt)._md,
            bias_d._md if bias_d else native().ffi.NULL,
            (MemoryDesc.any((n, w[0], *out), dst_dt) if dst_layout is None
             else MemoryDesc.with_layout((n, w[0], *out), dst_layout, dst_dt))._md,
            s, [x - 1 for x in d], p, p,
            *post_op_args(post_ops, (n, w[0], *out), "conv", nan_safe=int8 is not None),
            post_ops=post_ops, user={"weights": (w, lambda a: a.reshape(logical))},
            scale_masks=masks, avoid=avoid)

    op = build(bias_dt)
    if avoid and op.impl.startswith("ref"):
        avoid = None
        op = build(bias_dt, avoid=None)
    if bias and dst_dt == BFLOAT16 and int8 is None and g == c == w[0] \
            and not op.impl.startswith(DEPTHWISE_BF16_KERNEL):
        # oneDNN 3.2 runs a bf16 depthwise convolution with its fastest kernel
        # (1.15-1.45x the other) only for a bf16 bias, as MXNet's AMP gives it.
        fast = build(BFLOAT16)
        if fast.impl.startswith(DEPTHWISE_BF16_KERNEL):
            op, bias_dt = fast, BFLOAT16
    return _keeping_nan(op, lambda post: build(bias_dt, avoid, post))


def deconv(src: SrcLike, weight_shape: Sequence[int], *, stride=None, pad=None, adj=None,
           dilate=None, num_group: int = 1, bias: bool = False,
           post_ops: Sequence[PostOp] = (), dtype: object = FLOAT32) -> Primitive:
    """Transposed convolution (MXNet ``Deconvolution``): weights
    ``(C, O/num_group, *kernel)``, output ``(in-1)*stride - 2*pad + dilate*(k-1) + 1 + adj``;
    src, weights and dst of ``dtype`` (float32 or bfloat16).
    Arguments: src, weights, [bias], dst."""
    src_d, w_dt, _, dst_dt, _ = _weighted_descs("deconv", src, None, num_group != 1, dtype)
    nsp = _spatial_src(src_d, "deconv")
    n, c, *size = src_d.shape
    w = as_dims(weight_shape, "deconv weights")
    g = int(num_group)
    if len(w) != nsp + 2 or g < 1 or w[0] != c or c % g:
        raise BackendError(f"deconv: weights {w} with num_group={g} do not fit data "
                           f"{src_d.shape} (expected ({c}, O/num_group, *kernel))")
    s = spatial_param(stride, nsp, 1, "deconv stride", 1)
    p = spatial_param(pad, nsp, 0, "deconv pad", 0)
    a = spatial_param(adj, nsp, 0, "deconv adj", 0)
    d = spatial_param(dilate, nsp, 1, "deconv dilate", 1)
    out_c = w[1] * g
    out = [(x - 1) * ss - 2 * pp + dd * (k - 1) + 1 + aa
           for x, ss, pp, dd, k, aa in zip(size, s, p, d, w[2:], a, strict=True)]
    if any(o < 1 for o in out):
        raise BackendError(f"deconv: pad {p} leaves no output for data {src_d.shape} and "
                           f"weights {w}")
    if any(aa > pp for aa, pp in zip(a, p, strict=True)):
        raise BackendError(f"deconv: adj {a} must not exceed pad {p}")
    # oneDNN wants (O, I, k..) or (G, O/G, I/G, k..); MXNet stores (I, O/G, k..).
    grouped = (g, c // g, w[1], *w[2:])
    logical = (g, w[1], c // g, *w[2:]) if g > 1 else (w[1], c, *w[2:])
    bias_d = MemoryDesc.plain((out_c,)) if bias else None

    def build(post: Sequence[PostOp]) -> Primitive:
        return build_primitive(
            "deconv", f"src {src_d} weights {w} stride {s} pad {p} adj {a} dilate {d} "
                      f"groups {g}",
            native().lib.mmx_deconv_init, src_d._md, MemoryDesc.any(logical, w_dt)._md,
            bias_d._md if bias_d else native().ffi.NULL,
            MemoryDesc.any((n, out_c, *out), dst_dt)._md,
            s, [x - 1 for x in d], p, [pp - aa for pp, aa in zip(p, a, strict=True)],
            *post_op_args(post, (n, out_c, *out), "deconv"),
            post_ops=post,
            user={"weights": (w, lambda x: x.reshape(grouped).swapaxes(1, 2).reshape(logical))})

    return _keeping_nan(build(post_ops), build)


def inner_product(src: SrcLike, num_hidden: int, *, bias: bool = False,
                  post_ops: Sequence[PostOp] = (), int8: Int8 | None = None,
                  dtype: object = FLOAT32) -> Primitive:
    """Fully connected layer (MXNet ``FullyConnected``, flatten=True) over data
    ``(N, ...)`` of 2 to 5 dims; weights ``(num_hidden, prod(...))``; src,
    weights and dst of ``dtype`` (float32 or bfloat16), or INT8 with ``int8``.
    Arguments: src, weights, [bias], dst, [scales]."""
    src_d, w_dt, bias_dt, dst_dt, masks = _weighted_descs("inner_product", src, int8, False,
                                                          dtype)
    if not 2 <= len(src_d.shape) <= 5 or int(num_hidden) < 1:
        raise BackendError(f"inner_product: data {src_d.shape} must have 2 to 5 dims and "
                           f"num_hidden ({num_hidden}) must be positive")
    n, *rest = src_d.shape
    o = int(num_hidden)
    logical = (o, *rest)
    user_shape = (o, math.prod(rest))
    bias_d = MemoryDesc.plain((o,), bias_dt) if bias else None

    def build(weights_d: MemoryDesc, post: Sequence[PostOp] = post_ops) -> Primitive:
        return build_primitive(
            "inner_product", f"src {src_d} num_hidden {o}",
            native().lib.mmx_inner_product_init, src_d._md, weights_d._md,
            bias_d._md if bias_d else native().ffi.NULL, MemoryDesc.any((n, o), dst_dt)._md,
            *post_op_args(post, (n, o), "inner_product", nan_safe=int8 is not None),
            post_ops=post, user={"weights": (user_shape, lambda a: a.reshape(logical))},
            scale_masks=masks)

    weights = MemoryDesc.any(logical, w_dt)
    op = build(weights)
    src_chosen, weights_chosen = op.desc("src"), op.desc("weights")
    if (src_chosen.is_strided and weights_chosen.is_strided
            and _input_order(src_chosen) != _input_order(weights_chosen)):
        # oneDNN 3.8+'s matmul-based inner product, with one output over
        # channels-last data, lays the weights it chooses out channels-first
        # (the (K, 1) matrix of its matmul maps back to CHW order whatever
        # the data's) and so multiplies mismatched elements. Weights ordered
        # as the data are read right.
        weights = MemoryDesc.ordered(logical, src_chosen.layout, w_dt)
        op = build(weights)
    return _keeping_nan(op, lambda post: build(weights, post))


def _input_order(desc: MemoryDesc) -> str:
    """The order, outermost first, in which an unblocked ``desc`` of an inner
    product's data or weights holds the dims after the first (the ones
    flattened into its inputs), leaving out those of size 1."""
    return "".join(ch for ch in desc.layout
                   if ch != "a" and desc.shape[ord(ch) - ord("a")] > 1)


def matmul(src: SrcLike, weights: SrcLike, *, bias: bool = False,
           post_ops: Sequence[PostOp] = (), user: dict | None = None,
           dst_strides: Sequence[int] | None = None) -> Primitive:
    """Batched matrix product ``dst = src @ weights (+ bias)``: src ``(.., M, K)``,
    weights ``(.., K, N)`` with as many dims (2 to 5; a size-1 batch dim
    broadcasts), bias ``(N,)`` over the last dim, dst plain ``(.., M, N)``.
    Descriptors may be strided views (a transposed operand); a weights shape
    lets oneDNN choose the layout of constant weights, whose layout as the
    user holds them ``user`` gives (see `build_primitive`); ``dst_strides``
    writes dst permuted. Arguments: src, weights, [bias], dst."""
    a = _desc(src, "matmul src", any_ok=False)
    b = _desc(weights, "matmul weights", any_ok=True)
    (*batch_a, m, k), (*batch_b, k2, n) = a.shape, b.shape
    if not 2 <= len(a.shape) <= 5 or len(b.shape) != len(a.shape) or k != k2 or any(
            x != y and 1 not in (x, y) for x, y in zip(batch_a, batch_b, strict=True)):
        raise BackendError(f"matmul: src {a.shape} and weights {b.shape} do not multiply")
    batch = tuple(max(x, y) for x, y in zip(batch_a, batch_b, strict=True))
    dst_shape = (*batch, m, n)
    user = dict(user or {})
    bias_d = None
    if bias:
        bias_d = MemoryDesc.plain((1,) * len(batch) + (1, n))
        user["bias"] = ((n,), lambda v: v.reshape(bias_d.shape))
    return build_primitive(
        "matmul", f"src {a} weights {b}", native().lib.mmx_matmul_init, a._md, b._md,
        bias_d._md if bias_d else native().ffi.NULL,
        (MemoryDesc.strided(dst_shape, dst_strides) if dst_strides
         else MemoryDesc.plain(dst_shape))._md,
        *post_op_args(post_ops, dst_shape, "matmul"), post_ops=post_ops, user=user)


def layer_norm(src: SrcLike, *, eps: float = 1e-5, use_scale: bool = True,
               use_shift: bool = True) -> Primitive:
    """Layer normalization over the last axis, statistics computed.
    Arguments: src, [scale], [shift], dst (dst in src's layout)."""
    src_d = _desc(src, "layer_norm src", any_ok=False)
    if not 2 <= len(src_d.shape) <= 5:
        raise BackendError(f"layer_norm: data {src_d.shape} must have 2 to 5 dims")
    return build_primitive(
        "layer_norm", f"src {src_d} eps {eps}", native().lib.mmx_layer_norm_init,
        src_d._md, float(eps), int(use_scale), int(use_shift))


def resampling(src: SrcLike, size: Sequence[int], alg: str = "linear") -> Primitive:
    """Resampling of ``(N, C, spatial...)`` to the spatial ``size``, ``linear`` or
    ``nearest``, with oneDNN's half-pixel centres. Arguments: src, dst."""
    src_d = _desc(src, "resampling src", any_ok=False)
    size = as_dims(size, "resampling size")
    if len(src_d.shape) - 2 != len(size) or not 1 <= len(size) <= 3:
        raise BackendError(f"resampling: size {size} does not fit data {src_d.shape}")
    dst = MemoryDesc.any((*src_d.shape[:2], *size))
    return build_primitive(
        "resampling", f"{alg} src {src_d} size {size}", native().lib.mmx_resampling_init,
        _alg("RESAMPLING", alg), src_d._md, dst._md)


def batch_norm(src: SrcLike, *, eps: float = 1e-3, use_scale: bool = True,
               use_shift: bool = True) -> Primitive:
    """Batch normalization with given (global) statistics over axis 1.
    Arguments: src, mean, variance, [scale], [shift], dst (dst in src's layout)."""
    src_d = _desc(src, "batch_norm src", any_ok=False)
    if len(src_d.shape) < 2:
        raise BackendError(f"batch_norm: data {src_d.shape} needs a channel axis")
    return build_primitive(
        "batch_norm", f"src {src_d} eps {eps}", native().lib.mmx_batch_norm_init,
        src_d._md, float(eps), int(use_scale), int(use_shift))


def eltwise(src: SrcLike, alg: str, alpha: float | None = None,
            beta: float | None = None) -> Primitive:
    """Elementwise ``alg`` (one of ELTWISE_ALGS). Arguments: src, dst (src's layout)."""
    src_d = _desc(src, "eltwise src", any_ok=False)
    code, alpha, beta = _native_eltwise(alg, *_eltwise_params(alg, alpha, beta),
                                        nan_safe=src_d.dtype not in FLOATS)
    return build_primitive(
        "eltwise", f"{alg} src {src_d}", native().lib.mmx_eltwise_init, code, alpha, beta,
        src_d._md)


def reduction(src: SrcLike, alg: str) -> Primitive:
    """The ``max`` or ``min`` of all of ``src`` (float32 or int32) as float32, in a
    tensor of ``src``'s rank with every dim 1. Arguments: src, dst."""
    src_d = _desc(src, "reduction src", any_ok=False)
    dst = MemoryDesc.plain((1,) * len(src_d.shape))
    return build_primitive(
        "reduction", f"{alg} src {src_d}", native().lib.mmx_reduction_init,
        _alg("REDUCTION", alg), src_d._md, dst._md)


def pool_output_size(size: int, kernel: int, stride: int, pad: int, convention: str) -> int:
    """MXNet's pooling output length for one spatial axis."""
    span = size + 2 * pad - kernel
    return (span // stride if convention == "valid" else -(-span // stride)) + 1


def pooling(src: SrcLike, kernel: Sequence[int] | None = None, *, pool_type: str = "max",
            stride=None, pad=None, global_pool: bool = False, convention: str = "valid",
            count_include_pad: bool = True) -> Primitive:
    """Pooling (MXNet ``Pooling``; pool_type max or avg). ``convention='full'``
    (ceil) becomes extra right padding; for avg with ``count_include_pad`` that
    extra padding is counted in the divisor too. dst has src's data type (an
    int8 average is rounded half to even). Arguments: src, dst."""
    src_d = _desc(src, "pooling src", any_ok=False)
    nsp = _spatial_src(src_d, "pooling")
    n, c, *size = src_d.shape
    if global_pool:
        k, s, p = tuple(size), (1,) * nsp, (0,) * nsp
    else:
        if kernel is None:
            raise BackendError("pooling: kernel is required unless global_pool")
        k = spatial_param(kernel, nsp, 1, "pooling kernel", 1)
        s = spatial_param(stride, nsp, 1, "pooling stride", 1)
        p = spatial_param(pad, nsp, 0, "pooling pad", 0)
    if convention not in ("valid", "full"):
        raise BackendError(f"pooling: convention must be 'valid' or 'full', got {convention!r}")
    algs = {"max": "MAX", "avg": "AVG_INCLUDE_PADDING" if count_include_pad
            else "AVG_EXCLUDE_PADDING"}
    if pool_type not in algs:
        raise BackendError(f"pooling: pool_type {pool_type!r} is not supported (max, avg)")
    out = [pool_output_size(x, kk, ss, pp, convention)
           for x, kk, ss, pp in zip(size, k, s, p, strict=True)]
    if any(o < 1 for o in out) or any(pp >= kk for pp, kk in zip(p, k, strict=True)):
        raise BackendError(f"pooling: kernel {k} pad {p} do not fit data {src_d.shape} "
                           "(pad must be smaller than the kernel)")
    if any((o - 1) * ss - pp >= x for o, ss, pp, x in zip(out, s, p, size, strict=True)):
        raise BackendError(f"pooling: with convention {convention!r}, kernel {k}, stride {s} "
                           f"and pad {p}, the last window of data {src_d.shape} lies wholly "
                           "in the padding, which oneDNN does not support")
    # 'valid' floors, as oneDNN does with symmetric padding; 'full' pads the
    # high side up to the last window.
    pad_r = [max(pp, (o - 1) * ss + kk - x - pp)
             for o, ss, kk, x, pp in zip(out, s, k, size, p, strict=True)]
    return build_primitive(
        "pooling", f"{pool_type} src {src_d} kernel {k} stride {s} pad {p} {convention}",
        native().lib.mmx_pooling_init, _alg("POOLING", algs[pool_type]), src_d._md,
        MemoryDesc.any((n, c, *out), src_d.dtype)._md, s, k, p, pad_r)


def softmax(src: SrcLike, axis: int = -1, log: bool = False) -> Primitive:
    """Softmax (or log-softmax) along ``axis``. Arguments: src, dst (src's layout)."""
    src_d = _desc(src, "softmax src", any_ok=False)
    ndim = len(src_d.shape)
    if not -ndim <= axis < ndim:
        raise BackendError(f"softmax: axis {axis} out of range for shape {src_d.shape}")
    return build_primitive(
        "softmax", f"src {src_d} axis {axis}", native().lib.mmx_softmax_init,
        _alg("SOFTMAX", "log" if log else "accurate"), src_d._md, axis % ndim)


def lrn(src: SrcLike, nsize: int, *, alpha: float = 1e-4, beta: float = 0.75,
        knorm: float = 2.0) -> Primitive:
    """Local response normalization across channels (MXNet ``LRN``):
    ``x / (knorm + alpha/nsize * sum(x^2))^beta``. Arguments: src, dst."""
    src_d = _desc(src, "lrn src", any_ok=False)
    if len(src_d.shape) < 3 or int(nsize) < 1:
        raise BackendError(f"lrn: data {src_d.shape} must be (N, C, spatial...) and nsize "
                           "positive")
    return build_primitive(
        "lrn", f"src {src_d} nsize {nsize}", native().lib.mmx_lrn_init,
        src_d._md, int(nsize), float(alpha), float(beta), float(knorm))


def binary(src0: SrcLike, src1: SrcLike, alg: str = "add", *,
           post_ops: Sequence[PostOp] = (), dst_dtype: np.dtype | None = None) -> Primitive:
    """dst = alg(src0, src1), alg add, sub, mul, div, max, min, or gt, lt, eq (1 where true,
    else 0); src1 broadcasts over its size-1 dims (a shorter src1 shape is aligned to the
    right, numpy-style). dst has src0's data type unless `dst_dtype` is given (an integer
    type: rounded to nearest even and saturated). Arguments: src, src1, dst."""
    a = _desc(src0, "binary src0", any_ok=False)
    if not isinstance(src1, MemoryDesc):
        dims = as_dims(src1, "binary src1")
        src1 = (1,) * (len(a.shape) - len(dims)) + dims
    b = _desc(src1, "binary src1", any_ok=False)
    if len(b.shape) != len(a.shape) or any(y not in (x, 1)
                                           for x, y in zip(a.shape, b.shape, strict=True)):
        raise BackendError(f"binary {alg}: {b.shape} does not broadcast to {a.shape}")
    return build_primitive(
        "binary", f"{alg} {a} {b}", native().lib.mmx_binary_init,
        _alg("BINARY", alg), a._md, b._md,
        MemoryDesc.any(a.shape, a.dtype if dst_dtype is None else dst_dtype)._md,
        *post_op_args(post_ops, a.shape, "binary"), post_ops=post_ops)


def concat(srcs: Sequence[SrcLike], axis: int = 1) -> Primitive:
    """Concatenation along ``axis`` of inputs of one data type (dst has it too).
    Arguments: src0 .. src{n-1}, dst."""
    descs = [_desc(s, "concat src", any_ok=False) for s in srcs]
    if not descs:
        raise BackendError("concat: no inputs")
    first = descs[0].shape
    ndim = len(first)
    if not -ndim <= axis < ndim:
        raise BackendError(f"concat: axis {axis} out of range for shape {first}")
    axis %= ndim
    for d in descs:
        if len(d.shape) != ndim or any(
                x != y for i, (x, y) in enumerate(zip(d.shape, first, strict=True)) if i != axis):
            raise BackendError(f"concat: shapes {[x.shape for x in descs]} differ off axis "
                               f"{axis}")
    first_dtype = descs[0].dtype
    if any(d.dtype != first_dtype for d in descs):
        raise BackendError(f"concat: inputs of different types {[str(d.dtype) for d in descs]}")
    out = list(first)
    out[axis] = sum(d.shape[axis] for d in descs)
    ffi = native().ffi
    mds = ffi.new("mmx_md *[]", [d._md for d in descs])
    return build_primitive(
        "concat", f"{len(descs)} inputs axis {axis}", native().lib.mmx_concat_init,
        len(descs), mds, MemoryDesc.any(out, first_dtype)._md, axis)


def reorder(src: SrcLike, dst: SrcLike, *, src_scale_mask: int | None = None,
            dst_scale_mask: int | None = None) -> Primitive:
    """Layout and data type conversion between two descriptors of the same
    dims (a shape means plain float32): ``dst = src_scale * src / dst_scale``,
    rounded to nearest even and saturated to dst's type. A scale mask (0: one
    value; bit d: one per index of dim d) adds that scale as an argument:
    a dst scale quantizes, a src scale dequantizes (both are dequantization
    factors). Arguments: src, dst, [src_scale], [dst_scale]."""
    a = _desc(src, "reorder src", any_ok=False)
    b = _desc(dst, "reorder dst", any_ok=False)
    if a.shape != b.shape:
        raise BackendError(f"reorder: shapes differ: {a.shape} -> {b.shape}")
    masks = {name: mask for name, mask in (("src", src_scale_mask), ("dst", dst_scale_mask))
             if mask is not None}
    if any(not 0 <= m < 1 << len(a.shape) for m in masks.values()):
        raise BackendError(f"reorder: scale masks {masks} do not fit {len(a.shape)} dims")
    return build_primitive("reorder", f"{a} -> {b}", native().lib.mmx_reorder_init,
                           a._md, b._md, scale_masks=masks)


@dataclass(frozen=True)
class RnnInt8:
    """An INT8 LSTM layer's quantization (oneDNN's rnn_data_qparams and
    rnn_weights_qparams): u8 data is ``f32 * data_scale + data_shift``, s8 weights
    ``f32 * weight_scales`` (one per gate row, oneDNN's gate order, shared by the
    directions); ``dst_dtype`` is dst_layer's, u8 or float32 (oneDNN dequantizes:
    ``(u8 - data_shift) / data_scale``)."""

    data_scale: float
    data_shift: float
    weight_scales: np.ndarray
    dst_dtype: np.dtype


def rnn(mode: str, src: SrcLike, hidden: int, *, bidirectional: bool = False,
        state_outputs: bool = False, int8: RnnInt8 | None = None,
        dtype: np.dtype = FLOAT32) -> Primitive:
    """One recurrent layer of MXNet ``RNN`` mode ``mode`` (rnn_relu, rnn_tanh,
    lstm, gru: oneDNN's linear-before-reset GRU, MXNet's and cuDNN's formula)
    over plain data ``(T, N, C)``, ``hidden`` units per direction; with
    ``bidirectional`` the two directions' outputs are concatenated. Initial
    states are ``(1, D, N, hidden)``; weights ``(1, D, C, G, hidden)`` and
    ``(1, D, hidden, G, hidden)`` and bias ``(1, D, G, hidden)`` (G + 1 gates
    for the GRU) are in oneDNN's gate order (LSTM i, f, c, o; GRU u, r, o).
    Arguments: src, src_iter, [src_iter_c], weights, weights_iter, bias, dst
    ``(T, N, D * hidden)``, [dst_iter, [dst_iter_c]]: the final states, extra
    outputs (``extra_dsts``). With ``int8`` (LSTM only): u8 src, s8 weights, the
    states float32 (oneDNN quantizes the initial h and dequantizes the final).
    With ``dtype`` bfloat16: bf16 src, weights, dst and hidden states, the bias and
    the LSTM's cell states float32."""
    if int8 is not None and dtype != FLOAT32:
        raise BackendError(f"rnn: an INT8 layer has no {dtype} form")
    src_dtype = np.dtype(np.uint8) if int8 is not None else np.dtype(dtype)
    src_d = _desc(src, "rnn src", any_ok=False, dtype=src_dtype)
    if mode not in RNN_CELLS or len(src_d.shape) != 3 or int(hidden) < 1:
        raise BackendError(f"rnn: mode {mode!r} (one of {', '.join(RNN_CELLS)}), data "
                           f"{src_d.shape} (T, N, C) and hidden {hidden} (positive) do not fit")
    cell, activation, gates = RNN_CELLS[mode]
    steps, batch, width = src_d.shape
    h, dirs = int(hidden), 2 if bidirectional else 1
    lstm = mode == "lstm"
    cell_state = MemoryDesc.plain((1, dirs, batch, h))
    state = cell_state if int8 is not None else MemoryDesc.plain((1, dirs, batch, h), dtype)
    ffi, lib = native().ffi, native().lib
    optional = lambda d, wanted: d._md if wanted else ffi.NULL  # noqa: E731
    bias_gates = gates + 1 if mode == "gru" else gates
    weights: np.dtype = np.dtype(dtype)
    dst: np.dtype = np.dtype(dtype)
    qparams = ffi.NULL
    if int8 is not None:
        scales = np.ascontiguousarray(int8.weight_scales, dtype=FLOAT32).reshape(-1)
        if not lstm or scales.size != gates * h or int8.dst_dtype not in (FLOAT32, np.uint8):
            raise BackendError(f"rnn: INT8 takes an LSTM, {gates * h} weight scales and a "
                               f"uint8 or float32 dst, not {mode}, {scales.size} and "
                               f"{int8.dst_dtype}")
        weights, dst = np.dtype(np.int8), np.dtype(int8.dst_dtype)
        qparams = ffi.new("mmx_rnn_qparams *", {
            "data_scale": int8.data_scale, "data_shift": int8.data_shift,
            "nscales": scales.size, "weight_scales": ffi.from_buffer("float[]", scales)})
    return build_primitive(
        "rnn", f"{mode} src {src_d} hidden {h} directions {dirs}", lib.mmx_rnn_init,
        _alg("RNN", cell), _alg("ELTWISE", activation) if activation else 0,
        _alg("RNN", "BIDIRECTIONAL_CONCAT" if bidirectional else "LEFT2RIGHT"),
        src_d._md, state._md, optional(cell_state, lstm),
        MemoryDesc.any((1, dirs, width, gates, h), weights)._md,
        MemoryDesc.any((1, dirs, h, gates, h), weights)._md,
        MemoryDesc.plain((1, dirs, bias_gates, h))._md,
        MemoryDesc.plain((steps, batch, dirs * h), dst)._md,
        optional(state, state_outputs), optional(cell_state, state_outputs and lstm), qparams)
