"""Fused recurrent layers: RNN (modes lstm, gru, rnn_tanh, rnn_relu; stacked,
bidirectional, LSTM projection) and _rnn_param_concat, as MXNet 1.9's
src/operator/rnn-inl.h, rnn_impl.h and nn/concat.cc.

Data is (T, N, input). All weights come in one packed vector, in MXNet's
(cuDNN's) order: first every weight matrix, layer by layer and direction by
direction - i2h (G*H, in), h2h (G*H, P or H) and, with a projection, (P, H) -
then every bias pair, i2h (G*H) and h2h (G*H), in the same order. Gates are
stacked in the order i, f, g, o (LSTM) and r, z, n (GRU). States are
(layers * directions, N, H), index layer * directions + direction.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..base import OperatorError, ShapeError
from .elemwise import sigmoid
from .infer import merge_at, merge_dtype
from .registry import OpDef, Param, Params, get_op, register

Array = np.ndarray
MODES = ("rnn_relu", "rnn_tanh", "lstm", "gru")
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


@dataclass(frozen=True)
class CellWeights:
    """One layer and direction's share of the packed vector (views into it)."""

    wx: Array  # (G*H, input)
    wh: Array  # (G*H, P or H)
    wr: Array | None  # (P, H): the LSTM projection
    bx: Array  # (G*H,)
    bh: Array  # (G*H,)


def _directions(p: Params) -> int:
    return 2 if p.bidirectional else 1


def _out_size(p: Params) -> int:
    """The size of h: the projection if there is one, else the state."""
    return p.projection_size or p.state_size


def param_size(p: Params, input_size: int) -> int:
    """MXNet's GetRnnParamSize."""
    gates_hidden = GATES[p.mode] * p.state_size * _directions(p)
    out, dirs = _out_size(p), _directions(p)
    first = (input_size + out + 2) * gates_hidden
    other = (out * dirs + out + 2) * gates_hidden
    projections = (p.projection_size or 0) * p.state_size * p.num_layers * dirs
    return first + (p.num_layers - 1) * other + projections


def unpack(p: Params, input_size: int, flat: Array) -> list[CellWeights]:
    """The packed vector as views, one CellWeights per layer * directions + direction."""
    rows, out, dirs = GATES[p.mode] * p.state_size, _out_size(p), _directions(p)
    pos = 0

    def take(*shape: int) -> Array:
        nonlocal pos
        size = int(np.prod(shape))
        pos += size
        return flat[pos - size:pos].reshape(shape)

    matrices = [(take(rows, input_size if layer == 0 else out * dirs), take(rows, out),
                 take(p.projection_size, p.state_size) if p.projection_size else None)
                for layer in range(p.num_layers) for _ in range(dirs)]
    return [CellWeights(wx, wh, wr, take(rows), take(rows)) for wx, wh, wr in matrices]


# -- inference ---------------------------------------------------------------------------------

def _inputs(p: Params) -> list[str]:
    names = ["data", "parameters", "state"]
    if p.mode == "lstm":
        names.append("state_cell")
    if p.use_sequence_length:
        names.append("sequence_length")
    return names


def _outputs(p: Params) -> list[str]:
    if not p.state_outputs:
        return ["output"]
    return ["output", "state_output"] + (["statecell_output"] if p.mode == "lstm" else [])


def _check_params(p: Params) -> None:
    if p.num_layers < 1 or p.state_size < 1:
        raise OperatorError(f"RNN: num_layers={p.num_layers} and state_size={p.state_size} "
                            "must be positive")
    if p.projection_size is not None and (p.mode != "lstm" or p.projection_size < 1):
        raise OperatorError(f"RNN: projection_size={p.projection_size} needs mode lstm and a "
                            "positive size")


def _rnn_shape(p, in_shapes, out_shapes):
    dshape = in_shapes[0]
    if dshape is None:
        return in_shapes, out_shapes
    _check_params(p)
    if len(dshape) != 3:
        raise ShapeError(f"RNN: data should be (sequence length, batch size, input size), "
                         f"got {dshape}")
    steps, batch, width = dshape
    dirs, layers = _directions(p), p.num_layers * _directions(p)
    ins = list(in_shapes)
    merge_at(ins, 2, (layers, batch, _out_size(p)), "RNN: state")
    if p.mode == "lstm":
        merge_at(ins, 3, (layers, batch, p.state_size), "RNN: state_cell")
    if width:
        merge_at(ins, 1, (param_size(p, width),), "RNN: parameters")
    if p.use_sequence_length:
        merge_at(ins, len(ins) - 1, (batch,), "RNN: sequence_length")
    outs = list(out_shapes)
    merge_at(outs, 0, (steps, batch, dirs * _out_size(p)), "RNN: output")
    if p.state_outputs:
        merge_at(outs, 1, (layers, batch, _out_size(p)), "RNN: state_output")
        if p.mode == "lstm":
            merge_at(outs, 2, (layers, batch, p.state_size), "RNN: statecell_output")
    return ins, outs


