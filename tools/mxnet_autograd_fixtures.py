"""The ``autograd`` fixture group of `mxnet_fixtures.py`: MXNet 1.9.1's ``mx.autograd``.

Runs with MXNet's Python only (never minimx). Each gradient case is the source of a
function ``program(mx, v)`` returning the heads recorded from the arrays ``v`` (inputs
named ``c_*`` get no gradient); minimx runs the same source. Per case this records the
inputs, the heads, seeded head gradients (or none: ones) and the gradients MXNet's
``autograd.backward`` leaves in each input's ``grad``, plus the values of the ``c_*``
inputs afterwards (BatchNorm's moving statistics); cases cover pause inside record and a
custom Function. The scenarios (grad_req 'add', ``autograd.grad``, retain_graph,
train/predict modes, ``get_symbol``, a linear regression trained by SGD) and MXNet's
error messages go to ``scenarios.json`` / ``scenarios.npz``.
"""
from __future__ import annotations

import json
from pathlib import Path

import mxnet as mx
import numpy as np

# (case, source, input shapes, {input: (low, high)} ranges (default (-1, 1)), head grads)
CASES = [
    ("arith_broadcast", '''
def program(mx, v):
    a, b = v["a"], v["b"]
    return (a * b + a / (b + 3) - 2 * a + (1 - b) + 2 / (b + 3)) ** 2 + a ** 3 - a % 0.7
''', {"a": (2, 3), "b": (1, 3)}, {}, True),
    ("unary", '''
def program(mx, v):
    a, p = v["a"], v["p"]
    return [mx.nd.exp(a) + mx.nd.log(p) + mx.nd.tanh(a), mx.nd.relu(a) * mx.nd.sigmoid(a),
            mx.nd.sqrt(p) - mx.nd.abs(a) + mx.nd.square(a)]
''', {"a": (3, 4), "p": (3, 4)}, {"p": (0.5, 2.0)}, True),
    ("dot", '''
def program(mx, v):
    return [mx.nd.dot(v["a"], v["w"]), mx.nd.batch_dot(v["x"], v["y"], transpose_b=True),
            mx.nd.dot(v["a"], v["w"].T, transpose_b=True)]
''', {"a": (2, 3), "w": (3, 4), "x": (2, 3, 4), "y": (2, 5, 4)}, {}, True),
    ("fully_connected", '''
def program(mx, v):
    return mx.nd.FullyConnected(v["data"], v["weight"], v["bias"], num_hidden=4)
''', {"data": (3, 2, 3), "weight": (4, 6), "bias": (4,)}, {}, True),
    ("convolution", '''
def program(mx, v):
    y = mx.nd.Convolution(v["data"], v["weight"], v["bias"], kernel=(3, 3), num_filter=2,
                          pad=(1, 1), stride=(2, 1))
    return mx.nd.Pooling(mx.nd.relu(y), kernel=(2, 2), pool_type="max", stride=(1, 1))
''', {"data": (2, 3, 5, 5), "weight": (2, 3, 3, 3), "bias": (2,)}, {}, True),
    ("batchnorm_train", '''
def program(mx, v):
    return mx.nd.BatchNorm(v["data"], v["gamma"], v["beta"], v["c_mean"], v["c_var"],
                           fix_gamma=False, momentum=0.8) * 2
''', {"data": (4, 3, 2, 2), "gamma": (3,), "beta": (3,), "c_mean": (3,), "c_var": (3,)},
     {"c_var": (0.5, 1.5), "gamma": (0.5, 1.5)}, True),
    ("dropout_p0", '''
def program(mx, v):
    return mx.nd.Dropout(v["a"], p=0.0) * v["b"]
''', {"a": (3, 4), "b": (3, 4)}, {}, True),
    ("softmax_cross_entropy", '''
def program(mx, v):
    return mx.nd.softmax_cross_entropy(v["data"], v["c_label"]) * 1
''', {"data": (4, 5), "c_label": (4,)}, {"c_label": (0, 4)}, False),
    ("log_softmax", '''
def program(mx, v):
    return mx.nd.log_softmax(v["data"], axis=-1) + mx.nd.softmax(v["data"])
''', {"data": (3, 5)}, {}, True),
    ("indexing", '''
def program(mx, v):
    a = v["a"]
    return [a[1:3] * 2, a[1], a[:, 1:4:2], a[0, 2] * a[-1, -1], a[::-1, 1:], a[[0, 3]]]
''', {"a": (4, 5)}, {}, True),
    ("reshape_transpose_concat", '''
def program(mx, v):
    a, b = v["a"], v["b"]
    r = a.reshape((3, 2)).T
    return [mx.nd.concat(r, b, dim=1) * mx.nd.concat(b, r, dim=1),
            mx.nd.transpose(a.reshape((1, 6)) * 2).reshape((2, 3)), a.expand_dims(0) * 3]
''', {"a": (2, 3), "b": (2, 3)}, {}, True),
    ("views_and_copies", '''
def program(mx, v):
    x = v["x"]
    w = mx.nd.zeros((2, 3))
    w[:] = x * 3
    return [x.copy() * x, x.astype("float64") * 2, x.reshape((3, 2)) * 2, w * x, x.T * 1]
''', {"x": (2, 3)}, {}, False),
    ("reductions", '''
def program(mx, v):
    a = v["a"]
    return [a.sum(axis=1), mx.nd.mean(a, axis=0, keepdims=True), a.max(axis=1),
            mx.nd.min(a) * mx.nd.sum(a * a), mx.nd.norm(a)]
''', {"a": (3, 4)}, {}, True),
    ("softmax_output", '''
def program(mx, v):
    return mx.nd.SoftmaxOutput(v["data"], v["c_label"], grad_scale=0.5)
''', {"data": (4, 3), "c_label": (4,)}, {"c_label": (0, 2)}, True),
    ("pause_inside", '''
def program(mx, v):
    y = v["x"] * v["x"]
    with mx.autograd.pause():   # a constant to the graph
        c = y * 3
    return y * c
''', {"x": (2, 3)}, {}, False),
    ("custom_function", '''
class sigmoid(mx.autograd.Function):   # MXNet's documented example
    def forward(self, x):
        y = 1 / (1 + mx.nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        y, = self.saved_tensors
        return dy * y * (1 - y)


def program(mx, v):
    return sigmoid()(v["x"]) * v["x"]
''', {"x": (2, 3)}, {}, True),
    ("shared_input", '''
def program(mx, v):
    x = v["x"]
    y = mx.nd.tanh(x) * x
    return [y + x, y.sum() * x]
''', {"x": (2, 3)}, {}, True),
]

