"""The ``quantize_net`` fixture group (tools/mxnet_fixtures.py writes it with MXNet
1.9.1): ``mx.contrib.quantization.quantize_net_v2`` / ``quantize_net`` on the
``gluon`` group's ``cnn`` (a HybridBlock MXNet exported, loaded by
``SymbolBlock.imports``), as tests/contrib/test_quantize_net.py checks minimx's.

For each `CASES` entry: the quantized block's graph (``cases.json``: each
operator node's op, name and calibration attributes) and its outputs on an
evaluation batch (``outputs.npz``), calibrated on a fresh ``NDArrayIter`` over
seeded images (``outputs.npz``: ``calib``, ``eval``). MXNet 1.9.1 reads a
DataIter without resetting it, and a Gluon DataLoader only when the block
takes every array of a batch, so the cases use a new iterator each.

Runs with MXNet's Python only.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet.contrib.quantization import quantize_net, quantize_net_v2

CALIB_ATTRS = ("min_calib_range", "max_calib_range")
# (case, function, keyword arguments; calib_data is added where calib_mode is not 'none',
# data_shapes are given as DataDescs)
CASES = [
    ("naive_auto", "quantize_net_v2", dict(calib_mode="naive")),
    ("naive_exclude_match", "quantize_net_v2",
     dict(calib_mode="naive", exclude_layers_match=["conv0"])),
    ("entropy_auto", "quantize_net_v2", dict(calib_mode="entropy")),
    ("naive_int8", "quantize_net_v2", dict(calib_mode="naive", quantized_dtype="int8")),
    ("naive_channel_wise", "quantize_net_v2",
     dict(calib_mode="naive", quantize_granularity="channel-wise")),
    ("naive_two_batches", "quantize_net_v2", dict(calib_mode="naive", num_calib_examples=8)),
    ("none", "quantize_net_v2", dict(calib_mode="none", data_shapes=[("data", (4, 3, 8, 8))])),
    ("v1_exclude", "quantize_net",
     dict(calib_mode="naive", exclude_layers=["cnn_conv1_fwd"])),
]


def _graph(block) -> list:
    nodes = json.loads(block._cached_graph[1].tojson())["nodes"]
    return [[n["op"], n["name"], {k: n.get("attrs", {}).get(k) for k in CALIB_ATTRS
                                  if k in n.get("attrs", {})}]
            for n in nodes if n["op"] != "null"]


def write_quantize_net(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    gluon = out.parent / "gluon"
    rng = np.random.RandomState(3)
    calib = rng.uniform(-1, 1, (12, 3, 8, 8)).astype(np.float32)
    evaluation = rng.uniform(-1, 1, (4, 3, 8, 8)).astype(np.float32)
    arrays = {"calib": calib, "eval": evaluation}
    graphs = {}
    functions = {"quantize_net_v2": quantize_net_v2, "quantize_net": quantize_net}
    for case, function, kwargs in CASES:
        net = mx.gluon.SymbolBlock.imports(str(gluon / "cnn-symbol.json"), ["data"],
                                           str(gluon / "cnn-0000.params"))
        if kwargs["calib_mode"] != "none":
            kwargs = {**kwargs, "calib_data": mx.io.NDArrayIter(calib, batch_size=4)}
        if "data_shapes" in kwargs:   # as DataDescs, which MXNet needs here
            kwargs = {**kwargs, "data_shapes": [mx.io.DataDesc(n, s)
                                                for n, s in kwargs["data_shapes"]]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            block = functions[function](net, **kwargs)
        graphs[case] = _graph(block)
        arrays[case] = block(mx.nd.array(evaluation)).asnumpy()
        print(f"  {case}: {len(graphs[case])} operators", flush=True)
    (out / "cases.json").write_text(json.dumps(
        {"cases": [[c, f, {k: v for k, v in kw.items()}] for c, f, kw in CASES],
         "graphs": graphs}, indent=1) + "\n")
    np.savez_compressed(out / "outputs.npz", **arrays)