def _rnn_type(p, in_types, out_types):
    """One dtype for everything but sequence_length (any dtype)."""
    shared = len(in_types) - 1 if p.use_sequence_length else len(in_types)
    dtype = None
    for t in [*in_types[:shared], *out_types]:
        dtype = merge_dtype(dtype, t)
    return [dtype] * shared + list(in_types[shared:]), [dtype] * len(out_types)


# -- the cells: one time step, and its gradient -------------------------------------------------
# step(gx, gh, h, c, w) -> (h', c', cache): gx and gh are the i2h and h2h products with
# their biases. grad(cache, dh', dc', h) -> (d gx, d gh, the part of dh that skips wh,
# dc): gx and gh enter LSTM and vanilla cells as a sum, GRU's n gate apart.

def _lstm_step(gx, gh, h, c, w):
    i, f, g, o = np.split(gx + gh, 4, axis=-1)
    i, f, g, o = sigmoid(i), sigmoid(f), np.tanh(g), sigmoid(o)
    c_new = f * c + i * g
    tc = np.tanh(c_new)
    h_raw = o * tc
    h_new = h_raw if w.wr is None else h_raw @ w.wr.T
    return h_new, c_new, (i, f, g, o, c, tc)


def _lstm_grad(cache, dh, dc, h):
    i, f, g, o, c_prev, tc = cache
    dc = dc + dh * o * (1 - tc * tc)
    dz = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                         dc * i * (1 - g * g), dh * tc * o * (1 - o)], -1)
    return dz, dz, 0, dc * f


def _gru_step(gx, gh, h, c, w):
    xr, xz, xn = np.split(gx, 3, axis=-1)
    hr, hz, hn = np.split(gh, 3, axis=-1)
    r, z = sigmoid(xr + hr), sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h, c, (r, z, n, hn)


def _gru_grad(cache, dh, dc, h):
    r, z, n, hn = cache
    dn = dh * (1 - z) * (1 - n * n)
    dr, dz = dn * hn * r * (1 - r), dh * (h - n) * z * (1 - z)
    return (np.concatenate([dr, dz, dn], -1), np.concatenate([dr, dz, dn * r], -1),
            dh * z, dc)


def _vanilla_step(act: Callable[[Array], Array]):
    def step(gx, gh, h, c, w):
        h_new = act(gx + gh)
        return h_new, c, (h_new,)
    return step


def _vanilla_grad(slope: Callable[[Array], Array]):
    def grad(cache, dh, dc, h):
        dz = dh * slope(cache[0])
        return dz, dz, 0, dc
    return grad


STEPS = {"lstm": _lstm_step, "gru": _gru_step,
         "rnn_tanh": _vanilla_step(np.tanh),
         "rnn_relu": _vanilla_step(lambda z: np.maximum(z, 0))}
STEP_GRADS = {"lstm": _lstm_grad, "gru": _gru_grad,
              "rnn_tanh": _vanilla_grad(lambda h: 1 - h * h),
              "rnn_relu": _vanilla_grad(lambda h: (h > 0).astype(h.dtype))}


# -- forward: directions, layers --------------------------------------------------------------

@dataclass
class _Trace:
    """What one direction's forward keeps for its gradient."""

    x: Array
    hs: list  # h before each step, in processing order
    caches: list


def _run_direction(p: Params, w: CellWeights, x: Array, h: Array, c: Array | None,
                   reverse: bool, trace: bool) -> tuple[Array, Array, Array | None, _Trace]:
    steps = range(len(x) - 1, -1, -1) if reverse else range(len(x))
    gx = x @ w.wx.T + w.bx
    ys = np.empty((len(x), *h.shape), x.dtype)
    record = _Trace(x, [], [])
    step = STEPS[p.mode]
    for t in steps:
        gh = h @ w.wh.T + w.bh
        h_new, c, cache = step(gx[t], gh, h, c, w)
        if trace:
            record.hs.append(h)
            record.caches.append(cache)
        h = ys[t] = h_new
    return ys, h, c, record


