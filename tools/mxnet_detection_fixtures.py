"""The cases of the ``detection_ops`` fixture group (tools/mxnet_fixtures.py writes them
with MXNet 1.9.1): the contrib operators of MXNet's own SSD, Faster R-CNN and R-FCN
examples on small fixed inputs, with NMS ties and boxes crossing the image.

Runs with MXNet's Python only (numpy here; no minimx import).
"""
from __future__ import annotations

import numpy as np

Case = tuple[str, str, dict, list[np.ndarray], bool]


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis, keepdims=True))
    return (e / e.sum(axis, keepdims=True)).astype("float32")


def _multibox_cases(rng: np.random.RandomState) -> list[Case]:
    """MultiBoxPrior, MultiBoxDetection and MultiBoxTarget. The detection inputs repeat
    anchors and scores so that NMS meets equal scores and equal boxes; anchors reach past
    the image so that clipping matters."""
    feat = np.zeros((2, 1, 3, 5), "float32")
    cases: list[Case] = [
        ("prior_default", "_contrib_MultiBoxPrior", {}, [np.zeros((1, 2, 3, 4), "float32")],
         False),
        ("prior_sizes_ratios_clip", "_contrib_MultiBoxPrior",
         {"sizes": "(0.5, 0.25)", "ratios": "(1, 2, 0.5)", "clip": "True"}, [feat], False),
        ("prior_steps_offsets", "_contrib_MultiBoxPrior",
         {"sizes": "(0.3,)", "ratios": "(2, 1)", "steps": "(0.2, 0.1)",
          "offsets": "(0.3, 0.7)"}, [feat], False),
    ]
    count, classes = 10, 4
    centers = rng.uniform(-0.05, 1.05, (count, 2))
    half = rng.uniform(0.1, 0.3, (count, 2))
    anchors = np.concatenate([centers - half, centers + half], 1)
    anchors[5] = anchors[2]  # an equal box ...
    anchors[7] = anchors[2] + 0.01
    anchors = anchors.reshape(1, count, 4).astype("float32")
    logits = rng.normal(0, 1.5, (2, classes, count))
    logits[:, :, 5] = logits[:, :, 2]  # ... with an equal score
    logits[0, :, 8] = logits[0, :, 3]
    cls_prob = _softmax(logits, 1)
    loc = (rng.normal(0, 0.5, (2, count, 4)) * (rng.uniform(size=(2, count, 1)) > 0.3))
    loc[:, 5] = loc[:, 2]
    loc_pred = loc.reshape(2, -1).astype("float32")
    det = [cls_prob, loc_pred, anchors]
    cases += [
        ("detection_default", "_contrib_MultiBoxDetection", {}, det, False),
        ("detection_force_topk", "_contrib_MultiBoxDetection",
         {"force_suppress": "True", "nms_topk": "4", "threshold": "0.2"}, det, False),
        ("detection_noclip_variances", "_contrib_MultiBoxDetection",
         {"clip": "False", "variances": "(0.2, 0.2, 0.1, 0.1)", "nms_threshold": "0.3"},
         det, False),
        ("detection_no_nms", "_contrib_MultiBoxDetection", {"nms_threshold": "0"}, det, False),
        ("detection_high_threshold", "_contrib_MultiBoxDetection",
         {"threshold": "0.45", "background_id": "1"}, det, False),
    ]
    labels = np.full((2, 4, 5), -1, "float32")
    labels[0, :3] = [[1, 0.1, 0.1, 0.4, 0.5], [0, 0.5, 0.4, 0.9, 0.95], [2, 0.0, 0.6, 0.3, 1.0]]
    labels[1, :1] = [[2, 0.3, 0.2, 0.7, 0.6]]
    grid = np.linspace(0.0, 0.8, 4)
    lo = np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2)[:12]
    target_anchors = np.concatenate([lo, lo + rng.uniform(0.2, 0.45, (12, 2))], 1)
    target_anchors = target_anchors.reshape(1, 12, 4).astype("float32")
    cls_pred = rng.normal(0, 1, (2, 3, 12)).astype("float32")
    cls_pred[:, :, 7] = cls_pred[:, :, 6]  # tied background probabilities for mining
    target = [target_anchors, labels, cls_pred]
    no_labels = [target_anchors, np.full((1, 2, 5), -1, "float32"), cls_pred[:1]]
    cases += [
        ("target_default", "_contrib_MultiBoxTarget", {}, target, False),
        ("target_mining", "_contrib_MultiBoxTarget",
         {"negative_mining_ratio": "2", "negative_mining_thresh": "0.4",
          "ignore_label": "-2"}, target, False),
        ("target_bipartite_only", "_contrib_MultiBoxTarget",
         {"overlap_threshold": "0", "negative_mining_ratio": "1.5",
          "variances": "(0.1, 0.2, 0.3, 0.4)"}, target, False),
        ("target_no_labels", "_contrib_MultiBoxTarget", {}, no_labels, False),
    ]
    return cases


