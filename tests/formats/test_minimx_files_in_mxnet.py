"""Graphs and params written by minimx load in MXNet 1.9.1 and give minimx's outputs.

Every operator's round-trip case (tests/symbol/test_json.py) and a model-zoo
net are saved as checkpoints here, then loaded and run by MXNet 1.9.1 in its
own virtual environment (MXNET_ORACLE_PYTHON, default /work/venvs/mxnet191);
without that environment the test is skipped. fp32 tolerance: rtol 1e-4,
atol 1e-5.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import minimx as mx

from ..symbol.test_json import CASES, _inputs

MXNET_PYTHON = Path(os.environ.get("MXNET_ORACLE_PYTHON", "/work/venvs/mxnet191/bin/python"))

# Runs in MXNet's environment: for each case, load the checkpoint, bind with
# the saved inputs, and save the outputs.
RUNNER = """
import json, sys
import mxnet as mx
for name in json.loads(sys.argv[2]):
    prefix = f"{sys.argv[1]}/{name}"
    sym, args, aux = mx.model.load_checkpoint(prefix, 0)
    inputs = mx.nd.load(f"{prefix}-inputs.params")
    args.update(inputs)
    ex = sym.bind(mx.cpu(), {k: args[k] for k in sym.list_arguments()},
                  aux_states={k: aux[k] for k in sym.list_auxiliary_states()}, grad_req="null")
    mx.nd.save(f"{prefix}-mxnet.params", ex.forward(is_train=False))
"""


def _save_case(tmp_path: Path, name: str, sym, inputs: dict) -> list[np.ndarray]:
    aux_names = set(sym.list_auxiliary_states())
    data = {k: v for k, v in inputs.items() if k in ("data", "vec")}
    params = {k: v for k, v in inputs.items() if k not in data}
    mx.model.save_checkpoint(str(tmp_path / name), 0, sym,
                             {k: v for k, v in params.items() if k not in aux_names},
                             {k: v for k, v in params.items() if k in aux_names})
    mx.nd.save(str(tmp_path / f"{name}-inputs.params"), data)
    return [o.asnumpy() for o in sym.eval(**inputs)]


@pytest.mark.skipif(not MXNET_PYTHON.exists(), reason="no MXNet 1.9.1 virtualenv")
def test_files_written_here_run_in_mxnet(tmp_path):
    expected = {}
    # A Custom node runs Python code registered in the process, which MXNet's has not
    # (tests/test_operator.py checks Custom against MXNet's own run of the same code).
    # MXNet 1.9.1 runs its multi-tensor SGD updates imperatively only: in a graph the
    # _mom ones fail to compose (their FListInputNames reads MultiSGDParam) and type
    # inference leaves the others' dtypes undecided (tests/ops/test_optimizer_ops.py
    # checks all four against MXNet's imperative runs); so do their preloaded forms
    # (tests/ops/test_gap_ops.py).
    imperative_only = {f"{prefix}multi{kind}_update" for prefix in ("", "preloaded_")
                       for kind in ("_sgd", "_sgd_mom", "_mp_sgd", "_mp_sgd_mom")}
    # These MXNet 1.9.1 cannot run in a graph either: _onehot_encode and
    # fill_element_0index have no graph kernel (its executor crashes), _square_sum a
    # row_sparse one only, and type inference leaves _copyto's and _zeros_without_dtype's
    # dtypes undecided (tests/ops/test_gap_ops.py checks them against MXNet's imperative runs).
    # _contrib_allclose's 0-d output is saved by MXNet in a form no loader reads back.
    imperative_only |= {"_onehot_encode", "fill_element_0index", "_square_sum", "_copyto",
                        "_zeros_without_dtype", "_contrib_allclose"}
    # And the last ones added (tests/ops/test_late_ops.py checks them against MXNet's
    # imperative runs): _contrib_group_adagrad_update has a row_sparse kernel only and
    # _set_value (a legacy NDArray function) no graph kernel, both crashing MXNet's
    # executor; binding the multi-tensor AdamW and LAMB updates, MXNet's inference leaves
    # the states' shapes unknown (the mp_ forms': their dtypes).
    imperative_only |= {"_contrib_group_adagrad_update", "_set_value", "_multi_adamw_update",
                        "_multi_mp_adamw_update", "_multi_lamb_update", "_multi_mp_lamb_update"}
    # MXNet 1.9.1's INT8 LSTM fails on CPUs with VNNI (oneDNN 2.4 has no reorder of its
    # weights for those kernels); tests/ops/test_quantized_rnn.py checks it against MXNet's
    # runs with DNNL_MAX_CPU_ISA=AVX512_CORE.
    imperative_only |= {"_contrib_quantized_rnn"}
    for op, build in ((op, b) for op, b in CASES.items()
                      if op != "Custom" and op not in imperative_only):
        sym = build()
        expected[op] = _save_case(tmp_path, op, sym, _inputs(sym))
    net = mx.models.get_model("squeezenet1.1", classes=10)
    rng = np.random.default_rng(0)
    arg_shapes, _, aux_shapes = net.infer_shape(data=(1, 3, 224, 224))
    values = {n: mx.nd.array(rng.normal(0, 0.1, s)) for n, s in
              zip(net.list_arguments(), arg_shapes, strict=True)}
    values.update({n: mx.nd.array(rng.uniform(0.5, 1.5, s)) for n, s in
                   zip(net.list_auxiliary_states(), aux_shapes, strict=True)})
    expected["squeezenet"] = _save_case(tmp_path, "squeezenet", net, values)
    result = subprocess.run([str(MXNET_PYTHON), "-c", RUNNER, str(tmp_path),
                             json.dumps(sorted(expected))],
                            capture_output=True, text=True, timeout=300, check=False,
                            env={**os.environ, "PYTHONPATH": "", "MXNET_SUBGRAPH_BACKEND": "NONE"})
    assert result.returncode == 0, result.stderr[-3000:]
    for name, outs in expected.items():
        got = mx.nd.load(str(tmp_path / f"{name}-mxnet.params"))
        assert len(got) == len(outs), name
        for want, have in zip(outs, got, strict=True):
            np.testing.assert_allclose(have.asnumpy(), want, rtol=1e-4, atol=1e-5, err_msg=name)
