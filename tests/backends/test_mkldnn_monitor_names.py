"""What a ``monitor_all=True`` callback sees over one forward of graphs with MXNet's
fused oneDNN nodes: MXNet 1.9.1's names in its order. A `_sg_mkldnn_conv` names
its inputs by role (``<node>_data``, ``_weight``, ``_bias``, ``_gamma``, ``_beta``,
``_mean``, ``_var``, ``_sum``, then the quantized ``_data_min`` ... ``_sum_max``);
a `_sg_mkldnn_fully_connected` by its subgraph's variables
(``<node>_fc0_weight0``), its quantized range outputs ``min_output`` /
``max_output``; the self-attention products by role.

The lists are MXNet 1.9.1's, printed by a callback appending each name, run with
/work/venvs/mxnet191's python (MXNET_SUBGRAPH_BACKEND=NONE, and the same without
it) on the quantized_net and transformer fixtures bound as `_bind` binds them,
and on `_no_bias_net()` and qnet through ``get_backend_symbol('MKLDNN_QUANTIZE')``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.contrib.quantization import quantize_model_mkldnn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
QNET = FIXTURES / "quantized_net"

NO_BIAS = [
    "data", "sg_mkldnn_conv_bn_act_0_data", "c0_weight", "sg_mkldnn_conv_bn_act_0_weight",
    "bn0_gamma", "sg_mkldnn_conv_bn_act_0_gamma", "bn0_beta", "sg_mkldnn_conv_bn_act_0_beta",
    "bn0_moving_mean", "sg_mkldnn_conv_bn_act_0_mean", "bn0_moving_var",
    "sg_mkldnn_conv_bn_act_0_var", "sg_mkldnn_conv_bn_act_0_output",
    "sg_mkldnn_conv_add_1_data", "c1_weight", "sg_mkldnn_conv_add_1_weight",
    "sg_mkldnn_conv_add_1_sum", "sg_mkldnn_conv_add_1_output",
    "sg_mkldnn_fully_connected_0_sg_mkldnn_conv_add_1_output0", "fc_weight",
    "sg_mkldnn_fully_connected_0_fc_weight0", "sg_mkldnn_fully_connected_0_output"]

QNET_FP32 = [
    "data", "sg_mkldnn_conv_bn_act_0_data", "conv0_weight", "sg_mkldnn_conv_bn_act_0_weight",
    "conv0_bias", "sg_mkldnn_conv_bn_act_0_bias", "bn0_gamma", "sg_mkldnn_conv_bn_act_0_gamma",
    "bn0_beta", "sg_mkldnn_conv_bn_act_0_beta", "bn0_moving_mean",
    "sg_mkldnn_conv_bn_act_0_mean", "bn0_moving_var", "sg_mkldnn_conv_bn_act_0_var",
    "sg_mkldnn_conv_bn_act_0_output", "sg_mkldnn_conv_add_act_1_data", "conv1_weight",
    "sg_mkldnn_conv_add_act_1_weight", "conv1_bias", "sg_mkldnn_conv_add_act_1_bias",
    "sg_mkldnn_conv_add_act_1_sum", "sg_mkldnn_conv_add_act_1_output",
    "sg_mkldnn_conv_bn_3_data", "conv2_weight", "sg_mkldnn_conv_bn_3_weight", "conv2_bias",
    "sg_mkldnn_conv_bn_3_bias", "bn2_gamma", "sg_mkldnn_conv_bn_3_gamma", "bn2_beta",
    "sg_mkldnn_conv_bn_3_beta", "bn2_moving_mean", "sg_mkldnn_conv_bn_3_mean",
    "bn2_moving_var", "sg_mkldnn_conv_bn_3_var", "sg_mkldnn_conv_bn_3_output",
    "sg_mkldnn_conv_add_act_2_data", "conv3_weight", "sg_mkldnn_conv_add_act_2_weight",
    "conv3_bias", "sg_mkldnn_conv_add_act_2_bias", "sg_mkldnn_conv_add_act_2_sum",
    "sg_mkldnn_conv_add_act_2_output", "pool0_data", "pool0_output", "pool0_workspace",
    "sg_mkldnn_fully_connected_eltwise_0_pool0_output0", "fc0_weight",
    "sg_mkldnn_fully_connected_eltwise_0_fc0_weight0", "fc0_bias",
    "sg_mkldnn_fully_connected_eltwise_0_fc0_bias0",
    "sg_mkldnn_fully_connected_eltwise_0_output",
    "sg_mkldnn_fully_connected_1_sg_mkldnn_fully_connected_eltwise_0_output0", "fc1_weight",
    "sg_mkldnn_fully_connected_1_fc1_weight0", "fc1_bias",
    "sg_mkldnn_fully_connected_1_fc1_bias0", "sg_mkldnn_fully_connected_1_output"]

QNET_NAIVE_CHANNEL = [
    "data", "data_quantize_data", "data_quantize_output0", "data_quantize_output1",
    "data_quantize_output2", "quantized_sg_mkldnn_conv_bn_act_0_data", "conv0_weight",
    "quantized_sg_mkldnn_conv_bn_act_0_weight", "conv0_bias",
    "quantized_sg_mkldnn_conv_bn_act_0_bias", "bn0_gamma",
    "quantized_sg_mkldnn_conv_bn_act_0_gamma", "bn0_beta",
    "quantized_sg_mkldnn_conv_bn_act_0_beta", "bn0_moving_mean",
    "quantized_sg_mkldnn_conv_bn_act_0_mean", "bn0_moving_var",
    "quantized_sg_mkldnn_conv_bn_act_0_var", "quantized_sg_mkldnn_conv_bn_act_0_data_min",
    "quantized_sg_mkldnn_conv_bn_act_0_data_max", "quantized_sg_mkldnn_conv_bn_act_0_output",
    "quantized_sg_mkldnn_conv_bn_act_0_output_min",
    "quantized_sg_mkldnn_conv_bn_act_0_output_max", "quantized_sg_mkldnn_conv_add_act_1_data",
    "conv1_weight", "quantized_sg_mkldnn_conv_add_act_1_weight", "conv1_bias",
    "quantized_sg_mkldnn_conv_add_act_1_bias", "quantized_sg_mkldnn_conv_add_act_1_sum",
    "quantized_sg_mkldnn_conv_add_act_1_data_min",
    "quantized_sg_mkldnn_conv_add_act_1_data_max",
    "quantized_sg_mkldnn_conv_add_act_1_sum_min", "quantized_sg_mkldnn_conv_add_act_1_sum_max",
    "quantized_sg_mkldnn_conv_add_act_1_output",
    "quantized_sg_mkldnn_conv_add_act_1_output_min",
    "quantized_sg_mkldnn_conv_add_act_1_output_max", "quantized_sg_mkldnn_conv_bn_3_data",
    "conv2_weight", "quantized_sg_mkldnn_conv_bn_3_weight", "conv2_bias",
    "quantized_sg_mkldnn_conv_bn_3_bias", "bn2_gamma", "quantized_sg_mkldnn_conv_bn_3_gamma",
    "bn2_beta", "quantized_sg_mkldnn_conv_bn_3_beta", "bn2_moving_mean",
    "quantized_sg_mkldnn_conv_bn_3_mean", "bn2_moving_var",
    "quantized_sg_mkldnn_conv_bn_3_var", "quantized_sg_mkldnn_conv_bn_3_data_min",
    "quantized_sg_mkldnn_conv_bn_3_data_max", "quantized_sg_mkldnn_conv_bn_3_output",
    "quantized_sg_mkldnn_conv_bn_3_output_min", "quantized_sg_mkldnn_conv_bn_3_output_max",
    "quantized_sg_mkldnn_conv_add_act_2_data", "conv3_weight",
    "quantized_sg_mkldnn_conv_add_act_2_weight", "conv3_bias",
    "quantized_sg_mkldnn_conv_add_act_2_bias", "quantized_sg_mkldnn_conv_add_act_2_sum",
    "quantized_sg_mkldnn_conv_add_act_2_data_min",
    "quantized_sg_mkldnn_conv_add_act_2_data_max",
    "quantized_sg_mkldnn_conv_add_act_2_sum_min", "quantized_sg_mkldnn_conv_add_act_2_sum_max",
    "quantized_sg_mkldnn_conv_add_act_2_output",
    "quantized_sg_mkldnn_conv_add_act_2_output_min",
    "quantized_sg_mkldnn_conv_add_act_2_output_max", "quantized_pool0_data",
    "quantized_pool0_min_data", "quantized_pool0_max_data", "quantized_pool0_output",
    "quantized_pool0_min_output", "quantized_pool0_max_output",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_pool0_output0", "fc0_weight",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_fc0_weight0", "fc0_bias",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_fc0_bias0",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_min_data",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_max_data",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_output",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_min_output",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_max_output",
    "quantized_sg_mkldnn_fully_connected_1_sg_mkldnn_fully_connected_eltwise_0_output0",
    "fc1_weight", "quantized_sg_mkldnn_fully_connected_1_fc1_weight0", "fc1_bias",
    "quantized_sg_mkldnn_fully_connected_1_fc1_bias0",
    "quantized_sg_mkldnn_fully_connected_1_min_data",
    "quantized_sg_mkldnn_fully_connected_1_max_data",
    "quantized_sg_mkldnn_fully_connected_1_output"]

QNET_NONE = [
    "data", "data_quantize_data", "data_quantize_output0", "data_quantize_output1",
    "data_quantize_output2", "quantized_sg_mkldnn_conv_bn_act_0_data", "conv0_weight",
    "quantized_sg_mkldnn_conv_bn_act_0_weight", "conv0_bias",
    "quantized_sg_mkldnn_conv_bn_act_0_bias", "bn0_gamma",
    "quantized_sg_mkldnn_conv_bn_act_0_gamma", "bn0_beta",
    "quantized_sg_mkldnn_conv_bn_act_0_beta", "bn0_moving_mean",
    "quantized_sg_mkldnn_conv_bn_act_0_mean", "bn0_moving_var",
    "quantized_sg_mkldnn_conv_bn_act_0_var", "quantized_sg_mkldnn_conv_bn_act_0_data_min",
    "quantized_sg_mkldnn_conv_bn_act_0_data_max", "quantized_sg_mkldnn_conv_bn_act_0_output",
    "quantized_sg_mkldnn_conv_bn_act_0_output_min",
    "quantized_sg_mkldnn_conv_bn_act_0_output_max", "requantize_sg_mkldnn_conv_bn_act_0_data",
    "requantize_sg_mkldnn_conv_bn_act_0_min_range",
    "requantize_sg_mkldnn_conv_bn_act_0_max_range",
    "requantize_sg_mkldnn_conv_bn_act_0_output0", "requantize_sg_mkldnn_conv_bn_act_0_output1",
    "requantize_sg_mkldnn_conv_bn_act_0_output2", "quantized_sg_mkldnn_conv_add_act_1_data",
    "conv1_weight", "quantized_sg_mkldnn_conv_add_act_1_weight", "conv1_bias",
    "quantized_sg_mkldnn_conv_add_act_1_bias", "quantized_sg_mkldnn_conv_add_act_1_sum",
    "quantized_sg_mkldnn_conv_add_act_1_data_min",
    "quantized_sg_mkldnn_conv_add_act_1_data_max",
    "quantized_sg_mkldnn_conv_add_act_1_sum_min", "quantized_sg_mkldnn_conv_add_act_1_sum_max",
    "quantized_sg_mkldnn_conv_add_act_1_output",
    "quantized_sg_mkldnn_conv_add_act_1_output_min",
    "quantized_sg_mkldnn_conv_add_act_1_output_max",
    "requantize_sg_mkldnn_conv_add_act_1_data",
    "requantize_sg_mkldnn_conv_add_act_1_min_range",
    "requantize_sg_mkldnn_conv_add_act_1_max_range",
    "requantize_sg_mkldnn_conv_add_act_1_output0",
    "requantize_sg_mkldnn_conv_add_act_1_output1",
    "requantize_sg_mkldnn_conv_add_act_1_output2", "quantized_sg_mkldnn_conv_bn_3_data",
    "conv2_weight", "quantized_sg_mkldnn_conv_bn_3_weight", "conv2_bias",
    "quantized_sg_mkldnn_conv_bn_3_bias", "bn2_gamma", "quantized_sg_mkldnn_conv_bn_3_gamma",
    "bn2_beta", "quantized_sg_mkldnn_conv_bn_3_beta", "bn2_moving_mean",
    "quantized_sg_mkldnn_conv_bn_3_mean", "bn2_moving_var",
    "quantized_sg_mkldnn_conv_bn_3_var", "quantized_sg_mkldnn_conv_bn_3_data_min",
    "quantized_sg_mkldnn_conv_bn_3_data_max", "quantized_sg_mkldnn_conv_bn_3_output",
    "quantized_sg_mkldnn_conv_bn_3_output_min", "quantized_sg_mkldnn_conv_bn_3_output_max",
    "requantize_sg_mkldnn_conv_bn_3_data", "requantize_sg_mkldnn_conv_bn_3_min_range",
    "requantize_sg_mkldnn_conv_bn_3_max_range", "requantize_sg_mkldnn_conv_bn_3_output0",
    "requantize_sg_mkldnn_conv_bn_3_output1", "requantize_sg_mkldnn_conv_bn_3_output2",
    "quantized_sg_mkldnn_conv_add_act_2_data", "conv3_weight",
    "quantized_sg_mkldnn_conv_add_act_2_weight", "conv3_bias",
    "quantized_sg_mkldnn_conv_add_act_2_bias", "quantized_sg_mkldnn_conv_add_act_2_sum",
    "quantized_sg_mkldnn_conv_add_act_2_data_min",
    "quantized_sg_mkldnn_conv_add_act_2_data_max",
    "quantized_sg_mkldnn_conv_add_act_2_sum_min", "quantized_sg_mkldnn_conv_add_act_2_sum_max",
    "quantized_sg_mkldnn_conv_add_act_2_output",
    "quantized_sg_mkldnn_conv_add_act_2_output_min",
    "quantized_sg_mkldnn_conv_add_act_2_output_max",
    "requantize_sg_mkldnn_conv_add_act_2_data",
    "requantize_sg_mkldnn_conv_add_act_2_min_range",
    "requantize_sg_mkldnn_conv_add_act_2_max_range",
    "requantize_sg_mkldnn_conv_add_act_2_output0",
    "requantize_sg_mkldnn_conv_add_act_2_output1",
    "requantize_sg_mkldnn_conv_add_act_2_output2", "quantized_pool0_data",
    "quantized_pool0_min_data", "quantized_pool0_max_data", "quantized_pool0_output",
    "quantized_pool0_min_output", "quantized_pool0_max_output",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_pool0_output0", "fc0_weight_quantize",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_fc0_weight0", "fc0_bias_quantize",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_fc0_bias0",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_min_data",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_max_data", "fc0_weight_quantize_min",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_min_weight", "fc0_weight_quantize_max",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_max_weight", "fc0_bias_quantize_min",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_min_bias", "fc0_bias_quantize_max",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_max_bias",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_output",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_min_output",
    "quantized_sg_mkldnn_fully_connected_eltwise_0_max_output",
    "requantize_sg_mkldnn_fully_connected_eltwise_0_data",
    "requantize_sg_mkldnn_fully_connected_eltwise_0_min_range",
    "requantize_sg_mkldnn_fully_connected_eltwise_0_max_range",
    "requantize_sg_mkldnn_fully_connected_eltwise_0_output0",
    "requantize_sg_mkldnn_fully_connected_eltwise_0_output1",
    "requantize_sg_mkldnn_fully_connected_eltwise_0_output2",
    "quantized_sg_mkldnn_fully_connected_1_sg_mkldnn_fully_connected_eltwise_0_output0",
    "fc1_weight_quantize", "quantized_sg_mkldnn_fully_connected_1_fc1_weight0",
    "fc1_bias_quantize", "quantized_sg_mkldnn_fully_connected_1_fc1_bias0",
    "quantized_sg_mkldnn_fully_connected_1_min_data",
    "quantized_sg_mkldnn_fully_connected_1_max_data", "fc1_weight_quantize_min",
    "quantized_sg_mkldnn_fully_connected_1_min_weight", "fc1_weight_quantize_max",
    "quantized_sg_mkldnn_fully_connected_1_max_weight", "fc1_bias_quantize_min",
    "quantized_sg_mkldnn_fully_connected_1_min_bias", "fc1_bias_quantize_max",
    "quantized_sg_mkldnn_fully_connected_1_max_bias",
    "quantized_sg_mkldnn_fully_connected_1_output",
    "quantized_sg_mkldnn_fully_connected_1_min_output",
    "quantized_sg_mkldnn_fully_connected_1_max_output",
    "requantize_sg_mkldnn_fully_connected_1_data",
    "requantize_sg_mkldnn_fully_connected_1_min_range",
    "requantize_sg_mkldnn_fully_connected_1_max_range",
    "requantize_sg_mkldnn_fully_connected_1_output0",
    "requantize_sg_mkldnn_fully_connected_1_output1",
    "requantize_sg_mkldnn_fully_connected_1_output2",
    "sg_mkldnn_fully_connected_1_dequantize_data",
    "sg_mkldnn_fully_connected_1_dequantize_min_range",
    "sg_mkldnn_fully_connected_1_dequantize_max_range",
    "sg_mkldnn_fully_connected_1_dequantize_output"]

ENCODER_INT8 = [
    "data", "data_quantize_data", "data_quantize_output0", "data_quantize_output1",
    "data_quantize_output2", "quantized_sg_mkldnn_fully_connected_0_data0",
    "qkv_weight_quantize", "quantized_sg_mkldnn_fully_connected_0_qkv_weight0",
    "qkv_bias_quantize", "quantized_sg_mkldnn_fully_connected_0_qkv_bias0",
    "quantized_sg_mkldnn_fully_connected_0_min_data",
    "quantized_sg_mkldnn_fully_connected_0_max_data", "qkv_weight_quantize_min",
    "quantized_sg_mkldnn_fully_connected_0_min_weight", "qkv_weight_quantize_max",
    "quantized_sg_mkldnn_fully_connected_0_max_weight", "qkv_bias_quantize_min",
    "quantized_sg_mkldnn_fully_connected_0_min_bias", "qkv_bias_quantize_max",
    "quantized_sg_mkldnn_fully_connected_0_max_bias",
    "quantized_sg_mkldnn_fully_connected_0_output",
    "quantized_sg_mkldnn_fully_connected_0_min_output",
    "quantized_sg_mkldnn_fully_connected_0_max_output",
    "quantized_sg_mkldnn_selfatt_qk_0_queries_keys_values",
    "quantized_sg_mkldnn_selfatt_qk_0_min_qkv", "quantized_sg_mkldnn_selfatt_qk_0_max_qkv",
    "quantized_sg_mkldnn_selfatt_qk_0_output", "att_softmax_data", "att_softmax_output",
    "att_softmax_output_quantize_data", "att_softmax_output_quantize_output0",
    "att_softmax_output_quantize_output1", "att_softmax_output_quantize_output2",
    "quantized_sg_mkldnn_selfatt_valatt_1_queries_keys_values",
    "quantized_sg_mkldnn_selfatt_valatt_1_attention",
    "quantized_sg_mkldnn_selfatt_valatt_1_min_qkv",
    "quantized_sg_mkldnn_selfatt_valatt_1_max_qkv",
    "quantized_sg_mkldnn_selfatt_valatt_1_min_attention",
    "quantized_sg_mkldnn_selfatt_valatt_1_max_attention",
    "quantized_sg_mkldnn_selfatt_valatt_1_output",
    "quantized_sg_mkldnn_selfatt_valatt_1_min_output",
    "quantized_sg_mkldnn_selfatt_valatt_1_max_output",
    "quantized_sg_mkldnn_fully_connected_1_valatt_output0", "proj_weight_quantize",
    "quantized_sg_mkldnn_fully_connected_1_proj_weight0", "proj_bias_quantize",
    "quantized_sg_mkldnn_fully_connected_1_proj_bias0",
    "quantized_sg_mkldnn_fully_connected_1_min_data",
    "quantized_sg_mkldnn_fully_connected_1_max_data", "proj_weight_quantize_min",
    "quantized_sg_mkldnn_fully_connected_1_min_weight", "proj_weight_quantize_max",
    "quantized_sg_mkldnn_fully_connected_1_max_weight", "proj_bias_quantize_min",
    "quantized_sg_mkldnn_fully_connected_1_min_bias", "proj_bias_quantize_max",
    "quantized_sg_mkldnn_fully_connected_1_max_bias",
    "quantized_sg_mkldnn_fully_connected_1_output", "_plus0_lhs", "data", "_plus0_rhs",
    "_plus0_output", "ln0_data", "ln0_gamma", "ln0_gamma", "ln0_beta", "ln0_beta",
    "ln0_output", "ln0_mean", "ln0_std", "ln0_output_quantize_data",
    "ln0_output_quantize_output0", "ln0_output_quantize_output1",
    "ln0_output_quantize_output2", "quantized_sg_mkldnn_fully_connected_eltwise_2_ln0_output0",
    "ffn1_weight_quantize", "quantized_sg_mkldnn_fully_connected_eltwise_2_ffn1_weight0",
    "ffn1_bias_quantize", "quantized_sg_mkldnn_fully_connected_eltwise_2_ffn1_bias0",
    "quantized_sg_mkldnn_fully_connected_eltwise_2_min_data",
    "quantized_sg_mkldnn_fully_connected_eltwise_2_max_data", "ffn1_weight_quantize_min",
    "quantized_sg_mkldnn_fully_connected_eltwise_2_min_weight", "ffn1_weight_quantize_max",
    "quantized_sg_mkldnn_fully_connected_eltwise_2_max_weight", "ffn1_bias_quantize_min",
    "quantized_sg_mkldnn_fully_connected_eltwise_2_min_bias", "ffn1_bias_quantize_max",
    "quantized_sg_mkldnn_fully_connected_eltwise_2_max_bias",
    "quantized_sg_mkldnn_fully_connected_eltwise_2_output",
    "quantized_sg_mkldnn_fully_connected_eltwise_2_min_output",
    "quantized_sg_mkldnn_fully_connected_eltwise_2_max_output",
    "quantized_sg_mkldnn_fully_connected_3_sg_mkldnn_fully_connected_eltwise_2_output0",
    "ffn2_weight_quantize", "quantized_sg_mkldnn_fully_connected_3_ffn2_weight0",
    "ffn2_bias_quantize", "quantized_sg_mkldnn_fully_connected_3_ffn2_bias0",
    "quantized_sg_mkldnn_fully_connected_3_min_data",
    "quantized_sg_mkldnn_fully_connected_3_max_data", "ffn2_weight_quantize_min",
    "quantized_sg_mkldnn_fully_connected_3_min_weight", "ffn2_weight_quantize_max",
    "quantized_sg_mkldnn_fully_connected_3_max_weight", "ffn2_bias_quantize_min",
    "quantized_sg_mkldnn_fully_connected_3_min_bias", "ffn2_bias_quantize_max",
    "quantized_sg_mkldnn_fully_connected_3_max_bias",
    "quantized_sg_mkldnn_fully_connected_3_output", "_plus1_lhs", "_plus1_rhs",
    "_plus1_output", "ln1_data", "ln1_gamma", "ln1_gamma", "ln1_beta", "ln1_beta",
    "ln1_output", "ln1_mean", "ln1_std"]


def _names(sym: mx.sym.Symbol, args: dict, auxs: dict, data: np.ndarray) -> list[str]:
    """Bound with `bind` (a quantized checkpoint's int8 arguments keep their dtype)."""
    feeds = {**args, "data": mx.nd.array(data)}
    return _seen(sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()},
                          grad_req="null", aux_states=auxs))


