"""Every node the DNNL backend refuses has a reason: `Support.refusal`, the
partition summary, the `minimx.subgraph` log, and `Executor.debug_str`."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import minimx as mx
from minimx.backends.dnnl.config import default_support
from minimx.graph import Graph
from minimx.subgraph.partitioner import _views, infer_graph

data = mx.sym.var("data")
SHAPE = {"data": (2, 16, 8, 8)}


def _view(sym, shapes, dtypes=None):
    """The selector's view of `sym`'s head node, after inference."""
    g = Graph(sym.outputs)
    shape_of, dtype_of = infer_graph(g, shapes, dtypes or {})
    return _views(g, shape_of, dtype_of)[-1]


ACT = "oneDNN's Activation takes relu, sigmoid, softrelu, tanh"


@pytest.mark.parametrize("sym, shapes, dtypes, reason", [
    (mx.sym.Activation(data, act_type="softsign"), SHAPE, None,
     f"act_type=softsign ({ACT})"),
    (mx.sym.LeakyReLU(data, act_type="selu"), SHAPE, None,
     "act_type=selu (oneDNN's LeakyReLU takes elu, gelu, leaky)"),
    (mx.sym.exp(data), SHAPE, None, "exp is not in the DNNL operator table (configs/dnnl.yaml)"),
    (mx.sym.Convolution(data, kernel=(1, 1), num_filter=2), SHAPE, {"data": np.float16},
     "float16 (oneDNN runs bfloat16, float32)"),
    (mx.sym.LayerNorm(data, axis=1), SHAPE, None, "axis=1 (oneDNN's LayerNorm takes -1)"),
    (mx.sym.LRN(data, nsize=3), {"data": (2, 16, 8)}, None, "3-d data (oneDNN's LRN takes 4-d)"),
    (mx.sym.Pooling(data, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                    pooling_convention="full"), {"data": (1, 1, 8, 8)}, None,
     "avg with full convention and padding (oneDNN's divisor cannot match MXNet's)"),
    (mx.sym.Pooling(data, kernel=(3, 3), stride=(4, 4), pad=(2, 2), pooling_convention="full"),
     {"data": (1, 1, 4, 4)}, None,
     "a window lies wholly in the padding (kernel (3, 3), stride (4, 4), pad (2, 2), full "
     "convention, input (4, 4))"),
    (mx.sym.Pooling(data, kernel=(2, 2), pad=(2, 2)), SHAPE, None,
     "pad (2, 2) not smaller than the kernel (2, 2)"),
    (mx.sym.broadcast_sub(mx.sym.var("a"), mx.sym.var("b")),
     {"a": (1, 3, 1, 1), "b": (2, 3, 4, 5)}, None,
     "broadcasts its first operand ((1, 3, 1, 1) with (2, 3, 4, 5); oneDNN broadcasts the "
     "second only)"),
    (mx.sym.broadcast_add(mx.sym.var("a"), mx.sym.var("b")),
     {"a": (1, 3, 1, 5), "b": (2, 3, 4, 1)}, None,
     "broadcasts both operands ((1, 3, 1, 5) with (2, 3, 4, 1); oneDNN broadcasts one only)"),
    (mx.sym.Deconvolution(data, kernel=(3, 3), stride=(2, 2), adj=(1, 1), num_filter=2),
     SHAPE, None, "adj (1, 1) larger than pad ()"),
])
def test_refusal_says_why(sym, shapes, dtypes, reason):
    support = default_support()
    view = _view(sym, shapes, dtypes)
    assert support.refusal(view) == reason
    assert not support.accepts(view)


def test_an_accepted_node_has_no_refusal():
    view = _view(mx.sym.Convolution(data, kernel=(3, 3), num_filter=16), SHAPE)
    assert default_support().refusal(view) is None and default_support().accepts(view)


NET_SHAPE = {"data": (1, 3, 32, 32)}


def _unsupported_net():
    """conv -> softsign -> avg pool (full, padded) -> conv -> relu -> FC."""
    c0 = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="c0")
    act = mx.sym.Activation(c0, act_type="softsign", name="act0")
    pool = mx.sym.Pooling(act, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                          pooling_convention="full", name="pool0")
    c1 = mx.sym.Convolution(pool, kernel=(3, 3), pad=(1, 1), num_filter=16, name="c1")
    return mx.sym.FullyConnected(mx.sym.relu(c1, name="r1"), num_hidden=10, name="fc")


SUMMARY = f"""backend DNNL (DnnlProperty): 2 subgraphs, 2 operators left out
  sg_dnnl_0 (_sg_dnnl): 1 operator
  sg_dnnl_1 (_sg_dnnl): 3 operators
  fused: conv_act x1
  left out: act_type=softsign ({ACT}): act0
  left out: avg with full convention and padding (oneDNN's divisor cannot match MXNet's): pool0"""


def test_partition_summary_of_a_net_with_unsupported_operators():
    report = mx.subgraph.partition_summary(_unsupported_net(), "DNNL", shapes=NET_SHAPE)
    assert str(report) == SUMMARY
    assert report.kernels is None   # decided when the subgraphs are compiled


def test_bind_logs_the_summary_and_each_refused_node(monkeypatch, caplog):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    with caplog.at_level(logging.DEBUG, logger="minimx.subgraph"):
        ex = _unsupported_net().simple_bind(mx.cpu(), grad_req="null", **NET_SHAPE)
    records = [(r.levelname, r.getMessage()) for r in caplog.records
               if r.name == "minimx.subgraph"]
    # c1's 17x17 output at batch 1: 25 tiles of 4x4, 81 of 2x2, so F(2x2)
    winograd = ("convolutions run as Winograd F(4x4, 3x3): none\n"
                "convolutions run as Winograd F(2x2, 3x3): 1 (c1)")
    assert records == [
        ("INFO", f"partition summary:\n{SUMMARY}\n{winograd}"),
        ("DEBUG", f"backend DNNL (DnnlProperty): left out act0 (Activation): act_type=softsign "
                  f"({ACT})"),
        ("DEBUG", "backend DNNL (DnnlProperty): left out pool0 (Pooling): avg with full "
                  "convention and padding (oneDNN's divisor cannot match MXNet's)"),
    ]
    text = ex.debug_str()
    lines = text.splitlines()
    act = next(i for i, line in enumerate(lines) if line.startswith("Op: Activation act0("))
    assert lines[act + 1] == ("  ! left out by backend DNNL (DnnlProperty): act_type=softsign "
                              f"({ACT})")
    tail = lines[lines.index("Partition:"):]
    assert tail == ["Partition:", *(f"  {line}" for line in SUMMARY.splitlines()),
                    *(f"  {line}" for line in winograd.splitlines())]


def test_resnet50_summary_and_its_winograd_convolutions(monkeypatch):
    net = mx.models.get_model("resnet50_v1")
    shape = {"data": (1, 3, 224, 224)}
    summary = ("backend DNNL (DnnlProperty): 1 subgraph\n"
               "  sg_dnnl_0 (_sg_dnnl): 174 operators\n"
               "  fused: conv_bn x4, conv_bn_act x33, conv_bn_sum_postsum_act x16, "
               "stride_hoist x3")
    assert str(mx.subgraph.partition_summary(net, "DNNL", shapes=shape)) == summary
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    ex = net.simple_bind(mx.cpu(), grad_req="null", **shape)
    f4, f2 = ex._partition_report.kernels.values()
    # The 3x3 convolutions but stage 4's (7x7 output: 4 tiles, too few at batch 1)
    # and the last of each stage before (stride 2 once the next stage's is hoisted);
    # stage 3's (14x14 output: 16 tiles of 4x4, 49 of 2x2) by F(2x2).
    threes = [n.name for n in net._topo() if n.op == "Convolution"
              and n.params.kernel == (3, 3) and "stage4" not in n.name]
    lasts = {name.split("_conv")[0]: name for name in threes}.values()
    threes = [name for name in threes if name not in lasts]
    assert f4 + f2 == threes and len(threes) == 10
    assert f2 == [name for name in threes if "stage3" in name] and len(f2) == 5
    way = "  convolutions run as Winograd"
    assert ex.debug_str().endswith(f"{summary.replace(chr(10), chr(10) + '  ')}\n"
                                   f"{way} F(4x4, 3x3): 5 ({', '.join(f4)})\n"
                                   f"{way} F(2x2, 3x3): 5 ({', '.join(f2)})")


def test_winograd_convolutions_at_bind(monkeypatch):
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    # 16 channels on 8x8 (4 tiles per image, 2 images): not enough tiles.
    small = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="small")
    big = mx.sym.Convolution(mx.sym.Pooling(small, kernel=(1, 1), stride=(1, 1)), kernel=(3, 3),
                             pad=(1, 1), num_filter=16, name="big")
    ex = big.simple_bind(mx.cpu(), grad_req="null", data=(2, 16, 16, 16))
    assert ex.debug_str().endswith("convolutions run as Winograd F(4x4, 3x3): 2 (small, big)")
    ex = small.simple_bind(mx.cpu(), grad_req="null", data=(1, 16, 8, 8))
    assert ex.debug_str().endswith("convolutions run as Winograd F(4x4, 3x3): none")
