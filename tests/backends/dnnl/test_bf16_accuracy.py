"""bfloat16 keeps a trained model's accuracy on real data, and the zoo's outputs.

The digits CNN of the INT8 tests (trained by minimx on scikit-learn's bundled
digits, 98.5% on a held-out third) must stay within 0.5 points of its float32
accuracy when its DNNL subgraph computes in bfloat16. The model fixtures
(tests/fixtures/models, random weights exported by MXNet) must keep their
logits' cosine to float32 near 1, in bf16 by the dtype option and as
`amp.convert_model` converts them (`benchmarks/dnnl_bf16_agreement.py` prints the
README's table of it).
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.graph import Graph

from ...contrib.test_int8_accuracy import TOLERANCE, accuracy, model, predict  # noqa: F401

BENCHMARKS = str(Path(__file__).resolve().parents[3] / "benchmarks")


def _script(name: str):
    """A benchmark script as a module: benchmarks/ is no package, and its scripts
    import each other by name, as when run from there."""
    sys.path.insert(0, BENCHMARKS)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(BENCHMARKS)


agreement_script = _script("dnnl_bf16_agreement")


@pytest.fixture(autouse=True)
def _bf16_cpu() -> None:
    if not onednn.bf16_native():
        pytest.skip(f"oneDNN's ISA here ({onednn.isa()}) has no bfloat16")


def test_digits_in_bf16_within_half_a_point_of_float32(model):  # noqa: F811 (the fixture)
    sym, args, auxs, (_, test_x, _, test_y) = model
    fp32 = accuracy(predict(sym, args, auxs, test_x), test_y)
    part = sym.optimize_for("DNNL", args={"data": mx.nd.array(test_x)}, dtype="bfloat16")
    nodes = [n for n in Graph(part.outputs).nodes if not n.is_variable]
    assert [n.op for n in nodes] == ["_sg_dnnl"]   # the SoftmaxOutput head inside
    assert nodes[0].attrs["dtype"] == "bfloat16"
    probs = predict(part, args, auxs, test_x)
    assert probs.dtype == np.float32
    assert abs(accuracy(probs, test_y) - fp32) <= TOLERANCE, (fp32, accuracy(probs, test_y))


@pytest.mark.parametrize("name", agreement_script.MODELS)
def test_zoo_logits_in_bf16_keep_their_cosine_to_float32(name):
    """Both ways to bf16: the dtype option, and AMP's converted graph, which
    runs in one DNNL subgraph (its casts inside)."""
    *found, subgraphs = agreement_script.measure(name)
    assert subgraphs == 1
    for got in found:
        assert got.cosine >= agreement_script.MIN_COSINE, got
        if got.fp32_spread >= agreement_script.COLLAPSED:   # else the centred logits are noise
            assert got.centred_cosine >= agreement_script.MIN_CENTRED_COSINE, got


def test_mxnets_bf16_checkpoint_runs_in_one_subgraph_as_close_to_float32_as_mxnet():
    """MXNet 1.9.1's own converted ResNet-18 (casts kept, bfloat16 .params). Its
    rounding points are MXNet's operators', ours the fused chains': the outputs
    differ by about as much as each differs from float32, so the bound is on
    the distance to float32, which must be of MXNet's order."""
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    stem = fixtures / "amp" / "resnet18_v1_narrow_bf16_optional"
    sym, args, auxs = mx.model.load_checkpoint(str(stem), 0)
    with np.load(f"{stem}-io.npz") as io:
        data, mxnet_bf16 = io["data"], io["output"]
    with np.load(fixtures / "models" / "resnet18_v1_narrow-io.npz") as io:
        fp32 = io["output"]
    part = sym.optimize_for("DNNL", args={"data": mx.nd.array(data), **args}, aux=auxs)
    assert [n.op for n in Graph(part.outputs).nodes if not n.is_variable] == ["_sg_dnnl"]
    ex = part.simple_bind(mx.cpu(), grad_req="null", data=data.shape)
    ex.copy_params_from(args, auxs)
    got = ex.forward(data=mx.nd.array(data))[0].asnumpy()
    assert got.dtype == np.float32
    theirs = np.abs(mxnet_bf16 - fp32).max()
    assert 0 < np.abs(got - fp32).max() <= 2 * theirs
    np.testing.assert_array_equal(got.argmax(1), mxnet_bf16.argmax(1))
