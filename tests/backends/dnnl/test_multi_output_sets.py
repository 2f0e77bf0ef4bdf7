"""Sets with several outputs under DNNL: an FCN-like net on a model-zoo backbone.

Its one big candidate set (the backbone, the head's first block and the
auxiliary head's first block) has two outputs; the head's second convolution's
weight lies between them in list_arguments, so the set cannot collapse whole.
It is split, not dropped: only what oneDNN cannot run stays outside.
"""
from __future__ import annotations

import minimx as mx

from .helpers import (
    assert_close,
    dnnl_nodes,
    outer_ops,
    outputs,
    partitioned,
    random_arrays,
)

SHAPES = {"data": (1, 3, 64, 64)}


def _head(x, name: str):
    x = mx.sym.Convolution(x, num_filter=8, kernel=(3, 3), pad=(1, 1), name=f"{name}_conv0")
    x = mx.sym.relu(mx.sym.BatchNorm(x, name=f"{name}_bn"), name=f"{name}_relu")
    x = mx.sym.Dropout(x, p=0.1, name=f"{name}_drop")
    x = mx.sym.Convolution(x, num_filter=5, kernel=(1, 1), name=f"{name}_conv1")
    return mx.sym.UpSampling(x, scale=8, sample_type="nearest", name=f"{name}_up")


def _fcn_like():
    """resnet18_v1 with a head on stage 4 and an auxiliary head on stage 3."""
    internals = mx.models.get_model("resnet18_v1").get_internals()
    names = internals.list_outputs()
    tap = lambda stage: internals[[n for n in names  # noqa: E731
                                   if n.startswith(f"resnetv10_{stage}_activation")][-1]]
    return mx.sym.Group([_head(tap("stage4"), "head"), _head(tap("stage3"), "auxhead")])


def test_only_what_onednn_cannot_run_stays_outside():
    net = _fcn_like()
    part = partitioned(net, SHAPES)
    assert part.list_arguments() == net.list_arguments()
    assert part.list_auxiliary_states() == net.list_auxiliary_states()
    assert sorted(op for op in outer_ops(part) if op != "_sg_dnnl") == ["UpSampling", "UpSampling"]
    # The backbone with both heads up to their upsampling (Dropout passes its input on
    # at inference) is one subgraph with two outputs.
    assert len(dnnl_nodes(part)) == 1


def test_split_set_gives_the_numpy_outputs():
    net = _fcn_like()
    args, aux = random_arrays(net, SHAPES)
    assert_close(outputs(partitioned(net, SHAPES), args, aux), outputs(net, args, aux))
