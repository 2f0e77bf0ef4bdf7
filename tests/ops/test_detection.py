"""The detection examples' contrib operators (SSD's MultiBox*, Faster R-CNN's Proposal,
R-FCN's PSROIPooling, SyncBatchNorm, BatchNormWithReLU) on cases worked out by hand or
against independent references; MXNet's own outputs are checked in
test_model_ops_mxnet.py (fixture group detection_ops)."""
from __future__ import annotations

import numpy as np
import pytest

import minimx as mx
from minimx.base import OperatorError, ShapeError
from minimx.ops import get_op
from minimx.ops.proposal import anchors

from ops_support import attrs_of, infer, run


def detection(probs, boxes, **params):
    """MultiBoxDetection of one image whose anchors are `boxes` and offsets zero."""
    boxes = np.asarray(boxes, np.float32)
    cls_prob = np.asarray(probs, np.float32).T[None]  # (1, classes, anchors)
    loc = np.zeros((1, boxes.size), np.float32)
    return run("_contrib_MultiBoxDetection", dict(variances=(1, 1, 1, 1), **params),
               cls_prob, loc, boxes[None])[0]


def test_detection_nms_keeps_the_first_of_equal_scores_and_suppresses_at_the_threshold():
    box = [0.0, 0.0, 0.5, 0.5]
    half = [0.0, 0.0, 0.5, 0.25]  # IoU with box exactly 0.5
    probs = [[0.2, 0.8, 0.0], [0.2, 0.8, 0.0], [0.1, 0.0, 0.9], [0.3, 0.7, 0.0]]
    out = detection(probs, [box, box, [0.6, 0.6, 0.9, 0.9], half])
    # Sorted by score (stable); the tied copy of anchor 0 and the box at IoU 0.5 (>=) go.
    np.testing.assert_allclose(out[:, :2], [[1, 0.9], [0, 0.8], [-1, 0.8], [-1, 0.7]])
    np.testing.assert_allclose(out[1, 2:], box, rtol=1e-6)
    # Another class is not suppressed unless force_suppress.
    probs[3] = [0.3, 0.0, 0.7]
    assert detection(probs, [box, box, [0.6, 0.6, 0.9, 0.9], half])[3, 0] == 1
    assert detection(probs, [box, box, [0.6, 0.6, 0.9, 0.9], half],
                     force_suppress=True)[3, 0] == -1


def test_detection_drops_background_and_low_scores_before_sorting():
    probs = [[0.9, 0.05, 0.05], [0.4, 0.3, 0.3], [0.1, 0.6, 0.3]]
    out = detection(probs, [[0, 0, 0.2, 0.2], [0.3, 0.3, 0.5, 0.5], [0.6, 0.6, 0.8, 0.8]],
                    threshold=0.35)
    # Anchor 0's best class (0.05) and anchor 1's (0.3) are below threshold: one row left.
    np.testing.assert_allclose(out[:, :2], [[0, 0.6], [-1, -1], [-1, -1]])


def test_prior_boxes_of_one_cell():
    out = run("_contrib_MultiBoxPrior", dict(sizes=(0.5, 0.2), ratios=(1, 4)),
              np.zeros((1, 1, 1, 1), np.float32))
    np.testing.assert_allclose(out[0], [[0.25, 0.25, 0.75, 0.75], [0.4, 0.4, 0.6, 0.6],
                                        [0.0, 0.375, 1.0, 0.625]])
    assert infer("_contrib_MultiBoxPrior", dict(sizes=(0.5, 0.2), ratios=(1, 4)),
                 [(2, 3, 4, 5)])[1] == [(1, 60, 4)]


def test_target_matches_each_ground_truth_to_its_best_anchor():
    anchor = np.array([[[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1], [0, 0, 0.4, 0.5]]], np.float32)
    label = np.array([[[2, 0, 0, 0.4, 0.5], [-1, -1, -1, -1, -1]]], np.float32)
    cls_pred = np.zeros((1, 3, 3), np.float32)
    loc, mask, cls = run("_contrib_MultiBoxTarget", dict(overlap_threshold=0.7), anchor,
                         label, cls_pred)
    # Anchor 2 is the ground truth itself (IoU 1); anchor 0 (IoU 0.8) passes the threshold.
    np.testing.assert_array_equal(cls, [[3, 0, 3]])
    np.testing.assert_array_equal(mask.reshape(3, 4)[:, 0], [1, 0, 1])
    np.testing.assert_allclose(loc.reshape(3, 4)[2], 0, atol=1e-6)
    np.testing.assert_allclose(loc.reshape(3, 4)[0], [-1, 0, np.log(0.8) / 0.2, 0], rtol=1e-5)


