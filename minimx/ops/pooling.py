"""Pooling (MXNet 1.9 parameters): max, avg, sum and Lp pooling, 1-D to 3-D, channel-first.

The forward pass reduces over `window.windows`, a strided view of the padded
input, so no Python loop touches pixels. Padding follows MXNet's kernels:
padded positions never win a max (they hold the dtype's lowest value), and an
average divides by the window clipped to ``size + pad`` (count_include_pad,
the default) or to the input itself. The 'full' and 'same' conventions add
windows that run past the padded end; extra end padding makes them fit.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import merge_at
from .registry import GradReads, OpContext, OpDef, Param, Params, register
from .window import Window, col2im, crop_spatial, kernel_first, make_window, pad_spatial, windows

_CHANNEL_FIRST = ("NCW", "NCHW", "NCDHW")


@dataclass(frozen=True)
class _Plan:
    """How one input is pooled: its spatial size, the window, output size and end padding."""

    spatial: tuple[int, ...]
    win: Window
    out: tuple[int, ...]
    pad_after: tuple[int, ...]


def _out_size(p: Params, win: Window, size: int, axis: int) -> int:
    k, s, pad = win.kernel[axis], win.stride[axis], win.pad[axis]
    if p.pooling_convention == "valid":
        return (size + 2 * pad - k) // s + 1
    if p.pooling_convention == "full":
        return -(-(size + 2 * pad - k) // s) + 1
    return -(-(size + 2 * pad) // s)  # 'same'


def _check(p: Params, ndim: int) -> None:
    """The parameter and rank checks of MXNet's parameter parser and shape function."""
    if not 3 <= ndim <= 5:
        raise ShapeError(f"Pooling: data must be 3-D, 4-D or 5-D (batch, channel, *spatial), "
                         f"got {ndim}-D")
    nd = ndim - 2
    if p.layout is not None and p.layout != _CHANNEL_FIRST[nd - 1]:
        raise OperatorError(f"Pooling: layout={p.layout} is not supported for {ndim}-D data "
                            f"(only {_CHANNEL_FIRST[nd - 1]})")
    if p.pool_type == "lp" and p.p_value not in (1, 2, 3):
        raise OperatorError(f"Pooling: pool_type='lp' needs p_value 1, 2 or 3, got {p.p_value}")
    if not p.global_pool and len(p.kernel) != nd:
        raise ShapeError(f"Pooling: kernel={p.kernel} does not match {ndim}-D data")
    if p.pooling_convention == "same" and (nd != 1 or any(p.pad)):
        raise OperatorError(f"Pooling: pooling_convention='same' supports only 1-D data "
                            f"without pad, got {ndim}-D data and pad={p.pad}")


def _window(p: Params, spatial: tuple[int, ...]) -> Window:
    if p.global_pool:
        nd = len(spatial)
        return Window(tuple(spatial), (1,) * nd, (1,) * nd, (0,) * nd)
    win = make_window("Pooling", p.kernel, p.stride, (), p.pad)
    for i, size in enumerate(spatial):
        if size and win.kernel[i] > size + 2 * win.pad[i]:
            raise ShapeError(f"Pooling: kernel size ({win.kernel[i]}) exceeds input "
                             f"({size} padded to {size + 2 * win.pad[i]})")
    return win


def _plan(p: Params, shape: tuple[int, ...]) -> _Plan:
    _check(p, len(shape))
    win = _window(p, shape[2:])
    out = tuple((1 if p.global_pool else _out_size(p, win, s, i))
                for i, s in enumerate(shape[2:]))
    # Windows past the padded end ('full', 'same') read extra end padding.
    pad_after = tuple(pad + max(0, (o - 1) * s + k - (size + 2 * pad))
                      for pad, o, s, k, size
                      in zip(win.pad, out, win.stride, win.kernel, shape[2:], strict=True))
    return _Plan(tuple(shape[2:]), win, out, pad_after)