MODES = '''
def modes(mx):
    ag, modes = mx.autograd, {}

    def now():
        return [ag.is_recording(), ag.is_training()]
    modes["outside"] = now()
    with ag.record():
        modes["record"] = now()
        with ag.pause():
            modes["record_pause"] = now()
        with ag.predict_mode():
            modes["record_predict"] = now()
    with ag.record(train_mode=False):
        modes["record_false"] = now()
    with ag.train_mode():
        modes["train_mode"] = now()
    with ag.pause(train_mode=True):
        modes["pause_true"] = now()
    modes["set_recording"] = [ag.set_recording(True), ag.set_recording(False)]
    modes["set_training"] = [ag.set_training(True), ag.set_training(False)]
    return modes
'''

RETAIN = '''
def retain(mx, xw, xd):
    """Two backward passes of one graph, into a 'write' and an 'add' variable."""
    xw.attach_grad()
    xd.attach_grad("add")
    with mx.autograd.record():
        y = mx.nd.tanh(xw) * xw + mx.nd.tanh(xd)
    y.backward(retain_graph=True)
    y.backward(mx.nd.array([1.0, 2.0, 3.0]))
    return y
'''

LINREG = '''
def train(mx, data, label, w, b, steps, lr):
    """y = X w + b fitted by plain SGD through autograd; the losses."""
    losses = []
    for p in (w, b):
        p.attach_grad()
    for _ in range(steps):
        with mx.autograd.record():
            loss = ((mx.nd.dot(data, w) + b - label) ** 2).mean()
        loss.backward()
        w[:] = w - lr * w.grad
        b[:] = b - lr * b.grad
        losses.append(float(loss.asscalar()))
    return losses
'''