def _seen(ex: mx.executor.Executor) -> list[str]:
    names: list[str] = []
    ex.set_monitor_callback(lambda name, arr: names.append(name), True)
    ex.forward(is_train=False)
    mx.nd.waitall()
    return names


def _qnet_data() -> np.ndarray:
    return np.load(QNET / "qnet_naive-io.npz")["data"]


def _no_bias_net() -> mx.sym.Symbol:
    """conv (no bias) + BatchNorm + relu, conv (no bias) + sum, FC (no bias)."""
    d = mx.sym.var("data")
    c0 = mx.sym.Convolution(d, kernel=(1, 1), num_filter=4, no_bias=True, name="c0")
    a0 = mx.sym.Activation(mx.sym.BatchNorm(c0, name="bn0"), act_type="relu", name="r0")
    c1 = mx.sym.Convolution(a0, kernel=(1, 1), num_filter=4, no_bias=True, name="c1")
    add = mx.sym.elemwise_add(c1, a0, name="add0")
    return mx.sym.FullyConnected(add, num_hidden=3, no_bias=True, name="fc")


# MXNet's oneDNN max pooling has a hidden workspace output, which minimx's Pooling
# lacks (a departure of its own): the float lists without it.
WITHOUT_WORKSPACE = [n for n in QNET_FP32 if n != "pool0_workspace"]


