"""The ``int8_rnn`` fixture group (tools/mxnet_fixtures.py writes it with MXNet 1.9.1):
MXNet's INT8 LSTM, `_contrib_quantized_rnn`, run imperatively, and LSTM language models
quantized by MXNet's quantize pass.

- ``quantized_rnn.json``: per case its RNN parameters, data scale and shift.
- ``quantized_rnn.npz``: per case ``<case>:data`` (uint8), ``:parameters``, ``:state``,
  ``:state_cell`` and MXNet's outputs ``:out<i>``.
- ``lm_<graph>-symbol.json`` / ``-0000.params``: small float models (`GRAPHS`: Embedding,
  an RNN, a FullyConnected head) and their seeded parameters (the RNN's begin states are
  arguments too).
- ``lm_<case>-symbol.json``: each graph quantized by a flow of `LM_CASES` (``model``:
  quantize_model; ``mkldnn``: quantize_model_mkldnn; ``graph``: quantize_graph, a Module
  run feeding the collector, calib_graph).
- ``lm.npz``: ``calib`` and ``eval`` (token ids, time-major: calibration takes them four
  steps at a time), per graph ``<graph>:fp32_<i>`` (the float outputs on ``eval``), per
  case ``<case>:arg:<name>`` (the parameters quantize_model made, ``_quantize`` and their
  ranges), ``<case>:rnn<i>`` (the outputs of its ``_contrib_quantized_rnn``) and
  ``<case>:out<i>`` (MXNet's outputs of the quantized graph on ``eval``, where MXNet can
  run it).
- ``lm.json``: per graph its RNN attributes and head; per case its graph, flow, options,
  whether MXNet ran it, and the layers a two-step flow's collector was given.

oneDNN 2.4 (MXNet 1.9.1's) cannot reorder the LSTM's int8 weights for its VNNI kernels
("could not create a primitive descriptor for a reorder primitive"), so on such CPUs
the operator runs only with ``DNNL_MAX_CPU_ISA`` below them: the group reruns itself
with ``DNNL_MAX_CPU_ISA=AVX512_CORE`` in a child process. There MXNet's other INT8
kernels (the FC head) saturate 16-bit pairs, as minimx's do not: so the quantized
graphs' outputs are MXNet's at the machine's ISA, its quantized RNN node replaced by
the values it gave in the child. Runs with MXNet's Python only, on a CPU with VNNI.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ISA = "AVX512_CORE"
SEED = 21
# name: (num_layers, bidirectional, input size, state size, steps, batch, state_outputs).
# One layer; two fused (input as wide as the state); a first layer then a fused one;
# bidirectional (one and two layers); no state outputs.
CASES = {"one_layer": (1, False, 4, 3, 5, 2, True),
         "two_fused": (2, False, 6, 6, 4, 3, True),
         "two_layers": (2, False, 5, 4, 4, 2, True),
         "bidirectional": (1, True, 4, 3, 3, 2, True),
         "bidirectional_two": (2, True, 4, 3, 4, 2, True),
         "no_states": (1, False, 3, 5, 3, 1, False)}
DATA_SCALE, DATA_SHIFT = 255 / 4.0, 120.0


def _cases(out: Path) -> None:
    import mxnet as mx
    rng = np.random.RandomState(SEED)
    arrays, specs = {}, {}
    for name, (layers, bidir, width, hidden, steps, batch, states) in CASES.items():
        attrs = {"state_size": hidden, "num_layers": layers, "bidirectional": bidir,
                 "mode": "lstm", "state_outputs": states}
        size = mx.sym.RNN(*map(mx.sym.var, "xphc"), **attrs).infer_shape(
            x=(steps, batch, width))[0][1][0]
        cells = layers * (2 if bidir else 1)
        feeds = {"data": rng.randint(0, 256, (steps, batch, width)).astype("uint8"),
                 "parameters": rng.uniform(-0.5, 0.5, size).astype("float32"),
                 "state": rng.uniform(-1, 1, (cells, batch, hidden)).astype("float32"),
                 "state_cell": rng.uniform(-1, 1, (cells, batch, hidden)).astype("float32")}
        outs = mx.nd.contrib.quantized_rnn(
            *(mx.nd.array(v, dtype=v.dtype) for v in feeds.values()),
            mx.nd.array([DATA_SCALE]), mx.nd.array([DATA_SHIFT]), **attrs)
        outs = outs if isinstance(outs, list) else [outs]
        arrays.update({f"{name}:{k}": v for k, v in feeds.items()})
        arrays.update({f"{name}:out{i}": o.asnumpy() for i, o in enumerate(outs)})
        specs[name] = {"attrs": attrs, "data_scale": DATA_SCALE, "data_shift": DATA_SHIFT}
    np.savez_compressed(out / "quantized_rnn.npz", **arrays)
    (out / "quantized_rnn.json").write_text(json.dumps(
        {"isa": ISA, "seed": SEED, "cases": specs}, indent=1) + "\n")


def write_int8_rnn(out: Path) -> None:
    """The group, written by a child process that runs oneDNN at ISA, and the
    quantized language models' outputs, run here."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, __file__, str(out)], check=True,
                   env={**os.environ, "DNNL_MAX_CPU_ISA": ISA})
    _quantized_outputs(out)