def _program(source: str, name: str = "program"):
    scope: dict = {"mx": mx}
    exec(source, scope)  # noqa: S102  (the fixtures' own case sources)
    return scope[name]


def _inputs(shapes: dict, ranges: dict, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.RandomState(seed)
    values = {}
    for n, s in shapes.items():
        low, high = ranges.get(n, (-1.0, 1.0))
        if n == "c_label":
            values[n] = rng.randint(low, high + 1, s).astype(np.float32)
        else:
            values[n] = rng.uniform(low, high, s).astype(np.float32)
    return values


def _message(fn) -> str:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001  (what MXNet raises is the fixture)
        text = str(exc).split("Stack trace")[0].strip().splitlines()[-1]
        return text.rsplit("): ", 1)[-1] if "Check failed" in text else text
    return ""


def _cases(arrays: dict) -> list:
    cases = []
    for k, (case, source, shapes, ranges, with_head) in enumerate(CASES):
        program = _program(source)
        values = _inputs(shapes, ranges, seed=k)
        v = {n: mx.nd.array(a) for n, a in values.items()}
        for n, a in v.items():
            if not n.startswith("c_"):
                a.attach_grad()
        with mx.autograd.record():
            heads = program(mx, v)
        heads = heads if isinstance(heads, list) else [heads]
        rng = np.random.RandomState(100 + k)
        head_grads = [rng.uniform(-1, 1, h.shape).astype(np.float32) for h in heads]
        mx.autograd.backward(heads, [mx.nd.array(h) for h in head_grads] if with_head else None)
        for n, a in values.items():
            arrays[f"{case}:in:{n}"] = a
            arrays[f"{case}:{'after' if n.startswith('c_') else 'grad'}:{n}"] = (
                v[n].asnumpy() if n.startswith("c_") else v[n].grad.asnumpy())
        for j, (h, g) in enumerate(zip(heads, head_grads, strict=True)):
            arrays[f"{case}:head:{j}"] = h.asnumpy()
            if with_head:
                arrays[f"{case}:head_grad:{j}"] = g
        cases.append({"case": case, "source": source, "shapes": shapes,
                      "head_grads": with_head, "heads": len(heads)})
    return cases


def _scenarios(arrays: dict) -> dict:
    out: dict = {}
    x = mx.nd.array([0.5, -1.0, 2.0])
    arrays["x"] = x.asnumpy()
    # grad_req 'add': two backward calls accumulate
    xa = x.copy()
    xa.attach_grad(grad_req="add")
    for scale in (2.0, 3.0):
        with mx.autograd.record():
            y = mx.nd.exp(xa) * scale
        y.backward()
    arrays["add_twice"] = xa.grad.asnumpy()
    xw, xd = x.copy(), x.copy()
    _program(RETAIN, "retain")(mx, xw, xd)
    arrays["retain:write"], arrays["retain:add"] = xw.grad.asnumpy(), xd.grad.asnumpy()
    # autograd.grad: new arrays, grad buffers left alone; head_grads; retain_graph
    xg = x.copy()
    xg.attach_grad()
    with mx.autograd.record():
        y = mx.nd.sin(xg) * xg
        z = (y * y).sum()
    arrays["grad:y"] = mx.autograd.grad(y, [xg], head_grads=mx.nd.array([1.0, -1.0, 0.5]),
                                        retain_graph=True)[0].asnumpy()
    single = mx.autograd.grad(z, xg)   # a list even for one NDArray variable (MXNet's quirk)
    out["grad_single_is_list"] = isinstance(single, list)
    arrays["grad:z"] = single[0].asnumpy()
    arrays["grad:buffer"] = xg.grad.asnumpy()
    # a 'null' variable leaves the graph with the rest: its grad is None afterwards
    xn, nn = x.copy(), x.copy()
    xn.attach_grad()
    nn.attach_grad("null")
    out["null_grad_before"] = nn.grad.asnumpy().tolist()
    with mx.autograd.record():
        (xn * nn).backward()
    out["null_grad_after"] = nn.grad
    out["modes"] = _program(MODES, "modes")(mx)
    # get_symbol
    xs = x.copy()
    xs.attach_grad()
    c = mx.nd.ones((3,))
    with mx.autograd.record():
        s = mx.nd.relu(xs * 2 + c) + mx.nd.exp(xs)
    sym = mx.autograd.get_symbol(s)
    out["get_symbol"] = {"arguments": sym.list_arguments(),
                         "ops": [n["op"] for n in json.loads(sym.tojson())["nodes"]]}
    out["errors"] = _errors()
    out["linreg"] = _linear_regression(arrays)
    return out


def _errors() -> dict:
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
    y.backward()
    unrelated = mx.nd.ones((2,))
    unrelated.attach_grad()

    def in_place():
        with mx.autograd.record():
            z = x * 2
            z += 1

    def unreachable():
        with mx.autograd.record():
            z = x * 2
        mx.autograd.grad(z, [unrelated])

    def heads_mismatch():
        with mx.autograd.record():
            z = x * 2
        mx.autograd.backward([z], [mx.nd.ones((2,)), mx.nd.ones((2,))])

    def no_gradient_variable():
        plain = mx.nd.ones((2,))
        with mx.autograd.record():
            z = x * plain
        mx.autograd.grad(z, [plain])

    return {"not_recorded": _message(lambda: mx.nd.ones((2,)).backward()),
            "second_backward": _message(lambda: y.backward()),
            "in_place": _message(in_place),
            "unreachable": _message(unreachable),
            "heads_mismatch": _message(heads_mismatch),
            "no_gradient_variable": _message(no_gradient_variable)}


def _linear_regression(arrays: dict) -> dict:
    """`LINREG` from a fixed start on fixed data."""
    rng = np.random.RandomState(7)
    X = rng.uniform(-1, 1, (32, 3)).astype(np.float32)
    Y = (X @ np.array([[2.0], [-3.0], [0.5]]) + 1.5).astype(np.float32)
    w = mx.nd.array(rng.uniform(-0.1, 0.1, (3, 1)))
    b = mx.nd.zeros((1,))
    arrays["linreg:X"], arrays["linreg:Y"] = X, Y
    arrays["linreg:w0"], arrays["linreg:b0"] = w.asnumpy(), b.asnumpy()
    steps, lr = 50, 0.1
    losses = _program(LINREG, "train")(mx, mx.nd.array(X), mx.nd.array(Y), w, b, steps, lr)
    arrays["linreg:w"], arrays["linreg:b"] = w.asnumpy(), b.asnumpy()
    arrays["linreg:losses"] = np.array(losses, np.float32)
    return {"steps": steps, "lr": lr}


def write_autograd(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    cases = _cases(arrays)
    (out / "cases.json").write_text(json.dumps(cases, indent=1))
    np.savez_compressed(out / "cases.npz", **arrays)
    scenario_arrays: dict[str, np.ndarray] = {}
    scenarios = _scenarios(scenario_arrays)
    scenarios.update(modes_source=MODES, retain_source=RETAIN, linreg_source=LINREG)
    (out / "scenarios.json").write_text(json.dumps(scenarios, indent=1))
    np.savez_compressed(out / "scenarios.npz", **scenario_arrays)


if __name__ == "__main__":
    write_autograd(Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "autograd")
