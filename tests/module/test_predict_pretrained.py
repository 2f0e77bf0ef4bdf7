"""MXNet 1.x's "predict with a pre-trained model" flow, written as the tutorial
writes it with only `import minimx as mx`: load a checkpoint, bind a Module for
inference, set its parameters, forward one image at a time through a
``namedtuple('Batch', ['data'])``, and read the probabilities. The checkpoint
and MXNet's outputs are the oracle fixtures of a model-zoo net; the flow runs
on the numpy kernels and through the DNNL backend (chosen by the environment,
as any bind)."""
from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from tests.onednn_required import require_onednn

MODELS = Path(__file__).parents[1] / "fixtures" / "models"
Batch = namedtuple("Batch", ["data"])


@pytest.mark.parametrize("backend", [None, "DNNL"])
@pytest.mark.parametrize("model", ["mobilenet0.125_c10", "resnet18_v1_narrow"])
def test_tutorial_flow_gives_mxnets_outputs(model: str, backend: str | None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    if backend:
        require_onednn()
        monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", backend)
    io = np.load(MODELS / f"{model}-io.npz")
    sym, arg_params, aux_params = mx.model.load_checkpoint(str(MODELS / model), 0)
    mod = mx.mod.Module(symbol=sym, context=mx.cpu(), label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", (1, *io["data"].shape[1:]))],
             label_shapes=mod._label_shapes)
    mod.set_params(arg_params, aux_params, allow_missing=True)
    for image, expected in zip(io["data"], io["output"], strict=True):
        mod.forward(Batch([mx.nd.array(image[None])]))
        prob = mod.get_outputs()[0].asnumpy()
        np.testing.assert_allclose(prob[0], expected, rtol=1e-4, atol=1e-4)
    # The whole batch at once: the module reshapes to it.
    np.testing.assert_allclose(mod.predict(io["data"]).asnumpy(), io["output"],
                               rtol=1e-4, atol=1e-4)
    assert mod.output_shapes == [(sym.list_outputs()[0], io["output"].shape)]
    # The module's one executor ran the backend's graph.
    assert ("_sg_dnnl" in mod._exec_group.execs[0].debug_str()) == (backend == "DNNL")
