"""Each operator translation, on a small graph: onnxruntime's outputs of the exported
file against minimx's numpy outputs, for the parameters MXNet models use."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import minimx as mx
from minimx.onnx.registry import TRANSLATIONS

S = mx.sym
x, y = S.var("x"), S.var("y")
RNG = np.random.default_rng(7)


def run_both(sym: mx.sym.Symbol, inputs: dict[str, np.ndarray], tmp_path: Path,
             params: dict[str, np.ndarray] | None = None, **export_args
             ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(onnxruntime's, minimx's) outputs of `sym` on `inputs`, exported with `params`."""
    params = params or {}
    path = mx.onnx.export_model(sym, params, [v.shape for v in inputs.values()],
                                [v.dtype for v in inputs.values()],
                                str(tmp_path / "m.onnx"), **export_args)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, inputs)
    known = {**inputs, **params}
    arg_shapes, _, _ = sym.infer_shape(**{k: v.shape for k, v in known.items()})
    known.update({n: np.zeros(s, np.float32) for n, s in
                  zip(sym.list_arguments(), arg_shapes, strict=True) if n not in known})
    values = {n: mx.nd.array(v, dtype=v.dtype) for n, v in known.items()}
    args = {n: values[n] for n in sym.list_arguments()}
    aux = {n: values[n] for n in sym.list_auxiliary_states()}
    want = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null").forward(is_train=False)
    return got, [w.asnumpy() for w in want]


def check(sym: mx.sym.Symbol, inputs: dict[str, np.ndarray], tmp_path: Path,
          params: dict[str, np.ndarray] | None = None, **export_args) -> None:
    got, want = run_both(sym, inputs, tmp_path, params, **export_args)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# (graph, input shapes) for one node of each translated operator
