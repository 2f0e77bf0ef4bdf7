"""The monitor during backward: MXNet 1.9.1's backward nodes, by its names, in its order,
with its values (`tools/mxnet_monitor_fixtures.py`: small networks bound with their
grad_req, one forward(is_train=True) and backward with the executor's monitor callback,
and a Module with `mx.mon.Monitor`)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import minimx as mx

FIXTURES = Path(__file__).parents[1] / "fixtures" / "monitor"
DATA = json.loads((FIXTURES / "monitor.json").read_text())
ARRAYS = dict(np.load(FIXTURES / "monitor.npz"))


def _rows(case: str, monitor_all: bool) -> list[tuple[str, tuple, float]]:
    """What minimx's callback is given during the backward of `case`."""
    spec = DATA["cases"][case]
    sym = mx.sym.load_json(spec["symbol"])
    exe = sym.simple_bind(mx.cpu(), grad_req=spec["grad_req"],
                          **{k: tuple(v) for k, v in spec["shapes"].items()})
    for name, arr in (*exe.arg_dict.items(), *exe.aux_dict.items()):
        arr[:] = ARRAYS[f"{case}/{name}"]
    for grad in exe.grad_arrays:
        if grad is not None:
            grad[:] = 0.5
    seen: list[tuple[str, tuple, float]] = []
    exe.set_monitor_callback(lambda name, arr: seen.append(
        (name, arr.shape, float(np.sqrt(np.mean(np.square(arr.asnumpy(), dtype=np.float64)))))),
        monitor_all)
    exe.forward(is_train=True)
    mx.nd.waitall()
    forward = len(seen)
    exe.backward([mx.nd.array(ARRAYS[f"{case}/head{i}"]) for i in range(len(exe.outputs))])
    mx.nd.waitall()
    return seen[forward:]


# MXNet's rows whose values minimx does not reproduce, and why.
QUIRKS = {
    # MXNet's BatchNorm with fix_gamma writes 1 into gamma in forward and (oneDNN)
    # updates the moving statistics in backward, so its backward node reads those.
    **{(case, name): "BatchNorm" for case in ("chain", "chain_add", "chain_data", "conv")
       for name in ("bn_gamma", "bn_backward_input4", "bn_moving_mean", "bn_backward_input6",
                    "bn_moving_var", "bn_backward_input7", "bn1_gamma", "bn1_backward_input4",
                    "bn1_moving_mean", "bn1_backward_input6", "bn1_moving_var",
                    "bn1_backward_input7")},
    # ... and with grad_req add it overwrites the gamma gradient with zeros.
    ("chain_add", "bn1_backward_output1"): "fix_gamma's gradient is written, not added",
    # MXNet's oneDNN Dropout keeps its mask in its own form.
    ("conv", "drop_backward_input1"): "Dropout mask",
    # MXNet's PReLU gamma gradient is wrong in this network (minimx's is the finite
    # difference: test_prelu_gamma_gradient_is_the_finite_difference).
    ("branches", "prelu_backward_output1"): "PReLU gamma gradient",
}
# MXNet shows these without minimx: an output MXNet does not write (the gradient of an
# input whose grad_req is null: kNullOp, the memory's old bytes), and with monitor_all
# an input minimx's backward no longer holds (and the variable name shown before it).
UNSHOWN = re.compile(r".*_backward_(output\d*|input\d+)$")


# Every case with monitor_all too, but where MXNet 1.9.1 hangs (SliceChannel's backward).
@pytest.mark.parametrize(("case", "monitor_all"),
                         [(case, False) for case in DATA["cases"]]
                         + [(case, True) for case, spec in DATA["cases"].items() if "all" in spec])
def test_backward_rows_as_mxnet(case: str, monitor_all: bool) -> None:
    spec = DATA["cases"][case]
    want = spec["all" if monitor_all else "outputs"]
    got = _rows(case, monitor_all)
    variables = set(spec["grad_req"]) | {n.split("/", 1)[1] for n in ARRAYS
                                         if n.startswith(f"{case}/")}
    k = 0
    for name, shape, value in want:
        if k < len(got) and got[k][0] == name:
            assert got[k][1] == tuple(shape), name
            if (case, name) not in QUIRKS:
                assert got[k][2] == pytest.approx(value, rel=1e-4, abs=1e-6), name
            k += 1
        else:
            assert UNSHOWN.match(name) or (monitor_all and name in variables), \
                f"{name} is missing after {got[k - 1][0] if k else 'nothing'}"
    assert k == len(got), f"not shown by MXNet: {got[k:]}"


