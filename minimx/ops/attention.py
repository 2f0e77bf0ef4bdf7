"""Multi-head attention products on interleaved projections (BERT, transformers):
_contrib_interleaved_matmul_selfatt_qk / _valatt, _contrib_interleaved_matmul_encdec_qk /
_valatt and _contrib_div_sqrt_dim, as MXNet 1.9's src/operator/contrib/transformer.cc.

Self-attention takes one projection (T, B, 3 * E), E = heads * D, whose last axis
holds per head the query, key and value in turn: (T, B, heads, 3, D).
Encoder-decoder attention takes queries (Tq, B, E) and keys-values (Tk, B, 2 * E),
(Tk, B, heads, 2, D). Attention maps are (B * heads, Tq, Tk), batch-major.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..base import ShapeError
from .infer import Dims, from_input
from .registry import GradReads, OpDef, Param, Params, register

Array = np.ndarray


def _heads(p: Params, x: Array, parts: int) -> Array:
    """(T, B, parts * E) -> (T, B, heads, parts, D)."""
    t, b, width = x.shape
    return x.reshape(t, b, p.heads, parts, width // (parts * p.heads))


def attention_scale(head_dim: int, dtype) -> np.floating:
    """1 / sqrt(head_dim), in float32 as MXNet computes it, as a `dtype` value."""
    return np.dtype(dtype).type(1 / np.sqrt(np.float32(head_dim)))


def _maps(att: Array, batch: int) -> Array:
    """(B * heads, Tq, Tk) -> (B, heads, Tq, Tk)."""
    return att.reshape(batch, -1, *att.shape[1:])


def _check_rank(what: str, shapes: list[Dims]) -> None:
    if any(len(s) != 3 for s in shapes):
        raise ShapeError(f"{what}: inputs must be 3-D, got {shapes}")


def _check_split(what: str, p: Params, width: int, parts: int) -> None:
    if width and width % (parts * p.heads):
        raise ShapeError(f"{what}: the last axis ({width}) must split into {parts} parts of "
                         f"heads={p.heads} heads")


def _batched(x: Array) -> Array:
    """(T, B, heads, D) -> (B, heads, T, D), the layout batched matrix products take."""
    return x.transpose(1, 2, 0, 3)


def _qk(p: Params, queries: Array, keys: Array) -> Array:
    """(Tq, B, heads, D) x (Tk, B, heads, D) -> (B * heads, Tq, Tk), scaled by 1/sqrt(D)."""
    scores = _batched(queries) @ _batched(keys).swapaxes(-1, -2)
    scores *= attention_scale(queries.shape[-1], scores.dtype)
    return scores.reshape(-1, *scores.shape[2:])


def _qk_grads(p: Params, queries: Array, keys: Array, grad: Array) -> tuple[Array, Array]:
    g = _maps(grad, queries.shape[1]) * attention_scale(queries.shape[-1], grad.dtype)
    d_queries = g @ _batched(keys)
    d_keys = g.swapaxes(-1, -2) @ _batched(queries)
    return d_queries.transpose(2, 0, 1, 3), d_keys.transpose(2, 0, 1, 3)


def _valatt(values: Array, att: Array) -> Array:
    """(Tk, B, heads, D) weighted by (B * heads, Tq, Tk) -> (Tq, B, heads * D)."""
    out = (_maps(att, values.shape[1]) @ _batched(values)).transpose(2, 0, 1, 3)
    return out.reshape(*out.shape[:2], -1)


def _valatt_grads(values: Array, att: Array, grad: Array) -> tuple[Array, Array]:
    g = _batched(grad.reshape(grad.shape[:2] + values.shape[2:]))
    maps = _maps(att, values.shape[1])
    d_values = (maps.swapaxes(-1, -2) @ g).transpose(2, 0, 1, 3)
    d_att = g @ _batched(values).swapaxes(-1, -2)
    return d_values, d_att.reshape(att.shape)


def _params() -> tuple[Param, ...]:
    return (Param("heads", "int", doc="Set number of heads"),)


def _register(name: str, inputs: tuple[str, ...], rule, forward, backward, doc: str) -> None:
    register(OpDef(name=f"_contrib_interleaved_matmul_{name}", inputs=inputs, params=_params(),
                   doc=doc, forward=forward, backward=backward,
                   backward_reads=GradReads(inputs), infer_shape=from_input(rule)))


# -- self-attention ------------------------------------------------------------------------

def _selfatt_qk_rule(p, in_shapes):
    (qkv,) = in_shapes
    _check_rank("interleaved_matmul_selfatt_qk", [qkv])
    _check_split("interleaved_matmul_selfatt_qk", p, qkv[2], 3)
    return [(p.heads * qkv[1], qkv[0], qkv[0])]


def _selfatt_qk_forward(p, ctx, inputs):
    _selfatt_qk_rule(p, [inputs[0].shape])
    parts = _heads(p, inputs[0], 3)
    return _qk(p, parts[..., 0, :], parts[..., 1, :])


def _selfatt_qk_backward(p, ctx, inputs, outputs, out_grads):
    parts = _heads(p, inputs[0], 3)
    grad = np.zeros_like(parts, dtype=out_grads[0].dtype)
    grad[..., 0, :], grad[..., 1, :] = _qk_grads(p, parts[..., 0, :], parts[..., 1, :],
                                                 out_grads[0])
    return [grad.reshape(inputs[0].shape)]


_register("selfatt_qk", ("queries_keys_values",), _selfatt_qk_rule, _selfatt_qk_forward,
          _selfatt_qk_backward, "Scaled query-key products of self-attention: (T, B, 3 * E) "
          "-> (B * heads, T, T).")


def _valatt_kernels(rule: Callable, parts: int, index: int) -> tuple[Callable, Callable]:
    """Forward and backward of a values-attention product whose values are part
    `index` of `parts` interleaved in its first input (self: q, k, v; encdec: k, v)."""
    def forward(p, ctx, inputs):
        x, att = inputs
        rule(p, [x.shape, att.shape])
        return _valatt(_heads(p, x, parts)[..., index, :], att)

    def backward(p, ctx, inputs, outputs, out_grads):
        x, att = inputs
        split = _heads(p, x, parts)
        grad = np.zeros_like(split, dtype=out_grads[0].dtype)
        grad[..., index, :], d_att = _valatt_grads(split[..., index, :], att, out_grads[0])
        return [grad.reshape(x.shape), d_att]

    return forward, backward


def _selfatt_valatt_rule(p, in_shapes):
    qkv, att = in_shapes
    what = "interleaved_matmul_selfatt_valatt"
    _check_rank(what, [qkv, att])
    _check_split(what, p, qkv[2], 3)
    if qkv[0] and (att[1] not in (0, qkv[0]) or att[2] not in (0, qkv[0])):
        raise ShapeError(f"{what}: attention {att} does not match sequence length {qkv[0]}")
    return [(qkv[0], qkv[1], qkv[2] // 3)]


_register("selfatt_valatt", ("queries_keys_values", "attention"), _selfatt_valatt_rule,
          *_valatt_kernels(_selfatt_valatt_rule, parts=3, index=2),
          "Attention-weighted values of self-attention: (T, B, 3 * E) and (B * heads, T, T) "
          "-> (T, B, E).")


# -- encoder-decoder attention ---------------------------------------------------------------

def _encdec_qk_rule(p, in_shapes):
    q, kv = in_shapes
    what = "interleaved_matmul_encdec_qk"
    _check_rank(what, [q, kv])
    _check_split(what, p, q[2], 1)
    if (q[2] and kv[2] and q[2] * 2 != kv[2]) or (q[1] and kv[1] and q[1] != kv[1]):
        raise ShapeError(f"{what}: keys_values {kv} must be (Tk, B, 2 * E) for queries {q}")
    return [(q[1] * p.heads, q[0], kv[0])]


def _encdec_qk_forward(p, ctx, inputs):
    q, kv = inputs
    _encdec_qk_rule(p, [q.shape, kv.shape])
    return _qk(p, _heads(p, q, 1)[..., 0, :], _heads(p, kv, 2)[..., 0, :])


def _encdec_qk_backward(p, ctx, inputs, outputs, out_grads):
    q, kv = inputs
    parts = _heads(p, kv, 2)
    d_kv = np.zeros_like(parts, dtype=out_grads[0].dtype)
    d_q, d_kv[..., 0, :] = _qk_grads(p, _heads(p, q, 1)[..., 0, :], parts[..., 0, :],
                                     out_grads[0])
    return [d_q.reshape(q.shape), d_kv.reshape(kv.shape)]


_register("encdec_qk", ("queries", "keys_values"), _encdec_qk_rule, _encdec_qk_forward,
          _encdec_qk_backward, "Scaled query-key products of encoder-decoder attention: "
          "(Tq, B, E) and (Tk, B, 2 * E) -> (B * heads, Tq, Tk).")


def _encdec_valatt_rule(p, in_shapes):
    kv, att = in_shapes
    what = "interleaved_matmul_encdec_valatt"
    _check_rank(what, [kv, att])
    _check_split(what, p, kv[2], 2)
    if (kv[0] and att[2] and kv[0] != att[2]) or (kv[1] and att[0]
                                                  and kv[1] * p.heads != att[0]):
        raise ShapeError(f"{what}: attention {att} does not match keys_values {kv} with "
                         f"heads={p.heads}")
    return [(att[1], kv[1], kv[2] // 2)]


_register("encdec_valatt", ("keys_values", "attention"), _encdec_valatt_rule,
          *_valatt_kernels(_encdec_valatt_rule, parts=2, index=1),
          "Attention-weighted values of encoder-decoder attention: (Tk, B, 2 * E) and "
          "(B * heads, Tq, Tk) -> (Tq, B, E).")


# -- div_sqrt_dim ----------------------------------------------------------------------------

def _div_sqrt_dim(x: Array) -> Array:
    if x.ndim == 0:
        raise ShapeError("div_sqrt_dim: a 0-d input has no last dimension")
    return (x / np.sqrt(x.dtype.type(x.shape[-1]))).astype(x.dtype)


register(OpDef(
    name="_contrib_div_sqrt_dim",
    doc="Rescales the input by the square root of its last dimension: "
        "out = data / sqrt(data.shape[-1]).",
    forward=lambda p, ctx, inputs: _div_sqrt_dim(inputs[0]),
    backward=lambda p, ctx, inputs, outputs, out_grads: [_div_sqrt_dim(out_grads[0])],
    backward_reads=GradReads(),
    named_inputs=False,
))
