"""SSD's operators: _contrib_MultiBoxPrior, _contrib_MultiBoxTarget and
_contrib_MultiBoxDetection, as MXNet 1.9.1's src/operator/contrib/multibox_*.cc compute
them on the CPU.

Boxes are corner boxes [xmin, ymin, xmax, ymax] in coordinates relative to the image
(0..1). The arithmetic follows MXNet's kernels step by step and in their precision (the
priors and the training targets in float32, detection decoding in the input's dtype),
so that sorts, ties and suppression decisions come out as MXNet's do. MXNet gives all
three zero gradients.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from .boxes import greedy_nms, intersection
from .infer import merge, merge_at
from .registry import GradReads, OpDef, Param, Params, register, zero_gradients

Array = np.ndarray
F32 = np.float32
VARIANCES = Param("variances", "floats", (0.1, 0.1, 0.2, 0.2),
                  "Variances to be encoded in box regression target.")


def _variances(p: Params, dtype: np.dtype) -> Array:
    """MXNet keeps variances as float32, whatever the data's dtype."""
    if len(p.variances) != 4:
        raise OperatorError(f"{p.label}: variances must hold 4 numbers, got {p.variances}")
    return np.asarray(p.variances, F32).astype(dtype)


def _area(boxes: Array) -> Array:
    """Corner-box areas, negative sides not clamped (MXNet's multibox kernels)."""
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def _overlap(lhs: Array, rhs: Array, positive_union: bool) -> Array:
    """IoU of boxes that broadcast; 0 where the union is not positive (MultiBoxDetection's
    CalculateOverlap) or is zero (MultiBoxTarget's safe_divide)."""
    inter = intersection(lhs, rhs, "corner")
    union = _area(lhs) + _area(rhs) - inter
    where = union > 0 if positive_union else union != 0
    return np.divide(inter, union, out=np.zeros_like(inter), where=where)


def _check_ndims(op: str, shapes: list, ndims: tuple[int, ...]) -> None:
    """Each known input shape has its ndim (MXNet's CHECKs of MultiBox*'s inputs)."""
    for i, (shape, ndim) in enumerate(zip(shapes, ndims, strict=True)):
        if shape is not None and len(shape) != ndim:
            raise ShapeError(f"{op}: input {i} must be {ndim}-D, got {shape}")


# -- MultiBoxPrior -----------------------------------------------------------------------------

def _prior_count(p: Params) -> int:
    if not p.sizes or not p.ratios:
        raise OperatorError(f"{p.label}: sizes and ratios need at least one value each")
    return len(p.sizes) + len(p.ratios) - 1


def _prior_shape(p, in_shapes, out_shapes):
    dshape = in_shapes[0]
    if dshape is None:
        return in_shapes, out_shapes
    if len(dshape) < 4:
        raise ShapeError(f"MultiBoxPrior: data must be 4-D (batch, channel, y, x), got {dshape}")
    height, width = dshape[2:4]
    if not (height and width):
        return in_shapes, out_shapes
    return in_shapes, [merge(out_shapes[0], (1, height * width * _prior_count(p), 4))]


def _steps(p: Params, height: int, width: int) -> tuple[F32, F32]:
    if len(p.steps) != 2 or len(p.offsets) != 2:
        raise OperatorError(f"{p.label}: steps and offsets must be (y, x) pairs, got "
                            f"steps={p.steps} offsets={p.offsets}")
    if not all(0 <= o <= 1 for o in p.offsets):
        raise OperatorError(f"{p.label}: offsets {p.offsets} must lie in [0, 1]")
    if p.steps[0] * p.steps[1] < 0:
        raise OperatorError(f"{p.label}: steps {p.steps}: give both step_y and step_x")
    if p.steps[0] <= 0 or p.steps[1] <= 0:  # estimated from the feature map, as MXNet
        return F32(1) / F32(height), F32(1) / F32(width)
    return F32(p.steps[0]), F32(p.steps[1])


