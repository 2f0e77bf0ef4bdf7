"""The ``monitor`` fixture group (tools/mxnet_fixtures.py writes it with MXNet 1.9.1,
without a subgraph backend): what MXNet's executor monitor shows of a backward pass.

Each case is a small network (its symbol JSON is stored, so minimx loads the same graph),
bound with its grad_req, its arguments and head gradients (stored in ``monitor.npz`` as
``<case>/<name>``); a forward(is_train=True) and a backward run with the executor's
monitor callback installed (with and without ``monitor_all``), and every name the
callback is given during the backward is stored with the array's shape and its
statistic norm(x)/sqrt(size(x)) (`mx.mon.Monitor`'s default). ``module`` is a
`Module` with `mx.mon.Monitor` over one forward_backward and update: the rows `toc`
returns.
"""
from __future__ import annotations

import ctypes
import json
from pathlib import Path

import mxnet as mx
import numpy as np

S = mx.sym


def _chain() -> mx.sym.Symbol:
    fc = S.FullyConnected(S.var("data"), num_hidden=4, name="fc1")
    bn = S.BatchNorm(S.Activation(fc, act_type="relu", name="relu1"), name="bn1")
    fc2 = S.FullyConnected(bn, num_hidden=3, name="fc2")
    return S.SoftmaxOutput(fc2 + fc2, name="softmax")


def _conv() -> mx.sym.Symbol:
    x = S.Convolution(S.var("data"), num_filter=3, kernel=(3, 3), pad=(1, 1), name="conv")
    x = S.Activation(S.BatchNorm(x, name="bn"), act_type="tanh", name="act")
    x = S.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    x = S.Pooling(x, kernel=(2, 2), pool_type="avg", name="avg")
    x = S.FullyConnected(S.Flatten(x, name="flat"), num_hidden=3, name="fc")
    return S.SoftmaxOutput(S.Dropout(x, p=0.0, name="drop"), name="softmax")


def _branches() -> mx.sym.Symbol:
    data = S.var("data")
    a = S.Convolution(data, num_filter=2, kernel=(1, 1), name="conv_a")
    b = S.Convolution(data, num_filter=2, kernel=(3, 3), pad=(1, 1), no_bias=True,
                      name="conv_b")
    x = S.Concat(a, S.LeakyReLU(b, act_type="prelu", name="prelu"), dim=1, name="cat")
    x = S.Deconvolution(x, num_filter=2, kernel=(2, 2), stride=(2, 2), name="deconv")
    x = S.LeakyReLU(x, act_type="leaky", slope=0.1, name="leaky")
    x = S.Reshape(x, shape=(0, -1), name="flat")
    return S.LinearRegressionOutput(x, name="lro")


def _arithmetic() -> mx.sym.Symbol:
    data, b, c, row, one = S.var("data"), S.var("b"), S.var("c"), S.var("row"), S.var("one")
    x = S.elemwise_sub(S.elemwise_mul(data, b, name="mul"), c, name="sub")
    x = S.elemwise_div(x, S.exp(b, name="exp") + 1, name="div")
    y = S.broadcast_div(S.broadcast_mul(x, row, name="bmul"),
                        S.broadcast_add(row, one, name="badd") * 2 + 3, name="bdiv")
    y = S.broadcast_sub(y, one, name="bsub")
    return S.Group([S.softmax(y, name="sm"), S.log_softmax(x, name="lsm")])


def _split() -> mx.sym.Symbol:
    parts = S.SliceChannel(S.var("data"), num_outputs=3, axis=1, name="sc")
    return S.Group([S.relu(parts[0], name="r0"), S.sigmoid(parts[2], name="s2")])


def _embed_rnn() -> mx.sym.Symbol:
    x = S.Embedding(S.var("data"), input_dim=6, output_dim=3, name="emb")
    x = S.transpose(x, axes=(1, 0, 2), name="tnc")
    x = S.RNN(x, S.var("rnn_params"), S.var("rnn_h"), S.var("rnn_c"), state_size=2,
              num_layers=1, mode="lstm", name="rnn")
    x = S.Reshape(x, shape=(-1, 2), name="rows")
    return S.SoftmaxOutput(S.FullyConnected(x, num_hidden=3, name="fc"), name="softmax")


def _shared(steps: int):
    def make() -> mx.sym.Symbol:
        weight, h = S.var("w"), S.var("data")
        for t in range(steps):
            h = S.tanh(S.FullyConnected(h, weight=weight, num_hidden=3, no_bias=True,
                                        name=f"step{t}"), name=f"tanh{t}")
        return S.LinearRegressionOutput(h, name="lro")
    return make


def _plus() -> mx.sym.Symbol:
    return S.elemwise_add(S.var("data"), S.var("b"), name="plus") * 3


