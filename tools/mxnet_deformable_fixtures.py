"""The cases of the ``deformable_ops`` fixture group (tools/mxnet_fixtures.py writes them
with MXNet 1.9.1, as ``detection_ops``): Deformable ConvNets' convolutions on small fixed
inputs, with offsets that are fractional, that land on the last row and column, and that
push samples outside the image; groups and deformable groups. DeformablePSROIPooling with
and without trans, rois crossing the map, several samples per part, group_size > 1.

MXNet 1.9.1 has no CPU backward for ModulatedDeformableConvolution ("only implemented in
GPU"), so its cases hold outputs only. Runs with MXNet's Python only (no minimx import).
"""
from __future__ import annotations

import numpy as np

Case = tuple[str, str, dict, list[np.ndarray], bool]


def _floats(rng: np.random.RandomState, *shape: int, low: float = -1.0,
            high: float = 1.0) -> np.ndarray:
    return rng.uniform(low, high, shape).astype("float32")


def _offsets(rng: np.random.RandomState, shape: tuple[int, ...]) -> np.ndarray:
    """Fractional offsets up to 3 pixels, a few far outside the image, some on halves (a
    sample exactly between pixels, or on the last row)."""
    offset = _floats(rng, *shape, low=-3.0, high=3.0)
    flat = offset.reshape(-1)
    picks = rng.choice(flat.size, 3 * flat.size // 10, replace=False)
    flat[picks[: len(picks) // 3]] = rng.choice([-9.0, 9.0], len(picks) // 3)
    flat[picks[len(picks) // 3:]] = np.round(flat[picks[len(picks) // 3:]] * 2) / 2
    return offset


def deformable_op_cases(rng: np.random.RandomState) -> list[Case]:
    """(case, operator, attributes, inputs, with gradients) of the deformable_ops group."""
    conv = "_contrib_DeformableConvolution"
    modulated = "_contrib_ModulatedDeformableConvolution"
    plain = {"kernel": "(3, 3)", "pad": "(1, 1)", "num_filter": "3"}
    grouped = {"kernel": "(3, 2)", "stride": "(2, 1)", "dilate": "(1, 2)", "pad": "(1, 1)",
               "num_filter": "4", "num_group": "2", "num_deformable_group": "2",
               "no_bias": "True"}
    # Output sizes: plain keeps 5 x 6; grouped gives 3 x 6 on a 5 x 6 image.
    return [
        ("deform_plain", conv, plain,
         [_floats(rng, 1, 2, 5, 6), _offsets(rng, (1, 18, 5, 6)), _floats(rng, 3, 2, 3, 3),
          _floats(rng, 3)], True),
        ("deform_groups", conv, grouped,
         [_floats(rng, 2, 4, 5, 6), _offsets(rng, (2, 24, 3, 6)), _floats(rng, 4, 2, 3, 2)],
         True),
        ("deform_four_groups_stride", conv,
         {"kernel": "(2, 2)", "stride": "(2, 2)", "num_filter": "2",
          "num_deformable_group": "4"},
         [_floats(rng, 1, 4, 4, 5), _offsets(rng, (1, 32, 2, 2)), _floats(rng, 2, 4, 2, 2),
          _floats(rng, 2)], True),
        ("modulated_plain", modulated, plain,
         [_floats(rng, 1, 2, 5, 6), _offsets(rng, (1, 18, 5, 6)),
          _floats(rng, 1, 9, 5, 6, low=0.0), _floats(rng, 3, 2, 3, 3), _floats(rng, 3)],
         False),
        ("modulated_groups", modulated, grouped,
         [_floats(rng, 2, 4, 5, 6), _offsets(rng, (2, 24, 3, 6)),
          _floats(rng, 2, 12, 3, 6, low=0.0), _floats(rng, 4, 2, 3, 2)], False),
    ] + _psroi_cases(np.random.RandomState(16))


def _psroi_cases(rng: np.random.RandomState) -> list[Case]:
    """DeformablePSROIPooling; its own random stream leaves the cases above as they were."""
    op = "_contrib_DeformablePSROIPooling"
    # Rois on half pixels (rounded away from zero), crossing the map's edges, a point roi.
    rois = np.array([[0, 0, 0, 4, 4], [1, 1.5, 2.5, 6, 5], [0, -3, -2, 9, 8],
                     [1, 5, 4, 5, 4], [0, 2, -4, 7.5, 1]], "float32")
    return [
        # Two classes of trans (output_dim 4), part cells coarser than the 3 x 3 bins.
        ("dpsroi_trans", op,
         {"spatial_scale": "1.0", "output_dim": "4", "group_size": "3", "pooled_size": "3",
          "part_size": "2", "sample_per_part": "3", "trans_std": "0.3"},
         [_floats(rng, 2, 36, 6, 7), rois, _floats(rng, 5, 4, 2, 2, low=-1.5, high=1.5)],
         True),
        ("dpsroi_trans_scaled", op,
         {"spatial_scale": "0.5", "output_dim": "2", "group_size": "2", "pooled_size": "2",
          "sample_per_part": "2", "trans_std": "0.1"},
         [_floats(rng, 2, 8, 4, 5), rois * np.float32([1, 2, 2, 2, 2]),
          _floats(rng, 5, 2, 2, 2, low=-3.0, high=3.0)],
         True),
        ("dpsroi_no_trans", op,
         {"spatial_scale": "1.0", "output_dim": "2", "group_size": "2", "pooled_size": "3",
          "sample_per_part": "2", "no_trans": "True"},
         [_floats(rng, 2, 8, 6, 7), rois], True),
    ]