def _prior_forward(p, ctx, inputs):
    data = inputs[0]
    _prior_shape(p, [data.shape], [None])
    height, width = data.shape[2:4]
    _prior_count(p)
    step_y, step_x = _steps(p, height, width)
    sizes, ratios = np.asarray(p.sizes, F32), np.sqrt(np.asarray(p.ratios, F32))
    # Each location: every size at the first ratio, then size[0] at every other ratio.
    size = np.concatenate([sizes, np.full(len(ratios) - 1, sizes[0])])
    ratio = np.concatenate([np.full(len(sizes), ratios[0]), ratios[1:]])
    half_w = size * F32(height) / F32(width) * ratio / F32(2)
    half_h = size / ratio / F32(2)
    cy = (np.arange(height, dtype=F32) + F32(p.offsets[0])) * step_y
    cx = (np.arange(width, dtype=F32) + F32(p.offsets[1])) * step_x
    cy, cx = cy[:, None, None], cx[None, :, None]
    boxes = np.stack(np.broadcast_arrays(cx - half_w, cy - half_h, cx + half_w, cy + half_h), -1)
    if p.clip:
        boxes = np.clip(boxes, F32(0), F32(1))
    return boxes.reshape(1, -1, 4).astype(data.dtype)


register(OpDef(
    name="_contrib_MultiBoxPrior", aliases=("_npx_multibox_prior",), bfloat16="refuse",
    doc="Prior (anchor) boxes of SSD for each location of a (N, C, H, W) feature map: "
        "(1, H*W*(len(sizes)+len(ratios)-1), 4) corner boxes relative to the image.",
    params=(
        Param("sizes", "floats", (1.0,), "List of sizes of generated MultiBoxPriores."),
        Param("ratios", "floats", (1.0,), "List of aspect ratios of generated MultiBoxPriores."),
        Param("clip", "bool", False, "Whether to clip out-of-boundary boxes."),
        Param("steps", "floats", (-1.0, -1.0),
              "Priorbox step across y and x, -1 for auto calculation."),
        Param("offsets", "floats", (0.5, 0.5), "Priorbox center offsets, y and x respectively"),
    ),
    forward=_prior_forward, backward=zero_gradients, backward_reads=GradReads(),
    infer_shape=_prior_shape,
))


# -- MultiBoxTarget ----------------------------------------------------------------------------

def _target_shape(p, in_shapes, out_shapes):
    anchor, label, cls_pred = in_shapes
    _check_ndims("MultiBoxTarget", in_shapes, (3, 3, 3))
    if anchor is not None and (anchor[0] not in (0, 1) or anchor[2] not in (0, 4)):
        raise ShapeError(f"MultiBoxTarget: anchor must be (1, num_anchors, 4), shared across "
                         f"the batch, got {anchor}")
    if label is not None and 0 < label[2] < 5:
        raise ShapeError(f"MultiBoxTarget: label rows need at least 5 values [class, xmin, "
                         f"ymin, xmax, ymax], got {label}")
    ins = list(in_shapes)
    if anchor is not None and cls_pred is not None:
        merge_at(ins, 2, (cls_pred[0], cls_pred[1], anchor[1]), "MultiBoxTarget: cls_pred "
                 "(batch, num_classes, num_anchors)")
    if label is None or anchor is None:
        return ins, out_shapes
    batch, count = label[0], anchor[1]
    return ins, [merge(out_shapes[0], (batch, count * 4)), merge(out_shapes[1], (batch, count * 4)),
                 merge(out_shapes[2], (batch, count))]


