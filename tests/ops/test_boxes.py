"""_contrib_box_nms, box_iou, box_encode and box_decode against plain-Python references
written from MXNet's documentation of each operator (MXNet's own outputs are checked in
test_model_ops_mxnet.py)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.base import OperatorError, ShapeError
from minimx.ops import get_op

from gradcheck import check_gradient
from ops_support import infer, run

FAST = settings(max_examples=60, deadline=None)


def corner(box, fmt):
    """[xmin, ymin, xmax, ymax] of one box given in `fmt`."""
    if fmt == "corner":
        return list(box)
    x, y, w, h = box
    return [x - w / 2, y - h / 2, x + w / 2, y + h / 2]


def iou(a, b, fmt):
    a, b = corner(a, fmt), corner(b, fmt)
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0)
    area = lambda r: max(r[2] - r[0], 0) * max(r[3] - r[1], 0) if min(  # noqa: E731
        r[2] - r[0], r[3] - r[1]) >= 0 else 0
    inter = w * h
    return 0.0 if inter <= 0 else inter / (area(a) + area(b) - inter)


@st.composite
def detections(draw, lead=(2,)):
    """float64 rows [class, score, x1, y1, x2, y2]; scores distinct or with many ties
    (the top-k selection must break them as a stable sort does)."""
    n = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    lo = rng.uniform(0, 4, (*lead, n, 2))
    if draw(st.booleans()):
        scores = rng.permutation(np.prod(lead) * n).reshape(*lead, n, 1) / 10
    else:
        scores = rng.integers(1, 4, (*lead, n, 1)) / 4
    return np.concatenate([rng.integers(0, 3, (*lead, n, 1)), scores, lo,
                           lo + rng.uniform(0.5, 3, (*lead, n, 2))], -1)


def reference_nms(rows, thresh, valid, topk, id_index, background, force):
    """MXNet's documented algorithm on one batch of rows (lists)."""
    cands = [r for r in rows if r[1] > valid and (id_index < 0 or r[0] != background)]
    cands.sort(key=lambda r: -r[1])
    if topk >= 0:
        cands = cands[:topk]
    kept = []
    for r in cands:
        if all(iou(k[2:], r[2:], "corner") <= thresh or
               (id_index >= 0 and not force and int(k[0]) != int(r[0])) for k in kept):
            kept.append(r)
    return [list(r) for r in kept] + [[-1] * len(rows[0])] * (len(rows) - len(kept))


@FAST
@given(detections(), st.sampled_from([0.2, 0.5, 0.8]), st.sampled_from([0.0, 0.3]),
       st.sampled_from([-1, 2, 5]), st.sampled_from([-1, 0]), st.sampled_from([-1, 1]),
       st.booleans())
def test_box_nms_matches_reference(rows, thresh, valid, topk, id_index, background, force):
    out = run("_contrib_box_nms", dict(overlap_thresh=thresh, valid_thresh=valid, topk=topk,
                                        id_index=id_index, background_id=background,
                                        force_suppress=force), rows)[0]
    for b in range(len(rows)):
        want = reference_nms(rows[b].tolist(), thresh, valid, topk, id_index, background, force)
        np.testing.assert_allclose(out[b], want)


def test_box_nms_formats_and_record():
    rows = np.array([[0, 0.9, 1, 1, 3, 3], [0, 0.8, 1.1, 1, 3, 3], [0, 0.7, 5, 5, 6, 7]])
    out, record = run("_contrib_box_nms", dict(out_format="center"), rows)
    np.testing.assert_allclose(out, [[0, 0.9, 2, 2, 2, 2], [0, 0.7, 5.5, 6, 1, 2], [-1] * 6])
    np.testing.assert_array_equal(record[:, 0], [0, 2, -1])
    back = run("_contrib_box_nms", dict(in_format="center"), out[:2])[0]
    np.testing.assert_allclose(back, rows[[0, 2]])  # far apart: both kept, as corners


def test_box_nms_gradient_flows_to_kept_rows():
    rows = np.array([[0, 0.9, 1, 1, 3, 3], [0, 0.8, 1.1, 1, 3, 3], [1, 0.7, 5, 5, 6, 7]])
    (grad,) = check_gradient("_contrib_box_nms", {}, [rows])
    assert not grad[1].any() and grad[0].any() and grad[2].any()