CASES: dict[str, tuple[Callable[[], mx.sym.Symbol], dict[str, tuple[int, ...]]]] = {
    "pool_full_avg": (lambda: S.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                        pool_type="avg", pooling_convention="full"),
                      {"x": (1, 2, 8, 8)}),
    "pool_full_avg_no_pad_count": (
        lambda: S.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                          pooling_convention="full", count_include_pad=False),
        {"x": (1, 2, 8, 8)}),
    "pool_full_max": (lambda: S.Pooling(x, kernel=(3, 3), stride=(2, 2),
                                        pooling_convention="full"), {"x": (1, 2, 8, 8)}),
    "pool_valid_sum": (lambda: S.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="sum"),
                       {"x": (1, 2, 6, 6)}),
    "pool_1d_avg": (lambda: S.Pooling(x, kernel=(3,), stride=(2,), pad=(1,), pool_type="avg"),
                    {"x": (2, 3, 9)}),
    "pool_lp": (lambda: S.Pooling(x, kernel=(2, 2), stride=(1, 1), pool_type="lp", p_value=2),
                {"x": (1, 2, 5, 5)}),
    "pool_global_lp": (lambda: S.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="lp",
                                         p_value=2), {"x": (1, 2, 5, 5)}),
    # MXNet's p 1 and 3 sum signed powers (ONNX's LpPool |x| ** p): negative outputs too
    "pool_lp1": (lambda: S.Pooling(x, kernel=(2, 2), stride=(1, 1), pool_type="lp", p_value=1),
                 {"x": (1, 2, 5, 5)}),
    "pool_lp3": (lambda: S.Pooling(x, kernel=(3, 2), stride=(2, 1), pad=(1, 0), pool_type="lp",
                                   p_value=3), {"x": (1, 2, 5, 5)}),
    "pool_global_lp3": (lambda: S.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="lp",
                                          p_value=3), {"x": (2, 3, 4, 4)}),
    "pool_global_max": (lambda: S.Pooling(x, kernel=(1, 1), global_pool=True),
                        {"x": (2, 3, 5, 4)}),
    "pool_global_sum": (lambda: S.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="sum"),
                        {"x": (2, 3, 5, 4)}),
    "conv_grouped_dilated": (
        lambda: S.Convolution(x, kernel=(3, 3), num_filter=4, num_group=2, dilate=(2, 2),
                              pad=(2, 1), stride=(1, 2), name="conv"),
        {"x": (1, 4, 9, 9), "conv_weight": (4, 2, 3, 3), "conv_bias": (4,)}),
    "conv_1d": (lambda: S.Convolution(x, kernel=(3,), num_filter=2, no_bias=True, name="c"),
                {"x": (2, 3, 7), "c_weight": (2, 3, 3)}),
    "deconv": (lambda: S.Deconvolution(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1),
                                       num_filter=4, num_group=2, no_bias=False, name="d"),
               {"x": (1, 4, 5, 5), "d_weight": (4, 2, 3, 3), "d_bias": (4,)}),
    "fc_flatten": (lambda: S.FullyConnected(x, num_hidden=5, name="fc"),
                   {"x": (2, 3, 2, 2), "fc_weight": (5, 12), "fc_bias": (5,)}),
    "fc_no_flatten": (lambda: S.FullyConnected(x, num_hidden=5, flatten=False, no_bias=True,
                                               name="fc"), {"x": (2, 3, 4), "fc_weight": (5, 4)}),
    "layer_norm": (lambda: S.LayerNorm(x, name="ln"),
                   {"x": (2, 3, 6), "ln_gamma": (6,), "ln_beta": (6,)}),
    "layer_norm_axis1": (lambda: S.LayerNorm(x, axis=1, eps=1e-3, name="ln"),
                         {"x": (2, 3, 4, 5), "ln_gamma": (3,), "ln_beta": (3,)}),
    "layer_norm_axis_neg2": (lambda: S.LayerNorm(x, axis=-2, name="ln"),
                             {"x": (2, 3, 6), "ln_gamma": (3,), "ln_beta": (3,)}),
    "softmax_temperature": (lambda: S.softmax(x, axis=1, temperature=2.0), {"x": (2, 3, 4)}),
    "softmax_length": (lambda: S.softmax(x, y, axis=-1, use_length=True, dtype="float64"),
                       {"x": (3, 2, 4), "y": (3, 2)}),
    "log_softmax": (lambda: S.log_softmax(x), {"x": (2, 3, 4)}),
    "softmax_output": (lambda: S.SoftmaxOutput(x, name="softmax"), {"x": (2, 3, 2, 2)}),
    "softmax_output_multi": (lambda: S.SoftmaxOutput(x, multi_output=True, name="softmax"),
                             {"x": (2, 3, 2, 2)}),
    "softmax_activation": (lambda: S.SoftmaxActivation(x), {"x": (2, 3, 2)}),
    "pad": (lambda: S.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 2, 2, 0)),
            {"x": (1, 2, 5, 4)}),
    "upsampling": (lambda: S.UpSampling(x, scale=2, sample_type="nearest"),
                   {"x": (1, 2, 3, 4)}),
    "lrn": (lambda: S.LRN(x, nsize=3, alpha=0.1, beta=0.75, knorm=2.0), {"x": (1, 5, 3, 3)}),
    "softmax_activation_channel": (lambda: S.SoftmaxActivation(x, mode="channel"),
                                   {"x": (2, 3, 2)}),
    "prelu": (lambda: S.LeakyReLU(x, act_type="prelu", name="p"),
              {"x": (2, 3, 4, 4), "p_gamma": (3,)}),
    "reshape_codes": (lambda: S.Reshape(x, shape=(0, -3, -2)), {"x": (2, 3, 4, 5)}),
    "reshape_split": (lambda: S.Reshape(x, shape=(-4, 1, 2, -2)), {"x": (2, 3, 4)}),
    "reshape_reverse": (lambda: S.Reshape(x, shape=(-1, 0), reverse=True), {"x": (2, 3, 4)}),
    "transpose": (lambda: S.transpose(x), {"x": (2, 3, 4)}),
    "transpose_axes": (lambda: S.transpose(x, axes=(0, 2, 1)), {"x": (2, 3, 4)}),
    "swapaxes": (lambda: S.SwapAxis(x, dim1=0, dim2=2), {"x": (2, 3, 4)}),
    "expand_dims": (lambda: S.expand_dims(x, axis=-1), {"x": (2, 3)}),
    "slice_axis": (lambda: S.slice_axis(x, axis=1, begin=-3, end=None), {"x": (2, 5, 3)}),
    "sum_keepdims": (lambda: S.sum(x, axis=(1, 2), keepdims=True), {"x": (2, 3, 4)}),
    "mean_exclude": (lambda: S.mean(x, axis=1, exclude=True), {"x": (2, 3, 4)}),
    "max_all": (lambda: S.max(x), {"x": (2, 3, 4)}),
    "min_axis": (lambda: S.min(x, axis=-1), {"x": (2, 3, 4)}),
    "clip": (lambda: S.clip(x, a_min=-0.5, a_max=0.7), {"x": (3, 4)}),
    "concat": (lambda: S.Concat(x, y, dim=2), {"x": (2, 3, 4), "y": (2, 3, 1)}),
    "add_n": (lambda: S.add_n(x, y, x), {"x": (2, 3), "y": (2, 3)}),
    "broadcast": (lambda: S.broadcast_maximum(x, y) * S.broadcast_sub(x, y),
                  {"x": (2, 3), "y": (1, 3)}),
    "broadcasts": (lambda: S.broadcast_div(S.broadcast_add(x, y), S.broadcast_mul(y, y) + 1)
                   - S.broadcast_power(S.abs(x), S.broadcast_minimum(x, y)),
                   {"x": (2, 3), "y": (1, 3)}),
    "binaries": (lambda: (x + y) * (x - y) / (y * y + 1) + S.maximum(x, y)
                 - S.minimum(x, y) + S.power(S.abs(x) + 0.5, y), {"x": (2, 3), "y": (2, 3)}),
    "scalars": (lambda: (3.0 - x) / 2 + 1.5 / (x * x + 1) - S.maximum(x, 0.2) ** 2
                + S.minimum(x * 2, 0.1) - (x - 1), {"x": (3, 4)}),
    "rpower": (lambda: 2.0 ** x, {"x": (3, 4)}),
    "identities": (lambda: S.Flatten(S.BlockGrad(S.Dropout(S.identity(x), p=0.5))),
                   {"x": (2, 3, 2)}),
    "cast": (lambda: S.Cast(x, dtype="float16"), {"x": (2, 3)}),
    "comparisons": (lambda: (x > 0.2) + S.broadcast_lesser_equal(x, y) * 2
                    + S._equal(x, x) * 4 + S._not_equal_scalar(x, scalar=0.0) * 8
                    + (x >= y) - S.broadcast_greater(x, y) + S.broadcast_not_equal(x, y)
                    + S._lesser_scalar(x, scalar=0.1) + S._greater_equal_scalar(x, scalar=0.)
                    + S._lesser_equal_scalar(x, scalar=0.) + S._equal_scalar(x, scalar=1.)
                    + S.broadcast_equal(x, y) + S._greater(x, x) + S._lesser(x, x)
                    + S.broadcast_greater_equal(x, y) + S._lesser_equal(x, x)
                    + S.broadcast_lesser(x, y) + S._greater_equal(x, x)
                    + S._not_equal(x, x) - S.broadcast_lesser_equal(y, x),
                    {"x": (2, 3), "y": (2, 3)}),
    "where": (lambda: S.where(x > 0, x, y), {"x": (2, 3), "y": (2, 3)}),
    # a 1-D condition picks whole rows, as MXNet's
    "where_rows": (lambda: S.where(S.sum(x, axis=(1, 2)) > 0, x, y),
                   {"x": (3, 2, 4), "y": (3, 2, 4)}),
    "fill_like": (lambda: S.zeros_like(x) + S.ones_like(x) * 3, {"x": (2, 3)}),
    "creation": (lambda: x + S._zeros(shape=(2, 6)) + S._ones(shape=(2, 6))
                 + S._full(shape=(2, 6), value=0.5),
                 {"x": (2, 6)}),
    "arange_two_outputs": (lambda: S.Group([y * S._arange(start=1, stop=4, repeat=2),
                                            S.relu(y)]), {"y": (6,)}),
    "arange_one_bound": (lambda: x * S._arange(start=6), {"x": (6,)}),
    "shape_array": (lambda: S.shape_array(x), {"x": (2, 3, 4)}),
    "l2_instance": (lambda: S.L2Normalization(x), {"x": (2, 3, 4)}),
    "l2_channel": (lambda: S.L2Normalization(x, mode="channel"), {"x": (2, 3, 4)}),
    "l2_spatial": (lambda: S.L2Normalization(x, mode="spatial"), {"x": (2, 3, 4, 2)}),
    "adaptive_global": (lambda: S._contrib_AdaptiveAvgPooling2D(x, output_size=1),
                        {"x": (1, 2, 5, 7)}),
    "adaptive_even": (lambda: S._contrib_AdaptiveAvgPooling2D(x, output_size=(2, 3)),
                      {"x": (1, 2, 4, 9)}),
    "resize_align": (lambda: S._contrib_BilinearResize2D(x, height=9, width=7),
                     {"x": (1, 2, 4, 5)}),
    "resize_half_pixel": (lambda: S._contrib_BilinearResize2D(x, height=8, width=3,
                                                             align_corners=False),
                          {"x": (1, 2, 4, 5)}),
    "resize_like": (lambda: S._contrib_BilinearResize2D(x, y, mode="like"),
                    {"x": (1, 2, 4, 5), "y": (1, 1, 7, 6)}),
    "split": (lambda: S.split(x, num_outputs=3, axis=1), {"x": (2, 6, 2)}),
    "split_squeeze": (lambda: S.split(x, num_outputs=2, axis=-1, squeeze_axis=True),
                      {"x": (2, 3, 2)}),
    "split_v2_indices": (lambda: S.split_v2(x, (2, 5), axis=1), {"x": (2, 6, 2)}),
    "split_v2_sections": (lambda: S.split_v2(x, 3, axis=-1), {"x": (2, 2, 6)}),
    "split_v2_squeeze": (lambda: S.split_v2(x, (1, 2), axis=1, squeeze_axis=True),
                         {"x": (2, 3, 2)}),
    "stack": (lambda: S.stack(x, y, axis=1), {"x": (2, 3), "y": (2, 3)}),
    "tile": (lambda: S.tile(x, reps=(2, 1, 3)), {"x": (2, 3)}),
    "tile_short": (lambda: S.tile(x, reps=(2,)), {"x": (2, 3)}),
    "broadcast_axis": (lambda: S.broadcast_axis(x, axis=(0, 2), size=(3, 4)), {"x": (1, 2, 1)}),
    "broadcast_to": (lambda: S.broadcast_to(x, shape=(0, 3, 4)), {"x": (2, 1, 4)}),
    "reverse": (lambda: S.reverse(x, axis=(0, -1)), {"x": (2, 3, 4)}),
    "squeeze": (lambda: S.squeeze(x, axis=(1, 3)) + S.squeeze(x), {"x": (2, 1, 3, 1)}),
    "repeat_axis": (lambda: S.repeat(x, repeats=3, axis=-1), {"x": (2, 3)}),
    "repeat_flat": (lambda: S.repeat(x, repeats=2), {"x": (2, 3)}),
    "logical_not": (lambda: S.logical_not(x > 0), {"x": (2, 3)}),
    "slice": (lambda: S.slice(x, begin=(None, -1, 1), end=(1, None, None), step=(1, -2, None)),
              {"x": (3, 5, 4)}),
    "arange_like": (lambda: x + S._contrib_arange_like(x, start=1.5, step=0.5, repeat=2),
                    {"x": (2, 3)}),
    "arange_like_axis": (lambda: S._contrib_arange_like(x, axis=1), {"x": (2, 3)}),
    "sequence_mask": (lambda: S.SequenceMask(x, y, use_sequence_length=True, value=-1.0),
                      {"x": (4, 3, 2), "y": (3,)}),
    "sequence_mask_axis1": (lambda: S.SequenceMask(x, y, use_sequence_length=True, axis=1),
                            {"x": (3, 4, 2), "y": (3,)}),
    "selfatt": (lambda: S._contrib_interleaved_matmul_selfatt_valatt(
                    x, S.softmax(S._contrib_interleaved_matmul_selfatt_qk(x, heads=2)), heads=2),
                {"x": (5, 3, 24)}),
    "slice_like": (lambda: S.slice_like(x, y, axes=(0, -1)), {"x": (4, 3, 5), "y": (2, 1, 3)}),
    "batch_dot": (lambda: S.batch_dot(x, y), {"x": (2, 3, 4), "y": (2, 4, 5)}),
    "batch_dot_transposed": (lambda: S.batch_dot(x, y, transpose_a=True, transpose_b=True),
                             {"x": (2, 2, 4, 3), "y": (2, 2, 5, 4)}),
    "dot_matrices": (lambda: S.dot(x, y, transpose_a=True), {"x": (4, 3), "y": (4, 5)}),
    "dot_vectors": (lambda: S.dot(x, y), {"x": (4,), "y": (4,)}),
    # a transposed matrix times a vector (onnxruntime mishandles a Transpose before it)
    "dot_matrix_vector": (lambda: S.dot(x, y, transpose_a=True), {"x": (4, 3), "y": (4,)}),
    "dot_vector_matrix": (lambda: S.dot(x, y, transpose_b=True), {"x": (4,), "y": (3, 4)}),
    "dot_nd_matrix": (lambda: S.dot(x, y, transpose_b=True), {"x": (2, 3, 4), "y": (5, 4)}),
    # N-d on both sides: MXNet contracts one axis and keeps every other
    "dot_nd": (lambda: S.dot(x, y), {"x": (2, 3, 4), "y": (4, 2, 5)}),
    "dot_nd_transposed": (lambda: S.dot(x, y, transpose_a=True, transpose_b=True),
                          {"x": (4, 2, 3), "y": (5, 2, 4)}),
    "div_sqrt_dim": (lambda: S._contrib_div_sqrt_dim(x), {"x": (2, 3, 6)}),
    "argmax_axis": (lambda: S.argmax(x, axis=-1), {"x": (2, 3, 4)}),
    "argmin_keepdims": (lambda: S.argmin(x, axis=1, keepdims=True), {"x": (2, 3, 4)}),
    "argmax_flat": (lambda: S.argmax(x), {"x": (2, 3, 4)}),
    "argmin_flat_keepdims": (lambda: S.argmin(x, keepdims=True), {"x": (2, 3, 4)}),
    "argmax_vector": (lambda: S.argmax(x, axis=0), {"x": (5,)}),
    "topk_both": (lambda: S.topk(x, axis=1, k=2, ret_typ="both", dtype="int32"),
                  {"x": (2, 5, 3)}),
    "topk_value_ascend": (lambda: S.topk(x, k=3, ret_typ="value", is_ascend=True),
                          {"x": (2, 5)}),
    "topk_indices_flat": (lambda: S.topk(x, axis=None, k=4), {"x": (2, 3, 4)}),
    "topk_whole_axis": (lambda: S.topk(x, axis=-2, k=0, ret_typ="both", dtype="int64"),
                        {"x": (2, 5, 3)}),
    "topk_mask": (lambda: S.topk(x, axis=-2, k=2, ret_typ="mask"), {"x": (2, 5, 3)}),
    "topk_mask_flat": (lambda: S.topk(x, axis=None, k=3, ret_typ="mask", is_ascend=True),
                       {"x": (2, 3, 4)}),
    "sort": (lambda: S.sort(x, axis=0, is_ascend=False), {"x": (4, 3)}),
    "argsort": (lambda: S.argsort(x, dtype="int64"), {"x": (3, 4)}),
    "hard_sigmoid": (lambda: S.hard_sigmoid(3 * x, alpha=0.3, beta=0.4), {"x": (3, 4)}),
    "norm_l1_keepdims": (lambda: S.norm(x, ord=1, axis=-1, keepdims=True), {"x": (2, 3, 4)}),
    "norm_l2_all": (lambda: S.norm(x), {"x": (2, 3, 4)}),
    "norm_out_dtype": (lambda: S.norm(x, axis=(0, -1), out_dtype="float64"), {"x": (2, 3, 4)}),
    "prod_keepdims": (lambda: S.prod(x, axis=(0, -1), keepdims=True), {"x": (2, 3, 4)}),
    "prod_exclude": (lambda: S.prod(x, axis=1, exclude=True), {"x": (2, 3, 4)}),
    "prod_all": (lambda: S.prod(x), {"x": (2, 3)}),
    "sequence_reverse": (lambda: S.SequenceReverse(x), {"x": (4, 3, 2)}),
    "sequence_reverse_length": (lambda: S.SequenceReverse(x, y, use_sequence_length=True),
                                {"x": (4, 3, 2), "y": (3,)}),
    "depth_to_space": (lambda: S.depth_to_space(x, block_size=2), {"x": (2, 8, 2, 3)}),
    "space_to_depth": (lambda: S.space_to_depth(x, block_size=2), {"x": (2, 3, 4, 6)}),
    "broadcast_like": (lambda: S.broadcast_like(x, y), {"x": (1, 3, 1), "y": (2, 3, 4)}),
    "broadcast_like_axes": (lambda: S.broadcast_like(x, y, lhs_axes=(0, -1), rhs_axes=(-1, 0)),
                            {"x": (1, 3, 1), "y": (2, 4)}),
    "reshape_like": (lambda: S.reshape_like(x, y), {"x": (2, 3, 4), "y": (6, 2, 2)}),
    "reshape_like_ranges": (lambda: S.reshape_like(x, y, lhs_begin=1, lhs_end=-1, rhs_begin=0,
                                                   rhs_end=1), {"x": (2, 3, 4, 5), "y": (12, 7)}),
    "reshape_like_tail": (lambda: S.reshape_like(x, y, lhs_begin=-2, rhs_begin=1),
                          {"x": (2, 3, 4), "y": (5, 4, 3)}),
    "size_array": (lambda: S.size_array(x), {"x": (2, 3, 4)}),
    "crop_offset": (lambda: S.Crop(x, num_args=1, offset=(1, 2), h_w=(2, 3)),
                    {"x": (1, 2, 5, 6)}),
    "crop_like_centre": (lambda: S.Crop(x, y, num_args=2, center_crop=True),
                         {"x": (1, 2, 7, 6), "y": (1, 1, 4, 3)}),
    "instance_norm": (lambda: S.InstanceNorm(x, eps=1e-2, name="in"),
                      {"x": (2, 3, 4, 5), "in_gamma": (3,), "in_beta": (3,)}),
    "box_decode_center": (lambda: S._contrib_box_decode(x, y, std0=0.1, std1=0.2, std2=0.3,
                                                        std3=0.4),
                          {"x": (2, 3, 4), "y": (1, 3, 4)}),
    "box_decode_corner_clip": (lambda: S._contrib_box_decode(4 * x, y, format="corner",
                                                             clip=0.5),
                               {"x": (2, 3, 4), "y": (1, 3, 4)}),
    "logical": (lambda: S.broadcast_logical_and(x > 0, y) + 2 * S.broadcast_logical_or(x > 0, y < 0)
                + 4 * S.broadcast_logical_xor(x > 0, y > 0), {"x": (2, 3), "y": (1, 3)}),
    "gemm2": (lambda: S._linalg_gemm2(x, y, transpose_a=True, alpha=0.5),
              {"x": (2, 4, 3), "y": (2, 4, 5)}),
    "gemm2_plain": (lambda: S._linalg_gemm2(x, y, transpose_b=True, axis=0),
                    {"x": (3, 4), "y": (5, 4)}),
    "logistic_regression_output": (lambda: S.LogisticRegressionOutput(x, S.var("label")),
                                   {"x": (2, 3)}),
    "regression_outputs": (lambda: S.LinearRegressionOutput(x, S.var("label")) * 2
                           + S.MAERegressionOutput(x, S.var("label")) + S.MakeLoss(x),
                           {"x": (2, 3)}),
}
ACTIVATIONS = ["relu", "sigmoid", "tanh", "softrelu", "softsign"]
LEAKY = ["leaky", "elu", "selu", "gelu", "rrelu"]
# unary operators with inputs in their domain
_POSITIVE = lambda v: np.abs(v) + 0.1  # noqa: E731
_UNIT = lambda v: 0.9 * np.tanh(v)  # noqa: E731
DOMAIN = {"log": _POSITIVE, "log2": _POSITIVE, "log10": _POSITIVE, "rsqrt": _POSITIVE,
          "sqrt": np.abs, "reciprocal": _POSITIVE, "arccosh": lambda v: 1 + _POSITIVE(v),
          "arcsin": _UNIT, "arccos": _UNIT, "arctanh": _UNIT}
