"""ROIAlign and ROIPooling against per-sample loop references written from MXNet's
kernels (roi_align.cc, roi_pooling.cc), and their gradients."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minimx.base import OperatorError, ShapeError
from minimx.ops import OpContext, get_op

from gradcheck import check_gradient
from ops_support import attrs_of, infer, run

FAST = settings(max_examples=40, deadline=None)


def bilinear(plane, y, x):
    """One sample as MXNet's bilinear_interpolate: 0 outside [-1, size], clamped inside."""
    h, w = plane.shape
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * plane[y0, x0] + (1 - ly) * lx * plane[y0, x1]
            + ly * (1 - lx) * plane[y1, x0] + ly * lx * plane[y1, x1])


def reference_align(data, rois, pooled, scale, ratio, aligned, sensitive):
    ph, pw = pooled
    channels = data.shape[1] // (ph * pw) if sensitive else data.shape[1]
    out = np.zeros((len(rois), channels, ph, pw))
    for n, (b, *box) in enumerate(rois):
        off = 0.5 if aligned else 0.0
        x1, y1, x2, y2 = (v * scale - off for v in box)
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        for c in range(channels):
            for i in range(ph):
                for j in range(pw):
                    src = c * ph * pw + i * pw + j if sensitive else c
                    plane = data[int(b), src]
                    total = sum(bilinear(plane, y1 + i * rh / ph + (a + .5) * rh / ph / gh,
                                         x1 + j * rw / pw + (e + .5) * rw / pw / gw)
                                for a in range(gh) for e in range(gw))
                    out[n, c, i, j] = total / (gh * gw)
    return out


@st.composite
def roi_inputs(draw, channels=4):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    h, w = draw(st.integers(2, 7)), draw(st.integers(2, 7))
    data = rng.standard_normal((2, channels, h, w))
    count = draw(st.integers(1, 3))
    lo = rng.uniform(-2, 20, (count, 2))
    rois = np.concatenate([rng.integers(0, 2, (count, 1)), lo,
                           lo + rng.uniform(0.5, 12, (count, 2))], 1)
    return data, rois


@FAST
@given(roi_inputs(), st.sampled_from([(1, 1), (2, 2), (3, 2)]), st.sampled_from([0.25, 0.5]),
       st.sampled_from([-1, 1, 2]), st.booleans(), st.booleans())
def test_roi_align_matches_loop_reference(inputs, pooled, scale, ratio, aligned, sensitive):
    data, rois = inputs
    if sensitive and data.shape[1] % (pooled[0] * pooled[1]):
        data = np.concatenate([data] * pooled[0] * pooled[1], 1)
    params = dict(pooled_size=pooled, spatial_scale=scale, sample_ratio=ratio,
                  aligned=aligned, position_sensitive=sensitive)
    out = run("_contrib_ROIAlign", params, data, rois)
    np.testing.assert_allclose(out, reference_align(data, rois, pooled, scale, ratio, aligned,
                                                    sensitive), atol=1e-12)


def test_roi_align_gradient_is_the_adjoint_and_ignored_rois():
    """ROIAlign is linear in data: its data gradient must be the adjoint map,
    <align(x), g> == <x, grad(g)>; rois get no gradient, as in MXNet."""
    rng = np.random.default_rng(1)
    data = rng.standard_normal((2, 4, 5, 6))
    rois = np.array([[1, 2.0, 1.0, 14.0, 12.0], [0, -3.0, 0.0, 7.0, 9.0], [-1, 0, 0, 4, 4]])
    op = get_op("_contrib_ROIAlign")
    for sensitive in (False, True):
        p = op.parse_params(attrs_of(pooled_size=(2, 2), spatial_scale=0.4,
                                     position_sensitive=sensitive))
        out = op.forward(p, OpContext(), [data, rois])
        head = rng.standard_normal(out.shape)
        d_data, d_rois = op.backward(p, OpContext(), *op.backward_view(p, [data, rois], [out]),
                                     [head])
        np.testing.assert_allclose(np.sum(out * head), np.sum(data * d_data))
        assert d_data.any() and not d_rois.any()
    assert not run("_contrib_ROIAlign", dict(pooled_size=(2, 2), spatial_scale=0.4),
                   data, rois)[2].any()


