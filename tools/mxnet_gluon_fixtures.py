"""The ``gluon`` fixture group (tools/mxnet_fixtures.py writes it with MXNet 1.9.1,
without a subgraph backend unless a case asks for one): ``mx.gluon.SymbolBlock`` on
exported models, as tests/gluon/test_symbol_block.py checks minimx's.

Two nets, exported by MXNet (``net.export``) with seeded weights: ``cnn`` (a
HybridSequential: convolutions, BatchNorm, relu, pooling, dense) and ``twoio`` (a
HybridBlock of two inputs and two outputs). For each, through
``SymbolBlock.imports``: outputs for batches of two sizes, with and without
``hybridize(backend='MKLDNN')``, after writes to parameters, in float64, and what
MXNet says of float16; the parameters' names, shapes, dtypes and grad_req in
MXNet's order (after imports, after infer_shape, after cast); ``collect_params``
selections; ``repr``; ``summary``; ``save_parameters``'s file; MXNet's messages
for bad files and inputs.

Last, the files minimx's ``SymbolBlock.export`` writes for the same imports
(made by running minimx in a subprocess: ``MINIMX_PYTHON``, default the
``python3`` on PATH, with this checkout on PYTHONPATH) are loaded by MXNet's
``SymbolBlock.imports`` and run; ``minimx_export.json`` records what happened.

Runs with MXNet's Python (minimx only in that subprocess).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet import gluon
from mxnet.gluon import nn

REPO = Path(__file__).resolve().parents[1]
BF16 = np.dtype([("bfloat16", np.uint16)])
# Each net's input names and their shapes without the batch axis; the batch sizes run.
NETS = {"cnn": (["data"], [(3, 8, 8)]), "twoio": (["data0", "data1"], [(3, 6, 6), (4,)])}
BATCHES = (2, 5)

# Runs under minimx: imports each net and exports it as minimx_<net>.
MINIMX_EXPORT = """
import json, sys
import minimx as mx
out = sys.argv[1]
for name, inputs in json.loads(sys.argv[2]).items():
    net = mx.gluon.SymbolBlock.imports(f"{out}/{name}-symbol.json", inputs,
                                       f"{out}/{name}-0000.params")
    net.export(f"{out}/minimx_{name}")
"""


class TwoIO(gluon.HybridBlock):
    """Two inputs (an image, a vector), two outputs."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.conv = nn.Conv2D(4, 3, padding=1)
            self.bn = nn.BatchNorm()
            self.fc = nn.Dense(5)
            self.fc2 = nn.Dense(3)

    def hybrid_forward(self, F, x, y):
        pooled = F.Pooling(F.relu(self.bn(self.conv(x))), global_pool=True, kernel=(1, 1),
                           pool_type="avg")
        return self.fc(F.concat(F.flatten(pooled), y, dim=1)), F.tanh(self.fc2(y)) * 2


def _cnn() -> gluon.HybridBlock:
    net = nn.HybridSequential(prefix="cnn_")
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(2), nn.Conv2D(8, 3, padding=1, use_bias=False), nn.BatchNorm(),
                nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Dense(10))
    return net


def _inputs(name: str, batch: int, rng: np.random.RandomState) -> list[np.ndarray]:
    return [rng.uniform(-1, 1, (batch, *shape)).astype("float32") for shape in NETS[name][1]]


def _export(name: str, make: Callable[[], gluon.HybridBlock], out: Path, seed: int) -> None:
    """Build, initialize with seeded values (BatchNorm's statistics too), export."""
    with mx.name.NameManager():
        net = make()
    mx.random.seed(seed)
    rng = np.random.RandomState(seed)
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net.hybridize()
    net(*[mx.nd.array(a) for a in _inputs(name, 2, rng)])
    for pname, param in net.collect_params().items():
        low, high = ((0.5, 1.5) if pname.endswith(("running_var", "gamma")) else
                     (-0.3, 0.3) if pname.endswith(("running_mean", "beta", "bias")) else
                     (None, None))
        if low is not None:
            param.set_data(mx.nd.array(rng.uniform(low, high, param.shape)))
    net.export(str(out / name), epoch=0)


def _imports(out: Path, name: str, params: str | None = "default", **kwargs):
    params = str(out / f"{name}-0000.params") if params == "default" else params
    return gluon.SymbolBlock.imports(str(out / f"{name}-symbol.json"), NETS[name][0], params,
                                     **kwargs)


def _run(net, inputs: list[np.ndarray], dtype: object = "float32") -> list[np.ndarray]:
    outs = net(*[mx.nd.array(a, dtype=dtype) for a in inputs])
    return [o.asnumpy() for o in (outs if isinstance(outs, list) else [outs])]