UNARY = ["relu", "sigmoid", "tanh", "exp", "log", "log2", "log10", "sqrt", "rsqrt", "square",
         "abs", "negative", "floor", "ceil", "erf", "reciprocal", "sign", "sin", "cos", "tan",
         "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_translation(case: str, tmp_path: Path) -> None:
    build, shapes = CASES[case]
    inputs = {k: normal(*s) for k, s in shapes.items()}
    if case.startswith("sequence_") and "y" in inputs:  # lengths
        inputs["y"] = np.array([4, 1, 2], np.float32)
    if case == "softmax_length":
        inputs["y"] = np.array([[4, 1], [0, 2], [3, 3]], np.int32)
    check(build(), inputs, tmp_path)


@pytest.mark.parametrize("act_type", ACTIVATIONS)
def test_activation(act_type: str, tmp_path: Path) -> None:
    check(S.Activation(x, act_type=act_type), {"x": normal(2, 5)}, tmp_path)


@pytest.mark.parametrize("act_type", LEAKY)
def test_leaky_relu(act_type: str, tmp_path: Path) -> None:
    net = S.LeakyReLU(x, act_type=act_type, slope=0.3)
    # rrelu's second output, its slopes, has no ONNX form: the first is exported.
    check(net[0] if act_type == "rrelu" else net, {"x": normal(2, 5)}, tmp_path)


def test_a_graph_output_without_an_onnx_form_is_refused_by_name(tmp_path: Path) -> None:
    net = S.LeakyReLU(x, act_type="rrelu", name="r")
    with pytest.raises(mx.OperatorError, match="r.*its output 1 is a graph output"):
        mx.onnx.export_model(net, {}, [(2, 5)], onnx_file_path=str(tmp_path / "r.onnx"))


@pytest.mark.parametrize("op", UNARY)
def test_unary(op: str, tmp_path: Path) -> None:
    values = DOMAIN.get(op, lambda v: v)(normal(3, 4)).astype(np.float32)
    check(getattr(S, op)(x), {"x": values}, tmp_path)


def test_batch_norm_reads_fixed_gamma_as_one(tmp_path: Path) -> None:
    """fix_gamma=True: MXNet ignores gamma's values; the export must too."""
    for fix_gamma in (True, False):
        net = S.BatchNorm(x, fix_gamma=fix_gamma, eps=1e-3, name="bn")
        params = {"bn_gamma": np.full(3, 2.5, np.float32), "bn_beta": normal(3),
                  "bn_moving_mean": normal(3),
                  "bn_moving_var": RNG.uniform(0.5, 2, 3).astype(np.float32)}
        check(net, {"x": normal(2, 3, 4, 4)}, tmp_path, params)


def test_embedding(tmp_path: Path) -> None:
    net = S.Embedding(x, input_dim=6, output_dim=3, name="emb")
    check(net, {"x": np.array([[0, 5, 2], [1, 1, 4]], np.float32)}, tmp_path,
          {"emb_weight": normal(6, 3)})


@pytest.mark.parametrize("mode,axis", [("clip", 0), ("clip", -1), ("wrap", 1), ("wrap", -3)])
def test_take(mode: str, axis: int, tmp_path: Path) -> None:
    """Indices out of range on both sides and fractions (MXNet truncates them)."""
    indices = np.array([[-3.7, 0.2, 4.9], [1.5, 7.0, -1.0]], np.float32)
    check(S.take(x, y, axis=axis, mode=mode), {"x": normal(3, 4, 2), "y": indices}, tmp_path)


def test_take_with_free_dimensions(tmp_path: Path) -> None:
    indices = np.array([-1, 0, 2, 9], np.int32)
    check(S.take(x, y, axis=1, mode="wrap"), {"x": normal(2, 3), "y": indices}, tmp_path,
          dynamic=True)


def test_take_raise_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(mx.OperatorError, match=r"t \(take\): mode='raise'"):
        mx.onnx.export_model(S.take(x, y, mode="raise", name="t"), {}, [(3, 2), (2,)],
                             onnx_file_path=str(tmp_path / "t.onnx"))


def test_ordering_ties_keep_the_lower_index_first(tmp_path: Path) -> None:
    """The tie rule docs/api.md states: minimx's stable sorts and ONNX's TopK agree."""
    ties = np.array([[1, 3, 3, 0, 3, 1], [2, 2, 2, 2, 2, 2]], np.float32)
    for ascend in (False, True):
        net = S.Group([S.topk(x, k=4, ret_typ="both", is_ascend=ascend),
                       S.argsort(x, is_ascend=ascend), S.argmax(x, axis=1),
                       S.argmin(x, axis=1)])
        check(net, {"x": ties}, tmp_path)


def test_topk_with_free_dimensions(tmp_path: Path) -> None:
    net = S.Group([S.topk(x, k=0, ret_typ="both"), S.topk(x, axis=None, k=2, ret_typ="mask")])
    check(net, {"x": normal(3, 4)}, tmp_path, dynamic=True)


@pytest.mark.parametrize("aligned,ratio", [(False, 2), (False, 0), (True, 0), (True, 3)])
def test_roi_align(aligned: bool, ratio: int, tmp_path: Path) -> None:
    """Rois of two images, one under a pixel wide, one past the map's edge, one
    skipped (batch index -1)."""
    rois = np.array([[0, 1.0, 1.5, 9.0, 7.0], [1, 2.2, 0.0, 2.6, 13.5],
                     [1, -3.0, 4.0, 18.0, 20.0], [-1, 0.0, 0.0, 4.0, 4.0],
                     [0, 6.5, 6.0, 11.0, 9.5]], np.float32)
    net = S._contrib_ROIAlign(x, y, pooled_size=(3, 2), spatial_scale=0.5, sample_ratio=ratio,
                              aligned=aligned)
    check(net, {"x": normal(2, 3, 8, 7), "y": rois}, tmp_path)


def test_position_sensitive_roi_align_is_refused_by_name(tmp_path: Path) -> None:
    net = S._contrib_ROIAlign(x, y, pooled_size=(2, 2), spatial_scale=1.0,
                              position_sensitive=True, name="psroi")
    with pytest.raises(mx.OperatorError, match=r"psroi \(_contrib_ROIAlign\): position_sens"):
        mx.onnx.export_model(net, {}, [(1, 8, 4, 4), (2, 5)],
                             onnx_file_path=str(tmp_path / "r.onnx"))


@pytest.mark.parametrize("op", ["nansum", "nanprod"])
def test_nan_reductions(op: str, tmp_path: Path) -> None:
    values = normal(2, 3, 4)
    values[0, 1, :2] = values[1, :, 3] = np.nan
    for axis, keepdims in ((None, False), (-1, True), ((0, 2), False)):
        check(getattr(S, op)(x, axis=axis, keepdims=keepdims), {"x": values}, tmp_path)


def test_nansum_of_integers(tmp_path: Path) -> None:
    check(S.nansum(x, axis=1), {"x": np.arange(12, dtype=np.int32).reshape(3, 4)}, tmp_path)


def test_sequence_reverse_lengths_out_of_range(tmp_path: Path) -> None:
    """Lengths past the steps, negative and fractional, as MXNet reads them."""
    lengths = np.array([7, -1, 2.7, 0], np.float32)
    net = S.SequenceReverse(x, y, use_sequence_length=True)
    check(net, {"x": normal(3, 4, 2), "y": lengths}, tmp_path)
    check(net, {"x": normal(3, 4, 2), "y": lengths.astype(np.int32)}, tmp_path, dynamic=True)


def test_gather_nd(tmp_path: Path) -> None:
    """Index tuples first in MXNet, last in ONNX; negative and fractional indices."""
    data = normal(3, 4, 2)
    indices = np.array([[[0, -1], [2, 1.6]], [[3, 0], [-4, 2]]], np.float32)  # (M=2, 2, 2)
    check(S.gather_nd(x, y), {"x": data, "y": indices}, tmp_path)
    check(S.gather_nd(x, y), {"x": data, "y": np.array([[1, 0, -1]], np.int64)}, tmp_path,
          dynamic=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_one_hot(dtype: str, tmp_path: Path) -> None:
    """Indices out of range (negative ones too) give rows of off_value."""
    indices = np.array([[-1, 0, 2.7], [4, 3, -4]], np.float32)
    net = S.one_hot(x, depth=4, on_value=7.5, off_value=-0.25 if dtype[0] == "f" else 2,
                    dtype=dtype)
    check(net, {"x": indices}, tmp_path)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_broadcast_mod(dtype: type, tmp_path: Path) -> None:
    """The divisor's sign, and 0 for a zero divisor."""
    a: np.ndarray = np.array([[7, -7, 7, -7, 0, 5], [6.5, -2, 3, 9, -1, 4]]).astype(dtype)
    b: np.ndarray = np.array([[3, 3, -3, -3, 2, 0]]).astype(dtype)
    check(S.broadcast_mod(x, y), {"x": a, "y": b}, tmp_path)


def test_roi_pooling(tmp_path: Path) -> None:
    """Rois of two images: corners that round half away from zero, one past the map's
    edge, one of a single cell, and batch indices outside the batch (zeros)."""
    rois = np.array([[0, 1.0, 1.5, 9.0, 7.0], [1, 2.5, 0.0, 2.5, 13.5],
                     [1, -3.0, 4.0, 18.0, 20.0], [-1, 0.0, 0.0, 4.0, 4.0],
                     [2, 0.0, 0.0, 4.0, 4.0], [0.7, 6.5, 6.0, 11.0, 9.5]], np.float32)
    net = S.ROIPooling(x, y, pooled_size=(3, 2), spatial_scale=0.5)
    check(net[0], {"x": normal(2, 3, 8, 7), "y": rois}, tmp_path)


def test_free_dimensions_of_shape_operators(tmp_path: Path) -> None:
    """The translations that read shapes in the graph, on inputs of free dimensions."""
    net = S.Group([S.broadcast_like(x, y, lhs_axes=(0,), rhs_axes=(1,)),
                   S.reshape_like(y, x, lhs_begin=1, rhs_begin=-1), S.size_array(y),
                   S.SequenceReverse(y)])
    check(net, {"x": normal(1, 12), "y": normal(2, 3, 4)}, tmp_path, dynamic=True)


def test_gemm2_with_rows_elsewhere_is_refused_by_name(tmp_path: Path) -> None:
    net = S._linalg_gemm2(x, y, axis=0, name="g")
    with pytest.raises(mx.OperatorError, match=r"g \(_linalg_gemm2\): axis=0"):
        mx.onnx.export_model(net, {}, [(3, 2, 4), (4, 2, 5)],
                             onnx_file_path=str(tmp_path / "g.onnx"))


def _rnn(mode: str, layers: int, bidirectional: bool, parameters: mx.sym.Symbol,
         **extra) -> mx.sym.Symbol:
    states = [S.var("h")] + ([S.var("c")] if mode == "lstm" else [])
    return S.RNN(x, parameters, *states, state_size=4, num_layers=layers, mode=mode,
                 bidirectional=bidirectional, state_outputs=True, name="rnn", **extra)


def _rnn_values(net: mx.sym.Symbol) -> dict[str, np.ndarray]:
    """Every argument of `net`, for data of 5 steps, a batch of 2 and 3 features."""
    shapes, _, _ = net.infer_shape(x=(5, 2, 3))
    return {n: 0.5 * normal(*s) for n, s in zip(net.list_arguments(), shapes, strict=True)}


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (1, True), (3, True)])
def test_rnn(mode: str, layers: int, bidirectional: bool, tmp_path: Path) -> None:
    """The output and both states; the packed vector a parameter."""
    net = _rnn(mode, layers, bidirectional, S.var("params"))
    values = _rnn_values(net)
    check(net, values, tmp_path, {"params": values.pop("params")})


