"""MXNet 1.9.1 side of benchmarks/families_throughput.py; runs in MXNet's venv (GluonCV, GluonNLP).

Usage: <mxnet venv python> families_mxnet_worker.py export MODEL DIR
       <mxnet venv python> families_mxnet_worker.py serve MODEL DIR
``export`` builds MODEL at its benchmark size (MODELS; no downloads: BERT gets a
vocabulary of made-up words of the real size, the detectors and segmenters no
pretrained base), gives it tools/seeded_weights.py's weights, and writes
DIR/MODEL-symbol.json, DIR/MODEL-0000.params and DIR/MODEL-inputs.npz (the input
arrays by name) for both sides to load. ``serve`` binds that export with MXNet's
MKLDNN subgraph backend on (MXNet's default) and serves forwards
(worker_protocol.py; ``input`` takes the ``.npz`` of named inputs).
"""
import sys
from pathlib import Path

import mxnet as mx
import numpy as np
from worker_protocol import serve_forwards  # beside this script: one protocol for all workers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from seeded_weights import seeded_weights  # noqa: E402  (tools/: numpy only)

SEED = 15       # tools/mxnet_fixtures.py's FAMILY_SEED: the fixtures' weights, at full size
BERT_SEQ = 128
BERT_VOCAB = 30522
# Input shapes of each model at its benchmark size, batch 1.
MODELS = {
    "bert_12_768_12": {"data0": (1, BERT_SEQ), "data1": (1, BERT_SEQ), "data2": (1,)},
    "ssd_512_mobilenet1.0_voc": {"data": (1, 3, 512, 512)},
    "fcn_resnet50_voc": {"data": (1, 3, 480, 480)},
}


def build(model: str):
    """The gluon block of `model`, uninitialized."""
    # Here, not at the top: only ``export`` needs GluonCV and GluonNLP.
    import gluoncv
    import gluonnlp
    if model == "bert_12_768_12":
        vocab = gluonnlp.vocab.BERTVocab(   # its 5 special tokens complete the real size
            gluonnlp.data.count_tokens(f"w{i}" for i in range(BERT_VOCAB - 5)))
        net, _ = gluonnlp.model.get_model(
            model, dataset_name=None, vocab=vocab, pretrained=False,
            use_pooler=True, use_decoder=False, use_classifier=False)
        return net
    # The segmenters resize their output to crop_size: the input's.
    crop = {"crop_size": MODELS[model]["data"][-1]} if model.startswith("fcn") else {}
    return gluoncv.model_zoo.get_model(model, pretrained=False, pretrained_base=False, **crop)


def inputs(model: str) -> dict[str, np.ndarray]:
    """Seeded inputs: an image in [-1, 1], or BERT's tokens, two segments, full length."""
    rng = np.random.RandomState(SEED)
    if model == "bert_12_768_12":
        return {"data0": rng.randint(0, BERT_VOCAB, (1, BERT_SEQ)).astype("float32"),
                "data1": np.repeat([[0.0, 1.0]], BERT_SEQ // 2, axis=1).astype("float32"),
                "data2": np.array([BERT_SEQ], "float32")}
    return {k: rng.uniform(-1, 1, s).astype("float32") for k, s in MODELS[model].items()}


def export(model: str, out: Path) -> None:
    """The export of `model` with seeded weights, and its inputs (see above)."""
    out.mkdir(parents=True, exist_ok=True)
    net = build(model)
    net.initialize()
    net.hybridize()
    feeds = inputs(model)
    net(*[mx.nd.array(v) for v in feeds.values()])   # materializes deferred shapes
    params = net.collect_params()
    weights = seeded_weights({p.name: tuple(p.shape) for p in params.values()}, SEED)
    for p in params.values():
        p.set_data(mx.nd.array(weights[p.name]))
    net(*[mx.nd.array(v) for v in feeds.values()])
    net.export(str(out / model), epoch=0)
    np.savez(out / f"{model}-inputs.npz", **feeds)


class NamedInputsSession:
    """A bound executor whose inputs are set by name (worker_protocol.Session)."""

    def __init__(self, ex) -> None:
        self.ex = ex

    def forward(self) -> None:
        self.ex.forward(is_train=False)[0].wait_to_read()

    def set_input(self, data: dict) -> None:
        for name, value in data.items():
            self.ex.arg_dict[name][:] = value

    def output(self) -> np.ndarray:
        return self.ex.outputs[0].asnumpy()


def serve(model: str, out: Path) -> None:
    sym, args, auxs = mx.model.load_checkpoint(str(out / model), 0)
    sym = sym.get_backend_symbol("MKLDNN")
    with np.load(out / f"{model}-inputs.npz") as npz:
        feeds = {**args, **{k: mx.nd.array(npz[k]) for k in npz.files}}
    ex = sym.bind(mx.cpu(), {n: feeds[n] for n in sym.list_arguments()}, grad_req="null",
                  aux_states=auxs)
    serve_forwards(NamedInputsSession(ex))


if __name__ == "__main__":
    command, model, directory = sys.argv[1:4]
    (export if command == "export" else serve)(model, Path(directory))