def _message(fn: Callable[[], object]) -> dict:
    """What MXNet raised (type and message), or that it did not."""
    try:
        fn()
    except Exception as exc:  # record whatever MXNet raises
        text = re.sub(r"\[\d\d:\d\d:\d\d\] ", "", str(exc).strip())   # no clock times
        return {"raised": type(exc).__name__, "message": text.splitlines()[-1] if
                "Traceback" in text else text}
    return {"raised": None}


def _params_table(net) -> list[list]:
    return [[name, None if p.shape is None else list(p.shape), str(p.dtype), p.grad_req]
            for name, p in net.collect_params().items()]


def _write_case(out: Path, name: str, arrays: dict, record: dict) -> None:
    rng = np.random.RandomState(7)
    batches = {b: _inputs(name, b, rng) for b in BATCHES}
    for b, inputs in batches.items():
        for input_name, value in zip(NETS[name][0], inputs, strict=True):
            arrays[f"{name}:b{b}:in:{input_name}"] = value
    net = _imports(out, name)
    for b in (*BATCHES, BATCHES[0]):   # back to the first size: the first bind again
        for k, value in enumerate(_run(net, batches[b])):
            arrays[f"{name}:b{b}:out{k}"] = value
    first = batches[BATCHES[0]]
    fused = _imports(out, name)
    fused.hybridize(backend="MKLDNN")
    for k, value in enumerate(_run(fused, first)):
        arrays[f"{name}:mkldnn:out{k}"] = value
    graph = json.loads(fused._cached_graph[1].tojson())
    record["mkldnn_ops"] = [n["op"] for n in graph["nodes"] if n["op"] != "null"]
    # Writes between calls: both paths see them (MKLDNN folds BatchNorm into weights).
    for block, tag in ((net, "plain"), (fused, "mkldnn")):
        params = block.collect_params()
        conv = next(p for n, p in params.items() if n.endswith("conv0_weight"))
        conv.set_data(conv.data() * 0.5)
        var = next(p for n, p in params.items() if n.endswith("running_var"))
        var.data()[:] = var.data() + 0.5
        for k, value in enumerate(_run(block, first)):
            arrays[f"{name}:written_{tag}:out{k}"] = value
    record["written"] = [conv.name, var.name]
    wide = _imports(out, name)
    wide.cast("float64")
    for k, value in enumerate(_run(wide, first, "float64")):
        arrays[f"{name}:float64:out{k}"] = value
    half = _imports(out, name)
    half.cast("float16")
    record["float16_params"] = _params_table(half)
    record["float16_forward"] = _message(lambda: _run(half, first, "float16"))
    brain = _imports(out, name)
    brain.cast(BF16)
    record["bfloat16_forward"] = _message(lambda: _run(brain, first, BF16))
    fresh = _imports(out, name)
    record["params"] = _params_table(fresh)
    fresh.infer_shape(*[mx.nd.array(a) for a in first])
    record["params_after_infer_shape"] = _params_table(fresh)
    record["repr"] = repr(fresh)
    record["collect_params_repr"] = repr(fresh.collect_params())
    record["select"] = {pattern: list(fresh.collect_params(pattern).keys())
                        for pattern in (".*weight", f"{name}_conv", "conv",
                                        ".*running_.*|.*gamma")}
    record["reg_params"] = list(fresh._reg_params)
    saved = out / f"{name}-saved.params"
    fresh.save_parameters(str(saved))
    record["saved_keys"] = list(mx.nd.load(str(saved)).keys())
    record["load_saved"] = _message(lambda: _imports(out, name).load_parameters(str(saved)))
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        fresh.summary(*[mx.nd.array(a) for a in first])
    record["summary"] = text.getvalue()
    with mx.name.NameManager():
        record["name"] = _imports(out, name).name
    blank = _imports(out, name, None)
    blank.initialize()
    _run(blank, first)
    record["initialized_params"] = _params_table(blank)


