"""Region proposals of Faster R-CNN's RPN: _contrib_Proposal (one image) and
_contrib_MultiProposal (a batch), as MXNet 1.9.1's src/operator/contrib/proposal.cc and
multi_proposal.cc compute them on the CPU.

For each image: anchors (ratios x scales around a feature_stride cell) shifted over the
(H, W) map, moved by the predicted deltas and clipped to the image, the ones on the
padded part of the map or smaller than rpn_min_size * scale given score -1 (and the
small ones grown by that size), a stable sort by score, the first rpn_pre_nms_top_n,
NMS, and the first rpn_post_nms_top_n kept boxes; when fewer survive, the kept ones
repeat in order to fill the rows, as MXNet pads. MXNet computes in float32 with a few
steps in double; those steps are done here in float64 and rounded where MXNet stores a
float, so the boxes and the ties of the sort come out as MXNet's. Gradients are zeros.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..base import OperatorError, ShapeError
from .boxes import greedy_nms
from .infer import merge, merge_at
from .registry import GradReads, OpDef, Param, Params, register, zero_gradients

Array = np.ndarray
F32, F64 = np.float32, np.float64


def _f32(x: Array | np.floating) -> Array:
    """A double-precision step of MXNet's kernel stored back into a float."""
    return np.asarray(x, F64).astype(F32)


def anchors(p: Params) -> Array:
    """The (len(ratios) * len(scales), 4) base anchors, ratios outer (GenerateAnchors)."""
    side = F32(p.feature_stride - 1.0) + F32(1)
    center = _f32(0.5 * (F64(side) - 1))
    ratios = np.repeat(np.asarray(p.ratios, F32), len(p.scales))
    scales = np.tile(np.asarray(p.scales, F32), len(p.ratios))
    width = np.floor(np.sqrt(np.floor(side * side / ratios)) + F32(0.5)) * scales
    height = np.floor(width / scales * ratios + F32(0.5)) * scales
    half_w, half_h = F32(0.5) * (width - F32(1)), F32(0.5) * (height - F32(1))
    return np.stack([center - half_w, center - half_h, center + half_w, center + half_h], -1)


def _shifted(p: Params, height: int, width: int) -> Array:
    """Every anchor at every map cell, (H, W, A, 4), as MXNet enumerates them."""
    stride = p.feature_stride
    x = (np.arange(width) * stride).astype(F32)[None, :, None]
    y = (np.arange(height) * stride).astype(F32)[:, None, None]
    base = anchors(p)
    return np.stack(np.broadcast_arrays(base[:, 0] + x, base[:, 1] + y, base[:, 2] + x,
                                        base[:, 3] + y), -1)


def _apply_deltas(p: Params, boxes: Array, deltas: Array) -> Array:
    """BBoxTransformInv (or IoUTransformInv with iou_loss): boxes moved by deltas."""
    if p.iou_loss:
        return boxes + deltas
    x1, y1, x2, y2 = np.moveaxis(boxes, -1, 0)
    width, height = _f32(F64(1) + (x2 - x1)), _f32(F64(1) + (y2 - y1))
    cx = _f32(x1 + 0.5 * (F64(1) * width - 1))
    cy = _f32(y1 + 0.5 * (F64(1) * height - 1))
    dx, dy, dw, dh = np.moveaxis(deltas, -1, 0)
    pcx, pcy = dx * width + cx, dy * height + cy
    half_w = 0.5 * (F64(1) * (np.exp(dw) * width) - 1)
    half_h = 0.5 * (F64(1) * (np.exp(dh) * height) - 1)
    return np.stack([_f32(pcx - half_w), _f32(pcy - half_h), _f32(pcx + half_w),
                     _f32(pcy + half_h)], -1)


def _image_proposals(p: Params, scores: Array, deltas: Array, info: Array) -> tuple[Array, int]:
    """One image's rows [x1, y1, x2, y2, score] sorted, before NMS, and how many."""
    count, height, width = scores.shape
    im_height, im_width, im_scale = info
    boxes = _apply_deltas(p, _shifted(p, height, width),
                          deltas.reshape(count, 4, height, width).transpose(2, 3, 0, 1))
    limit = np.array([im_width, im_height, im_width, im_height], F32) - F32(1)
    boxes = np.maximum(np.minimum(boxes, limit), F32(0))
    score = scores.transpose(1, 2, 0).copy()
    real_h = max(int(im_height / F32(p.feature_stride)), 0)
    real_w = max(int(im_width / F32(p.feature_stride)), 0)
    if real_h > height or real_w > width:
        raise ShapeError(f"{p.label}: im_info {info.tolist()} spans a {real_h}x{real_w} map, "
                         f"larger than the {height}x{width} of cls_prob")
    score[real_h:] = -1  # predictions on the padding
    score[:, real_w:] = -1
    min_size = F32(p.rpn_min_size) * im_scale
    small = ((boxes[..., 2] - boxes[..., 0] + F32(1) < min_size)
             | (boxes[..., 3] - boxes[..., 1] + F32(1) < min_size))
    boxes[small] += np.array([-1, -1, 1, 1], F32) * (min_size / F32(2))
    score[small] = -1
    rows = np.concatenate([boxes, score[..., None]], -1).reshape(-1, 5)
    pre = p.rpn_pre_nms_top_n if p.rpn_pre_nms_top_n > 0 else len(rows)
    pre = min(pre, len(rows))
    return rows[np.argsort(-rows[:, 4], kind="stable")[:pre]], pre