# -- the quantize pass on LSTM language models --------------------------------------------------
LM_SEED, VOCAB, EMBED, HIDDEN, STEPS, BATCH = 22, 12, 6, 8, 4, 2
# name: (RNN mode, num_layers, bidirectional, state_outputs, head). The head reads the
# RNN's output through a Reshape to (steps * batch, units) or directly (flatten=False).
GRAPHS = {"lstm": ("lstm", 1, False, False, "reshape"),
          "lstm_bidir": ("lstm", 2, True, True, "reshape"),
          "lstm_direct": ("lstm", 1, False, False, "direct"),
          "lstm_direct_states": ("lstm", 1, False, True, "direct"),
          "gru": ("gru", 1, False, False, "reshape"),
          "rnn_tanh": ("rnn_tanh", 1, False, False, "reshape")}
NAIVE = {"calib_mode": "naive"}
# name: (graph, flow, options). MXNet's own wiring is wrong in lstm_direct_mkldnn (the
# head's min/max read outputs 4294967295 and 0 of the quantize node) and in
# lstm_graph_full (the RNN reads the quantized Embedding's int8); it quantizes a GRU or
# vanilla RNN into _contrib_quantized_rnn and then fails, so those are written with the
# RNN excluded by name, the graph minimx makes without exclusion.
LM_CASES = {"lstm_none": ("lstm", "model", {"calib_mode": "none"}),
            "lstm_naive": ("lstm", "model", NAIVE),
            "lstm_entropy": ("lstm", "model", {"calib_mode": "entropy"}),
            "lstm_mkldnn": ("lstm", "mkldnn", NAIVE),
            "lstm_excluded": ("lstm", "model", {**NAIVE, "excluded_sym_names": ["rnn0"]}),
            "lstm_graph": ("lstm", "graph", {**NAIVE, "quantize_mode": "smart"}),
            "lstm_graph_full": ("lstm", "graph", {**NAIVE, "quantize_mode": "full"}),
            "lstm_bidir_naive": ("lstm_bidir", "model", NAIVE),
            "lstm_bidir_mkldnn": ("lstm_bidir", "mkldnn", {"calib_mode": "entropy"}),
            "lstm_direct_mkldnn": ("lstm_direct", "mkldnn", NAIVE),
            "lstm_direct_states_mkldnn": ("lstm_direct_states", "mkldnn", NAIVE),
            "gru_excluded": ("gru", "model", {**NAIVE, "excluded_sym_names": ["rnn0"]}),
            "rnn_tanh_excluded": ("rnn_tanh", "mkldnn",
                                  {**NAIVE, "excluded_sym_names": ["rnn0"]})}
BROKEN = {"lstm_direct_mkldnn", "lstm_graph_full"}


def language_model(mx, mode: str, layers: int, bidirectional: bool, states: bool,
                   head: str):
    """Embedding -> RNN -> FullyConnected over the vocabulary (with the RNN's states as
    further outputs when it gives them)."""
    embed = mx.sym.Embedding(mx.sym.var("data"), input_dim=VOCAB, output_dim=EMBED,
                             name="embed0")
    rnn = mx.sym.RNN(embed, state_size=HIDDEN, num_layers=layers, mode=mode,
                     bidirectional=bidirectional, state_outputs=states, name="rnn0")
    out = rnn[0] if states else rnn
    if head == "reshape":
        out = mx.sym.Reshape(out, shape=(-1, HIDDEN * (2 if bidirectional else 1)),
                             name="reshape0")
    fc = mx.sym.FullyConnected(out, num_hidden=VOCAB, flatten=False, name="fc0")
    return mx.sym.Group([fc, rnn[1], rnn[2]]) if states else fc


def _run(mx, sym, args: dict, data: np.ndarray) -> list[np.ndarray]:
    # bind, not simple_bind: the quantized arguments keep their int8 dtype.
    feeds = {**args, "data": mx.nd.array(data)}
    ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null")
    return [o.asnumpy() for o in ex.forward(is_train=False)]


def _quantize(mx, flow: str, sym, args: dict, calib: np.ndarray, options: dict):
    """The quantized model by `flow`, and the layers a two-step flow's collector got."""
    from mxnet.contrib import quantization
    if flow == "graph":
        from mxnet_fixtures import _two_step  # tools/, beside this script
        (qsym, qargs, _), collector = _two_step(sym, args, {}, calib, STEPS,
                                                quantized_dtype="int8", **options)
        return qsym, qargs, sorted(collector.include_layer)
    quantize = {"model": quantization.quantize_model,
                "mkldnn": quantization.quantize_model_mkldnn}[flow]
    qsym, qargs, _ = quantize(sym, args, {}, ctx=mx.cpu(), label_names=None,
                              calib_data=mx.io.NDArrayIter(calib, batch_size=STEPS),
                              quantized_dtype="int8", **options)
    return qsym, qargs, None


