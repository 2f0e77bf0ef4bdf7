"""Shape and axis operators in ONNX: reshaping (MXNet's special codes resolved from
the inferred shapes), transposes, slices, splits, tiling, broadcasting, moving depth
to space and back, sequences and constants."""
from __future__ import annotations

import numpy as np

from ..ops.split_v2 import piece_bounds
from .emitter import Emitter, OnnxNode, Site, Unsupported
from .ordering import axis_size
from .registry import translates

_INT64_MAX = 2**63 - 1


@translates("Concat", "_rnn_param_concat")  # the latter joins Gluon's RNN weights
def _concat(e: Emitter, s: Site) -> None:
    e.add("Concat", s.inputs, s.outputs[0], axis=s.p.dim)


@translates("Cast")
def _cast(e: Emitter, s: Site) -> None:
    e.add("Cast", s.inputs, s.outputs[0], to=s.p.dtype)


def _plain_reshape(shape: tuple[int, ...]) -> bool:
    """Whether a Reshape `shape` means the same to ONNX: only sizes, 0 (copy the
    dimension at that position) and one -1."""
    return all(d >= -1 for d in shape) and list(shape).count(-1) <= 1


@translates("Reshape")
def _reshape(e: Emitter, s: Site) -> None:
    spec = s.p.shape or s.p.target_shape
    if not s.dynamic:  # the shape inference resolved every special code
        target = list(s.out_shapes[0])
    elif not s.p.reverse and s.p.shape and _plain_reshape(spec):
        target = list(spec)
    else:
        raise Unsupported(f"shape={spec} with reverse={s.p.reverse} needs fixed input shapes "
                          "(dynamic=True)")
    e.add("Reshape", [s.inputs[0], e.ints(f"{s.name}_shape", target)], s.outputs[0])


@translates("Pad")
def _pad(e: Emitter, s: Site) -> None:
    width = list(s.p.pad_width)
    pads = width[0::2] + width[1::2]  # MXNet: (begin, end) per axis; ONNX: begins, then ends
    inputs = [s.inputs[0], e.ints(f"{s.name}_pads", pads)]
    if s.p.mode == "constant":
        inputs.append(e.const(f"{s.name}_value", s.p.constant_value, s.dtype))
    e.add("Pad", inputs, s.outputs[0], mode=s.p.mode)


@translates("transpose")
def _transpose(e: Emitter, s: Site) -> None:
    perm = list(s.p.axes) if s.p.axes else list(range(s.ndim))[::-1]
    e.add("Transpose", s.inputs, s.outputs[0], perm=[a % s.ndim for a in perm])


@translates("SwapAxis")
def _swap_axis(e: Emitter, s: Site) -> None:
    perm = list(range(s.ndim))
    a, b = s.p.dim1 % s.ndim, s.p.dim2 % s.ndim
    perm[a], perm[b] = perm[b], perm[a]
    e.add("Transpose", s.inputs, s.outputs[0], perm=perm)


@translates("expand_dims")
def _expand_dims(e: Emitter, s: Site) -> None:
    e.add("Unsqueeze", [s.inputs[0], e.ints(f"{s.name}_axes", [s.p.axis])], s.outputs[0])


@translates("slice_axis")
def _slice_axis(e: Emitter, s: Site) -> None:
    end = _INT64_MAX if s.p.end is None else s.p.end
    e.add("Slice", [s.inputs[0], e.ints(f"{s.name}_begin", [s.p.begin]),
                    e.ints(f"{s.name}_end", [end]), e.ints(f"{s.name}_axis", [s.p.axis])],
          s.outputs[0])


def _constant_output(e: Emitter, s: Site, value: np.ndarray) -> None:
    e.add("Identity", [e.const(f"{s.name}_value", value)], s.outputs[0])


@translates("_zeros", "_ones", "_full")
def _filled(e: Emitter, s: Site) -> None:
    fill = {"_zeros": 0, "_ones": 1}.get(str(s.node.op), getattr(s.p, "value", 0))
    _constant_output(e, s, np.full(s.out_shapes[0], fill, s.p.dtype))