def _write_errors(out: Path) -> dict:
    params = mx.nd.load(str(out / "cnn-0000.params"))
    missing = {k: v for k, v in params.items() if k != "arg:cnn_conv0_bias"}
    mx.nd.save(str(out / "cnn-missing.params"), missing)
    extra = {**params, "arg:cnn_extra_weight": mx.nd.zeros((2,))}
    mx.nd.save(str(out / "cnn-extra.params"), extra)
    data = mx.nd.zeros((2, *NETS["cnn"][1][0]))
    files = {"missing": str(out / "cnn-missing.params"), "extra": str(out / "cnn-extra.params")}
    errors = {
        "missing": _message(lambda: _imports(out, "cnn", files["missing"])),
        "extra": _message(lambda: _imports(out, "cnn", files["extra"])),
        "missing_allowed": _message(
            lambda: _imports(out, "cnn", files["missing"], allow_missing=True)(data)),
        "extra_ignored": _message(
            lambda: _imports(out, "cnn", files["extra"], ignore_extra=True)(data)),
        "load_parameters_missing": _message(
            lambda: _imports(out, "cnn").load_parameters(files["missing"])),
        "load_parameters_extra": _message(
            lambda: _imports(out, "cnn").load_parameters(files["extra"])),
        "two_inputs_to_cnn": _message(lambda: _imports(out, "cnn")(data, data)),
        "one_input_to_twoio": _message(
            lambda: _imports(out, "twoio")(mx.nd.zeros((2, *NETS["twoio"][1][0])))),
        "unknown_input_name": _message(lambda: gluon.SymbolBlock.imports(
            str(out / "cnn-symbol.json"), ["image"], str(out / "cnn-0000.params"))),
        "optimize_for_without_backend": _message(lambda: _imports(out, "cnn").optimize_for(data)),
        "uninitialized_data": _message(lambda: _imports(out, "cnn", None).collect_params()
                                       ["cnn_conv0_weight"].data()),
        "set_data_wrong_shape": _message(
            lambda: _set_wrong_shape(_imports(out, "cnn"), data)),
    }
    hybridized = _imports(out, "cnn")
    hybridized.hybridize()
    errors["summary_hybridized"] = _message(lambda: hybridized.summary(data))
    return errors


def _set_wrong_shape(net, data) -> None:
    net(data)   # gives the bias its shape (10,)
    net.collect_params()["cnn_dense0_bias"].set_data(mx.nd.zeros((3,)))


def _check_minimx_export(out: Path, arrays: dict) -> dict:
    """minimx exports each net; MXNet imports and runs what it wrote."""
    python = os.environ.get("MINIMX_PYTHON") or shutil.which("python3")
    inputs = {name: names for name, (names, _) in NETS.items()}
    subprocess.run([python, "-c", MINIMX_EXPORT, str(out), json.dumps(inputs)], check=True,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    record = {}
    for name, names in inputs.items():
        first = [arrays[f"{name}:b{BATCHES[0]}:in:{n}"] for n in names]
        want = [arrays[f"{name}:b{BATCHES[0]}:out{k}"] for k in range(2 if name == "twoio" else 1)]
        entry: dict = {}
        try:
            net = gluon.SymbolBlock.imports(str(out / f"minimx_{name}-symbol.json"), names,
                                            str(out / f"minimx_{name}-0000.params"))
            got = _run(net, first)
            entry.update(loaded=True, max_abs_diff=max(float(np.abs(g - w).max())
                                                      for g, w in zip(got, want, strict=True)))
            ours = json.loads((out / f"{name}-symbol.json").read_text())
            theirs = json.loads((out / f"minimx_{name}-symbol.json").read_text())
            entry["same_nodes_as_mxnet_export"] = (
                [(n["op"], n["name"], n.get("attrs", {})) for n in ours["nodes"]]
                == [(n["op"], n["name"], n.get("attrs", {})) for n in theirs["nodes"]])
            entry["param_keys"] = list(mx.nd.load(str(out / f"minimx_{name}-0000.params")))
            entry["mxnet_param_keys"] = list(mx.nd.load(str(out / f"{name}-0000.params")))
        except Exception as exc:  # the record says what MXNet made of the files
            entry.update(loaded=False, error=f"{type(exc).__name__}: {exc}"[-2000:])
        record[name] = entry
        print(f"  minimx_{name} in MXNet: {entry}", flush=True)
    return record


def write_gluon(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # Run in `out`, naming files without a directory: MXNet's messages name them so.
    with contextlib.chdir(out):
        _write_all(Path("."))


def _write_all(out: Path) -> None:
    _export("cnn", _cnn, out, 11)
    _export("twoio", lambda: TwoIO(prefix="twoio_"), out, 12)
    arrays: dict[str, np.ndarray] = {}
    record: dict = {"mxnet_version": mx.__version__, "batches": list(BATCHES),
                    "nets": {name: {"inputs": names} for name, (names, _) in NETS.items()}}
    for name in NETS:
        _write_case(out, name, arrays, record["nets"][name])
    record["errors"] = _write_errors(out)
    np.savez_compressed(out / "gluon.npz", **arrays)
    (out / "gluon.json").write_text(json.dumps(record, indent=1) + "\n")
    export = _check_minimx_export(out, arrays)
    (out / "minimx_export.json").write_text(json.dumps(export, indent=1) + "\n")