def _language_models(out: Path) -> None:
    import mxnet as mx
    rng = np.random.RandomState(LM_SEED)
    calib = rng.randint(0, VOCAB, (3 * STEPS, BATCH)).astype("float32")
    arrays = {"calib": calib, "eval": rng.randint(0, VOCAB, (STEPS, BATCH)).astype("float32")}
    record: dict = {"graphs": {}, "cases": {}}
    models = {}
    for name, spec in GRAPHS.items():
        sym = language_model(mx, *spec)
        shapes = sym.infer_shape(data=(STEPS, BATCH))[0]
        # Each graph from the same seed: the LSTMs share their parameters.
        rng = np.random.RandomState(LM_SEED)
        args = {n: mx.nd.array(rng.uniform(-0.6, 0.6, s).astype("float32"))
                for n, s in zip(sym.list_arguments(), shapes, strict=True) if n != "data"}
        mx.model.save_checkpoint(str(out / f"lm_{name}"), 0, sym, args, {})
        arrays.update({f"{name}:fp32_{i}": o
                       for i, o in enumerate(_run(mx, sym, args, arrays["eval"]))})
        models[name] = sym, args
        record["graphs"][name] = dict(zip(("mode", "num_layers", "bidirectional",
                                           "state_outputs", "head"), spec, strict=True))
    for case, (graph, flow, options) in LM_CASES.items():
        sym, args = models[graph]
        qsym, qargs, include = _quantize(mx, flow, sym, args, calib, options)
        qsym.save(str(out / f"lm_{case}-symbol.json"))
        arrays.update({f"{case}:arg:{n}": v.asnumpy() for n, v in qargs.items()
                       if n not in args})
        internals = qsym.get_internals()
        rnn = [internals[n] for n in internals.list_outputs() if n.startswith("quantized_rnn0_")]
        if case not in BROKEN and rnn:
            arrays.update({f"{case}:rnn{i}": o for i, o in enumerate(
                _run(mx, mx.sym.Group(rnn), qargs, arrays["eval"]))})
        record["cases"][case] = {"graph": graph, "flow": flow, "options": options,
                                 "mxnet_runs": case not in BROKEN, "include_layer": include}
    np.savez_compressed(out / "lm.npz", **arrays)
    (out / "lm.json").write_text(json.dumps({"isa": ISA, "seed": LM_SEED, **record},
                                            indent=1) + "\n")


def _without_rnn(graph: dict) -> tuple[dict, int]:
    """MXNet's quantized graph (JSON) with its `_contrib_quantized_rnn` node replaced by
    a variable ``rnn0_value`` for its first output; heads reading the node dropped.
    The node's index, or -1 (the graph unchanged) where it has none."""
    nodes = graph["nodes"]
    at = next((i for i, n in enumerate(nodes) if n["op"] == "_contrib_quantized_rnn"), -1)
    if at < 0:
        return graph, at
    if any(e[0] == at and e[1] for n in nodes for e in n["inputs"]):
        raise ValueError("a node reads the RNN's states")
    nodes = [*nodes[:at], {"op": "null", "name": "rnn0_value", "inputs": []}, *nodes[at + 1:]]
    return {"nodes": nodes, "arg_nodes": [i for i, n in enumerate(nodes) if n["op"] == "null"],
            "heads": [h for h in graph["heads"] if h[0] != at], "attrs": graph["attrs"]}, at


def _quantized_outputs(out: Path) -> None:
    """``<case>:out<i>`` for the cases MXNet runs: at the machine's ISA, the values of
    the quantized RNN node taken from the child's run."""
    import mxnet as mx
    record = json.loads((out / "lm.json").read_text())
    with np.load(out / "lm.npz") as npz:
        arrays = dict(npz)
    for case, spec in record["cases"].items():
        if not spec["mxnet_runs"]:
            continue
        _, args, _ = mx.model.load_checkpoint(str(out / f"lm_{spec['graph']}"), 0)
        prefix = f"{case}:arg:"
        args.update({k[len(prefix):]: mx.nd.array(v, dtype=v.dtype)
                     for k, v in arrays.items() if k.startswith(prefix)})
        full = json.loads(mx.sym.load(str(out / f"lm_{case}-symbol.json")).tojson())
        graph, at = _without_rnn(full)
        if at >= 0:
            args["rnn0_value"] = mx.nd.array(arrays[f"{case}:rnn0"])
        values = iter(_run(mx, mx.sym.load_json(json.dumps(graph)), args, arrays["eval"]))
        outputs = [arrays[f"{case}:rnn{h[1]}"] if h[0] == at else next(values)
                   for h in full["heads"]]
        arrays.update({f"{case}:out{i}": o for i, o in enumerate(outputs)})
    np.savez_compressed(out / "lm.npz", **arrays)


if __name__ == "__main__":
    _cases(Path(sys.argv[1]))
    _language_models(Path(sys.argv[1]))