def test_box_nms_shapes_and_layout_errors():
    assert infer("_contrib_box_nms", {}, [(2, 3, 7, 6)], [None, None]) == (
        [(2, 3, 7, 6)], [(2, 3, 7, 6), (2, 3, 7, 1)])
    with pytest.raises(ShapeError, match="score_index 2"):
        infer("_contrib_box_nms", dict(score_index=2), [(4, 6)], [None, None])
    with pytest.raises(ShapeError, match="at least 6"):
        infer("_contrib_box_nms", dict(id_index=0, score_index=1, coord_start=1), [(4, 5)],
              [None, None])
    nms = mx.sym._contrib_box_non_maximum_suppression(mx.sym.var("data"), name="nms")
    assert nms.list_outputs() == ["nms_output0"]   # as MXNet 1.9.1 names it
    with pytest.raises(ShapeError, match="nms"):
        mx.sym._contrib_box_nms(mx.sym.var("data"), coord_start=3, name="nms").infer_shape(
            data=(2, 6))


@FAST
@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(["corner", "center"]),
       st.integers(0, 2**16))
def test_box_iou_matches_reference(n, m, fmt, seed):
    rng = np.random.default_rng(seed)
    lhs = np.concatenate([rng.uniform(0, 3, (n, 2)), rng.uniform(0.2, 3, (n, 2))], -1)
    rhs = np.concatenate([rng.uniform(0, 3, (2, m, 2)), rng.uniform(0.2, 3, (2, m, 2))], -1)
    if fmt == "corner":
        lhs[:, 2:] += lhs[:, :2]
        rhs[..., 2:] += rhs[..., :2]
    out = run("_contrib_box_iou", dict(format=fmt), lhs, rhs)
    assert out.shape == (n, 2, m)
    want = [[[iou(a, b, fmt) for b in rhs[k]] for k in range(2)] for a in lhs]
    np.testing.assert_allclose(out, want)
    assert infer("_contrib_box_iou", {}, [(n, 4), (2, m, 4)])[1] == [(n, 2, m)]


def test_box_decode_and_encode_formulas():
    anchors = np.array([[[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 2.0, 2.0]]])  # corner
    offsets = np.array([[[0.5, -0.5, 0.1, 0.3], [0.0, 0.0, 2.0, -1.0]]])
    out = run("_contrib_box_decode", dict(format="corner", std0=0.1, std1=0.2, clip=1.0),
              offsets, anchors)
    for box, (dx, dy, dw, dh), (x1, y1, x2, y2) in zip(out[0], offsets[0], anchors[0], strict=True):
        w, h = x2 - x1, y2 - y1
        cx, cy = x1 + w / 2 + dx * 0.1 * w, y1 + h / 2 + dy * 0.2 * h
        hw, hh = np.exp(min(dw, 1.0)) * w / 2, np.exp(min(dh, 1.0)) * h / 2
        np.testing.assert_allclose(box, [cx - hw, cy - hh, cx + hw, cy + hh])
    samples, matches = np.array([[1.0, -1.0]]), np.array([[1.0, 0.0]])
    refs = np.array([[[0.0, 0.0, 4.0, 4.0], [1.5, 2.5, 3.5, 5.5]]])
    means, stds = np.zeros(4), np.array([0.1, 0.1, 0.2, 0.2])
    targets, masks = run("_contrib_box_encode", {}, samples, matches, anchors, refs, means, stds)
    np.testing.assert_allclose(masks, [[[1] * 4, [0] * 4]])
    np.testing.assert_allclose(targets[0, 0], [(2.5 - 2) / 2 / 0.1, (4 - 4) / 4 / 0.1,
                                               np.log(2 / 2) / 0.2, np.log(3 / 4) / 0.2])
    assert not targets[0, 1].any()
    assert infer("_contrib_box_encode", {}, [(1, 2), (1, 2), (1, 2, 4), (1, 2, 4), None, None],
                 [None, None]) == ([(1, 2), (1, 2), (1, 2, 4), (1, 2, 4), (4,), (4,)],
                                   [(1, 2, 4), (1, 2, 4)])
    with pytest.raises(ShapeError, match="data must be"):
        infer("_contrib_box_decode", {}, [(2, 5), (1, 5, 4)])


def test_box_operators_have_zero_gradients_where_mxnet_does():
    op = get_op("_contrib_box_iou")
    p = op.parse_params({})
    grads = op.backward(p, None, [np.ones((2, 4)), np.ones((3, 4))], [], [np.ones((2, 3))])
    assert [g.shape for g in grads] == [(2, 4), (3, 4)] and not any(g.any() for g in grads)