@translates("_arange")
def _arange(e: Emitter, s: Site) -> None:
    if s.p.infer_range:
        raise Unsupported("infer_range=True")
    start, stop = (0, s.p.start) if s.p.stop is None else (s.p.start, s.p.stop)
    values = np.repeat(np.arange(start, stop, s.p.step), s.p.repeat)
    _constant_output(e, s, values.astype(s.p.dtype))


@translates("shape_array")
def _shape_array(e: Emitter, s: Site) -> None:
    e.add("Shape", s.inputs, s.outputs[0])


@translates("SliceChannel")
def _slice_channel(e: Emitter, s: Site) -> None:
    _split(e, s, s.p.axis, s.p.squeeze_axis, s.inputs)


@translates("_split_v2")
def _split_v2(e: Emitter, s: Site) -> None:
    s.needs_fixed_shapes()   # the pieces' lengths come from the export's shapes
    axis = s.p.axis % s.ndim
    sizes = [b - a for a, b in piece_bounds(s.p, s.in_shapes[0][axis])]
    _split(e, s, axis, s.p.squeeze_axis, [s.inputs[0], e.ints(f"{s.name}_split", sizes)])


def _split(e: Emitter, s: Site, axis: int, squeeze: bool, inputs: list[str]) -> None:
    """ONNX's Split of `inputs` (the data, and the pieces' lengths if not equal) into
    the node's outputs, each squeezed along `axis` with `squeeze`."""
    if not squeeze:
        e.nodes.append(OnnxNode("Split", inputs, s.outputs, {"axis": axis}, s.outputs[0]))
        return
    parts = [e.fresh(f"{o}_unsqueezed") for o in s.outputs]
    e.nodes.append(OnnxNode("Split", inputs, parts, {"axis": axis}, parts[0]))
    axes = e.ints(f"{s.name}_axes", [axis])
    for part, out in zip(parts, s.outputs, strict=True):
        e.add("Squeeze", [part, axes], out)


@translates("stack")
def _stack(e: Emitter, s: Site) -> None:
    axes = e.ints(f"{s.name}_axes", [s.p.axis])
    e.add("Concat", [e.add("Unsqueeze", [x, axes]) for x in s.inputs], s.outputs[0],
          axis=s.p.axis)


@translates("tile")
def _tile(e: Emitter, s: Site) -> None:
    x, reps = s.inputs[0], list(s.p.reps)
    if len(reps) > s.ndim:  # MXNet prepends dimensions to the data
        x = e.add("Unsqueeze", [x, e.ints(f"{s.name}_new_axes", list(range(len(reps) - s.ndim)))])
    reps = [1] * (s.ndim - len(reps)) + reps
    e.add("Tile", [x, e.ints(f"{s.name}_reps", reps)], s.outputs[0])


@translates("broadcast_axis", "broadcast_to")
def _broadcast(e: Emitter, s: Site) -> None:
    if s.node.op == "broadcast_to":  # 0 keeps the dimension, as 1 does to Expand
        target = [d or 1 for d in s.p.shape]
    else:
        target = [1] * s.ndim
        axes = (s.p.axis,) if isinstance(s.p.axis, int) else s.p.axis
        sizes = (s.p.size,) if isinstance(s.p.size, int) else s.p.size
        for axis, size in zip(axes, sizes, strict=True):
            target[axis % s.ndim] = size
    e.add("Expand", [s.inputs[0], e.ints(f"{s.name}_shape", target)], s.outputs[0])


@translates("slice_like")
def _slice_like(e: Emitter, s: Site) -> None:
    axes = sorted(a % s.ndim for a in s.p.axes) if s.p.axes else list(range(s.ndim))
    axes_name = e.ints(f"{s.name}_axes", axes)
    ends = e.add("Gather", [e.add("Shape", [s.inputs[1]]), axes_name], axis=0)
    e.add("Slice", [s.inputs[0], e.ints(f"{s.name}_starts", [0] * len(axes)), ends, axes_name],
          s.outputs[0])


@translates("reverse")
def _reverse(e: Emitter, s: Site) -> None:
    _reverse_axes(e, s, sorted({a % s.ndim for a in
                                ((s.p.axis,) if isinstance(s.p.axis, int) else s.p.axis)}))


