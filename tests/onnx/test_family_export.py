"""GluonCV / GluonNLP models of issue 15 exported to ONNX give MXNet 1.9.1's outputs in onnxruntime
(tests/fixtures/families: the graphs, seeded weights, inputs and MXNet's outputs); the
models whose operators ONNX lacks (NMS, box decoding...) are refused, naming them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import minimx as mx
from tests.models.test_families import load
from tools.seeded_weights import seeded_weights

EXPORTABLE = ["bert_12_768_12", "deeplab_resnet50_voc", "fcn_resnet50_voc", "mobilenetv3_small",
              "psp_resnet50_voc", "resnest50", "resnet50_v1d", "simple_pose_resnet18_v1b",
              "standard_lstm_lm_200"]
REFUSED = {"ssd_512_mobilenet1.0_voc": "ssd0_box_nms0 (_contrib_box_nms): no ONNX translation"}


def export(name: str, path: Path) -> tuple[str, dict[str, np.ndarray], list[np.ndarray]]:
    """(ONNX file, inputs, MXNet's outputs) of one family fixture."""
    sym, spec, values = load(name)
    weights = seeded_weights({k: tuple(v) for k, v in spec["params"].items()}, spec["seed"])
    inputs = {n: values[n] for n in sym.list_inputs() if n not in weights}
    outputs = [values[f"output{i}"] for i in range(len(sym.list_outputs()))]
    return (mx.onnx.export_model(sym, weights, [v.shape for v in inputs.values()],
                                 [v.dtype for v in inputs.values()], str(path)),
            inputs, outputs)


@pytest.mark.parametrize("name", EXPORTABLE)
def test_family_model_gives_mxnet_outputs(name: str, tmp_path: Path) -> None:
    path, inputs, want = export(name, tmp_path / f"{name}.onnx")
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        # float32 sums in another order than MXNet's, through 50 layers
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3 * float(np.abs(w).max()))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_family_model_without_onnx_form_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(mx.OperatorError, match=REFUSED[name].replace("(", r"\(")
                       .replace(")", r"\)")):
        export(name, tmp_path / "never.onnx")
    assert not (tmp_path / "never.onnx").exists()
