"""`quantize_net_v2` / `quantize_net` on a Gluon SymbolBlock against MXNet 1.9.1's
(tests/fixtures/quantize_net, written by tools/mxnet_quantize_net_fixtures.py on
the gluon group's exported `cnn`): the same quantized operators, names and
calibration ranges, and MXNet's outputs."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError
from minimx.contrib.quantization import quantize_net, quantize_net_v2
from minimx.gluon import InputError, SymbolBlock

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORD = json.loads((FIXTURES / "quantize_net" / "cases.json").read_text())
ARRAYS = np.load(FIXTURES / "quantize_net" / "outputs.npz")
FUNCTIONS = {"quantize_net_v2": quantize_net_v2, "quantize_net": quantize_net}


def cnn() -> SymbolBlock:
    gluon = FIXTURES / "gluon"
    return SymbolBlock.imports(str(gluon / "cnn-symbol.json"), ["data"],
                               str(gluon / "cnn-0000.params"))


def graph(block: SymbolBlock) -> list:
    nodes = json.loads(block._cached_graph[1].tojson())["nodes"]
    return [[n["op"], n["name"], {k: float(v) for k, v in n.get("attrs", {}).items()
                                  if k in ("min_calib_range", "max_calib_range")}]
            for n in nodes if n["op"] != "null"]


def quantized(function: str, kwargs: dict, calib_data=None) -> SymbolBlock:
    kwargs = dict(kwargs)
    if kwargs["calib_mode"] != "none":
        kwargs["calib_data"] = calib_data if calib_data is not None else \
            mx.io.NDArrayIter(ARRAYS["calib"], batch_size=4)
    if "data_shapes" in kwargs:
        kwargs["data_shapes"] = [mx.io.DataDesc(n, tuple(s)) for n, s in kwargs["data_shapes"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FUNCTIONS[function](cnn(), **kwargs)


@pytest.mark.parametrize("case,function,kwargs", RECORD["cases"],
                         ids=[c[0] for c in RECORD["cases"]])
def test_quantize_net_gives_mxnets_block(case: str, function: str, kwargs: dict) -> None:
    block = quantized(function, kwargs)
    got, want = graph(block), RECORD["graphs"][case]
    assert [n[:2] for n in got] == [n[:2] for n in want]
    for (_, name, ranges), (_, _, want_ranges) in zip(got, want, strict=True):
        assert ranges.keys() == want_ranges.keys(), name
        for key, value in ranges.items():
            assert value == pytest.approx(float(want_ranges[key]), rel=1e-5), (name, key)
    out = block(mx.nd.array(ARRAYS["eval"])).asnumpy()
    expected = ARRAYS[case]
    # The same integers: the outputs agree to float32 rounding (bit for bit here).
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6 * float(np.abs(expected).max()))


def test_a_dataloader_of_images_and_labels_calibrates_as_the_iterator_does() -> None:
    # MXNet 1.9.1 fails on this (its SymbolBlock refuses the label); minimx feeds
    # the block's inputs with a batch's first arrays.
    images = ARRAYS["calib"]
    loader = mx.gluon.data.DataLoader(
        mx.gluon.data.ArrayDataset(images, np.arange(len(images))), batch_size=4)
    kwargs = dict(calib_mode="naive")
    assert graph(quantized("quantize_net_v2", kwargs, loader)) == \
        graph(quantized("quantize_net_v2", kwargs))


def test_the_float_block_is_left_as_it_was() -> None:
    net = cnn()
    before = {k: p.data().asnumpy().copy() for k, p in net.collect_params().items()}
    quantize_net_v2(net, calib_mode="naive",
                    calib_data=mx.io.NDArrayIter(ARRAYS["calib"], batch_size=4))
    after = net.collect_params()
    assert all(np.array_equal(after[k].data().asnumpy(), v) for k, v in before.items())


def test_parameters_waiting_for_their_shapes_get_them_from_a_run_on_zeros() -> None:
    # As MXNet's: a block imported without its parameters and initialized is run once
    # on zeros of the calibration data's (or data_shapes') shapes before it is exported.
    def initialized() -> SymbolBlock:
        net = SymbolBlock.imports(str(FIXTURES / "gluon" / "cnn-symbol.json"), ["data"])
        net.initialize(mx.init.Uniform(0.1))
        return net
    calib = mx.io.NDArrayIter(ARRAYS["calib"], batch_size=4)
    q = quantize_net_v2(initialized(), calib_mode="naive", calib_data=calib)
    eval_data = mx.nd.array(ARRAYS["eval"])
    assert q(eval_data).shape == cnn()(eval_data).shape
    q = quantize_net_v2(initialized(), data_shapes=[("data", ARRAYS["eval"].shape)])
    assert q(eval_data).shape == cnn()(eval_data).shape
    with pytest.raises(InputError, match="give data_shapes"):
        quantize_net_v2(initialized())


def test_a_block_partitioned_for_onednn_quantizes_as_the_plain_one() -> None:
    # MXNet's pass reads its own fused nodes; minimx's _sg_dnnl ones go back to the layers
    net = cnn()
    net.hybridize(backend="MKLDNN")
    net(mx.nd.array(ARRAYS["eval"]))
    assert {n.op for n in net._cached_graph[1]._topo()} >= {"_sg_dnnl"}
    kwargs = dict(calib_mode="naive")
    assert graph(quantized("quantize_net_v2", kwargs)) == graph(
        quantize_net_v2(net, calib_mode="naive",
                        calib_data=mx.io.NDArrayIter(ARRAYS["calib"], batch_size=4)))


def test_quantize_net_warns_as_mxnet_does() -> None:
    with pytest.warns(UserWarning, match="deprecated after MXNet 2.0"):
        quantize_net(cnn())


@pytest.mark.parametrize("call,error,match", [
    (lambda: quantize_net_v2(mx.sym.var("x")), InputError, "takes a gluon SymbolBlock"),
    (lambda: quantize_net_v2(cnn(), calib_mode="naive"), MinimxError, "calib_data must be"),
    (lambda: quantize_net_v2(cnn(), data_shapes=[("img", (1, 3, 8, 8))]), InputError,
     "block's inputs are"),
    (lambda: quantize_net_v2(cnn(), exclude_layers=["nothing"]), MinimxError,
     "name no operator"),
], ids=["not-a-block", "no-calib-data", "data-shapes", "excluded"])
def test_bad_arguments_are_refused(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()
