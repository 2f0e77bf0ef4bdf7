"""Every differentiable operator's gradient through the executor, against central
finite differences of the executor's own forward, in float64.

`tests/ops/gradcheck.py` checks each kernel pair in isolation; this checks the
path users take: bind, forward, backward (the gradient pass, the memory plan,
the runner's copies). The objective is ``sum(output * cotangent)`` over the
outputs; for a loss head (SoftmaxOutput, the regression outputs, SVMOutput,
MakeLoss), whose backward is its loss gradient whatever the head gradient, it
is that loss (`LOSSES`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minimx as mx
from minimx.ops.elemwise import BINARY, SCALAR_OPS, UNARY
from minimx.ops.registry import canonical_ops
from tests import custom_ops  # noqa: F401  (registers the Custom case's operator)

# Input kinds: a shape draws normal values; ("away", shape) keeps |x| > 0.2 (kinks
# of relu, abs, leaky ...); ("pos", shape) draws from [0.5, 2]; ("index", shape, n)
# integers below n, which get no gradient; ("const", shape, v) v everywhere, no gradient.
CASES: list[tuple[str, dict[str, Any], list, dict[str, Any]]] = [
    ("Activation", {"act_type": "relu"}, [("away", (2, 3))], {}),
    ("Activation", {"act_type": "softsign"}, [(2, 3)], {}),
    ("BatchNorm", {"fix_gamma": False}, [(2, 3, 2)], {"is_train": True}),
    ("BatchNorm", {"fix_gamma": False, "use_global_stats": True}, [(2, 3, 2)], {}),
    ("Cast", {"dtype": "float64"}, [(2, 3)], {}),
    ("Concat", {"dim": 1}, [(2, 2), (2, 3)], {}),
    ("Convolution", {"kernel": (3, 3), "num_filter": 2, "pad": (1, 1)}, [(1, 2, 3, 3)], {}),
    ("Deconvolution", {"kernel": (2, 2), "stride": (2, 2), "num_filter": 2}, [(1, 2, 2, 2)],
     {}),
    ("Dropout", {"p": 0.5}, [(2, 3)], {}),
    ("Embedding", {"input_dim": 4, "output_dim": 3}, [("index", (2, 2), 4)], {}),
    ("Flatten", {}, [(2, 3, 2)], {}),
    ("FullyConnected", {"num_hidden": 2}, [(2, 3)], {}),
    ("InstanceNorm", {}, [(2, 2, 3)], {}),
    ("L2Normalization", {"mode": "instance"}, [(2, 3)], {}),
    ("LRN", {"nsize": 3}, [(1, 3, 2, 1)], {}),
    ("LayerNorm", {}, [(2, 3)], {}),
    ("LeakyReLU", {"act_type": "elu"}, [("away", (2, 3))], {}),
    ("LeakyReLU", {"act_type": "prelu"}, [("away", (2, 3))], {}),
    ("Pooling", {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}, [(1, 2, 4, 4)], {}),
    ("Pooling", {"kernel": (2, 2), "pool_type": "avg"}, [(1, 1, 3, 3)], {}),
    ("Reshape", {"shape": (3, -1)}, [(2, 3)], {}),
    ("SliceChannel", {"num_outputs": 2, "axis": 1}, [(2, 4)], {}),
    ("SoftmaxActivation", {}, [(2, 3)], {}),
    ("SoftmaxOutput", {}, [(3, 4), ("index", (3,), 4)], {}),
    # Loss heads: their backward is the gradient of the loss named in LOSSES.
    ("LinearRegressionOutput", {"grad_scale": 0.5}, [(3, 2), ("index", (3, 2), 3)], {}),
    ("LogisticRegressionOutput", {}, [(3, 2), ("index", (3, 2), 2)], {}),
    ("MAERegressionOutput", {}, [(3, 2), ("index", (3, 2), 3)], {}),
    ("SVMOutput", {"margin": 0.5}, [(3, 4), ("index", (3,), 4)], {}),
    ("MakeLoss", {"grad_scale": 2.0, "normalization": "batch"}, [(3, 2)], {}),
    ("Custom", {"op_type": "fixture_scaled_relu", "scale": 1.5}, [("away", (2, 3))], {}),
    ("UpSampling", {"scale": 2, "sample_type": "nearest"}, [(1, 2, 2, 2)], {}),
    ("_copy", {}, [(2, 3)], {}),
    ("_div_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("_minus_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("_mul_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("_plus_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("_rdiv_scalar", {"scalar": 1.5}, [("pos", (2, 3))], {}),
    ("_rminus_scalar", {"scalar": 1.5}, [(2, 3)], {}),
    ("abs", {}, [("away", (2, 3))], {}),
    ("add_n", {}, [(2, 3), (2, 3), (2, 3)], {}),
    ("amp_cast", {"dtype": "float32"}, [(2, 3)], {}),
    ("amp_multicast", {"num_outputs": 2}, [(2, 3), (3,)], {}),
    ("batch_dot", {}, [(2, 2, 3), (2, 3, 2)], {}),
    ("broadcast_add", {}, [(2, 3), (1, 3)], {}),
    ("broadcast_div", {}, [(2, 3), ("pos", (2, 1))], {}),
    ("broadcast_mul", {}, [(2, 3), (1, 3)], {}),
    ("broadcast_sub", {}, [(2, 1), (2, 3)], {}),
    ("clip", {"a_min": -0.1, "a_max": 0.1}, [("away", (2, 3))], {}),
    ("dot", {"transpose_b": True}, [(2, 3), (2, 3)], {}),
    ("elemwise_add", {}, [(2, 3), (2, 3)], {}),
    ("elemwise_div", {}, [(2, 3), ("pos", (2, 3))], {}),
    ("elemwise_mul", {}, [(2, 3), (2, 3)], {}),
    ("elemwise_sub", {}, [(2, 3), (2, 3)], {}),
    ("exp", {}, [(2, 3)], {}),
    ("expand_dims", {"axis": 1}, [(2, 3)], {}),
    ("log", {}, [("pos", (2, 3))], {}),
    ("log_softmax", {"axis": 1}, [(2, 3)], {}),
    ("max", {"axis": 1}, [(2, 3)], {}),
    ("mean", {"axis": 0}, [(2, 3)], {}),
    ("Pad", {"mode": "reflect", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1)}, [(1, 2, 3, 4)], {}),
    ("Pad", {"mode": "edge", "pad_width": (0, 0, 0, 0, 2, 0, 0, 3)}, [(1, 1, 2, 2)], {}),
    ("Pad", {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 1, 1, 1, 0, 2),
             "constant_value": 0.5}, [(1, 1, 2, 2, 2)], {}),
    ("depth_to_space", {"block_size": 2}, [(1, 8, 2, 3)], {}),
    ("space_to_depth", {"block_size": 2}, [(1, 2, 4, 2)], {}),
    ("hard_sigmoid", {"alpha": 0.3, "beta": 0.4}, [(2, 3)], {}),
    ("smooth_l1", {"scalar": 2.0}, [("away", (2, 3))], {}),
    ("diag", {"k": -1, "axis1": 2, "axis2": 0}, [(3, 2, 4)], {}),
    ("diag", {"k": 1}, [(3,)], {}),
    ("nanprod", {"axis": 1}, [("away", (2, 3))], {}),
    ("nansum", {"axis": 0, "keepdims": True}, [(2, 3)], {}),
    ("norm", {"axis": 1}, [(2, 3)], {}),
    ("norm", {"ord": 1}, [("away", (2, 3))], {}),
    ("prod", {"axis": 1}, [("away", (2, 3))], {}),
    ("min", {"axis": 1, "keepdims": True}, [(2, 3)], {}),
    ("negative", {}, [(2, 3)], {}),
    ("ones_like", {}, [(2, 3)], {}),
    ("relu", {}, [("away", (2, 3))], {}),
    ("sigmoid", {}, [(2, 3)], {}),
    ("slice_axis", {"axis": 1, "begin": 1, "end": 3}, [(2, 4)], {}),
    ("softmax", {}, [(2, 3)], {}),
    ("sqrt", {}, [("pos", (2, 3))], {}),
    ("square", {}, [(2, 3)], {}),
    ("sum", {"axis": (0, 1)}, [(2, 3)], {}),
    ("tanh", {}, [(2, 3)], {}),
    ("transpose", {"axes": (1, 0)}, [(2, 3)], {}),
    ("zeros_like", {}, [(2, 3)], {}),
    ("SwapAxis", {"dim1": 0, "dim2": 1}, [(2, 3)], {}),
    ("_arange", {"start": 1, "stop": 4, "dtype": "float64"}, [], {}),
    ("_contrib_arange_like", {"axis": 1}, [(2, 3)], {}),
    ("_full", {"shape": (2,), "value": 2, "dtype": "float64"}, [], {}),
    ("_ones", {"shape": (2, 3), "dtype": "float64"}, [], {}),
    ("_zeros", {"shape": (2, 3), "dtype": "float64"}, [], {}),
    ("argmax", {"axis": 1}, [(2, 4)], {}),
    ("argmax_channel", {}, [(2, 4, 3)], {}),
    ("argmin", {"axis": 0}, [(2, 4)], {}),
    ("argsort", {"dtype": "float64"}, [(2, 4)], {}),
    ("broadcast_axis", {"axis": (1,), "size": (3,)}, [(2, 1)], {}),
    ("broadcast_like", {}, [(1, 3), (2, 3)], {}),
    ("broadcast_to", {"shape": (2, 3)}, [(1, 3)], {}),
    ("one_hot", {"depth": 3, "dtype": "float64"}, [("index", (2,), 3)], {}),
    ("pick", {"axis": 1}, [(2, 3), ("index", (2,), 3)], {}),
    ("repeat", {"repeats": 2, "axis": 0}, [(2, 3)], {}),
    ("reverse", {"axis": (1,)}, [(2, 3)], {}),
    ("slice", {"begin": (None, 2), "end": (None, 0), "step": (1, -1)}, [(2, 4)], {}),
    ("slice_like", {"axes": (1,)}, [(2, 4), (2, 2)], {}),
    ("sort", {"is_ascend": False}, [(2, 4)], {}),
    ("squeeze", {}, [(2, 1, 3)], {}),
    ("stack", {"axis": 1}, [(2, 3), (2, 3)], {}),
    ("take", {"axis": 1}, [(2, 3), ("index", (2, 2), 3)], {}),
    ("tile", {"reps": (2, 1, 2)}, [(2, 3)], {}),
    ("topk", {"k": 2, "ret_typ": "value"}, [(2, 4)], {}),
    ("where", {}, [("index", (2, 3), 2), (2, 3), (2, 3)], {}),
    # Model operators (issue 15). MXNet gives box_iou/encode/decode zero gradients: their
    # inputs are index-valued here, so only the pass itself is checked.
    ("_contrib_box_nms", {"topk": 3}, [(1, 4, 6)], {}),
    ("_contrib_box_iou", {}, [("index", (2, 4), 3), ("index", (3, 4), 3)], {}),
    ("_contrib_box_encode", {}, [("index", (1, 2), 1), ("index", (1, 2), 2),
                                 ("index", (1, 2, 4), 3), ("index", (1, 2, 4), 3),
                                 ("index", (4,), 2), ("index", (4,), 2)], {}),
    ("_contrib_box_decode", {}, [("index", (1, 2, 4), 2), ("index", (1, 2, 4), 3)], {}),
    ("_contrib_bipartite_matching", {"threshold": 0.1}, [(2, 3, 4)], {}),   # zero, as MXNet
    ("softmax_cross_entropy", {}, [(3, 4), ("index", (3,), 4)], {}),
    ("_contrib_ROIAlign", {"pooled_size": (2, 2), "spatial_scale": 1.0},
     [(1, 2, 4, 4), ("index", (2, 5), 1)], {}),
    ("ROIPooling", {"pooled_size": (2, 2), "spatial_scale": 1.0},
     [(1, 2, 4, 4), ("index", (2, 5), 1)], {}),
    ("_contrib_BilinearResize2D", {"height": 5, "width": 2}, [(1, 2, 3, 3)], {}),
    ("_contrib_AdaptiveAvgPooling2D", {"output_size": (2, 3)}, [(1, 2, 5, 4)], {}),
    ("SequenceMask", {"use_sequence_length": True}, [(3, 2, 2), ("index", (2,), 4)], {}),
    ("SequenceLast", {}, [(3, 2, 2)], {}),
    ("SequenceReverse", {"use_sequence_length": True}, [(3, 2, 2), ("index", (2,), 4)], {}),
    ("_contrib_interleaved_matmul_selfatt_qk", {"heads": 2}, [(3, 2, 12)], {}),
    ("_contrib_interleaved_matmul_selfatt_valatt", {"heads": 2}, [(3, 2, 12), (4, 3, 3)], {}),
    ("_contrib_interleaved_matmul_encdec_qk", {"heads": 2}, [(3, 2, 4), (2, 2, 8)], {}),
    ("_contrib_interleaved_matmul_encdec_valatt", {"heads": 2}, [(2, 2, 8), (4, 3, 2)], {}),
    ("_contrib_div_sqrt_dim", {}, [(2, 4)], {}),
    ("RNN", {"mode": "lstm", "state_size": 2, "num_layers": 1, "bidirectional": True,
             "state_outputs": True}, [(3, 2, 2)], {}),
    ("_rnn_param_concat", {"num_args": 2, "dim": 0}, [(3,), (2,)], {}),
    # Operators added after issue 15 (indices distinct where a repeat would overwrite).
    ("softmin", {"axis": 0}, [(2, 3)], {}),
    ("softsign", {}, [(2, 3)], {}),
    ("_hypot", {}, [("away", (2, 3)), (2, 3)], {}),
    ("broadcast_hypot", {}, [("away", (2, 3)), (1, 3)], {}),
    ("_hypot_scalar", {"scalar": 0.5}, [(2, 3)], {}),
    ("GroupNorm", {"num_groups": 2}, [(2, 4, 3)], {}),
    ("gather_nd", {}, [(3, 4), ("index", (1, 2, 2), 3)], {}),
    ("scatter_nd", {"shape": (9, 3)}, [(2, 3), ("index", (1, 2), 9)], {}),
    ("reshape_like", {"lhs_begin": 1}, [(2, 6), (3, 2)], {}),
    ("_ravel_multi_index", {"shape": (3, 4)}, [("index", (2, 3), 3)], {}),
    ("_unravel_index", {"shape": (3, 4)}, [("index", (3,), 12)], {}),
    ("_contrib_index_copy", {}, [(9, 2), ("index", (2,), 9), (2, 2)], {}),
    ("Crop", {"num_args": 1, "h_w": (2, 2), "offset": (1, 0)}, [(1, 1, 3, 4)], {}),
    ("cast_storage", {"stype": "default"}, [(2, 3)], {}),
    ("_image_normalize", {"mean": (0.1, 0.2, 0.3), "std": (0.5, 2.0, 4.0)}, [(2, 3, 2, 2)], {}),
    ("_image_crop", {"x": 1, "y": 0, "width": 2, "height": 2}, [(3, 4, 3)], {}),
    ("_linalg_gemm", {"transpose_a": True, "alpha": 1.5, "beta": 0.5},
     [(3, 2), (3, 4), (2, 4)], {}),
    ("_linalg_gemm2", {"axis": 0}, [(2, 3, 4), (4, 3, 2)], {}),
    ("_linalg_potri", {}, [("pos", (2, 2))], {}),
    ("_linalg_trsm", {"rightside": True, "lower": False}, [("pos", (3, 3)), (2, 3)], {}),
    ("_linalg_trmm", {"transpose": True}, [(3, 3), (3, 2)], {}),
    ("_linalg_syrk", {"alpha": 0.5}, [(2, 3)], {}),
    ("_linalg_inverse", {}, [("pos", (2, 2))], {}),
    ("_linalg_det", {}, [(2, 3, 3)], {}),
    ("_linalg_slogdet", {}, [(3, 3)], {}),
    ("_linalg_sumlogdiag", {}, [("pos", (2, 2))], {}),
    ("_linalg_extractdiag", {"offset": 1}, [(3, 3)], {}),
    ("_linalg_makediag", {"offset": -1}, [(2, 2)], {}),
    ("_linalg_gelqf", {}, [(2, 2, 3)], {}),
    ("_linalg_extracttrian", {"offset": 1}, [(3, 3)], {}),
    ("_linalg_maketrian", {"lower": False}, [(2, 6)], {}),
    ("CTCLoss", {"blank_label": "last"}, [(5, 2, 4), ("index", (2, 2), 3)], {}),
    ("CTCLoss", {}, [(4, 3, 3), ("index", (3, 2), 3)], {}),
    ("im2col", {"kernel": (2, 2), "stride": (1, 2), "pad": (1, 0)}, [(1, 2, 3, 4)], {}),
    ("im2col", {"kernel": (2,), "dilate": (2,)}, [(2, 1, 5)], {}),
    ("col2im", {"output_size": (3, 4), "kernel": (2, 2), "dilate": (1, 2)}, [(1, 8, 4)], {}),
    ("_np_cumsum", {"axis": 1}, [(2, 3)], {}),
    ("_np_cumsum", {}, [(2, 3)], {}),
    ("moments", {"axes": (0, 2)}, [(2, 3, 2)], {}),
    ("moments", {"axes": (1,), "keepdims": True}, [(2, 3)], {}),
    # Grid positions and displacements land between pixels, away from the kinks.
    ("GridGenerator", {"transform_type": "affine", "target_shape": (3, 4)}, [(2, 6)], {}),
    ("GridGenerator", {"transform_type": "warp"}, [(1, 2, 3, 4)], {}),
    ("BilinearSampler", {}, [(1, 2, 4, 5), ("range", (1, 2, 3, 3), -1.3, 1.3)], {}),
    ("SpatialTransformer", {"target_shape": (3, 2), "transform_type": "affine",
                            "sampler_type": "bilinear"},
     [(2, 2, 4, 3), ("range", (2, 6), -0.9, 0.9)], {}),
    ("Correlation", {"kernel_size": 3, "max_displacement": 1, "pad_size": 1},
     [(1, 2, 3, 4), (1, 2, 3, 4)], {}),
    ("Correlation", {"max_displacement": 2, "stride2": 2, "is_multiply": False},
     [(1, 2, 5, 5), (1, 2, 5, 5)], {}),
    # The detection examples' contrib operators. MultiBox* and the proposals have zero
    # gradients in MXNet: their inputs are index-valued here, so only the pass is checked.
    ("_contrib_MultiBoxPrior", {"sizes": (0.5, 0.25), "ratios": (1, 2)},
     [("index", (1, 1, 2, 3), 1)], {}),
    ("_contrib_MultiBoxDetection", {}, [("index", (1, 3, 4), 2), ("index", (1, 16), 2),
                                        ("index", (1, 4, 4), 2)], {}),
    ("_contrib_MultiBoxTarget", {}, [("index", (1, 4, 4), 2), ("index", (1, 2, 5), 2),
                                     ("index", (1, 3, 4), 2)], {}),
    ("_contrib_Proposal", {"scales": (2,), "ratios": (1,), "feature_stride": 4,
                           "rpn_post_nms_top_n": 3},
     [("index", (1, 2, 2, 2), 2), ("index", (1, 4, 2, 2), 2), ("index", (1, 3), 2)], {}),
    ("_contrib_MultiProposal", {"scales": (2,), "ratios": (1,), "rpn_post_nms_top_n": 2},
     [("index", (2, 2, 2, 2), 2), ("index", (2, 4, 2, 2), 2), ("index", (2, 3), 2)], {}),
    ("_contrib_PSROIPooling", {"spatial_scale": 1.0, "output_dim": 1, "pooled_size": 2},
     [(3, 4, 3, 3), ("index", (3, 5), 3)], {}),
    ("_contrib_SyncBatchNorm", {"fix_gamma": False, "key": "bn"}, [(2, 3, 2)],
     {"is_train": True}),
    # Normal offsets: no sample lands on a pixel edge, where bilinear sampling has a kink.
    ("_contrib_DeformableConvolution", {"kernel": (2, 2), "num_filter": 2, "pad": (1, 1),
                                        "num_deformable_group": 2},
     [(1, 2, 3, 3), (1, 16, 4, 4)], {}),
    ("_contrib_ModulatedDeformableConvolution", {"kernel": (2, 2), "num_filter": 2},
     [(1, 2, 3, 3), (1, 8, 2, 2), (1, 4, 2, 2)], {}),
    # Normal trans: no sample lands on a pixel edge or the [-0.5, size - 0.5] window's.
    ("_contrib_DeformablePSROIPooling", {"spatial_scale": 1.0, "output_dim": 2,
                                         "group_size": 2, "pooled_size": 2,
                                         "sample_per_part": 2, "trans_std": 0.1},
     [(3, 8, 3, 3), ("index", (3, 5), 3), (3, 2, 2, 2)], {}),
    ("_contrib_BatchNormWithReLU", {"fix_gamma": False}, [("away", (2, 3, 2))],
     {"is_train": True}),
    # The samplers send zero gradients (their parameters are constants here, since
    # finite differences of fresh draws mean nothing), so only the pass is checked; the
    # densities differentiate in all their inputs.
    *[(f"_random_{d}", {"shape": (2, 3)}, [], {}) for d in (
        "uniform", "normal", "gamma", "exponential", "poisson", "negative_binomial",
        "generalized_negative_binomial")],
    ("_random_randint", {"low": -2, "high": 3, "shape": (4,)}, [], {}),
    *[(f"_random_{d}_like", {}, [("index", (2, 3), 3)], {}) for d in (
        "uniform", "normal", "gamma", "exponential", "poisson", "negative_binomial",
        "generalized_negative_binomial")],
    *[(f"_sample_{d}", {"shape": (2,), "dtype": "float64"},
       [("const", (3,), 0.5)] * count, {}) for d, count in (
        ("uniform", 2), ("normal", 2), ("gamma", 2), ("exponential", 1), ("poisson", 1),
        ("negative_binomial", 2), ("generalized_negative_binomial", 2))],
    ("_sample_multinomial", {"shape": (4,), "get_prob": True, "dtype": "float64"},
     [("const", (2, 4), 0.25)], {}),
    ("_random_pdf_uniform", {}, [(2, 3), ("range", (2,), -4, -3), ("range", (2,), 3, 4)], {}),
    ("_random_pdf_normal", {"is_log": True}, [(2, 3), (2,), ("pos", (2,))], {}),
    ("_random_pdf_normal", {}, [(2, 3, 2), (2, 3), ("pos", (2, 3))], {}),
    ("_random_pdf_gamma", {}, [("pos", (2, 3)), ("pos", (2,)), ("pos", (2,))], {}),
    ("_random_pdf_exponential", {"is_log": True}, [("pos", (2, 3)), ("pos", (2,))], {}),
    ("_random_pdf_poisson", {}, [("index", (2, 3), 5), ("pos", (2,))], {}),
    ("_random_pdf_negative_binomial", {}, [("index", (2, 3), 5), ("pos", (2,)),
                                           ("range", (2,), 0.2, 0.8)], {}),
    ("_random_pdf_generalized_negative_binomial", {"is_log": True},
     [("index", (2, 3), 5), ("pos", (2,)), ("pos", (2,))], {}),
    ("_random_pdf_dirichlet", {}, [("range", (2, 2, 3), 0.1, 0.6), ("pos", (2, 3))], {}),
    ("BatchNorm_v1", {"fix_gamma": False}, [(2, 3, 2, 2)], {"is_train": True}),
    ("Convolution_v1", {"kernel": (3, 3), "num_filter": 2, "pad": (1, 1)}, [(1, 2, 3, 3)], {}),
    ("Pooling_v1", {"kernel": (2, 2), "pool_type": "avg", "pooling_convention": "full",
                    "stride": (2, 2)}, [(1, 2, 3, 3)], {}),
    ("Pooling_v1", {"kernel": (2, 2), "pool_type": "max"}, [(1, 2, 3, 3)], {}),
    ("Pooling_v1", {"kernel": (2, 2), "pool_type": "max", "pad": (1, 1)}, [(1, 2, 3, 3)], {}),
    ("_contrib_quadratic", {"a": 0.5, "b": -2.0, "c": 1.0}, [(2, 3)], {}),
    ("_identity_with_attr_like_rhs", {}, [(2, 3), (2, 3)], {}),
    ("_split_v2", {"indices": (0, 1), "axis": 1}, [(2, 3)], {}),
    ("_square_sum", {"axis": 1, "keepdims": True}, [(2, 3)], {}),
]
# Operators holding a subgraph differentiate through their inner graph; the
# partitioner's properties (tests/subgraph) compare their gradients.
# BlockGrad's zero gradient is no derivative of its (identity) forward, and the int64
# outputs of shape_array and size_array take no float head gradients; tests/ops checks
# their (zero) gradients. The gradients of potrf and syevd are MXNet's, for a symmetric
# input (tests/ops/test_la_op.py checks them along symmetric directions).
NOT_HERE = {op.name for op in canonical_ops()
            if op.name == "_subgraph_op" or op.name.startswith("_sg_")} | {
    # their gradients are MXNet's in tests/ops/test_control_flow.py
    "_foreach", "_while_loop", "_cond",
    "BlockGrad", "shape_array", "size_array", "_linalg_potrf", "_linalg_syevd",
    # gradients that are not the forward's derivative by design (MXNet's, checked in
    # tests/ops/test_gap_ops.py's fixtures), and creation operators without inputs
    "make_loss", "_contrib_gradientmultiplier", "_contrib_round_ste", "_contrib_sign_ste",
    "_linspace", "_eye", "_zeros_without_dtype", "_contrib_index_array",
    # imperative only (graphs refuse it): its gradient is MXNet's under autograd in
    # tests/ops/test_boolean_mask.py
    "_contrib_boolean_mask",
    # MXNet's gradient is lda's, alpha's and beta's alone (zero for the state and lags,
    # which the likelihood depends on): checked against MXNet in tests/ops/test_late_ops.py
    "_contrib_hawkesll",
    # its backward adds a sparseness penalty to the identity's gradient and updates its
    # moving average: checked against MXNet's steps in tests/ops/test_final_gap_ops.py
    "IdentityAttachKLSparseReg",
    # MXNet's `_copy` gradient, not the derivative (a flip's comes back unflipped; to_tensor's
    # and resize's fail unless the shape stays): checked in tests/ops/test_image_ops.py
    *(f"_image_{name}" for name in (
        "to_tensor", "resize", "flip_left_right", "flip_top_bottom", "random_flip_left_right",
        "random_flip_top_bottom", "random_brightness", "random_contrast", "random_saturation",
        "random_hue", "random_color_jitter", "adjust_lighting", "random_lighting"))}
# The elementwise tables: each row not above, on inputs inside its domain.
_DOMAINS = {"arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9),
            "arccosh": (1.2, 3.0), "tan": (-1.2, 1.2), "log1p": (-0.5, 2.0),
            "erfinv": (-0.9, 0.9)}
_POSITIVE = {"rsqrt", "rcbrt", "cbrt", "reciprocal", "log2", "log10", "gamma", "gammaln"}
_CASE_NAMES = {c[0] for c in CASES}
CASES += [(name, {}, [("range", (2, 3), *_DOMAINS[name]) if name in _DOMAINS
                      else ("pos", (2, 3)) if name in _POSITIVE else (2, 3)], {})
          for name in sorted(UNARY) if name not in _CASE_NAMES | NOT_HERE]
CASES += [(name, {}, [("pos", (2, 3)) if key == "power" else (2, 3), shape], {})
          for key in sorted(BINARY) if f"broadcast_{key}" not in _CASE_NAMES
          for name, shape in ((f"_{key}", (2, 3)), (f"broadcast_{key}", (1, 3)))]
CASES += [(name, {"scalar": 1.5 if name == "_rpower_scalar" else 0.3},
           [("pos", (2, 3)) if name == "_power_scalar" else (2, 3)], {})
          for name in sorted(SCALAR_OPS) if name not in _CASE_NAMES]


def _cross_entropy(out: np.ndarray, label: np.ndarray) -> float:
    return -float(np.sum(np.log(out[np.arange(len(label)), label.astype(int)])))


def _svm_l2(out: np.ndarray, label: np.ndarray, margin: float = 0.5) -> float:
    is_label = np.arange(out.shape[1]) == label.astype(int)[:, None]
    return float(np.sum(np.maximum(0, margin - np.where(is_label, out, -out)) ** 2))


# The loss each loss head's backward is the gradient of, as a function of its output
# and label (the cases' parameters are built in: grad_scale, 2 outputs per sample).
LOSSES = {
    "SoftmaxOutput": _cross_entropy,
    "LinearRegressionOutput": lambda out, label: 0.5 / 2 * float(np.sum((out - label) ** 2)) / 2,
    "LogisticRegressionOutput": lambda out, label: -float(np.sum(
        label * np.log(out) + (1 - label) * np.log(1 - out))) / 2,
    "MAERegressionOutput": lambda out, label: float(np.sum(np.abs(out - label))) / 2,
    "SVMOutput": _svm_l2,
    "MakeLoss": lambda out, label: 2.0 * float(np.sum(out)) / len(out),
}


def draw(spec: Any, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """A value for an input spec, and whether it takes a gradient."""
    if isinstance(spec[0], int):
        return rng.normal(size=spec), True
    kind, shape = spec[0], spec[1]
    if kind == "away":
        x = rng.normal(size=shape)
        return np.sign(x) * (np.abs(x) + 0.2), True
    if kind == "pos":
        return rng.uniform(0.5, 2.0, size=shape), True
    if kind == "range":
        return rng.uniform(spec[2], spec[3], size=shape), True
    if kind == "const":
        return np.full(shape, spec[2], np.float64), False
    return rng.integers(0, spec[2], size=shape).astype(np.float64), False


def test_every_differentiable_operator_has_a_case():
    differentiable = {op.name for op in canonical_ops() if op.backward is not None}
    assert differentiable - NOT_HERE - {c[0] for c in CASES} == set()


@pytest.mark.parametrize("op_name, params, specs, options", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_gradient_matches_finite_differences(op_name, params, specs, options):
    rng = np.random.default_rng(0)
    is_train = options.get("is_train", False)
    inputs = [mx.sym.Variable(f"in{i}") for i in range(len(specs))]
    sym = getattr(mx.sym, op_name)(*inputs, name="op", **params)
    values, differentiable = {}, set()
    for i, spec in enumerate(specs):
        values[f"in{i}"], grad = draw(spec, rng)
        if grad:
            differentiable.add(f"in{i}")
    shapes = {n: v.shape for n, v in values.items()}
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    for name, shape in zip(sym.list_arguments(), arg_shapes, strict=True):
        if name not in values:
            values[name] = rng.uniform(0.5, 1.5, shape)  # weights, gamma, beta
            differentiable.add(name)
    reqs = {n: "write" if n in differentiable else "null" for n in sym.list_arguments()}
    ex = sym.simple_bind(mx.cpu(), grad_req=reqs,
                         type_dict={n: "float64" for n in sym.list_arguments()}, **shapes)
    for name, shape in zip(sym.list_auxiliary_states(), aux_shapes, strict=True):
        ex.aux_dict[name][:] = rng.uniform(0.5, 1.5, shape)
    loss = LOSSES.get(op_name)
    cotangents = [rng.normal(size=o.shape) for o in ex.outputs]

    def objective() -> float:
        for name, value in values.items():
            ex.arg_dict[name][:] = value
        outs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
        if loss:
            return loss(outs[0], values.get("in1"))
        return sum(float(np.sum(o * c)) for o, c in zip(outs, cotangents, strict=True))

    objective()
    ex.backward(None if loss else [mx.nd.array(c, dtype=np.float64) for c in cotangents])
    grads = {n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None}
    eps = 1e-6
    for name in sorted(differentiable):
        base = values[name]
        numeric = np.zeros_like(base)
        for j in np.ndindex(base.shape):
            original = base[j]
            base[j] = original + eps
            up = objective()
            base[j] = original - eps
            numeric[j] = (up - objective()) / (2 * eps)
            base[j] = original
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{op_name} {params}: gradient of {name}")