@pytest.mark.parametrize("name, want", [
    ("qnet_fp32_mkldnn", WITHOUT_WORKSPACE), ("qnet_naive_channel", QNET_NAIVE_CHANNEL),
    ("qnet_none", QNET_NONE)])
def test_mxnet_files_as_mxnet(name, want):
    assert _names(*mx.model.load_checkpoint(str(QNET / name), 0), _qnet_data()) == want


def test_transformer_file_as_mxnet():
    prefix = FIXTURES / "transformer" / "encoder_int8"
    data = np.load(f"{prefix}-io.npz")["data"]
    assert _names(*mx.model.load_checkpoint(str(prefix), 0), data) == ENCODER_INT8


def test_mkldnn_quantize_backend_as_mxnet():
    _, args, auxs = mx.model.load_checkpoint(str(QNET / "qnet_fp32_mkldnn"), 0)
    fused = mx.sym.load(str(QNET / "qnet-symbol.json")).get_backend_symbol("MKLDNN_QUANTIZE")
    assert _names(fused, args, auxs, _qnet_data()) == WITHOUT_WORKSPACE


def test_no_bias_chains_as_mxnet():
    fused = _no_bias_net().get_backend_symbol("MKLDNN_QUANTIZE")
    assert fused.list_auxiliary_states() == ["bn0_moving_mean", "bn0_moving_var"]
    assert _seen(fused.simple_bind(mx.cpu(), grad_req="null", data=(2, 4, 3, 3))) == NO_BIAS


def test_quantize_model_mkldnn_as_mxnet():
    _, args, auxs = mx.model.load_checkpoint(str(QNET / "qnet_fp32_mkldnn"), 0)
    qsym, qargs, qauxs = quantize_model_mkldnn(
        mx.sym.load(str(QNET / "qnet-symbol.json")), args, auxs, ctx=mx.cpu(),
        calib_mode="none", quantized_dtype="auto", label_names=None)
    assert _names(qsym, qargs, qauxs, _qnet_data()) == QNET_NONE