# case -> (network, input shapes, grad_req: "params" (not data/labels), "all" or a dict)
CASES = {
    "chain": (_chain, {"data": (2, 5), "softmax_label": (2,)}, "params"),
    "chain_add": (_chain, {"data": (2, 5), "softmax_label": (2,)}, "add"),
    "chain_data": (_chain, {"data": (2, 5), "softmax_label": (2,)}, "data"),
    "conv": (_conv, {"data": (2, 2, 6, 6), "softmax_label": (2,)}, "data"),
    "branches": (_branches, {"data": (1, 2, 3, 3), "lro_label": (1, 72)}, "params"),
    "arithmetic": (_arithmetic, {"data": (2, 3), "b": (2, 3), "c": (2, 3), "row": (1, 3),
                                 "one": (1, 1)}, "all"),
    "split": (_split, {"data": (2, 6)}, "all"),
    "embed_rnn": (_embed_rnn, {"data": (2, 4), "softmax_label": (8,)}, "params"),
    "shared3": (_shared(3), {"data": (2, 3), "lro_label": (2, 3)}, "params"),
    "shared9": (_shared(9), {"data": (2, 3), "lro_label": (2, 3)}, "params"),
    "plus": (_plus, {"data": (2, 3), "b": (2, 3)}, "all"),
}


def _reqs(sym: mx.sym.Symbol, kind: str) -> dict[str, str]:
    def req(name: str) -> str:
        if kind == "all":
            return "write"
        if name.endswith("label") or (name == "data" and kind != "data"):
            return "null"
        return "add" if kind == "add" else "write"
    return {n: req(n) for n in sym.list_arguments()}


def _recorder(seen: list):
    """A monitor callback appending [name, shape, statistic] to `seen`."""
    def callback(name: bytes, handle: object) -> None:
        arr = mx.nd.NDArray(ctypes.cast(handle, mx.base.NDArrayHandle), writable=False)
        seen.append([mx.base.py_str(name), list(arr.shape), _stat(arr)])
    return callback


def _stat(arr: mx.nd.NDArray) -> float:
    return float((mx.nd.norm(arr) / np.sqrt(arr.size)).asscalar())


def run_case(case: str, arrays: dict[str, np.ndarray]) -> dict:
    make, shapes, kind = CASES[case]
    with mx.name.NameManager():   # automatic names from 0 (_plus0) in every case
        sym = make()
    reqs = _reqs(sym, kind)
    rng = np.random.RandomState(sum(map(ord, case)))
    exe = sym.simple_bind(mx.cpu(), grad_req=reqs, **shapes)
    for name, arr in exe.arg_dict.items():
        if name.endswith("label") or (case == "embed_rnn" and name == "data"):
            value = rng.randint(0, 3, arr.shape)
        else:
            value = rng.uniform(-1, 1, arr.shape)
        arrays[f"{case}/{name}"] = value.astype(np.float32)
    for name, arr in exe.aux_dict.items():
        arrays[f"{case}/{name}"] = (np.ones if name.endswith("var") else np.zeros)(
            arr.shape, np.float32)
    heads = [rng.uniform(-1, 1, o.shape).astype(np.float32) for o in exe.outputs]
    for i, h in enumerate(heads):
        arrays[f"{case}/head{i}"] = h
    runs = {}
    for monitor_all in (False, True):
        if monitor_all and case == "split":
            continue   # MXNet 1.9.1 hangs: its SliceChannel backward with monitor_all
        for name, arr in exe.arg_dict.items():
            arr[:] = arrays[f"{case}/{name}"]
        for name, arr in exe.aux_dict.items():
            arr[:] = arrays[f"{case}/{name}"]
        for grad in exe.grad_arrays:
            if grad is not None:
                grad[:] = 0.5   # grad_req add adds to this
        seen: list = []
        exe.set_monitor_callback(_recorder(seen), monitor_all)
        exe.forward(is_train=True)
        mx.nd.waitall()
        forward = len(seen)
        exe.backward([mx.nd.array(h) for h in heads])
        mx.nd.waitall()
        runs["all" if monitor_all else "outputs"] = seen[forward:]
    return {"symbol": sym.tojson(), "shapes": shapes, "grad_req": reqs, **runs}


def run_module() -> list:
    """The rows of `Monitor.toc` after one forward_backward and update of `_chain`."""
    with mx.name.NameManager():
        mod = mx.mod.Module(_chain())
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])
    mod.init_params(mx.init.Constant(0.25))
    mod.set_params({**mod.get_params()[0],
                    "fc1_weight": mx.nd.array(np.linspace(-1, 1, 20).reshape(4, 5)),
                    "fc2_weight": mx.nd.array(np.linspace(1, -1, 12).reshape(3, 4))},
                   mod.get_params()[1])
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    mon = mx.mon.Monitor(1, pattern=".*")
    mod.install_monitor(mon)
    mon.tic()
    batch = mx.io.DataBatch([mx.nd.array(np.linspace(-1, 2, 10).reshape(2, 5))],
                            [mx.nd.array([0, 2])])
    mod.forward_backward(batch)
    mod.update()
    return [[name, float(value)] for _, name, value in mon.toc()]



def write_monitor(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    cases = {case: run_case(case, arrays) for case in CASES}
    (out / "monitor.json").write_text(json.dumps(
        {"cases": cases, "module": run_module()}, indent=1) + "\n")
    np.savez_compressed(out / "monitor.npz", **arrays)