@dataclass
class _Run:
    output: Array
    hy: Array
    cy: Array | None
    traces: list
    masks: list


def _forward(p: Params, ctx, inputs: list, trace: bool = False) -> _Run:
    _check_params(p)
    if p.use_sequence_length:
        raise OperatorError("RNN: use_sequence_length is not supported on CPU (MXNet 1.9.1's "
                            "CPU kernel ignores the lengths and runs every step; only its "
                            "cuDNN kernel takes them)")
    if p.lstm_state_clip_min is not None or p.lstm_state_clip_max is not None:
        raise OperatorError("RNN: LSTM state clipping is not supported on CPU (MXNet 1.9.1's "
                            "CPU kernel ignores it; only its GPU kernel clips)")
    x, flat, hx = inputs[:3]
    cx = inputs[3] if p.mode == "lstm" else None
    if x.ndim != 3:
        raise ShapeError(f"RNN: data should be (sequence length, batch size, input size), "
                         f"got {x.shape}")
    if flat.shape != (param_size(p, x.shape[2]),):
        raise ShapeError(f"RNN: parameters {flat.shape} do not match input size "
                         f"{x.shape[2]}: expected ({param_size(p, x.shape[2])},)")
    weights, dirs = unpack(p, x.shape[2], flat), _directions(p)
    hy, cy = np.empty_like(hx), None if cx is None else np.empty_like(cx)
    traces, masks = [], []
    for layer in range(p.num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            ys, hy[k], c_last, record = _run_direction(
                p, weights[k], x, hx[k], None if cx is None else cx[k], d == 1, trace)
            if cy is not None:
                cy[k] = c_last
            outs.append(ys)
            traces.append(record)
        x = np.concatenate(outs, -1) if dirs == 2 else outs[0]
        if ctx.is_train and p.p > 0 and layer < p.num_layers - 1:
            mask = (ctx.rng.random(x.shape) >= p.p).astype(x.dtype) / x.dtype.type(1 - p.p)
            masks.append(mask)
            x = x * mask
    return _Run(x, hy, cy, traces, masks)


def _rnn_forward(p, ctx, inputs):
    run = _forward(p, ctx, inputs)
    outputs = [run.output]
    if p.state_outputs:
        outputs.append(run.hy)
        if run.cy is not None:
            outputs.append(run.cy)
    return outputs


# -- backward: through time, then down the layers ----------------------------------------------

def _direction_grad(p: Params, w: CellWeights, dw: CellWeights, record: _Trace, dys: Array,
                    dh: Array, dc, reverse: bool) -> tuple[Array, Array, Array]:
    """Backpropagation through one direction's steps; weight gradients go into `dw`."""
    grad_step = STEP_GRADS[p.mode]
    steps = list(range(len(dys) - 1, -1, -1) if reverse else range(len(dys)))
    dgx = np.zeros((len(dys), dys.shape[1], w.wx.shape[0]), dys.dtype)
    for n in range(len(steps) - 1, -1, -1):
        t, h = steps[n], record.hs[n]
        d_gx, d_gh, dh_direct, dc = grad_step(record.caches[n], dh + dys[t], dc, h)
        dgx[t] = d_gx
        dw.wh[...] += d_gh.T @ h
        dw.bh[...] += d_gh.sum(0)
        dh = dh_direct + d_gh @ w.wh
    flat_dgx = dgx.reshape(-1, dgx.shape[-1])
    dw.wx[...] += flat_dgx.T @ record.x.reshape(-1, record.x.shape[-1])
    dw.bx[...] += flat_dgx.sum(0)
    return (flat_dgx @ w.wx).reshape(record.x.shape), dh, dc


def _rnn_backward(p, ctx, inputs, outputs, out_grads):
    if p.projection_size:
        raise OperatorError("RNN: no training support for LSTM with projection (as MXNet 1.9 "
                            "on CPU)")
    if ctx.is_train and p.p > 0 and p.num_layers > 1:
        raise OperatorError("RNN: gradients through dropout between layers (p > 0) are not "
                            "supported")
    run = _forward(p, ctx, inputs, trace=True)
    x, flat, hx = inputs[:3]
    has_cell = p.mode == "lstm"
    d_flat = np.zeros_like(flat)
    weights, d_weights = unpack(p, x.shape[2], flat), unpack(p, x.shape[2], d_flat)
    dirs, size = _directions(p), _out_size(p)
    d_hy = out_grads[1] if p.state_outputs else np.zeros_like(hx)
    d_cy = None
    if has_cell:
        d_cy = out_grads[2] if p.state_outputs else np.zeros_like(inputs[3])
    dhx = np.zeros_like(hx)
    dcx = np.zeros_like(inputs[3]) if has_cell else None
    dy = out_grads[0]
    for layer in range(p.num_layers - 1, -1, -1):
        dx = None
        for d in range(dirs):
            k = layer * dirs + d
            dc = None if d_cy is None else d_cy[k]
            part, dhx[k], dc = _direction_grad(p, weights[k], d_weights[k], run.traces[k],
                                               dy[..., d * size:(d + 1) * size], d_hy[k], dc,
                                               d == 1)
            if dcx is not None:
                dcx[k] = dc
            dx = part if dx is None else dx + part
        dy = dx
    grads = [dy, d_flat, dhx] + ([dcx] if has_cell else [])
    return grads + [None] * (len(inputs) - len(grads))


register(OpDef(
    name="RNN", inputs=_inputs, outputs=_outputs, draws=True,   # inter-layer dropout
    doc="A stack of recurrent layers (LSTM, GRU, tanh or relu RNN) over (T, N, input) "
        "data, with all weights in one packed parameter vector.",
    params=(
        Param("state_size", "int", doc="size of the state for each layer"),
        Param("num_layers", "int", doc="number of stacked layers"),
        Param("bidirectional", "bool", False, "whether to use bidirectional recurrent layers"),
        Param("mode", "str", doc="the type of RNN to compute", choices=MODES),
        Param("p", "float", 0.0, "drop rate of the dropout on the outputs of each RNN layer, "
              "except the last layer."),
        Param("state_outputs", "bool", False, "Whether to have the states as symbol outputs."),
        Param("projection_size", "int", None, "size of project size"),
        Param("lstm_state_clip_min", "float", None, "Minimum clip value of LSTM states."),
        Param("lstm_state_clip_max", "float", None, "Maximum clip value of LSTM states."),
        Param("lstm_state_clip_nan", "bool", False, "Whether to stop NaN from propagating in "
              "state by clipping it to min/max."),
        Param("use_sequence_length", "bool", False, "If set to true, this layer takes in an "
              "extra input parameter `sequence_length` to specify variable length sequence"),
    ),
    forward=_rnn_forward, backward=_rnn_backward,
    infer_shape=_rnn_shape, infer_type=_rnn_type,
))


# -- _rnn_param_concat --------------------------------------------------------------------------

def _param_concat_shape(p, in_shapes, out_shapes):
    """Concat's rule, except that up to two inputs of unknown size along the axis share the
    rest of a known output size equally (the first-layer i2h weights of both directions)."""
    shapes = [s for s in (*in_shapes, out_shapes[0]) if s is not None]
    if not shapes:
        return in_shapes, out_shapes
    ndim = len(shapes[0])
    axis = p.dim % ndim if -ndim <= p.dim < ndim else None
    if axis is None or any(len(s) != ndim for s in shapes):
        raise ShapeError(f"_rnn_param_concat: shapes {list(in_shapes)} -> {out_shapes[0]} "
                         f"cannot be joined along dim {p.dim}")
    unknown = [i for i, s in enumerate(in_shapes) if s is None or not s[axis]]
    out = out_shapes[0]
    ins = list(in_shapes)
    if 0 < len(unknown) <= 2 and out is not None and out[axis] and all(
            s is not None for s in in_shapes):
        rest = out[axis] - sum(s[axis] for s in in_shapes)
        if rest < 0:
            raise ShapeError(f"_rnn_param_concat: inputs {in_shapes} already exceed the "
                             f"output {out}")
        for i in unknown:
            ins[i] = in_shapes[i][:axis] + (rest // len(unknown),) + in_shapes[i][axis + 1:]
    return _CONCAT.infer_shape(p, ins, out_shapes)


_CONCAT = get_op("Concat")

register(OpDef(
    name="_rnn_param_concat", aliases=("_npi_rnn_param_concat",),
    doc="Concat of RNN parameters (Gluon's packing): an unknown first-layer weight size "
        "follows from the output's.",
    params=_CONCAT.params, variadic="num_args",
    forward=_CONCAT.forward, backward=_CONCAT.backward, backward_reads=_CONCAT.backward_reads,
    infer_shape=_param_concat_shape,
))