def _nms(p: Params, rows: Array, limit: int) -> Array:
    """MXNet's RPN NMS (areas with the +1 pixel convention; IoU above threshold
    suppresses): indices of the first `limit` kept rows."""
    x1, y1, x2, y2 = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
    one = F32(1)
    area = (x2 - x1 + one) * (y2 - y1 + one)
    thresh = F32(p.threshold)

    def hits(i: int) -> Array:
        w = np.maximum(F32(0), np.minimum(x2[i], x2[i + 1:]) - np.maximum(x1[i], x1[i + 1:]) + one)
        h = np.maximum(F32(0), np.minimum(y2[i], y2[i + 1:]) - np.maximum(y1[i], y1[i + 1:]) + one)
        inter = w * h
        with np.errstate(divide="ignore", invalid="ignore"):
            return inter / (area[i] + area[i + 1:] - inter) > thresh
    return np.flatnonzero(greedy_nms(len(rows), hits))[:limit]


def _proposal_forward(single: bool, p, ctx, inputs):
    cls_prob, bbox_pred, im_info = inputs
    _check(single, p, cls_prob.shape)
    batch, channels = cls_prob.shape[:2]
    if single and batch != 1:
        raise OperatorError(f"{p.label}: takes one image (batch 1), got cls_prob "
                            f"{cls_prob.shape}; MultiProposal takes batches")
    if channels // 2 != len(p.ratios) * len(p.scales):
        raise OperatorError(f"{p.label}: cls_prob has {channels // 2} anchors per cell but "
                            f"ratios {p.ratios} x scales {p.scales} make "
                            f"{len(p.ratios) * len(p.scales)}")
    post = p.rpn_post_nms_top_n
    rois = np.zeros((batch, post, 5), F32)
    scores = np.zeros((batch, post, 1), F32)
    for b in range(batch):
        rows, pre = _image_proposals(p, cls_prob[b, channels // 2:].astype(F32),
                                     bbox_pred[b].astype(F32), im_info[b].astype(F32))
        keep = _nms(p, rows, min(post, pre))
        picked = rows[keep[np.arange(post) % len(keep)]]  # fewer kept: they repeat
        rois[b, :, 0] = b
        rois[b, :, 1:] = picked[:, :4]
        scores[b, :, 0] = picked[:, 4]
    dtype = cls_prob.dtype
    return rois.reshape(-1, 5).astype(dtype), scores.reshape(-1, 1).astype(dtype)


def _check(single: bool, p: Params, cls_prob) -> None:
    if cls_prob is not None and len(cls_prob) != 4:
        what = "Proposal" if single else "MultiProposal"
        raise ShapeError(f"{what}: cls_prob must be (batch, 2 * anchors, height, width), got "
                         f"{cls_prob}")
    if p.rpn_post_nms_top_n <= 0:
        raise OperatorError(f"{p.label}: rpn_post_nms_top_n must be positive, got "
                            f"{p.rpn_post_nms_top_n}")


def _proposal_shape(single: bool, p, in_shapes, out_shapes):
    cls_prob = in_shapes[0]
    _check(single, p, cls_prob)
    if cls_prob is None:
        return in_shapes, out_shapes
    batch, channels, height, width = cls_prob
    ins = list(in_shapes)
    merge_at(ins, 1, (batch, channels * 2, height, width), "Proposal: bbox_pred")
    merge_at(ins, 2, (batch, 3), "Proposal: im_info")
    images = 1 if single else batch
    rows = images * p.rpn_post_nms_top_n if images else 0
    return ins, [merge(out_shapes[0], (rows, 5)), merge(out_shapes[1], (rows, 1))]


_PARAMS = (
    Param("rpn_pre_nms_top_n", "int", 6000,
          "Number of top scoring boxes to keep before applying NMS to RPN proposals"),
    Param("rpn_post_nms_top_n", "int", 300,
          "Number of top scoring boxes to keep after applying NMS to RPN proposals"),
    Param("threshold", "float", 0.7, "NMS value, below which to suppress."),
    Param("rpn_min_size", "int", 16, "Minimum height or width in proposal"),
    Param("scales", "floats", (4.0, 8.0, 16.0, 32.0),
          "Used to generate anchor windows by enumerating scales"),
    Param("ratios", "floats", (0.5, 1.0, 2.0),
          "Used to generate anchor windows by enumerating ratios"),
    Param("feature_stride", "int", 16, "The size of the receptive field each unit in the "
          "convolution layer of the rpn, for example the product of all stride's prior to "
          "this layer."),
    Param("output_score", "bool", False, "Add score to outputs"),
    Param("iou_loss", "bool", False, "Usage of IoU Loss"),
)

for _name, _single, _rows in (("_contrib_Proposal", True, "(rpn_post_nms_top_n, 5)"),
                              ("_contrib_MultiProposal", False,
                               "(batch * rpn_post_nms_top_n, 5)")):
    register(OpDef(
        name=_name, bfloat16="refuse",
        inputs=("cls_prob", "bbox_pred", "im_info"), outputs=("output", "score"),
        visible_outputs=lambda p: 2 if p.output_score else 1,
        doc=f"RPN region proposals from cls_prob (batch, 2A, H, W), bbox_pred (batch, 4A, H, "
            f"W) and im_info (batch, 3) rows [height, width, scale]: rois {_rows} rows "
            "[batch_index, x1, y1, x2, y2] and, with output_score, their scores.",
        params=_PARAMS,
        forward=partial(_proposal_forward, _single), backward=zero_gradients,
        backward_reads=GradReads(), infer_shape=partial(_proposal_shape, _single),
    ))