def _proposal_cases(rng: np.random.RandomState) -> list[Case]:
    """Proposal and MultiProposal on a 4x5 map of 6 anchors (stride 8): im_info leaves
    padded cells, small boxes are filtered, scores quantized so that the sort meets ties,
    and few survivors so that the output repeats them."""
    anchors, height, width = 6, 4, 5
    scores = np.round(rng.uniform(0, 1, (2, anchors, height, width)) * 4) / 4
    cls_prob = np.concatenate([1 - scores, scores], 1).astype("float32")
    deltas = rng.normal(0, 0.3, (2, 4 * anchors, height, width)).astype("float32")
    im_info = np.array([[30, 38, 1.0], [32, 27, 0.5]], "float32")
    base = {"scales": "(2, 4)", "ratios": "(0.5, 1, 2)", "feature_stride": "8",
            "rpn_pre_nms_top_n": "40", "rpn_post_nms_top_n": "12", "threshold": "0.5",
            "rpn_min_size": "4"}
    one = [cls_prob[:1], deltas[:1], im_info[:1]]
    return [
        ("proposal", "_contrib_Proposal", {**base, "output_score": "True"}, one, False),
        ("proposal_padded_output", "_contrib_Proposal",
         {**base, "rpn_pre_nms_top_n": "6", "rpn_post_nms_top_n": "10", "threshold": "0.3",
          "rpn_min_size": "12", "output_score": "True"}, one, False),
        ("proposal_iou_loss", "_contrib_Proposal",
         {**base, "iou_loss": "True", "output_score": "True"},
         [cls_prob[:1], deltas[:1] * 8, im_info[:1]], False),
        ("proposal_defaults", "_contrib_Proposal", {"feature_stride": "4"},
         [np.concatenate([cls_prob[:1]] * 2, 1), np.concatenate([deltas[:1]] * 2, 1),
          np.array([[16, 20, 0.2]], "float32")], False),
        ("multi_proposal", "_contrib_MultiProposal", {**base, "output_score": "True"},
         [cls_prob, deltas, im_info], False),
    ]


def _pooling_and_norm_cases(rng: np.random.RandomState) -> list[Case]:
    """PSROIPooling (rois crossing the map, tiny and empty ones, a group size below the
    pooled size) and the BatchNorm variants in inference."""
    rois = np.array([[0, 1.4, 2.5, 9.6, 8.2], [1, -4, -3, 5, 20], [1, 6, 3, 6, 3],
                     [0, 15, 2, 30, 4.5]], "float32")
    data = rng.uniform(-1, 1, (2, 18, 6, 7)).astype("float32")
    bn = [rng.uniform(-1, 1, (2, 3, 4, 5)).astype("float32"),
          rng.uniform(0.5, 1.5, 3).astype("float32"), rng.uniform(-0.5, 0.5, 3).astype("float32"),
          rng.uniform(-0.3, 0.3, 3).astype("float32"), rng.uniform(0.5, 2, 3).astype("float32")]
    return [
        ("psroi_pooling", "_contrib_PSROIPooling",
         {"spatial_scale": "0.5", "output_dim": "2", "pooled_size": "3"}, [data, rois], True),
        ("psroi_pooling_group", "_contrib_PSROIPooling",
         {"spatial_scale": "0.25", "output_dim": "3", "pooled_size": "3", "group_size": "2"},
         [data[:, :12], rois], True),
        ("sync_batch_norm", "_contrib_SyncBatchNorm",
         {"fix_gamma": "False", "eps": "0.01", "key": "bn0", "ndev": "1"}, bn, True),
        # No gradients: MXNet's oneDNN backward of BatchNormWithReLU outside training
        # gives values no formula explains (in training it is BatchNorm's through the mask).
        ("batch_norm_relu", "_contrib_BatchNormWithReLU", {"fix_gamma": "False"}, bn, False),
    ]


def detection_op_cases(rng: np.random.RandomState) -> list[Case]:
    """(case, operator, attributes, inputs, with gradients) of the detection_ops group."""
    return _multibox_cases(rng) + _proposal_cases(rng) + _pooling_and_norm_cases(rng)
