"""Bounding-box operators of detection models: _contrib_box_nms, _contrib_box_iou,
_contrib_box_encode, _contrib_box_decode and _contrib_bipartite_matching, as MXNet
1.9's src/operator/contrib/bounding_box-inl.h computes them.

MXNet gives box_iou, box_encode, box_decode and bipartite_matching zero gradients
(MakeZeroGradNodes and kin). A box is four numbers, "corner" [xmin, ymin, xmax, ymax] or "center"
[x, y, width, height]. Arithmetic stays in the input's dtype, as MXNet's
kernels do, so suppression decisions at the threshold agree with MXNet's.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..base import OperatorError, ShapeError
from .infer import Dims, from_input, known, merge, merge_all, merge_at
from .registry import GradReads, OpDef, Param, Params, register, zero_gradients

FORMATS = ("corner", "center")
Array = np.ndarray


def _extent(boxes: Array, axis: int, fmt: str) -> tuple[Array, Array]:
    """The low and high edge of `boxes` along x (axis 0) or y (axis 1)."""
    if fmt == "corner":
        return boxes[..., axis], boxes[..., axis + 2]
    half = boxes[..., axis + 2] / boxes.dtype.type(2)
    return boxes[..., axis] - half, boxes[..., axis] + half


def box_area(boxes: Array, fmt: str) -> Array:
    """Areas; a box with a negative side has area 0 (MXNet's BoxArea)."""
    if fmt == "corner":
        width, height = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    else:
        width, height = boxes[..., 2], boxes[..., 3]
    return np.where((width < 0) | (height < 0), boxes.dtype.type(0), width * height)


def intersection(lhs: Array, rhs: Array, fmt: str) -> Array:
    """Overlap areas of boxes that broadcast against each other."""
    area = None
    for axis in (0, 1):
        (l_lo, l_hi), (r_lo, r_hi) = _extent(lhs, axis, fmt), _extent(rhs, axis, fmt)
        side = np.maximum(np.minimum(l_hi, r_hi) - np.maximum(l_lo, r_lo), 0)
        area = side if area is None else area * side
    assert area is not None
    return area


def _convert(boxes: Array, out_format: str) -> Array:
    """Boxes re-encoded in place of MXNet's corner_to_center / center_to_corner; rows whose
    first coordinate is negative (the -1 fill, but also real boxes) are left as they are."""
    a, b, c, d = (boxes[..., i] for i in range(4))
    two = boxes.dtype.type(2)
    if out_format == "center":
        new = np.stack([(a + c) / two, (b + d) / two, c - a, d - b], -1)
    else:
        new = np.stack([a - c / two, b - d / two, a + c / two, b + d / two], -1)
    return np.where((a < 0)[..., None], boxes, new)


# -- box_nms ---------------------------------------------------------------------------------

def _check_nms_layout(p: Params, dshape: Dims) -> None:
    """MXNet's BoxNMSShape checks of the row layout against the row width."""
    if len(dshape) < 2:
        raise ShapeError(f"box_nms: input must have ndim >= 2 (..., num_box, box_width), "
                         f"got {dshape}")
    width = dshape[-1]
    if not width:
        return
    need = 6 if p.id_index >= 0 else 5
    coords = range(p.coord_start, p.coord_start + 4)
    problems = []
    if width < need:
        problems.append(f"rows of {width} elements, at least {need} expected")
    if not 0 <= p.score_index < width or p.score_index in coords:
        problems.append(f"score_index {p.score_index} is outside the row or among the "
                        f"coordinates {tuple(coords)}")
    if p.coord_start < 0 or coords[-1] >= width:
        problems.append(f"coordinates {tuple(coords)} are outside a row of {width}")
    if p.id_index >= 0 and (p.id_index >= width or p.id_index in coords
                            or p.id_index == p.score_index):
        problems.append(f"id_index {p.id_index} is outside the row or conflicts with the "
                        f"score or coordinates")
    if problems:
        raise ShapeError(f"box_nms: input {dshape}: " + "; ".join(problems))


def _nms_shape(p, in_shapes, out_shapes):
    dshape = merge(in_shapes[0], out_shapes[0])
    if dshape is None:
        return in_shapes, out_shapes
    _check_nms_layout(p, dshape)
    return [dshape], [dshape, merge(out_shapes[1], dshape[:-1] + (1,))]


def _candidates(p: Params, rows: Array) -> Array:
    """Row indices of the boxes NMS considers: valid ones by descending score (a stable
    sort, as MXNet's), at most topk."""
    scores = rows[:, p.score_index]
    valid = scores > rows.dtype.type(p.valid_thresh)
    if p.id_index >= 0:
        valid &= rows[:, p.id_index] != rows.dtype.type(p.background_id)
    index = np.flatnonzero(valid)
    if 0 <= p.topk < len(index):
        index = _top(index, scores[index], p.topk)
    order = index[np.argsort(-scores[index], kind="stable")]
    return order if p.topk < 0 else order[:p.topk]


def _top(index: Array, scores: Array, k: int) -> Array:
    """The `k` entries of `index` a stable descending sort would put first, in index
    order, without sorting them all (SSD's 500k rows for a topk of 400): every score
    above the k-th largest, then the first of those equal to it."""
    kth = -np.partition(-scores, k - 1)[k - 1]
    above = scores > kth
    tied = np.flatnonzero(scores == kth)[:k - int(above.sum())]
    return np.sort(np.concatenate([index[above], index[tied]]))


def greedy_nms(count: int, hits: Callable[[int], Array]) -> Array:
    """The greedy pass of every NMS here (box_nms, MultiBoxDetection, Proposal): of
    `count` boxes sorted best first, each one still alive removes the later boxes
    ``hits(i)`` marks (a mask over rows i+1:). Returns the mask of the survivors."""
    alive = np.ones(count, bool)
    for i in range(count):
        if alive[i]:
            alive[i + 1:] &= ~hits(i)
    return alive


def _suppress(p: Params, rows: Array) -> Array:
    """box_nms's pass: a kept box removes later boxes (of its class unless
    force_suppress) whose IoU with it exceeds overlap_thresh."""
    boxes = rows[:, p.coord_start:p.coord_start + 4]
    areas = box_area(boxes, p.in_format)
    classes = rows[:, p.id_index].astype(np.int64) if p.id_index >= 0 else None

    def hits(i: int) -> Array:
        inter = intersection(boxes[i], boxes[i + 1:], p.in_format)
        with np.errstate(invalid="ignore", divide="ignore"):  # 0/0: no overlap, kept
            hit = inter / (areas[i] + areas[i + 1:] - inter) > p.overlap_thresh
        if classes is not None and not p.force_suppress:
            hit &= classes[i + 1:] == classes[i]
        return hit
    return greedy_nms(len(rows), hits)


def _nms_forward(p, ctx, inputs):
    data = inputs[0]
    _check_nms_layout(p, data.shape)
    n, width = data.shape[-2:]
    batches = data.reshape(-1, n, width)
    out = np.full(batches.shape, -1, data.dtype)
    record = np.full(batches.shape[:2], -1, data.dtype)
    if p.topk == 0:  # MXNet copies the input unchanged and records every row
        return data.copy(), np.arange(data.size // width, dtype=data.dtype).reshape(
            data.shape[:-1] + (1,))
    for b, rows in enumerate(batches):
        order = _candidates(p, rows)
        kept = order[_suppress(p, rows[order])]
        out[b, :len(kept)] = rows[kept]
        record[b, :len(kept)] = kept + b * n
    if p.in_format != p.out_format:
        coords = slice(p.coord_start, p.coord_start + 4)
        out[..., coords] = _convert(out[..., coords], p.out_format)
    return out.reshape(data.shape), record.reshape(data.shape[:-1] + (1,))


def _nms_backward(p, ctx, inputs, outputs, out_grads):
    """Each kept row's gradient goes back to the input row it came from."""
    shape = inputs[0].shape
    rows = out_grads[0].reshape(-1, shape[-1])
    record = outputs[1].reshape(-1).astype(np.int64)
    grad = np.zeros((math.prod(shape[:-1]), shape[-1]), out_grads[0].dtype)
    kept = record >= 0
    grad[record[kept]] = rows[kept]
    return [grad.reshape(shape)]


register(OpDef(
    name="_contrib_box_nms", aliases=("_contrib_box_non_maximum_suppression",),
    doc="Non-maximum suppression of detection rows (..., num_box, box_width): kept rows "
        "come first by descending score, the rest are filled with -1.",
    params=(
        Param("overlap_thresh", "float", 0.5,
              "Overlapping(IoU) threshold to suppress object with smaller score."),
        Param("valid_thresh", "float", 0.0,
              "Filter input boxes to those whose scores greater than valid_thresh."),
        Param("topk", "int", -1,
              "Apply nms to topk boxes with descending scores, -1 to no restriction."),
        Param("coord_start", "int", 2, "Start index of the consecutive 4 coordinates."),
        Param("score_index", "int", 1, "Index of the scores/confidence of boxes."),
        Param("id_index", "int", -1, "Optional, index of the class categories, -1 to disable."),
        Param("background_id", "int", -1,
              "Optional, id of the background class which will be ignored in nms."),
        Param("force_suppress", "bool", False, "Optional, if set false and id_index is "
              "provided, nms will only apply to boxes belongs to the same category"),
        Param("in_format", "str", "corner", "The input box encoding type.", choices=FORMATS),
        Param("out_format", "str", "corner", "The output box encoding type.",
              choices=FORMATS),
    ),
    # MXNet lists no output names for it: its outputs are named by number (nms0_output0).
    outputs=("output0", "output1"), visible_outputs=lambda p: 1,
    forward=_nms_forward, backward=_nms_backward, backward_reads=GradReads((), ("output1",)),
    infer_shape=_nms_shape,
))


# -- box_iou ---------------------------------------------------------------------------------

def _check_boxes(what: str, shape: Dims, min_ndim: int = 2) -> None:
    if len(shape) < min_ndim or shape[-1] not in (0, 4):
        raise ShapeError(f"{what} must have ndim >= {min_ndim} and a last dimension of 4, "
                         f"got {shape}")


def _iou_shape(p, in_shapes, out_shapes):
    lhs, rhs = in_shapes
    for name, shape in (("box_iou: lhs", lhs), ("box_iou: rhs", rhs)):
        if shape is not None:
            _check_boxes(name, shape)
    if lhs is None or rhs is None:
        return in_shapes, out_shapes
    return in_shapes, [merge(out_shapes[0], lhs[:-1] + rhs[:-1])]


def _iou_forward(p, ctx, inputs):
    lhs, rhs = inputs
    _check_boxes("box_iou: lhs", lhs.shape)
    _check_boxes("box_iou: rhs", rhs.shape)
    left, right = lhs.reshape(-1, 1, 4), rhs.reshape(1, -1, 4)
    inter = intersection(left, right, p.format)
    union = box_area(left, p.format) + box_area(right, p.format) - inter
    positive = inter > 0
    iou = np.divide(inter, union, out=np.zeros_like(inter), where=positive)
    return iou.reshape(lhs.shape[:-1] + rhs.shape[:-1])


register(OpDef(
    name="_contrib_box_iou", inputs=("lhs", "rhs"),
    doc="Pairwise intersection-over-union of two sets of boxes: (..., 4) x (..., 4) -> "
        "lhs.shape[:-1] + rhs.shape[:-1].",
    params=(Param("format", "str", "corner", "The box encoding type.", choices=FORMATS),),
    forward=_iou_forward, backward=zero_gradients, backward_reads=GradReads(),
    infer_shape=_iou_shape,
))


# -- box_encode and box_decode ----------------------------------------------------------------

def _encode_shape(p, in_shapes, out_shapes):
    samples, matches, anchors, refs, _, _ = in_shapes
    for what, shape, ndim in (("samples", samples, 2), ("matches", matches, 2)):
        if shape is not None and len(shape) != ndim:
            raise ShapeError(f"box_encode: {what} must be 2-D (B, N), got {shape}")
    for what, shape in (("anchors", anchors), ("refs", refs)):
        if shape is not None:
            _check_boxes(f"box_encode: {what}", shape, 3)
    ins = list(in_shapes)
    merge_at(ins, 4, (4,), "box_encode: means")
    merge_at(ins, 5, (4,), "box_encode: stds")
    oshape = merge_all([anchors, *out_shapes])
    return ins, [oshape, oshape]


def _center(boxes: Array) -> tuple[Array, Array, Array, Array]:
    """Corner boxes as (x, y, width, height), computed as MXNet's kernels do."""
    half = boxes.dtype.type(0.5)
    width, height = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    return boxes[..., 0] + width * half, boxes[..., 1] + height * half, width, height


def _matched_refs(p: Params, matches: Array, positive: Array, num_refs: int) -> Array:
    """Each sample's reference index. Only positive samples read their reference, so the
    others may hold anything (GluonCV marks them -1); a positive one outside the refs
    would read out of bounds in MXNet, we refuse it."""
    index = matches.astype(np.int64)
    outside = positive & ((index < 0) | (index >= num_refs))
    if outside.any():
        raise OperatorError(f"{p.label}: positive samples match refs "
                            f"{sorted(set(index[outside].tolist()))}, there are {num_refs}")
    return np.where(positive, index, 0)


def _encode_forward(p, ctx, inputs):
    samples, matches, anchors, refs, means, stds = inputs
    if not known(anchors.shape) or anchors.shape[:2] != samples.shape:
        raise ShapeError(f"box_encode: anchors {anchors.shape} do not match samples "
                         f"{samples.shape}")
    valid = (samples > 0.5)[..., None]
    index = _matched_refs(p, matches, valid[..., 0], refs.shape[1])
    matched = np.take_along_axis(refs, index[..., None], axis=1)
    rx, ry, rw, rh = _center(matched)
    ax, ay, aw, ah = _center(anchors)
    with np.errstate(divide="ignore", invalid="ignore"):  # degenerate boxes: inf/nan, as MXNet
        raw = np.stack([(rx - ax) / aw, (ry - ay) / ah, np.log(rw / aw), np.log(rh / ah)], -1)
        targets = np.where(valid, (raw - means) / stds, 0).astype(anchors.dtype)
    masks = np.broadcast_to(valid, anchors.shape).astype(anchors.dtype)
    return targets, masks


register(OpDef(
    name="_contrib_box_encode",
    inputs=("samples", "matches", "anchors", "refs", "means", "stds"),
    outputs=("output0", "output1"),
    doc="Encodes matched reference boxes against corner anchors as regression targets "
        "(and masks of the positive samples).",
    forward=_encode_forward, backward=zero_gradients, backward_reads=GradReads(),
    infer_shape=_encode_shape,
))


def _decode_shape(p, in_shapes, out_shapes):
    data, anchors = in_shapes
    data = merge(data, out_shapes[0])
    if data is not None and (len(data) != 3 or data[-1] not in (0, 4)):
        raise ShapeError(f"box_decode: data must be (B, N, 4), got {data}")
    if anchors is not None:
        _check_boxes("box_decode: anchors", anchors, 3)
    return [data, anchors], [data]


def _decode_forward(p, ctx, inputs):
    data, anchors = inputs
    _decode_shape(p, [data.shape, anchors.shape], [None])
    if anchors.size != data.shape[1] * 4:
        raise ShapeError(f"box_decode: anchors {anchors.shape} must hold one box for each of "
                         f"the {data.shape[1]} boxes of data {data.shape}")
    anchors = anchors.reshape(1, -1, 4)
    if p.format == "corner":
        ax, ay, aw, ah = _center(anchors)
    else:
        ax, ay, aw, ah = (anchors[..., i] for i in range(4))
    t = data.dtype.type
    x = data[..., 0] * t(p.std0) * aw + ax
    y = data[..., 1] * t(p.std1) * ah + ay
    dw, dh = data[..., 2] * t(p.std2), data[..., 3] * t(p.std3)
    if p.clip > 0:
        dw, dh = np.minimum(dw, t(p.clip)), np.minimum(dh, t(p.clip))
    half_w, half_h = np.exp(dw) * aw * t(0.5), np.exp(dh) * ah * t(0.5)
    return np.stack([x - half_w, y - half_h, x + half_w, y + half_h], -1).astype(data.dtype)


register(OpDef(
    name="_contrib_box_decode", inputs=("data", "anchors"),
    doc="Decodes box regression offsets (B, N, 4) against anchors (1, N, 4) into corner "
        "boxes.",
    params=tuple(Param(f"std{i}", "float", 1.0, f"value to be divided from the {i + 1}th "
                       "encoded values") for i in range(4)) + (
        Param("clip", "float", -1.0,
              "If larger than 0, bounding box target will be clipped to this value."),
        Param("format", "str", "center", "The anchors' box encoding type.", choices=FORMATS),
    ),
    forward=_decode_forward, backward=zero_gradients, backward_reads=GradReads(),
    infer_shape=_decode_shape,
))


# -- bipartite_matching ------------------------------------------------------------------------

@from_input
def _matching_shape(p: Params, in_shapes: list) -> list:
    """(..., N, M) scores: (..., N) row matches and (..., M) column matches."""
    dshape = in_shapes[0]
    if len(dshape) < 2:
        raise ShapeError(f"{p.label}: the score matrix must have ndim >= 2, got {dshape}")
    return [dshape[:-1], dshape[:-2] + dshape[-1:]]


def _greedy_match(p: Params, scores: Array, rows: Array, cols: Array, row_marker: Array,
                  col_marker: Array) -> None:
    """MXNet's walk down one batch's sorted pairs, writing the markers: the first pair
    whose row and column are both free is matched if its score passes the threshold
    (strictly; the threshold is a float32), else the walk ends. MXNet counts a match
    before comparing the count with topk, so it makes topk + 1."""
    threshold = np.float32(p.threshold)
    count = 0
    while len(scores):
        if not (scores[0] < threshold if p.is_ascend else scores[0] > threshold):
            break
        r, c = rows[0], cols[0]
        row_marker[r], col_marker[c] = c, r
        count += 1
        if 0 < p.topk < count:
            break
        free = (rows != r) & (cols != c)  # what remains are the pairs MXNet would not skip
        scores, rows, cols = scores[free], rows[free], cols[free]


def _matching_forward(p, ctx, inputs):
    data = inputs[0]
    if data.dtype.kind != "f":
        raise OperatorError(f"{p.label}: the scores must be floating point, got {data.dtype}")
    _matching_shape(p, [data.shape], [None, None])
    *lead, n, m = data.shape
    batches = data.reshape(math.prod(lead), n * m)
    row_marker = np.full((len(batches), n), -1, data.dtype)
    col_marker = np.full((len(batches), m), -1, data.dtype)
    # MXNet's stable sorts by score, then by batch: each batch's pairs best first, ties
    # in index order.
    orders = np.argsort(batches if p.is_ascend else -batches, axis=-1, kind="stable")
    for scores, order, rows, cols in zip(batches, orders, row_marker, col_marker, strict=True):
        _greedy_match(p, scores[order], order // m, order % m, rows, cols)
    return row_marker.reshape(data.shape[:-1]), col_marker.reshape((*lead, m))


register(OpDef(
    name="_contrib_bipartite_matching", bfloat16="refuse",
    doc="Greedy bipartite matching of a score matrix (..., N, M): the best pairs first, "
        "while they pass the threshold. Returns each row's column and each column's row, "
        "-1 where unmatched.",
    params=(
        Param("is_ascend", "bool", False, "Use ascend order for scores instead of "
              "descending. Please set threshold accordingly."),
        Param("threshold", "float", doc="Ignore matching when score < thresh, if "
              "is_ascend=false, or ignore score > thresh, if is_ascend=true."),
        Param("topk", "int", -1, "Limit the number of matches to topk, set -1 for no limit"),
    ),
    outputs=("output0", "output1"),
    forward=_matching_forward, backward=zero_gradients, backward_reads=GradReads(),
    infer_shape=_matching_shape,
    named_inputs=False,
))