def _reverse_axes(e: Emitter, s: Site, axes: list[int]) -> None:
    e.add("Slice", [s.inputs[0], e.ints(f"{s.name}_starts", [-1] * len(axes)),
                    e.ints(f"{s.name}_ends", [-_INT64_MAX] * len(axes)),
                    e.ints(f"{s.name}_axes", axes), e.ints(f"{s.name}_steps", [-1] * len(axes))],
          s.outputs[0])


@translates("squeeze")
def _squeeze(e: Emitter, s: Site) -> None:
    if s.p.axis is None:  # every axis of size 1 (MXNet keeps one if all are)
        s.needs_fixed_shapes()
        e.add("Reshape", [s.inputs[0], e.ints(f"{s.name}_shape", s.out_shapes[0])], s.outputs[0])
        return
    axes = [s.p.axis] if isinstance(s.p.axis, int) else list(s.p.axis)
    e.add("Squeeze", [s.inputs[0], e.ints(f"{s.name}_axes", axes)], s.outputs[0])


@translates("repeat")
def _repeat(e: Emitter, s: Site) -> None:
    """Each element `repeats` times along `axis`: a new axis after it, tiled, merged back."""
    s.needs_fixed_shapes()
    x, axis = s.inputs[0], s.p.axis
    if axis is None:  # MXNet flattens first
        x, axis, ndim = e.add("Reshape", [x, e.ints(f"{s.name}_flat", [-1])]), 0, 1
    else:
        axis, ndim = axis % s.ndim, s.ndim
    spread = e.add("Unsqueeze", [x, e.ints(f"{s.name}_new_axis", [axis + 1])])
    reps = [1] * (ndim + 1)
    reps[axis + 1] = s.p.repeats
    tiled = e.add("Tile", [spread, e.ints(f"{s.name}_reps", reps)])
    e.add("Reshape", [tiled, e.ints(f"{s.name}_shape", s.out_shapes[0])], s.outputs[0])


@translates("slice")
def _slice(e: Emitter, s: Site) -> None:
    steps = [1 if st is None else st for st in (s.p.step or (None,) * len(s.p.begin))]
    starts = [(0 if st > 0 else _INT64_MAX) if b is None else b
              for b, st in zip(s.p.begin, steps, strict=True)]
    ends = [(_INT64_MAX if st > 0 else -_INT64_MAX) if x is None else x
            for x, st in zip(s.p.end, steps, strict=True)]
    axes = list(range(len(starts)))
    e.add("Slice", [s.inputs[0], e.ints(f"{s.name}_starts", starts),
                    e.ints(f"{s.name}_ends", ends), e.ints(f"{s.name}_axes", axes),
                    e.ints(f"{s.name}_steps", steps)], s.outputs[0])


@translates("_contrib_arange_like")
def _arange_like(e: Emitter, s: Site) -> None:
    s.needs_fixed_shapes()
    shape = s.out_shapes[0]
    index = np.arange(int(np.prod(shape))) // s.p.repeat
    values = (s.p.start + s.p.step * index).astype(s.dtype).reshape(shape)
    e.add("Identity", [e.const(f"{s.name}_value", values)], s.outputs[0])


@translates("SequenceMask")
def _sequence_mask(e: Emitter, s: Site) -> None:
    if not s.p.use_sequence_length:
        e.add("Identity", s.inputs[:1], s.outputs[0])
        return
    s.needs_fixed_shapes()
    time_axis = s.p.axis % s.ndim
    steps, batch = s.in_shapes[0][time_axis], s.in_shapes[0][1 - time_axis]
    # positions along the time axis against each sequence's length, in the data's rank
    shape_t = [1] * s.ndim
    shape_t[time_axis] = steps
    shape_b = [1] * s.ndim
    shape_b[1 - time_axis] = batch
    positions = e.const(f"{s.name}_positions", np.arange(steps).reshape(shape_t), s.dtype)
    lengths = e.add("Reshape", [e.add("Cast", [s.inputs[1]], to=s.dtype),
                                e.ints(f"{s.name}_lengths_shape", shape_b)])
    keep = e.add("Less", [positions, lengths])
    fill = e.const(f"{s.name}_value", s.p.value, s.dtype)
    e.add("Where", [keep, s.inputs[0], fill], s.outputs[0])