def test_target_hard_negatives_rank_probabilities_as_c_expf_rounds_them():
    """Equal logits in another order sum to background probabilities an ulp apart with
    C's expf (numpy's float32 exp makes them equal); MXNet 1.9.1 keeps anchors 1 and 3."""
    anchor = np.array([[[0, 0, .5, .5], [.6, .6, .7, .7], [.7, .7, .8, .8], [.8, .8, .9, .9]]],
                      np.float32)
    label = np.array([[[0, 0, 0, .5, .5], [-1] * 5]], np.float32)
    cls_pred = np.array([[[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0]]], np.float32)
    params = dict(negative_mining_ratio=2, negative_mining_thresh=0.5)
    cls_target = run("_contrib_MultiBoxTarget", params, anchor, label, cls_pred)[2]
    np.testing.assert_array_equal(cls_target, [[1, 0, -1, 0]])
    label[0, 1, 1] = 0.1  # a padding row must be all -1, as MXNet checks
    with pytest.raises(OperatorError, match="label row 1 has class -1"):
        run("_contrib_MultiBoxTarget", {}, anchor, label, cls_pred)


def test_proposal_anchors_are_py_faster_rcnn_anchors():
    op = get_op("_contrib_Proposal")
    p = op.parse_params(attrs_of(scales=(8, 16, 32), ratios=(0.5, 1, 2)))
    np.testing.assert_array_equal(anchors(p), [
        [-84, -40, 99, 55], [-176, -88, 191, 103], [-360, -184, 375, 199],
        [-56, -56, 71, 71], [-120, -120, 135, 135], [-248, -248, 263, 263],
        [-36, -80, 51, 95], [-80, -168, 95, 183], [-168, -344, 183, 359]])


def test_proposal_takes_one_image_and_checks_its_anchors():
    x = mx.sym.Variable("x")
    sym = mx.sym.contrib.Proposal(x, mx.sym.Variable("b"), mx.sym.Variable("i"), scales=(2,),
                                  ratios=(1,), name="rpn")
    _, outs, _ = sym.infer_shape(x=(1, 2, 3, 3))
    assert outs == [(300, 5)]
    ex = sym.simple_bind(mx.cpu(), x=(2, 2, 3, 3))
    with pytest.raises(mx.MinimxError, match=r"rpn \(_contrib_Proposal\).*batch 1"):
        ex.forward()[0].asnumpy()
    with pytest.raises(OperatorError, match="4 anchors per cell"):
        run("_contrib_Proposal", dict(scales=(2,), ratios=(1,)), np.zeros((1, 8, 2, 2)),
            np.zeros((1, 16, 2, 2)), np.ones((1, 3)))


def test_psroi_pooling_refuses_too_few_channels_and_foreign_images():
    with pytest.raises(ShapeError, match="18 needed"):
        infer("_contrib_PSROIPooling", dict(spatial_scale=1, output_dim=2, pooled_size=3),
              [(1, 9, 4, 4), (2, 5)])
    with pytest.raises(OperatorError, match=r"rois name images \[0, 3\]"):
        run("_contrib_PSROIPooling", dict(spatial_scale=1, output_dim=1, pooled_size=1),
            np.ones((2, 1, 3, 3)), np.array([[0, 0, 0, 1, 1], [3, 0, 0, 1, 1]], float))


def test_psroi_pooling_averages_each_bins_own_channel():
    data = np.arange(4 * 16, dtype=np.float64).reshape(1, 4, 4, 4)
    out = run("_contrib_PSROIPooling", dict(spatial_scale=1, output_dim=1, pooled_size=2),
              data, np.array([[0, 0, 0, 3, 3]], float))
    # Bin (i, j) averages the (i, j) quarter of channel 2i + j.
    want = [[data[0, 2 * i + j, 2 * i:2 * i + 2, 2 * j:2 * j + 2].mean() for j in (0, 1)]
            for i in (0, 1)]
    np.testing.assert_allclose(out[0, 0], want)


@pytest.mark.parametrize("op, extra", [("_contrib_SyncBatchNorm", {"key": "bn"}),
                                       ("_contrib_BatchNormWithReLU", {})])
def test_batch_norm_variants_train_as_batch_norm(op, extra):
    """One training step: outputs, gradients and moving statistics of BatchNorm (followed
    by a relu for BatchNormWithReLU)."""
    rng = np.random.default_rng(3)
    values = {"x": rng.normal(size=(2, 3, 4)), "g": rng.uniform(0.5, 1.5, 3),
              "b": rng.normal(size=3)}
    head = rng.normal(size=(2, 3, 4))

    def step(sym):
        ex = sym.simple_bind(mx.cpu(), x=(2, 3, 4))
        for name, value in zip(sym.list_arguments(), values.values(), strict=True):
            ex.arg_dict[name][:] = value
        out = ex.forward(is_train=True)[0].asnumpy()
        ex.backward(mx.nd.array(head))
        return [out, *(g.asnumpy() for g in ex.grad_arrays),
                *(a.asnumpy() for a in ex.aux_arrays)]

    x, g, b = (mx.sym.Variable(n) for n in values)
    bn = mx.sym.BatchNorm(x, g, b, fix_gamma=False, name="bn")
    want = step(mx.sym.relu(bn) if op.endswith("ReLU") else bn)
    got = step(getattr(mx.sym, op)(x, g, b, fix_gamma=False, name="bn", **extra))
    for w, o in zip(want, got, strict=True):
        np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-6)


def test_sync_batch_norm_needs_its_key():
    with pytest.raises(OperatorError, match="required parameter key"):
        mx.sym.contrib.SyncBatchNorm(mx.sym.Variable("x"), name="sbn")
