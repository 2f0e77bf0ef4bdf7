"""The ``rnn_cells`` fixture group of `mxnet_fixtures.py`: MXNet 1.9.1's `mx.rnn` cells
unrolled, a small LSTM language model trained by `mx.mod.BucketingModule`, and the
parameters `mx.init.FusedRNN` makes for fused cells (`FUSED_INIT_CASES`).

Runs with MXNet's Python only (never minimx). Each cell case is an expression that
minimx evaluates the same way (`CELL_CASES`); `write_rnn_cells` records what MXNet
makes of it: argument names and shapes, node names, and outputs on seeded inputs.
"""
from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import mxnet as mx
import numpy as np

# (case, cell expression, unroll length, layout, merge_outputs, one step's input shape)
CELL_CASES = [
    ("rnn_tanh", "mx.rnn.RNNCell(5, prefix='rnn_')", 3, "NTC", True, (2, 4)),
    ("rnn_relu_list", "mx.rnn.RNNCell(5, activation='relu', prefix='r_')", 3, "NTC", False,
     (2, 4)),
    ("lstm", "mx.rnn.LSTMCell(5, prefix='lstm_', forget_bias=2.0)", 4, "NTC", True, (2, 3)),
    ("gru", "mx.rnn.GRUCell(5, prefix='gru_')", 4, "TNC", True, (2, 3)),
    ("stack", "stack(mx.rnn.LSTMCell(4, prefix='lstm_l0_'), mx.rnn.DropoutCell(0.5, "
     "prefix='drop_'), mx.rnn.GRUCell(3, prefix='gru_l1_'))", 3, "TNC", True, (2, 5)),
    ("bidirectional", "mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(4, prefix='l_'), "
     "mx.rnn.GRUCell(4, prefix='r_'), output_prefix='bi_')", 3, "NTC", True, (2, 3)),
    ("bidirectional_list", "mx.rnn.BidirectionalCell(mx.rnn.RNNCell(4, prefix='l_'), "
     "mx.rnn.RNNCell(4, prefix='r_'))", 3, "TNC", False, (2, 3)),
    ("residual", "mx.rnn.ResidualCell(mx.rnn.GRUCell(4, prefix='res_'))", 3, "NTC", True,
     (2, 4)),
    ("zoneout", "mx.rnn.ZoneoutCell(mx.rnn.RNNCell(4, prefix='z_'), 0.5, 0.5)", 3, "NTC",
     False, (2, 3)),
    ("fused_lstm", "mx.rnn.FusedRNNCell(4, num_layers=2, mode='lstm', bidirectional=True, "
     "get_next_state=True, prefix='lstm_')", 3, "TNC", True, (2, 3)),
    ("fused_gru", "mx.rnn.FusedRNNCell(5, mode='gru', get_next_state=True, prefix='gru_')",
     4, "NTC", True, (2, 3)),
    ("fused_rnn_tanh", "mx.rnn.FusedRNNCell(3, num_layers=2, mode='rnn_tanh', prefix='r_')",
     3, "TNC", True, (2, 4)),
    ("conv_rnn", "mx.rnn.ConvRNNCell((2, 2, 5, 5), 3, prefix='crnn_')", 3, "NTC", True,
     (2, 2, 5, 5)),
    ("conv_lstm", "mx.rnn.ConvLSTMCell((2, 3, 6, 6), 2, h2h_kernel=(3, 1), h2h_dilate=(2, 1), "
     "i2h_kernel=(3, 3), i2h_stride=(2, 1), i2h_pad=(1, 0), i2h_dilate=(1, 2), "
     "activation='tanh', i2h_bias_initializer=mx.init.LSTMBias(forget_bias=1.0), "
     "prefix='clstm_')", 3, "TNC", True, (2, 3, 6, 6)),
    ("conv_gru", "mx.rnn.ConvGRUCell((2, 2, 4, 5), 3, h2h_kernel=(5, 3), i2h_kernel=(1, 1), "
     "i2h_pad=(0, 0))", 3, "NTC", False, (2, 2, 4, 5)),
]

# mx.init.FusedRNN: (case, the cell's arguments, FusedRNN's own initializer - None: the
# cell's variable's, which falls back to the global one -, the global initializer, input
# width). Ramp (below) is deterministic, so that MXNet's values can be matched; Xavier
# as the global one shows that an inner initializer leaves it unused.
FUSED_INIT_CASES = [
    ("lstm_bidirectional", dict(num_hidden=3, num_layers=2, mode="lstm", bidirectional=True,
                                forget_bias=2.5), "Ramp()", "mx.init.Xavier()", 2),
    ("gru", dict(num_hidden=4, num_layers=1, mode="gru"), "Ramp()", "mx.init.Xavier()", 3),
    ("rnn_relu_constant", dict(num_hidden=2, num_layers=3, mode="rnn_relu", bidirectional=True),
     "mx.init.Constant(0.3)", "mx.init.Xavier()", 2),
    ("lstm_one", dict(num_hidden=2, num_layers=1, mode="lstm", forget_bias=0.0),
     "mx.init.One()", "mx.init.Xavier()", 3),
    ("rnn_tanh_global", dict(num_hidden=3, num_layers=2, mode="rnn_tanh"), None, "Ramp()", 2),
    ("lstm_global", dict(num_hidden=3, num_layers=2, mode="lstm", forget_bias=1.5), None,
     "Ramp()", 2),
]

