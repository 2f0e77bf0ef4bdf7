"""_contrib_DeformablePSROIPooling beyond the MXNet fixtures (tests/ops/test_model_ops_mxnet.py,
group deformable_ops): zero trans is no_trans, the hidden top_count, shape inference and
the errors it raises. The finite-difference check is in tests/executor/test_op_gradients.py."""
from __future__ import annotations

import numpy as np
import pytest

from minimx.base import OperatorError, ShapeError

from ops_support import infer, run

OP = "_contrib_DeformablePSROIPooling"
PARAMS = {"spatial_scale": 1.0, "output_dim": 2, "group_size": 2, "pooled_size": 2,
          "sample_per_part": 2, "trans_std": 0.5}
ROIS = np.array([[0, 0, 0, 3, 3], [1, -4, -4, 1, 1]], np.float32)


def test_zero_trans_is_no_trans_and_top_count_counts_samples_inside() -> None:
    data = np.random.RandomState(0).randn(2, 8, 4, 5).astype(np.float32)
    out, count = run(OP, PARAMS, data, ROIS, np.zeros((2, 2, 2, 2), np.float32))
    plain, plain_count = run(OP, dict(PARAMS, no_trans=True), data, ROIS)
    np.testing.assert_array_equal(out, plain)
    np.testing.assert_array_equal(count, plain_count)
    # The first roi's 16 samples are all inside; the second's top-left bin lies outside
    # [-0.5, size - 0.5] and averages nothing.
    assert (count[0] == 4).all() and (count[1, :, 0, 0] == 0).all()
    assert (out[1, :, 0, 0] == 0).all()


def test_shapes_are_inferred_from_data_and_rois() -> None:
    ins, outs = infer(OP, PARAMS, [(2, 8, 4, 5), (3, 5), (3, 4, 2, 2)], [None, None])[:2]
    assert outs == [(3, 2, 2, 2), (3, 2, 2, 2)]


@pytest.mark.parametrize("params, shapes, error, match", [
    (PARAMS, [(2, 8, 4, 5), (3, 5), (3, 6, 2, 2)], ShapeError, r"multiple of classes"),
    (PARAMS, [(2, 8, 4, 5), (3, 5), (3, 2, 3, 3)], ShapeError, r"part_size=2"),
    (PARAMS, [(2, 8, 4, 5), (3, 5), (2, 2, 2, 2)], ShapeError, r"num_rois=3"),
    (PARAMS, [(2, 7, 4, 5), (3, 5), (3, 2, 2, 2)], ShapeError, r"8 needed"),
    (PARAMS, [(2, 8, 4), (3, 5), (3, 2, 2, 2)], ShapeError, r"4-D"),
    (dict(PARAMS, group_size=0), [(2, 8, 4, 5), (3, 5), (3, 2, 2, 2)], OperatorError,
     r"group_size \(0\)"),
    (dict(PARAMS, trans_std=2.0), [(2, 8, 4, 5), (3, 5), (3, 2, 2, 2)], OperatorError,
     r"trans_std=2.0"),
])
def test_bad_parameters_and_shapes_raise(params, shapes, error, match) -> None:
    with pytest.raises(error, match=match):
        infer(OP, params, shapes, [None, None])


def test_rois_naming_a_missing_image_raise() -> None:
    with pytest.raises(OperatorError, match=r"rois name images \[0, 1\], the data has 1"):
        run(OP, dict(PARAMS, no_trans=True), np.ones((1, 8, 4, 5), np.float32), ROIS)
