"""mx.viz: print_summary and plot_network against MXNet 1.9.1's, and subgraph clusters."""
from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from tests.small_cnn import small_cnn

from .onednn_required import require_onednn

FIXTURE = Path(__file__).parent / "fixtures" / "viz" / "viz.json.gz"
CASES = json.loads(gzip.open(FIXTURE, "rt").read())["cases"]


def case(name: str) -> tuple[mx.sym.Symbol, dict | None, dict]:
    c = CASES[name]
    shape = None if c["shape"] is None else {k: tuple(v) for k, v in c["shape"].items()}
    return mx.sym.load_json(c["symbol"]), shape, c


@pytest.mark.parametrize("name", sorted(CASES))
def test_print_summary_prints_what_mxnet_prints(name: str, capsys) -> None:
    sym, shape, want = case(name)
    mx.viz.print_summary(sym, shape=shape)
    assert capsys.readouterr().out == want["summary"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_plot_network_dot_is_mxnets(name: str) -> None:
    sym, shape, want = case(name)
    dot = mx.viz.plot_network(sym, shape=shape)
    # graphviz releases differ only in the final newline
    assert dot.source.rstrip() == want["dot"].rstrip()
    assert dot.name == "plot" and dot.format == "pdf"


def conv_chain(channels: int, filters: int, kernel: int, hidden: int, bias: bool
               ) -> mx.sym.Symbol:
    x = mx.sym.Convolution(mx.sym.var("data"), kernel=(kernel, kernel), num_filter=filters,
                           no_bias=not bias, name="conv")
    x = mx.sym.Activation(mx.sym.BatchNorm(x, name="bn"), act_type="relu", name="relu")
    return mx.sym.FullyConnected(x, num_hidden=hidden, no_bias=not bias, name="fc")


@settings(max_examples=20, deadline=None)
@given(channels=st.integers(1, 8), filters=st.integers(1, 8), kernel=st.integers(1, 3),
       hidden=st.integers(1, 8), bias=st.booleans())
def test_total_follows_mxnets_rule_on_a_chain(channels, filters, kernel, hidden, bias):
    """MXNet's count: the convolution's weight and bias, BatchNorm's gamma and beta,
    and FullyConnected from the channels of its input (not its flattened size)."""
    sym = conv_chain(channels, filters, kernel, hidden, bias)
    text = mx.viz.summary(sym, shape={"data": (1, channels, 6, 6)})
    conv = filters * channels * kernel * kernel + (filters if bias else 0)
    fc = (filters + bias) * hidden
    rows = {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\(\w+\) +\S* +(\d+) ", text, re.M)}
    assert rows == {"data": 0, "conv": conv, "bn": 2 * filters, "relu": 0, "fc": fc}
    assert f"Total params: {conv + 2 * filters + fc}\n" in text
    side = 7 - kernel
    assert re.search(rf"^conv\(Convolution\) +{filters}x{side}x{side} ", text, re.M)


def test_positions_and_line_length() -> None:
    sym = conv_chain(3, 4, 3, 5, True)
    text = mx.viz.summary(sym, shape={"data": (1, 3, 6, 6)}, line_length=60,
                          positions=[20, 35, 45, 60])
    lines = text.splitlines()
    assert lines[0] == "_" * 60 and all(len(line) <= 60 for line in lines)
    assert lines[1] == "Layer (type)        Output Shape   Param #   Previous Layer "


def test_bad_arguments() -> None:
    with pytest.raises(mx.MinimxError, match="must be a Symbol"):
        mx.viz.print_summary("net")  # type: ignore[arg-type]
    with pytest.raises(mx.MinimxError, match="must be a Symbol"):
        mx.viz.plot_network(None)  # type: ignore[arg-type]
    with pytest.raises(mx.ShapeError, match="do not determine every shape"):
        mx.viz.summary(conv_chain(3, 4, 3, 5, True), shape={"fc_bias": (5,)})


def test_numbered_outputs_have_no_shape_in_the_summary() -> None:
    """MXNet finds a layer's shape under ``<name>_output``: SliceChannel's outputs are
    ``split_output0``..., so its row has no shape, and fc counts no input channels."""
    split = mx.sym.SliceChannel(mx.sym.var("data"), num_outputs=2, name="split")
    fc = mx.sym.FullyConnected(split[1], num_hidden=3, name="fc")
    assert mx.viz.summary(fc, shape={"data": (1, 4, 2)}, line_length=60).splitlines()[3:8] == [
        "data(null)                4x2         0                     ",
        "_" * 60,
        "split(SliceChannel)                   0     data            ",
        "_" * 60,
        "fc(FullyConnected)        3           3     split           "]


def test_a_one_axis_input_counts_no_channels() -> None:
    """MXNet 1.9.1 raises IndexError here (BatchNorm's gamma, node 1, is taken for a
    layer as the head's output index 1 is)."""
    bn = mx.sym.BatchNorm(mx.sym.var("data"), output_mean_var=True, name="bn")
    text = mx.viz.summary(bn[1], shape={"data": (1, 4, 2)})
    assert "bn_gamma" in text and "Total params: 8\n" in text


def test_bilinear_resize_draws_its_data_edge_only() -> None:
    like = mx.sym.var("like")
    resize = mx.sym.contrib.BilinearResize2D(mx.sym.var("data"), like, mode="like",
                                             name="resize")
    edges = [line.strip() for line in mx.viz.plot_network(resize).source.splitlines()
             if "->" in line]
    assert edges == ['resize -> data [label="" arrowtail=open dir=back]']


def test_edges_are_labelled_with_the_output_they_carry() -> None:
    """MXNet 1.9.1 labels every edge from a node with its first output's shape and dtype
    (BatchNorm's mean as its data), and raises KeyError for topk's `_output0`."""
    x = mx.sym.var("data")
    bn = mx.sym.BatchNorm(x, output_mean_var=True, name="bn")
    top = mx.sym.topk(x, k=1, ret_typ="both", axis=1, name="top")
    y = mx.sym.Group([mx.sym.relu(bn[1], name="mean_relu"),
                      mx.sym.relu(top[1], name="top_relu")])
    dot = mx.viz.plot_network(y, shape={"data": (2, 3, 4)}, dtype={"data": "float16"}).source
    assert 'mean_relu -> bn [label="(float32)"' in dot
    assert 'top_relu -> top [label="1x4(float32)"' in dot


def test_subgraph_nodes_are_clusters_of_their_inner_graph() -> None:
    part = mx.subgraph.partition(small_cnn(), "default",
                                 op_names=["Convolution", "BatchNorm", "Activation"])
    dot = mx.viz.plot_network(part, shape={"data": (1, 3, 8, 8)}).source
    cluster = re.search(r"subgraph cluster_sg_default_0 \{(.*?)\n\t\}", dot, re.S)
    assert cluster is not None
    body = cluster.group(1)
    assert 'label="sg_default_0 (_subgraph_op, default)"' in body
    assert 'fillcolor="#c7e9c0"' in body
    for inner in ("conv0", "bn0", "relu0"):
        assert f'"sg_default_0/{inner}" [' in body
    # the data enters the inner convolution; pooling reads the inner relu, with its shape
    assert '"sg_default_0/conv0" -> data [label="3x8x8"' in dot
    assert 'pool0 -> "sg_default_0/relu0" [label="8x8x8"' in dot
    assert '"sg_default_0/bn0" -> "sg_default_0/conv0" [label=""' in dot


def test_dnnl_clusters_nest_fused_chains() -> None:
    require_onednn()
    part = mx.subgraph.partition(small_cnn(), "DNNL")
    dot = mx.viz.plot_network(part, shape={"data": (1, 3, 8, 8)}).source
    assert "subgraph cluster_sg_dnnl_0 {" in dot
    assert 'subgraph "cluster_sg_dnnl_0/sg_dnnl_conv_bn_act_0" {' in dot
    assert dot.count('fillcolor="#c6dbef"') == 1 and dot.count('fillcolor="#e4eef8"') == 1
    assert 'label="sg_dnnl_conv_bn_act_0 (_sg_dnnl_conv, DNNL fused)"' in dot
    assert '"sg_dnnl_0/sg_dnnl_conv_bn_act_0/conv0" -> data [label="3x8x8"' in dot


def test_hide_weights_and_dtype_labels() -> None:
    sym = small_cnn()
    shown = mx.viz.plot_network(sym, hide_weights=False, dtype={"data": "float32"},
                                shape={"data": (1, 3, 8, 8)}).source
    assert 'conv0 -> conv0_weight [label="3x3x3(float32)"' in shown
    hidden = mx.viz.plot_network(sym, node_attrs={"shape": "oval"}).source
    assert "conv0_weight" not in hidden and "shape=oval" in hidden


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot is not installed")
def test_renders_with_dot(tmp_path: Path) -> None:
    part = mx.subgraph.partition(small_cnn(), "default", op_names=["Convolution", "BatchNorm"])
    dot = mx.viz.plot_network(part, shape={"data": (1, 3, 8, 8)}, save_format="png")
    path = Path(dot.render(tmp_path / "net", cleanup=True))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_visualization_is_viz():
    """MXNet scripts call it by either name."""
    assert mx.visualization is mx.viz
