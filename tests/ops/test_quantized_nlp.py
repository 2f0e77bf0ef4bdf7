"""MXNet 1.9's BERT operators against MXNet 1.9.1's own outputs: the fused oneDNN
self-attention products (`backends.mkldnn_transformer`) and the int8 operators of
its NLP quantization flow (`ops.quantized_nlp`).

Fixtures (tools/mxnet_transformer_fixtures.py, group transformer): each operator as
a one-node MXNet file on fixed inputs, and a self-attention encoder partitioned by
MXNet's MKLDNN backend (float32) and quantized by `quantize_model_mkldnn` (naive).
Integer outputs and the quantized float outputs are compared exactly; float32
products within float32 rounding.
"""
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import DTypeError, ShapeError
from minimx.ops import get_op
from minimx.ops.registry import OpContext

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transformer"
CASES = sorted(p.name.removesuffix("-symbol.json") for p in FIXTURES.glob("*-symbol.json")
               if not p.name.startswith("encoder"))


def arrays(npz, prefix: str) -> list[np.ndarray]:
    return [npz[f"{prefix}{i}"] for i in range(sum(k.startswith(prefix) for k in npz.files))]


@pytest.mark.parametrize("case", CASES)
def test_operator_file_runs_with_mxnets_output(case):
    sym = mx.sym.load(str(FIXTURES / f"{case}-symbol.json"))
    with np.load(FIXTURES / f"{case}.npz") as npz:
        inputs, want = arrays(npz, "in_"), arrays(npz, "out_")
    feeds = {n: mx.nd.array(x, dtype=x.dtype)
             for n, x in zip(sym.list_arguments(), inputs, strict=True)}
    assert sym.infer_type(**{n: x.dtype for n, x in feeds.items()})[1] == [w.dtype for w in want]
    assert sym.infer_shape(**{n: x.shape for n, x in feeds.items()})[1] == [w.shape for w in want]
    got = [y.asnumpy() for y in sym.eval(**feeds)]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        if case.endswith("fp32"):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)
    assert mx.sym.load_json(sym.tojson()).tojson() == sym.tojson()


def test_every_operator_is_checked_against_mxnet():
    from minimx.ops.quantized_nlp import OPERATORS
    ops = {json.loads((FIXTURES / f"{c}-symbol.json").read_text())["nodes"][-1]["op"]
           for c in CASES}
    assert ops == {*OPERATORS, "_sg_mkldnn_selfatt_qk", "_sg_mkldnn_selfatt_valatt"}


def run_checkpoint(name: str) -> tuple[np.ndarray, dict]:
    sym, args, auxs = mx.model.load_checkpoint(str(FIXTURES / name), 0)
    with np.load(FIXTURES / f"{name}-io.npz") as npz:
        io = {k: npz[k] for k in npz.files}
    feeds = {**args, "data": mx.nd.array(io["data"])}
    ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                  aux_states=auxs)
    return ex.forward(is_train=False)[0].asnumpy(), io


def test_mxnet_mkldnn_partitioned_encoder_runs_with_mxnets_output():
    got, io = run_checkpoint("encoder_fp32")
    np.testing.assert_allclose(got, io["output"], rtol=1e-5, atol=1e-5)


def test_mxnet_int8_encoder_runs_with_mxnets_output():
    """Every integer as oneDNN computes it; the float32 LayerNorms after the int8
    layers round differently from MXNet's (far below a quantization step)."""
    got, io = run_checkpoint("encoder_int8")
    np.testing.assert_allclose(got, io["output"], rtol=1e-5, atol=1e-5)
    assert np.abs(got - io["fp32_output"]).max() < 0.1 * np.abs(io["fp32_output"]).max()


def test_dnnl_partitioning_leaves_the_fused_products_out():
    sym, args, _ = mx.model.load_checkpoint(str(FIXTURES / "encoder_fp32"), 0)
    part = sym.optimize_for("DNNL")
    ops = [n["op"] for n in json.loads(part.tojson())["nodes"]]
    assert "_sg_mkldnn_selfatt_qk" in ops and "_sg_mkldnn_selfatt_valatt" in ops


def test_quantized_selfatt_takes_int8_data_naming_the_node():
    qk = mx.sym.load(str(FIXTURES / "selfatt_qk_int32-symbol.json"))
    assert qk.list_arguments() == ["x0", "min_qkv", "max_qkv"]
    assert qk.list_outputs() == [f"sg_mkldnn_selfatt_qk_0_{n}" for n in (
        "output", "min_output", "max_output")]
    assert qk.infer_shape(x0=(5, 2, 24))[1] == [(4, 5, 5), (1,), (1,)]
    assert qk.infer_type(x0="int8")[1] == [np.int32, np.float32, np.float32]
    with pytest.raises(DTypeError, match=r"sg_mkldnn_selfatt_qk_0.*input 0 must be int8, "
                                         r"got float32"):
        qk.infer_type(x0="float32")
    with pytest.raises(ShapeError, match="must split into 3 parts of heads=2"):
        qk.infer_shape(x0=(5, 2, 9))


def test_quantize_asym_refuses_what_mxnet_cannot_run():
    op = get_op("_contrib_quantize_asym")
    with pytest.raises(ShapeError, match="2-d .* 3-d data only"):
        op.forward(op.parse_params({}, "qa"), OpContext(), [np.zeros((2, 3), np.float32)])
    with pytest.raises(DTypeError, match="float32, got int8"):
        mx.sym._contrib_quantize_asym(mx.sym.var("x"), name="qa").infer_type(x="int8")


def test_quantized_elemwise_mul_saturates_and_checks_types():
    op = get_op("_contrib_quantized_elemwise_mul")
    p = op.parse_params({"min_calib_range": "-0.01", "max_calib_range": "0.01"}, "m")
    big = np.full((2,), 127, np.int8)
    one = np.array([1.0], np.float32)
    out = op.forward(p, OpContext(), [big, -big, -one, one, -one, one])
    assert out[0].tolist() == [-128, -128]
    with pytest.raises(DTypeError, match="rhs must be int8, got uint8"):
        mx.sym._contrib_quantized_elemwise_mul(mx.sym.var("a"), mx.sym.var("b"),
                                               name="m").infer_type(a="int8", b="uint8")