LM = {"vocab": 8, "embed": 6, "hidden": 8, "batch": 4, "buckets": [4, 6, 8], "epochs": 6,
      "seed": 3, "optimizer": "sgd",
      "optimizer_params": {"learning_rate": 0.2, "momentum": 0.9, "wd": 1e-5}}


def stack(*cells: mx.rnn.BaseRNNCell) -> mx.rnn.SequentialRNNCell:
    """A SequentialRNNCell of `cells` (the cases' helper, named the same in the test)."""
    seq = mx.rnn.SequentialRNNCell()
    for cell in cells:
        seq.add(cell)
    return seq


def _flat(states: list) -> list:
    return [s for item in states for s in (_flat(item) if isinstance(item, list) else [item])]


def _cell_case(name: str, expr: str, length: int, layout: str, merge: bool | None,
               step: tuple[int, ...], rng: np.random.RandomState) -> tuple[dict, dict]:
    cell = eval(expr)  # noqa: S307  (our own table)
    batch, *rest = step
    shape = (batch, length, *rest) if layout == "NTC" else (length, batch, *rest)
    with mx.name.NameManager():  # automatic names counted from 0 in each case
        outputs, states = cell.unroll(length, inputs=mx.sym.Variable("data"), layout=layout,
                                      merge_outputs=merge)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    net = mx.sym.Group(outputs + _flat(states))
    arg_shapes, out_shapes, _ = net.infer_shape(data=shape)
    args = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32)
            for n, s in zip(net.list_arguments(), arg_shapes, strict=True)}
    exe = net.bind(mx.cpu(), {n: mx.nd.array(v) for n, v in args.items()})
    results = [o.asnumpy() for o in exe.forward(is_train=False)]
    arrays = {f"{name}:in:{n}": v for n, v in args.items()}
    arrays.update({f"{name}:out:{k}": v for k, v in enumerate(results)})
    record = {"expr": expr, "length": length, "layout": layout, "merge": merge,
              "data_shape": shape,
              "arguments": list(zip(net.list_arguments(), arg_shapes, strict=True)),
              "outputs": net.list_outputs(), "output_shapes": out_shapes,
              "internals": net.get_internals().list_outputs(),
              "state_info": [dict(i, shape=list(i["shape"])) for i in cell.state_info]}
    if isinstance(cell, mx.rnn.FusedRNNCell):
        param = f"{cell._prefix}parameters"
        unpacked = cell.unpack_weights({param: mx.nd.array(args[param])})
        record["unpacked"] = [(n, v.shape) for n, v in sorted(unpacked.items())]
        arrays.update({f"{name}:unpacked:{n}": v.asnumpy() for n, v in unpacked.items()})
        filled = mx.nd.zeros(args[param].shape)
        attrs = net.attr_dict()[param]
        mx.init.One()(mx.init.InitDesc(param, attrs), filled)
        arrays[f"{name}:init_one"] = filled.asnumpy()
    return record, arrays


@mx.init.register
class Ramp(mx.init.Initializer):
    """A ramp over each array from an offset its name gives: values that tell pieces apart."""
    def _init_weight(self, name: str, arr: mx.nd.NDArray) -> None:
        arr[:] = (np.arange(arr.size).reshape(arr.shape) + sum(map(ord, name)) % 100) * 0.01
    _init_bias = _init_weight


def _fused_init_case(name: str, cell_args: dict, init: str | None, global_init: str,
                     width: int) -> tuple[dict, dict]:
    """The parameters of a FusedRNNCell (prefix ``rnn_``) made by the cell's own
    ``__init__`` attribute through `global_init`, or by FusedRNN(`init`, the cell's
    arguments) called directly: MXNet 1.9.1 cannot re-create a FusedRNN that has an
    initializer of its own from its JSON (a KeyError: it looks the initializer's name up
    in the wrong registry), which is what an ``__init__`` attribute would need."""
    cell = mx.rnn.FusedRNNCell(prefix="rnn_", **cell_args)
    outputs, _ = cell.unroll(2, inputs=mx.sym.Variable("data"), layout="TNC")
    shapes = dict(zip(outputs.list_arguments(), outputs.infer_shape(data=(2, 1, width))[0],
                      strict=True))
    arr = mx.nd.zeros(shapes["rnn_parameters"])
    fallback = eval(global_init)  # noqa: S307  (our own table)
    if init is None:
        attrs = outputs.attr_dict()["rnn_parameters"]
        fallback(mx.init.InitDesc("rnn_parameters", attrs), arr)
    else:
        fused = mx.init.FusedRNN(eval(init), **cell_args)  # noqa: S307  (our own table)
        fused._init_weight(mx.init.InitDesc("rnn_parameters", global_init=fallback), arr)
    record = {"cell": cell_args, "init": init, "global": global_init, "width": width,
              "shape": arr.shape}
    return record, {f"fused_init:{name}": arr.asnumpy()}