def test_rnn_reads_weights_joined_in_the_graph(tmp_path: Path) -> None:
    """Gluon's RNN layers join their weights with _rnn_param_concat before the RNN node."""
    size = _rnn_values(_rnn("lstm", 2, True, S.var("params")))["params"].size
    net = _rnn("lstm", 2, True, S._rnn_param_concat(S.var("w"), S.var("b"), dim=0,
                                                    num_args=2))
    check(net, {"x": normal(5, 2, 3), "h": normal(4, 2, 4), "c": normal(4, 2, 4)}, tmp_path,
          {"w": 0.5 * normal(size - 40), "b": 0.5 * normal(40)})


def test_rnn_projection_is_refused_by_name(tmp_path: Path) -> None:
    net = _rnn("lstm", 1, False, S.var("params"), projection_size=2)
    with pytest.raises(mx.OperatorError, match=r"rnn \(RNN\): projection_size"):
        mx.onnx.export_model(net, {}, [(5, 2, 3), None, (1, 2, 2), (1, 2, 4)],
                             onnx_file_path=str(tmp_path / "r.onnx"))


def test_cases_cover_the_translations() -> None:
    built = {n.op for case in CASES.values()
             for n in mx.sym.Group([case[0]()]).get_internals()._topo() if n.op}
    covered = built | set(UNARY) | {"Activation", "LeakyReLU", "BatchNorm", "Embedding", "take",
                                    "_contrib_ROIAlign", "RNN", "_rnn_param_concat", "nansum",
                                    "nanprod", "gather_nd", "one_hot", "broadcast_mod",
                                    "ROIPooling"}
    assert set(TRANSLATIONS) - covered == set()