def _infer_shape(p: Params, in_shapes: list, out_shapes: list):
    ins, outs = list(in_shapes), list(out_shapes)
    data = ins[0]
    if data is None:
        return ins, outs
    _check(p, len(data))
    win = _window(p, data[2:])
    # A global pool's output is 1 per spatial axis, known (as MXNet's) even where
    # the input's size is not.
    spatial = tuple(1 if p.global_pool else _out_size(p, win, s, i) if s else 0
                    for i, s in enumerate(data[2:]))
    merge_at(outs, 0, (*data[:2], *spatial), "output")
    merge_at(ins, 0, (*outs[0][:2], *data[2:]), "data")
    return ins, outs


def _lowest(dtype: np.dtype):
    return np.finfo(dtype).min if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _padded_windows(p: Params, x: np.ndarray, plan: _Plan) -> tuple[np.ndarray, np.ndarray]:
    """(padded input, its window view ``(N, C, *out, *kernel)``)."""
    fill = _lowest(x.dtype) if p.pool_type == "max" else 0
    xp = pad_spatial(x, plan.win.pad, plan.pad_after, fill)
    return xp, windows(xp, plan.win, plan.out)


def _divisor(p: Params, plan: _Plan) -> np.ndarray:
    """The element count of each average window, shaped like the output's spatial axes."""
    counts = np.ones((), dtype=np.int64)
    for i, size in enumerate(plan.spatial):
        k, s, pad = plan.win.kernel[i], plan.win.stride[i], plan.win.pad[i]
        start = np.arange(plan.out[i]) * s - pad
        if p.count_include_pad is None or p.count_include_pad:
            count = np.minimum(start + k, size + pad) - start
        else:
            count = np.minimum(start + k, size) - np.maximum(start, 0)
        counts = np.multiply.outer(counts, count)
    # A window lying wholly in the padding has a zero sum; count it as 1, not 0/0.
    return np.maximum(counts, 1)


_LP_ROOTS: dict[int, Callable[[np.ndarray], np.ndarray]] = {
    1: lambda t: t, 2: np.sqrt, 3: np.cbrt}


def _lp_root(total: np.ndarray, p_value: int) -> np.ndarray:
    return _LP_ROOTS[p_value](total)


def _reduce(p: Params, win: np.ndarray, ufunc: np.ufunc, nd: int) -> np.ndarray:
    """`ufunc` over the kernel axes of a window view.

    A global window is the contiguous input itself, reduced in one call; otherwise the
    taps are combined one at a time - a few passes over output-sized arrays, much faster
    than numpy's multi-axis reduction of a strided view.
    """
    if p.global_pool:
        return ufunc.reduce(win, axis=tuple(range(-nd, 0)))
    taps = np.ndindex(*win.shape[-nd:])
    out = np.array(win[(Ellipsis, *next(taps))])
    for tap in taps:
        ufunc(out, win[(Ellipsis, *tap)], out=out)
    return out


def _forward(p: Params, ctx: OpContext, inputs: list) -> np.ndarray:
    x = inputs[0]
    plan = _plan(p, x.shape)
    _, win = _padded_windows(p, x, plan)
    nd = plan.win.ndim
    if p.pool_type == "max":
        # MXNet's kernels (and oneDNN's) start from the lowest finite value and take
        # what is greater: NaN never wins, and -inf gives that lowest value.
        return np.fmax(_reduce(p, win, np.fmax, nd), _lowest(x.dtype))
    if p.pool_type == "lp":
        return _lp_root(_reduce(p, win ** p.p_value, np.add, nd), p.p_value).astype(x.dtype)
    total = _reduce(p, win, np.add, nd)
    if p.pool_type == "sum":
        return total
    return (total / _divisor(p, plan)).astype(x.dtype)


def _expand(a: np.ndarray, nd: int) -> np.ndarray:
    """An output-shaped array with `nd` trailing kernel axes of length 1."""
    return a.reshape(a.shape + (1,) * nd)