def _match(overlaps: Array, threshold: float) -> tuple[Array, Array, Array]:
    """MXNet's anchor matching for one image's (anchors, gts) IoUs in float32: each
    ground truth in turn takes its best free anchor (bipartite, the largest IoU first,
    ties to the first anchor then the first ground truth), then, with a positive
    threshold, every other anchor whose best IoU exceeds it. Returns the positive
    anchors, each anchor's best IoU (-1 where not computed) and its ground truth."""
    count, gts = overlaps.shape
    positive = np.zeros(count, bool)
    best_iou, best_gt = np.full(count, F32(-1)), np.full(count, -1)
    free_gt = np.ones(gts, bool)
    while free_gt.any():
        masked = np.where(positive[:, None] | ~free_gt[None, :], F32(-np.inf), overlaps)
        j, k = np.unravel_index(np.argmax(masked), masked.shape)
        if not masked[j, k] > F32(1e-6):
            break
        positive[j], free_gt[k], best_iou[j], best_gt[j] = True, False, masked[j, k], k
    if threshold > 0:
        rest = ~positive
        best_iou[rest], best_gt[rest] = overlaps[rest].max(1), overlaps[rest].argmax(1)
        positive |= rest & (best_iou > F32(threshold))
    return positive, best_iou, best_gt


def _c_exp(x: Array) -> Array:
    """exp as C's expf rounds it: numpy's float32 exp may be an ulp off, which reorders
    tied probabilities (equal logits summed in another order)."""
    return np.exp(x.astype(np.float64)).astype(x.dtype)


def _hard_negatives(p: Params, positive: Array, best_iou: Array, overlaps: Array,
                    cls_pred: Array) -> Array:
    """The negatives negative mining picks: among anchors not positive whose best IoU is
    below negative_mining_thresh, the num_positive * ratio with the lowest background
    probability (a stable sort)."""
    if not p.negative_mining_thresh > 0:
        raise OperatorError(f"{p.label}: negative_mining_thresh must be positive, got "
                            f"{p.negative_mining_thresh}")
    count = len(positive)
    wanted = min(int(F32(positive.sum()) * F32(p.negative_mining_ratio)),
                 count - int(positive.sum()))
    negative = np.zeros(count, bool)
    if wanted <= 0:
        return negative
    unset = ~positive & (best_iou < 0)
    best_iou = np.where(unset, overlaps.max(1), best_iou)
    candidates = np.flatnonzero(~positive & (best_iou < F32(p.negative_mining_thresh)))
    if len(candidates) < wanted:
        raise OperatorError(f"{p.label}: negative mining wants {wanted} negatives but only "
                            f"{len(candidates)} anchors qualify")
    logits = cls_pred[:, candidates]
    top = logits.max(0)
    total = np.zeros_like(top)
    for row in logits:  # summed class by class, as MXNet's loop does
        total += _c_exp(row - top)
    background = (_c_exp(logits[0] - top) / total).astype(F32)
    negative[candidates[np.argsort(background, kind="stable")[:wanted]]] = True
    return negative


def _loc_targets(anchors: Array, gts: Array, variances: Array) -> Array:
    """AssignLocTargets, in float32 as MXNet computes it."""
    anchors, gts = anchors.astype(F32), gts.astype(F32)
    half = F32(0.5)
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = (anchors[:, 0] + anchors[:, 2]) * half, (anchors[:, 1] + anchors[:, 3]) * half
    gw, gh = gts[:, 2] - gts[:, 0], gts[:, 3] - gts[:, 1]
    gx, gy = (gts[:, 0] + gts[:, 2]) * half, (gts[:, 1] + gts[:, 3]) * half
    with np.errstate(divide="ignore", invalid="ignore"):  # degenerate boxes: inf/nan, as MXNet
        return np.stack([(gx - ax) / aw / variances[0], (gy - ay) / ah / variances[1],
                         np.log(gw / aw) / variances[2], np.log(gh / ah) / variances[3]], -1)


def _valid_labels(p: Params, rows: Array) -> int:
    """How many ground truths one image has: they end at the first row of class -1,
    which MXNet requires to be all -1 (padding)."""
    ends = np.flatnonzero(rows[:, 0].astype(F32) == F32(-1))
    if not len(ends):
        return len(rows)
    if (rows[ends[0], 1:5].astype(F32) != F32(-1)).any():
        raise OperatorError(f"{p.label}: label row {ends[0]} has class -1 (padding) but box "
                            f"{rows[ends[0], 1:5]}; padding rows must be all -1")
    return int(ends[0])