def test_every_backward_output_is_shown_when_every_input_has_a_gradient() -> None:
    """With grad_req write everywhere and no loss layer, every row MXNet shows: b's
    gradient and three others are sums (sum_grad, each one so named)."""
    want = [r[0] for r in DATA["cases"]["arithmetic"]["outputs"]]
    assert [r[0] for r in _rows("arithmetic", False)] == want
    assert want.count("sum_grad_output") == 4


def test_module_monitor_rows_as_mxnet() -> None:
    """`Monitor` over a Module's forward_backward and update: MXNet 1.9.1's `toc` rows."""
    mod = mx.mod.Module(mx.sym.load_json(DATA["cases"]["chain"]["symbol"]))
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])
    mod.init_params(mx.init.Constant(0.25))
    args, aux = mod.get_params()
    mod.set_params({**args, "fc1_weight": mx.nd.array(np.linspace(-1, 1, 20).reshape(4, 5)),
                    "fc2_weight": mx.nd.array(np.linspace(1, -1, 12).reshape(3, 4))}, aux)
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    mon = mx.mon.Monitor(1, pattern=".*")
    mod.install_monitor(mon)
    mon.tic()
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(np.linspace(-1, 2, 10).reshape(2, 5))],
                                         [mx.nd.array([0, 2])]))
    mod.update()
    got = [(name, float(value)) for _, name, value in mon.toc()]
    # Left out: the gradients of data and label (grad_req null), which MXNet shows as
    # whatever its memory held.
    want = [(n, v) for n, v in DATA["module"]
            if n not in ("fc1_backward_output0", "softmax_backward_output1")]
    assert [n for n, _ in got] == [n for n, _ in want]
    assert [v for _, v in got] == pytest.approx([v for _, v in want], rel=1e-4, abs=1e-6)


def test_no_backward_rows_without_a_monitor_and_same_gradients() -> None:
    """The monitor changes nothing of what backward computes."""
    grads = []
    for watch in (False, True):
        spec = DATA["cases"]["shared9"]
        exe = mx.sym.load_json(spec["symbol"]).simple_bind(
            mx.cpu(), grad_req=spec["grad_req"], **{k: tuple(v) for k, v in spec["shapes"].items()})
        for name, arr in exe.arg_dict.items():
            arr[:] = ARRAYS[f"shared9/{name}"]
        if watch:
            exe.set_monitor_callback(lambda name, arr: None)
        exe.forward(is_train=True)
        exe.backward()
        grads.append(exe.grad_dict["w"].asnumpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_prelu_gamma_gradient_is_the_finite_difference() -> None:
    # Where MXNet 1.9.1's differs (the `branches` case): the loss of LinearRegressionOutput
    # is 0.5 * sum((out - label)^2) / 72, its output size per example.
    spec = DATA["cases"]["branches"]
    sym = mx.sym.load_json(spec["symbol"])
    shapes = {k: tuple(v) for k, v in spec["shapes"].items()}
    values = {name: ARRAYS[f"branches/{name}"] for name in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(), grad_req={n: "write" if n == "prelu_gamma" else "null"
                                              for n in values}, **shapes)
    for name, arr in exe.arg_dict.items():
        arr[:] = values[name]
    exe.forward(is_train=True)
    exe.backward()
    analytic = exe.grad_dict["prelu_gamma"].asnumpy()

    def loss(gamma: np.ndarray) -> float:
        out = sym.bind(mx.cpu(), {**{n: mx.nd.array(v) for n, v in values.items()},
                                  "prelu_gamma": mx.nd.array(gamma)}).forward()[0].asnumpy()
        return 0.5 * float(np.sum((out.astype(np.float64) - values["lro_label"]) ** 2)) / 72

    eps = 1e-3
    numeric = [(loss(values["prelu_gamma"] + eps * e) - loss(values["prelu_gamma"] - eps * e))
               / (2 * eps) for e in np.eye(len(analytic), dtype=np.float32)]
    assert np.abs(analytic).max() > 1e-3   # not a vacuous comparison
    np.testing.assert_allclose(analytic, numeric, rtol=1e-2, atol=1e-5)


def test_a_backward_deeper_than_python_recursion_is_reported() -> None:
    x = mx.sym.var("data")
    for i in range(1500):
        x = mx.sym.FullyConnected(x, num_hidden=2, name=f"fc{i}")
    exe = mx.sym.LinearRegressionOutput(x, name="lro").simple_bind(
        mx.cpu(), data=(1, 2), lro_label=(1, 2))
    seen: list[str] = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name))
    exe.forward(is_train=True)
    exe.backward()
    mx.nd.waitall()
    backward = seen[seen.index("lro_backward_output0"):]
    assert backward[-3:] == ["fc0_backward_output0", "fc0_backward_output1",
                             "fc0_backward_output2"]
    assert len(backward) == 2 + 3 * 1500
