"""INT8 and bfloat16 on GluonCV's detectors, segmenters and pose net, against MXNet 1.9.1.

tests/fixtures/families_int8 (tools/mxnet_fixtures.py, group ``families_int8``) holds what
MXNet's ``quantize_model_mkldnn`` (naive calibration on two seeded images, ``auto``, the
layers GluonCV's own INT8 test excludes) made of the ``families`` graphs with their seeded
weights, its INT8 outputs on a third image (float16 copies, and digests of the float32
values), and what ``amp.convert_model`` (bfloat16) made of a detector and a segmenter.
Parameters are not stored: both sides quantize the same seeded float weights, and the
digest of MXNet's quantized parameters is compared with minimx's.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import DTypeError, subgraph_backend
from minimx.contrib import amp
from minimx.contrib.quantization import quantize_model_mkldnn
from tests.contrib.test_amp_convert import structure
from tests.contrib.test_int8_agreement import _nodes, _without_ranges
from tests.models.test_families import assert_close
from tests.onednn_required import require_onednn
from tools.seeded_weights import seeded_weights

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "families_int8"
RECORD = json.loads((HERE / "families_int8.json").read_text())
INT8 = sorted(RECORD["int8"])
BF16 = sorted(RECORD["bf16"])


def checkpoint(name: str) -> tuple[mx.sym.Symbol, dict, dict]:
    """The families fixture's float graph with its seeded weights."""
    sym = mx.sym.load_json(gzip.decompress(
        (FIXTURES / "families" / f"{name}-symbol.json.gz").read_bytes()).decode())
    spec = json.loads((FIXTURES / "families" / f"{name}.json").read_text())
    weights = seeded_weights({k: tuple(v) for k, v in spec["params"].items()}, spec["seed"],
                             spec.get("gain", 1.0))
    return (sym, {k: mx.nd.array(weights[k]) for k in spec["arg_params"]},
            {k: mx.nd.array(weights[k]) for k in spec["aux_params"]})


