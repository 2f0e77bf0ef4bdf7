"""The names MXNet's graph passes give the nodes they insert after an output.

MXNet's quantization and AMP passes name a node inserted after output i of
node n ``n_<output name>_...`` where n's operator registers FListOutputNames
and ``n_<i>_...`` otherwise (``GetSuffix`` in quantize_graph_pass.cc, the same
in low_precision_pass.cc): ``pool0_output_quantize`` but ``flatten0_0_quantize``,
``split_output1_amp_cast_bfloat16`` but ``sw_0_...`` for an operator that lists
no names. Checkpoints move between the runtimes only if both name them so.
"""
from __future__ import annotations

from .node import NodeEntry

# MXNet 1.9.1's operators with FListOutputNames, found by inserting a cast and a
# quantize node after each output of one-node graphs of every operator minimx has.
LISTS_OUTPUT_NAMES = frozenset({
    "Activation", "BatchNorm", "BilinearSampler", "Concat", "Convolution", "Correlation",
    "Crop", "Custom", "Deconvolution", "Dropout", "FullyConnected", "GridGenerator",
    "GroupNorm", "IdentityAttachKLSparseReg", "InstanceNorm", "L2Normalization", "LRN",
    "LayerNorm", "LeakyReLU", "MakeLoss", "Pad", "Pooling", "RNN", "ROIPooling", "SVMOutput",
    "SequenceLast", "SequenceMask", "SequenceReverse", "SliceChannel", "SoftmaxActivation",
    "SoftmaxOutput", "SpatialTransformer", "SwapAxis", "UpSampling",
    "_contrib_BatchNormWithReLU", "_contrib_DeformableConvolution",
    "_contrib_DeformablePSROIPooling", "_contrib_ModulatedDeformableConvolution",
    "_contrib_MultiBoxDetection", "_contrib_MultiBoxPrior", "_contrib_MultiBoxTarget",
    "_contrib_MultiProposal", "_contrib_PSROIPooling", "_contrib_Proposal", "_contrib_ROIAlign",
    "_contrib_SyncBatchNorm", "_contrib_interleaved_matmul_encdec_qk",
    "_contrib_interleaved_matmul_encdec_valatt", "_contrib_interleaved_matmul_selfatt_qk",
    "_contrib_interleaved_matmul_selfatt_valatt", "_contrib_quantize_asym", "_rnn_param_concat",
    "col2im", "elemwise_add", "im2col", "softmax", "softmin",
})


def entry_suffix(e: NodeEntry) -> str:
    """What MXNet puts between a producer's name and the name of a node it
    inserts after entry `e`: nothing after a variable, else ``_`` and the
    output's name or index. Subgraph operators (``_sg_*``) name their outputs."""
    node = e.node
    if node.is_variable:
        return ""
    opdef, _ = node.operator()
    names = (opdef.name, *opdef.aliases)
    if any(n in LISTS_OUTPUT_NAMES or n.startswith("_sg_") for n in names):
        return "_" + node.output_names()[e.index]
    return f"_{e.index}"