def test_roi_align_refuses_a_roi_of_a_missing_image():
    """A negative batch index skips the roi; one past the batch (MXNet 1.9.1 reads past its
    data) is refused, forward and backward."""
    data = np.ones((2, 1, 4, 4), np.float32)
    params = dict(pooled_size=(1, 1), spatial_scale=1.0)
    with pytest.raises(OperatorError, match=r"rois name images \[-1, 2\], the data has 2"):
        run("_contrib_ROIAlign", params, data, np.array([[-1, 0, 0, 2, 2], [2, 0, 0, 2, 2]]))
    op = get_op("_contrib_ROIAlign")
    with pytest.raises(OperatorError, match="the data has 1"):
        op.backward(op.parse_params(attrs_of(**params)), OpContext(),
                    [data[:1], np.array([[1, 0, 0, 2, 2]], np.float32)], [None],
                    [np.ones((1, 1, 1, 1), np.float32)])


def test_roi_align_shapes():
    assert infer("_contrib_ROIAlign", dict(pooled_size=(3, 2), spatial_scale=1.0),
                 [(2, 12, 8, 8), (5, 5)]) == ([(2, 12, 8, 8), (5, 5)], [(5, 12, 3, 2)])
    assert infer("_contrib_ROIAlign", dict(pooled_size=(3, 2), spatial_scale=1.0,
                                           position_sensitive=True),
                 [(2, 12, 8, 8), (5, 5)])[1] == [(5, 2, 3, 2)]
    with pytest.raises(ShapeError, match="divisible"):
        infer("_contrib_ROIAlign", dict(pooled_size=(3, 3), spatial_scale=1.0,
                                        position_sensitive=True), [(2, 12, 8, 8), (5, 5)])
    with pytest.raises(OperatorError, match="spatial_scale"):
        infer("_contrib_ROIAlign", dict(pooled_size=(3, 3), spatial_scale=2.0),
              [(2, 12, 8, 8), (5, 5)])
    with pytest.raises(ShapeError, match="rois"):
        infer("_contrib_ROIAlign", dict(pooled_size=(3, 3), spatial_scale=1.0),
              [(2, 12, 8, 8), (5, 4)])


def reference_roi_pool(data, rois, pooled, scale):
    ph, pw = pooled
    out = np.zeros((len(rois), data.shape[1], ph, pw))
    rnd = lambda v: math.floor(v * scale + 0.5)  # noqa: E731 (positive coordinates here)
    for n, (b, x1, y1, x2, y2) in enumerate(rois):
        x1, y1, x2, y2 = rnd(x1), rnd(y1), rnd(x2), rnd(y2)
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for i in range(ph):
            for j in range(pw):
                hs = min(max(math.floor(i * rh / ph) + y1, 0), data.shape[2])
                he = min(max(math.ceil((i + 1) * rh / ph) + y1, 0), data.shape[2])
                ws = min(max(math.floor(j * rw / pw) + x1, 0), data.shape[3])
                we = min(max(math.ceil((j + 1) * rw / pw) + x1, 0), data.shape[3])
                if he > hs and we > ws:
                    out[n, :, i, j] = data[int(b), :, hs:he, ws:we].max(axis=(1, 2))
    return out


@FAST
@given(roi_inputs(), st.sampled_from([(1, 1), (2, 2), (3, 2)]), st.sampled_from([0.25, 0.5]))
def test_roi_pooling_matches_loop_reference(inputs, pooled, scale):
    data, rois = inputs
    rois[:, 1:] = np.abs(rois[:, 1:])
    out, argmax = run("ROIPooling", dict(pooled_size=pooled, spatial_scale=scale), data, rois)
    np.testing.assert_array_equal(out, reference_roi_pool(data, rois, pooled, scale))
    chosen = argmax >= 0
    np.testing.assert_array_equal(data.reshape(-1)[argmax[chosen]], out[chosen])
    assert argmax.dtype == np.int32


def test_roi_pooling_gradient_and_shapes():
    data = np.random.default_rng(2).permutation(2 * 3 * 6 * 6).reshape(2, 3, 6, 6) * 0.1
    # Batch indices and corners away from rounding steps: rois' numeric gradient is 0.
    rois = np.array([[1.5, 0.2, 0.2, 9.2, 7.2], [0.5, 4.2, 2.2, 11.2, 11.2], [3, 0, 0, 1, 1]])
    check_gradient("ROIPooling", dict(pooled_size=(2, 3), spatial_scale=0.5), [data, rois])
    assert infer("ROIPooling", dict(pooled_size=(2, 3), spatial_scale=0.5),
                 [(2, 3, 6, 6), (4, 5)], [None, None])[1] == [(4, 3, 2, 3), (4, 3, 2, 3)]