def _window_grads(p: Params, plan: _Plan, win: np.ndarray | None, y: np.ndarray,
                  dy: np.ndarray) -> np.ndarray:
    """The gradient reaching each window element, shaped ``(N, C, *out, *kernel)``
    (`win`, the windows' values, is None for sum and avg, which need none)."""
    nd = plan.win.ndim
    shape = dy.shape + plan.win.kernel
    if p.pool_type in ("sum", "avg"):
        scale = dy if p.pool_type == "sum" else dy / _divisor(p, plan)
        return np.broadcast_to(_expand(scale, nd), shape)
    assert win is not None
    if p.pool_type == "max":
        # As MXNet: all of a window's gradient goes to its first maximum (row-major),
        # if one is greater than the lowest finite value (not NaN, not -inf).
        lowest = _lowest(win.dtype)
        flat = np.fmax(win.reshape(*win.shape[:2 + nd], -1), lowest)
        at = flat.argmax(axis=-1)[..., None]
        won = np.take_along_axis(flat, at, axis=-1) > lowest
        first = (at == np.arange(flat.shape[-1])) & won
        return (first * dy[..., None]).reshape(shape)
    if p.p_value == 1:
        return np.broadcast_to(_expand(dy, nd), shape)
    # d(sum x^p)^(1/p) / dx = (x / y)^(p-1); MXNet gives 0 where y underflowed to 0.
    yk = _expand(y, nd)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(yk == 0, 0, win / yk) ** (p.p_value - 1)
    return _expand(dy, nd) * ratio


def _backward(p: Params, ctx: OpContext, inputs: list, outputs: list, out_grads: list) -> list:
    x = inputs[0]
    plan = _plan(p, x.shape)
    win = None if p.pool_type in ("sum", "avg") else _padded_windows(p, x, plan)[1]
    grads = _window_grads(p, plan, win, outputs[0], out_grads[0])
    padded = (*x.shape[:2], *(size + before + after for size, before, after
                              in zip(plan.spatial, plan.win.pad, plan.pad_after, strict=True)))
    if p.global_pool:  # one window holding the whole input
        dxp = grads.reshape(padded)
    else:
        dxp = col2im(kernel_first(grads, plan.win.ndim), padded, plan.win)
    return [crop_spatial(dxp, plan.win.pad, x.shape[2:]).astype(x.dtype)]


def _reads(p: Params) -> GradReads:
    """Max and Lp pooling read their windows (Lp its output too); sum and avg spread the
    gradient by shape alone."""
    return GradReads(inputs=() if p.pool_type in ("sum", "avg") else ("data",),
                     outputs=("output",) if p.pool_type == "lp" else ())


register(OpDef(
    name="Pooling",
    forward=_forward,
    backward=_backward,
    backward_reads=_reads,
    params=(
        Param("kernel", "shape", (), "Pooling kernel size: (w,), (h, w) or (d, h, w); "
              "ignored with global_pool."),
        Param("pool_type", "str", "max", "Pooling type to be applied.",
              choices=("max", "avg", "sum", "lp")),
        Param("global_pool", "bool", False, "Pool over the whole spatial extent, "
              "ignoring kernel, stride and pad."),
        Param("cudnn_off", "bool", False, "Ignored (cuDNN only)."),
        Param("pooling_convention", "str", "valid", "valid: floor((x+2p-k)/s)+1; full: "
              "ceil((x+2p-k)/s)+1; same (1-D only): ceil((x+2p)/s).",
              choices=("full", "valid", "same")),
        Param("stride", "shape", (), "Stride per spatial axis; defaults to 1."),
        Param("pad", "shape", (), "Padding per spatial axis; defaults to 0."),
        Param("p_value", "int", None, "p of Lp pooling: 1, 2 or 3."),
        Param("count_include_pad", "bool", None, "Whether avg pooling counts padded "
              "elements (default True)."),
        Param("layout", "str", None, "NCW, NCHW or NCDHW (channel-last layouts are not "
              "supported).", choices=("NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC")),
    ),
    infer_shape=_infer_shape,
    doc="""Perform pooling on the input (max, avg, sum or Lp), 1-D, 2-D or 3-D.""",
))