def test_box_encode_ignores_the_matches_of_non_positive_samples():
    """GluonCV marks unmatched anchors -1; MXNet 1.9.1 reads only positives' matches. A
    positive one outside the refs (MXNet reads out of bounds) is refused."""
    anchors = np.array([[[0, 0, 1, 1], [0, 0, 2, 2], [1, 1, 2, 2]]], np.float32)
    refs = np.array([[[0, 0, 1, 1], [0.5, 0.5, 2.5, 1.5]]], np.float32)
    means, stds = np.array([0, 0, 0.1, 0.1], np.float32), np.array([0.1, 0.1, 0.2, 0.2], np.float32)
    targets, masks = run("_contrib_box_encode", {}, np.array([[1, -1, 0]], np.float32),
                         np.array([[1, -1, 7]], np.float32), anchors, refs, means, stds)
    np.testing.assert_allclose(targets, [[[10, 5, 2.9657359, -0.5], [0] * 4, [0] * 4]], rtol=1e-6)
    np.testing.assert_array_equal(masks, [[[1] * 4, [0] * 4, [0] * 4]])
    with pytest.raises(OperatorError, match=r"match refs \[-1\], there are 2"):
        run("_contrib_box_encode", {}, np.ones((1, 3), np.float32),
            np.array([[1, -1, 0]], np.float32), anchors, refs, means, stds)


# -- bipartite_matching (MXNet 1.9.1's numbers) ---------------------------------------------

TIED_SCORES = np.array([[[0.5, 0.5, 0.2], [0.5, 0.9, 0.9], [0.2, 0.2, 0.7]],
                        [[0.1, 0.3, 0.3], [0.3, 0.3, 0.1], [0.6, 0.1, 0.6]]], np.float32)


@pytest.mark.parametrize("params, rows, cols", [
    # ties go to the first pair in index order, in each batch
    (dict(threshold=0.25), [[0, 1, 2], [1, -1, 0]], [[0, 1, 2], [2, 0, -1]]),
    # MXNet counts a match before comparing with topk: topk + 1 matches
    (dict(threshold=0.25, topk=1), [[-1, 1, 2], [1, -1, 0]], [[-1, 1, 2], [2, 0, -1]]),
    (dict(threshold=0.35, is_ascend=True), [[2, -1, 0], [0, 2, 1]], [[2, -1, 0], [0, 2, 1]]),
    (dict(threshold=0.55), [[-1, 1, 2], [-1, -1, 0]], [[-1, 1, 2], [2, -1, -1]]),
])
def test_bipartite_matching_matches_mxnet(params, rows, cols):
    x, y = run("_contrib_bipartite_matching", params, TIED_SCORES)
    assert x.dtype == y.dtype == np.float32
    np.testing.assert_array_equal(x, rows)
    np.testing.assert_array_equal(y, cols)


def test_bipartite_matching_docstring_example_threshold_and_dtypes():
    scores = np.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]], np.float32)
    for topk in (-1, 0, 1):  # 0 means no limit; 1 makes 2 matches
        x, y = run("_contrib_bipartite_matching", dict(threshold=1e-12, topk=topk), scores)
        np.testing.assert_array_equal(x, [1, -1, 0])
        np.testing.assert_array_equal(y, [2, 0])
    x, y = run("_contrib_bipartite_matching", dict(threshold=0.3), scores)  # strictly above
    np.testing.assert_array_equal(x, [1, -1, -1])
    # The threshold is a float32: 0.1000000001 is below float32(0.1) in float64 scores.
    x, y = run("_contrib_bipartite_matching", dict(threshold=0.1),
               np.array([[0.1, 0.1000000001]]))
    assert x.dtype == np.float64 and x.tolist() == [-1] and y.tolist() == [-1, -1]
    x, y = run("_contrib_bipartite_matching", dict(threshold=0.3),
               TIED_SCORES[:1, :2].astype(np.float16))
    assert x.dtype == np.float16 and x.tolist() == [[0, 1]] and y.tolist() == [[0, 1, -1]]
    with pytest.raises(OperatorError, match="floating point"):
        run("_contrib_bipartite_matching", dict(threshold=0), np.ones((2, 2), np.int32))


def test_bipartite_matching_shapes_symbol_and_zero_gradient():
    op = get_op("_contrib_bipartite_matching")
    assert infer("_contrib_bipartite_matching", dict(threshold=0.1), [(2, 3, 4, 5)],
                 [None, None]) == ([(2, 3, 4, 5)], [(2, 3, 4), (2, 3, 5)])
    with pytest.raises(ShapeError, match="ndim >= 2"):
        infer("_contrib_bipartite_matching", dict(threshold=0.1), [(3,)], [None, None])
    with pytest.raises(OperatorError, match="threshold"):
        op.parse_params({})
    sym = mx.sym.contrib.bipartite_matching(mx.sym.var("d"), threshold=0.1, name="m")
    assert sym.list_outputs() == ["m_output0", "m_output1"]
    p = op.parse_params({"threshold": "0.1"})
    grads = op.backward(p, None, [TIED_SCORES], [], [np.ones((2, 3))] * 2)
    assert grads[0].shape == TIED_SCORES.shape and not grads[0].any()