def images(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(calibration images, evaluation image), as the fixture script makes them."""
    count, shape = RECORD["calib_count"], RECORD["int8"][name]["shape"]
    rng = np.random.RandomState(RECORD["seed"])
    made = rng.uniform(-1, 1, (count + 1, *shape[1:])).astype("float32")
    return made[:count], made[count:]


def digest(arrays: dict[str, np.ndarray]) -> str:
    """The fixture script's `_digest`: names, dtypes, shapes and bytes, in name order."""
    h = hashlib.sha256()
    for name, value in sorted(arrays.items()):
        h.update(f"{name}:{value.dtype}:{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    return h.hexdigest()


_QUANTIZED: dict[str, tuple] = {}


def quantized(name: str) -> tuple[mx.sym.Symbol, dict, dict]:
    """minimx's quantize_model_mkldnn of `name`, called as the fixture script calls MXNet's
    (kept for the module: several tests read it)."""
    if name not in _QUANTIZED:
        sym, args, auxs = checkpoint(name)
        calib, _ = images(name)
        _QUANTIZED[name] = quantize_model_mkldnn(
            sym, args, auxs, ctx=mx.cpu(), calib_mode="naive", quantized_dtype="auto",
            excluded_sym_names=RECORD["int8"][name]["excluded"], label_names=None,
            calib_data=mx.io.NDArrayIter(calib, batch_size=1),
            num_calib_examples=len(calib))
    return _QUANTIZED[name]


def mxnets_graph(name: str, kind: str) -> str:
    return gzip.decompress((HERE / f"{name}-{kind}-symbol.json.gz").read_bytes()).decode()


def nms_inputs(sym: mx.sym.Symbol) -> list[str]:
    """Internal outputs feeding the graph's NMS, named as MXNet names them."""
    nodes = json.loads(sym.tojson())["nodes"]
    return [nodes[source]["name"] + "_output" for node in nodes
            if node["op"] == "_contrib_box_nms" for source, _, _ in node["inputs"]]


def run(sym: mx.sym.Symbol, args: dict, auxs: dict, feeds: dict, internals: list[str],
        backend: str) -> dict[str, np.ndarray]:
    """`output<i>` and `internal:<name>` of `sym` on `feeds`, bound with `backend`."""
    group = mx.sym.Group([sym] + [sym.get_internals()[n] for n in internals])
    values = {**args, **{k: mx.nd.array(v) for k, v in feeds.items()}}
    with subgraph_backend(backend):
        ex = group.bind(mx.cpu(), {n: values[n] for n in group.list_arguments()},
                        aux_states=auxs, grad_req="null")
        outs = [y.asnumpy() for y in ex.forward(is_train=False)]
    heads = len(sym.list_outputs())
    return {**{f"output{i}": v for i, v in enumerate(outs[:heads])},
            **{f"internal:{n}": v for n, v in zip(internals, outs[heads:], strict=True)}}


@pytest.mark.parametrize("name", INT8)
def test_images_are_the_ones_mxnet_calibrated_and_ran_on(name: str) -> None:
    calib, evaluation = images(name)
    assert digest({"calib": calib, "evaluation": evaluation}) == RECORD["int8"][name][
        "images_sha256"]


@pytest.mark.parametrize("name", INT8)
def test_quantized_graph_and_parameters_are_mxnets(name: str) -> None:
    qsym, qargs, qauxs = quantized(name)
    want, got = _nodes(mxnets_graph(name, "int8")), _nodes(qsym.tojson())
    assert [n["name"] for n in got] == [n["name"] for n in want]
    for mine, mxnets in zip(got, want, strict=True):
        (mine, my_ranges), (mxnets, mxnet_ranges) = map(_without_ranges, (mine, mxnets))
        assert mine == mxnets
        assert my_ranges == pytest.approx(mxnet_ranges, rel=1e-5, abs=1e-6), mine["name"]
    params = {k: v.asnumpy() for k, v in {**qargs, **qauxs}.items()}
    assert digest(params) == RECORD["int8"][name]["params_sha256"]


@pytest.mark.parametrize("backend", ["NONE", "DNNL"])
@pytest.mark.parametrize("name", INT8)
def test_mxnets_quantized_model_gives_mxnets_int8_outputs(name: str, backend: str) -> None:
    """MXNet's quantized graph with its parameters (minimx's, whose digest is MXNet's).
    Where each INT8 region ends (its dequantize), the values are MXNet's to the bit; the
    float32 layers after (box decoding, resizing) differ in the last bits, as the float
    models do (tests/models/test_families.py), which the float16 copies allow."""
    if backend == "DNNL":
        require_onednn()
    qsym = mx.sym.load_json(mxnets_graph(name, "int8"))
    _, qargs, qauxs = quantized(name)
    _, evaluation = images(name)
    ends = RECORD["int8"][name]["dequantized_sha256"]
    got = run(qsym, qargs, qauxs, {"data": evaluation}, nms_inputs(qsym) + list(ends), backend)
    assert {n: digest({n: got[f"internal:{n}"]}) for n in ends} == ends
    with np.load(HERE / "int8_outputs.npz") as npz:
        halves = {k.split(":", 1)[1]: npz[k] for k in npz.files if k.startswith(f"{name}:")}
    assert "output0" in halves
    for key, half in halves.items():
        assert_close(got[key], half.astype(np.float32), 2e-3, f"{name}: {key}")


@pytest.mark.parametrize("name", BF16)
def test_converted_graph_is_mxnets(name: str) -> None:
    sym, args, auxs = checkpoint(name)
    csym, _, _ = amp.convert_model(sym, args, auxs, target_dtype="bfloat16")
    assert structure(csym.tojson()) == structure(mxnets_graph(name, "bf16"))


@pytest.mark.parametrize("backend", ["NONE", "DNNL"])
@pytest.mark.parametrize("name", BF16)
def test_bfloat16_runs_as_close_to_float32_as_mxnets(name: str, backend: str) -> None:
    """Measured where MXNet measured its own bfloat16 run (the detector's heads before the
    score threshold and NMS): within twice MXNet's largest difference, bfloat16 rounding
    landing elsewhere in sums taken in another order."""
    if backend == "DNNL":
        require_onednn()
    sym, args, auxs = checkpoint(name)
    csym, cargs, cauxs = amp.convert_model(sym, args, auxs, target_dtype="bfloat16")
    with np.load(FIXTURES / "families" / f"{name}-io.npz") as io:
        feeds = {"data": io["data"]}
    internals = RECORD["bf16"][name]["internals"]
    fp32 = run(sym, args, auxs, feeds, internals, backend)
    bf16 = run(csym, cargs, cauxs, feeds, internals, backend)
    for key, mxnets in RECORD["bf16"][name]["error"].items():
        scale = max(1.0, float(np.abs(fp32[key]).max()))
        ours = float(np.abs(bf16[key].astype(np.float64) - fp32[key]).max() / scale)
        assert 0 < ours <= 2 * mxnets, (key, ours, mxnets)


def test_pspnet_is_refused_as_mxnet_refuses_it() -> None:
    """MXNet's conversion leaves the pyramid's input in float32 beside bfloat16 branches
    into one Concat, and its type inference refuses the graph."""
    assert "Non-uniform data type in Concat" in (HERE / "psp_resnet50_voc-bf16-error.txt"
                                                 ).read_text()
    sym, args, auxs = checkpoint("psp_resnet50_voc")
    with pytest.raises(DTypeError, match="pspnet0__pyramidpooling0_concat0"):
        amp.convert_model(sym, args, auxs, target_dtype="bfloat16")