def lm_corpus(rng: np.random.RandomState, count: int) -> list[list[int]]:
    """Sentences counting up through tokens 1 .. vocab-1 (0 pads), of random length."""
    vocab = LM["vocab"]
    return [[int(1 + (start + k) % (vocab - 1)) for k in range(length)]
            for start, length in zip(rng.randint(0, vocab - 1, count),
                                     rng.randint(2, max(LM["buckets"]) + 1, count), strict=True)]


def lm_sym_gen(seq_len: int) -> tuple[mx.sym.Symbol, tuple, tuple]:
    """MXNet's example/rnn/bucketing/lstm_bucketing.py's network, one LSTM layer."""
    data, label = mx.sym.Variable("data"), mx.sym.Variable("softmax_label")
    embed = mx.sym.Embedding(data=data, input_dim=LM["vocab"], output_dim=LM["embed"],
                             name="embed")
    cell = mx.rnn.LSTMCell(num_hidden=LM["hidden"], prefix="lstm_l0_")
    outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = mx.sym.Reshape(outputs, shape=(-1, LM["hidden"]))
    pred = mx.sym.FullyConnected(data=pred, num_hidden=LM["vocab"], name="pred")
    label = mx.sym.Reshape(label, shape=(-1,))
    return mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax"), ("data",), \
        ("softmax_label",)


def _train_lm() -> tuple[dict, dict]:
    rng = np.random.RandomState(LM["seed"])
    train, val = lm_corpus(rng, 48), lm_corpus(rng, 16)
    sym, _, _ = lm_sym_gen(max(LM["buckets"]))
    batch_shape = (LM["batch"], max(LM["buckets"]))
    shapes, _, _ = sym.infer_shape(data=batch_shape, softmax_label=batch_shape)
    params = {n: rng.uniform(-0.3, 0.3, s).astype(np.float32)
              for n, s in zip(sym.list_arguments(), shapes, strict=True)
              if n not in ("data", "softmax_label")}
    random.seed(LM["seed"])
    np.random.seed(LM["seed"])
    train_iter = mx.rnn.BucketSentenceIter(train, LM["batch"], buckets=list(LM["buckets"]),
                                           invalid_label=0)
    val_iter = mx.rnn.BucketSentenceIter(val, LM["batch"], buckets=list(LM["buckets"]),
                                         invalid_label=0)
    mod = mx.mod.BucketingModule(lm_sym_gen, default_bucket_key=train_iter.default_bucket_key)
    batches: list[list] = []

    def record(param: mx.model.BatchEndParam) -> None:
        batches.append([param.epoch, param.nbatch, float(param.eval_metric.get()[1])])

    scores: list[float] = []
    mod.fit(train_iter, eval_data=val_iter, eval_metric=mx.metric.Perplexity(0),
            optimizer=LM["optimizer"], optimizer_params=LM["optimizer_params"],
            arg_params={n: mx.nd.array(v) for n, v in params.items()},
            num_epoch=LM["epochs"], batch_end_callback=record,
            eval_end_callback=lambda p: scores.append(float(p.eval_metric.get()[1])))
    trained, _ = mod.get_params()
    arrays = {f"lm:init:{n}": v for n, v in params.items()}
    arrays.update({f"lm:trained:{n}": v.asnumpy() for n, v in trained.items()})
    return ({"lm": dict(LM, train=train, val=val, batches=batches, val_perplexity=scores,
                        buckets_bound=sorted(int(k) for k in mod._buckets))}, arrays)


def write_rnn_cells(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    logging.getLogger().setLevel(logging.ERROR)
    rng = np.random.RandomState(7)
    cases, arrays = {}, {}
    for name, *spec in CELL_CASES:
        cases[name], case_arrays = _cell_case(name, *spec, rng=rng)
        arrays.update(case_arrays)
    lm, lm_arrays = _train_lm()
    arrays.update(lm_arrays)
    fused_init = {}
    for name, *spec in FUSED_INIT_CASES:
        fused_init[name], case_arrays = _fused_init_case(name, *spec)
        arrays.update(case_arrays)
    (out / "rnn_cells.json").write_text(json.dumps(dict(cases=cases, fused_init=fused_init,
                                                        **lm), indent=1))
    np.savez_compressed(out / "rnn_cells.npz", **arrays)