def _target_forward(p, ctx, inputs):
    anchor, label, cls_pred = inputs
    _target_shape(p, [anchor.shape, label.shape, cls_pred.shape], [None] * 3)
    dtype, anchors = anchor.dtype, anchor.reshape(-1, 4)
    variances = _variances(p, F32)
    batch, count = len(label), len(anchors)
    loc_target = np.zeros((batch, count, 4), dtype)
    loc_mask = np.zeros((batch, count, 4), dtype)
    cls_target = np.full((batch, count), p.ignore_label, dtype)
    overlaps = _overlap(anchors[None, :, None], label[:, None, :, 1:5], False).astype(F32)
    for b, rows in enumerate(label):
        valid = _valid_labels(p, rows)
        if valid == 0:
            continue
        ious = overlaps[b, :, :valid]
        positive, best_iou, best_gt = _match(ious, p.overlap_threshold)
        if p.negative_mining_ratio > 0:
            negative = _hard_negatives(p, positive, best_iou, ious, cls_pred[b])
        else:
            negative = ~positive
        gts = rows[best_gt[positive]]
        cls_target[b, positive] = gts[:, 0] + 1  # class 0 is the background
        cls_target[b, negative] = 0
        loc_mask[b, positive] = 1
        loc_target[b, positive] = _loc_targets(anchors[positive], gts[:, 1:5], variances)
    return loc_target.reshape(batch, -1), loc_mask.reshape(batch, -1), cls_target


register(OpDef(
    name="_contrib_MultiBoxTarget", aliases=("_npx_multibox_target",), bfloat16="refuse",
    inputs=("anchor", "label", "cls_pred"), outputs=("loc_target", "loc_mask", "cls_target"),
    doc="SSD training targets: anchors (1, A, 4) matched to labels (B, L, >=5) rows "
        "[class, xmin, ymin, xmax, ymax] (padded with -1) give box regression targets and "
        "masks (B, A*4) and class targets (B, A): class+1, 0 for negatives, ignore_label "
        "for the rest.",
    params=(
        Param("overlap_threshold", "float", 0.5,
              "Anchor-GT overlap threshold to be regarded as a positive match."),
        Param("ignore_label", "float", -1.0, "Label for ignored anchors."),
        Param("negative_mining_ratio", "float", -1.0,
              "Max negative to positive samples ratio, use -1 to disable mining"),
        Param("negative_mining_thresh", "float", 0.5, "Threshold used for negative mining."),
        Param("minimum_negative_samples", "int", 0,
              "Minimum number of negative samples (accepted; MXNet does not use it)."),
        VARIANCES,
    ),
    forward=_target_forward, backward=zero_gradients, backward_reads=GradReads(),
    infer_shape=_target_shape,
))


# -- MultiBoxDetection -------------------------------------------------------------------------

def _detection_shape(p, in_shapes, out_shapes):
    cls_prob, loc_pred, anchor = in_shapes
    _check_ndims("MultiBoxDetection", in_shapes, (3, 2, 3))
    if anchor is not None and anchor[2] not in (0, 4):
        raise ShapeError(f"MultiBoxDetection: anchor must be (1, num_anchors, 4), got {anchor}")
    count = next((s for s in (anchor and anchor[1], cls_prob and cls_prob[2]) if s), 0)
    ins = list(in_shapes)
    if count:
        if cls_prob is not None and cls_prob[2] not in (0, count):
            raise ShapeError(f"MultiBoxDetection: cls_prob {cls_prob} does not match the "
                             f"{count} anchors of {anchor}")
        if loc_pred is not None and loc_pred[1] not in (0, count * 4):
            raise ShapeError(f"MultiBoxDetection: loc_pred {loc_pred} needs 4 values for each "
                             f"of the {count} anchors")
    if cls_prob is None or anchor is None:
        return ins, out_shapes
    merge_at(ins, 1, (cls_prob[0], count * 4), "MultiBoxDetection: loc_pred")
    return ins, [merge(out_shapes[0], (cls_prob[0], count, 6))]