@translates("SequenceReverse")
def _sequence_reverse(e: Emitter, s: Site) -> None:
    """ReverseSequence over (T, B, ...). The lengths are truncated to integers and
    brought into [0, T], as MXNet reads them (ONNX fails outside that range; a length
    of 0, like 1, leaves the sequence as it is)."""
    if not s.p.use_sequence_length:
        _reverse_axes(e, s, [0])
        return
    steps = axis_size(e, s.inputs[0], 0)
    lengths = e.add("Cast", [s.inputs[1]], to=np.dtype(np.int64))
    lengths = e.add("Max", [e.add("Min", [lengths, steps]), e.ints(f"{s.name}_zero", [0])])
    e.add("ReverseSequence", [s.inputs[0], lengths], s.outputs[0], batch_axis=1, time_axis=0)


@translates("depth_to_space")
def _depth_to_space(e: Emitter, s: Site) -> None:
    # MXNet splits the channels as (block, block, channels): ONNX's DCR order
    e.add("DepthToSpace", s.inputs, s.outputs[0], blocksize=s.p.block_size, mode="DCR")


@translates("space_to_depth")
def _space_to_depth(e: Emitter, s: Site) -> None:
    # MXNet's output channels are (block row, block column, channel), as ONNX's
    e.add("SpaceToDepth", s.inputs, s.outputs[0], blocksize=s.p.block_size)


@translates("broadcast_like")
def _broadcast_like(e: Emitter, s: Site) -> None:
    """Expand to the other input's shape, or to its `rhs_axes` sizes put at `lhs_axes`
    (1 elsewhere, which Expand reads as keep the dimension)."""
    like = e.add("Shape", [s.inputs[1]])
    if s.p.lhs_axes is None or s.p.rhs_axes is None:
        e.add("Expand", [s.inputs[0], like], s.outputs[0])
        return
    rhs_ndim = len(s.in_shapes[1])
    sizes = e.add("Gather", [like, e.ints(f"{s.name}_rhs_axes",
                                          [a % rhs_ndim for a in s.p.rhs_axes])], axis=0)
    target = e.add("ScatterElements", [e.ints(f"{s.name}_ones", [1] * s.ndim),
                                       e.ints(f"{s.name}_lhs_axes",
                                              [a % s.ndim for a in s.p.lhs_axes]), sizes])
    e.add("Expand", [s.inputs[0], target], s.outputs[0])


@translates("reshape_like")
def _reshape_like(e: Emitter, s: Site) -> None:
    """lhs's dimensions before `lhs_begin` and from `lhs_end`, rhs's from `rhs_begin` to
    `rhs_end` between them: Shape's start and end read None and negatives as MXNet."""
    parts = []
    if s.p.lhs_begin is not None:
        parts.append(e.add("Shape", [s.inputs[0]], end=s.p.lhs_begin))
    end = _INT64_MAX if s.p.rhs_end is None else s.p.rhs_end  # Shape clamps it to the rank
    parts.append(e.add("Shape", [s.inputs[1]], start=s.p.rhs_begin or 0, end=end))
    if s.p.lhs_end is not None:
        parts.append(e.add("Shape", [s.inputs[0]], start=s.p.lhs_end))
    shape = parts[0] if len(parts) == 1 else e.add("Concat", parts, axis=0)
    e.add("Reshape", [s.inputs[0], shape], s.outputs[0])


@translates("size_array")
def _size_array(e: Emitter, s: Site) -> None:
    e.add("Reshape", [e.add("Size", s.inputs), e.ints(f"{s.name}_shape", [1])], s.outputs[0])


@translates("Crop")
def _crop(e: Emitter, s: Site) -> None:
    """A Slice of height and width. The window's size follows the second input or h_w,
    its place `offset` or the centre: computed from the export's shapes when they vary."""
    if s.p.center_crop or len(s.inputs) == 2:
        s.needs_fixed_shapes()
    (height, width), (h, w) = s.in_shapes[0][2:], s.out_shapes[0][2:]
    top, left = ((height - h) // 2, (width - w) // 2) if s.p.center_crop else s.p.offset
    e.add("Slice", [s.inputs[0], e.ints(f"{s.name}_starts", [top, left]),
                    e.ints(f"{s.name}_ends", [top + h, left + w]),
                    e.ints(f"{s.name}_axes", [2, 3])], s.outputs[0])