def _decode(anchors: Array, loc: Array, variances: Array, clip: bool) -> Array:
    """TransformLocations: offsets (B, A, 4) against corner anchors, in their dtype."""
    two = anchors.dtype.type(2)
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = (anchors[:, 0] + anchors[:, 2]) / two, (anchors[:, 1] + anchors[:, 3]) / two
    ox = loc[..., 0] * variances[0] * aw + ax
    oy = loc[..., 1] * variances[1] * ah + ay
    ow = np.exp(loc[..., 2] * variances[2]) * aw / two
    oh = np.exp(loc[..., 3] * variances[3]) * ah / two
    boxes = np.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)
    return np.clip(boxes, 0, 1) if clip else boxes


def _detection_forward(p, ctx, inputs):
    cls_prob, loc_pred, anchor = inputs
    _detection_shape(p, [cls_prob.shape, loc_pred.shape, anchor.shape], [None])
    t = cls_prob.dtype.type
    batch, classes, count = cls_prob.shape
    # The best non-background class with its probability (the first of equal ones),
    # background (-1) when none beats -1 or the best is below threshold.
    foreground = cls_prob[:, 1:]
    if classes > 1:
        score = np.maximum(foreground.max(1), t(-1))
        ident = np.where(score > t(-1), foreground.argmax(1), -1)
    else:
        score, ident = np.full((batch, count), t(-1)), np.full((batch, count), -1)
    ident = np.where((ident >= 0) & (score < t(F32(p.threshold))), -1, ident)
    boxes = _decode(anchor.reshape(-1, 4), loc_pred.reshape(batch, count, 4),
                    _variances(p, cls_prob.dtype), p.clip)
    rows = np.concatenate([ident[..., None].astype(t), score[..., None], boxes], -1)
    out = np.full((batch, count, 6), -1, cls_prob.dtype)
    thresh = F32(p.nms_threshold)
    for b in range(batch):
        valid = rows[b, ident[b] >= 0]
        out[b, :len(valid)] = valid
        if not len(valid) or not 0 < thresh <= 1:
            continue
        order = np.argsort(-valid[:, 1], kind="stable")
        keep = len(valid) if not 0 < p.nms_topk < len(valid) else p.nms_topk
        out[b, keep:len(valid), 0] = -1  # beyond nms_topk: dropped, the rest left in place
        out[b, :keep] = valid[order[:keep]]
        top = out[b, :keep]

        def hits(i: int, top: Array = top) -> Array:
            hit = _overlap(top[i, 2:], top[i + 1:, 2:], True) >= thresh
            return hit if p.force_suppress else hit & (top[i + 1:, 0] == top[i, 0])
        top[~greedy_nms(keep, hits), 0] = -1
    return out


register(OpDef(
    name="_contrib_MultiBoxDetection", aliases=("_npx_multibox_detection",), bfloat16="refuse",
    inputs=("cls_prob", "loc_pred", "anchor"),
    doc="SSD detections: class probabilities (B, C, A) (class 0 the background), box "
        "offsets (B, A*4) and anchors (1, A, 4) give rows [class, score, xmin, ymin, xmax, "
        "ymax] (B, A, 6), by descending score after per-class NMS; suppressed rows get "
        "class -1.",
    params=(
        Param("clip", "bool", True, "Clip out-of-boundary boxes."),
        Param("threshold", "float", 0.01, "Threshold to be a positive prediction."),
        Param("background_id", "int", 0, "Background id (accepted; MXNet always takes class "
              "0 as the background)."),
        Param("nms_threshold", "float", 0.5, "Non-maximum suppression threshold."),
        Param("force_suppress", "bool", False, "Suppress all detections regardless of class_id."),
        Param("variances", "floats", (0.1, 0.1, 0.2, 0.2),
              "Variances to be decoded from box regression output."),
        Param("nms_topk", "int", -1, "Keep maximum top k detections before nms, -1 for no "
              "limit."),
    ),
    forward=_detection_forward, backward=zero_gradients, backward_reads=GradReads(),
    infer_shape=_detection_shape,
))
