"""`mx.autograd` against MXNet 1.9.1 (tests/fixtures/autograd, written by
tools/mxnet_autograd_fixtures.py): the gradients MXNet's autograd gives for each case's
program (the same source), its scenarios (grad_req 'add', autograd.grad, retain_graph,
modes, get_symbol, an SGD-trained linear regression) and its
error messages; properties MXNet documents (Dropout's mask reused by backward)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.autograd import AutogradError
from minimx.base import MinimxError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "autograd"
CASES = {c["case"]: c for c in json.loads((FIXTURES / "cases.json").read_text())}
ARRAYS = np.load(FIXTURES / "cases.npz")
SCENARIOS = json.loads((FIXTURES / "scenarios.json").read_text())
SCENE = np.load(FIXTURES / "scenarios.npz")
ERRORS = SCENARIOS["errors"]


def _exec(source: str, name: str):
    scope: dict = {"mx": mx}
    exec(source, scope)  # the fixture's source, the one MXNet ran
    return scope[name]


def _arrays(case: str, kind: str) -> dict[str, np.ndarray]:
    prefix = f"{case}:{kind}:"
    return {key[len(prefix):]: ARRAYS[key] for key in ARRAYS.files if key.startswith(prefix)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_match_mxnet(case: str) -> None:
    spec = CASES[case]
    v = {n: mx.nd.array(a) for n, a in _arrays(case, "in").items()}
    for n, a in v.items():
        if not n.startswith("c_"):
            a.attach_grad()
    with mx.autograd.record():
        heads = _exec(spec["source"], "program")(mx, v)
    heads = heads if isinstance(heads, list) else [heads]
    for j, h in enumerate(heads):
        np.testing.assert_allclose(h.asnumpy(), ARRAYS[f"{case}:head:{j}"], rtol=1e-5,
                                   atol=1e-6, err_msg=f"head {j}")
    head_grads = ([mx.nd.array(ARRAYS[f"{case}:head_grad:{j}"]) for j in range(len(heads))]
                  if spec["head_grads"] else None)
    mx.autograd.backward(heads, head_grads)
    for n, want in _arrays(case, "grad").items():
        np.testing.assert_allclose(v[n].grad.asnumpy(), want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"gradient of {n}")
    for n, want in _arrays(case, "after").items():   # BatchNorm's moving statistics
        np.testing.assert_allclose(v[n].asnumpy(), want, rtol=1e-5, atol=1e-6, err_msg=n)


def _x() -> mx.nd.NDArray:
    return mx.nd.array(SCENE["x"])


def test_grad_req_add_accumulates_over_backward_calls() -> None:
    x = _x()
    x.attach_grad(grad_req="add")
    for scale in (2.0, 3.0):
        with mx.autograd.record():
            y = mx.nd.exp(x) * scale
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), SCENE["add_twice"], rtol=1e-6)


def test_retain_graph_runs_backward_twice() -> None:
    xw, xd = _x(), _x()
    y = _exec(SCENARIOS["retain_source"], "retain")(mx, xw, xd)
    np.testing.assert_allclose(xw.grad.asnumpy(), SCENE["retain:write"], rtol=1e-6)
    np.testing.assert_allclose(xd.grad.asnumpy(), SCENE["retain:add"], rtol=1e-6)
    with pytest.raises(AutogradError, match=re.escape(ERRORS["second_backward"])):
        y.backward()


def test_autograd_grad_returns_new_arrays() -> None:
    x = _x()
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.sin(x) * x
        z = (y * y).sum()
    got = mx.autograd.grad(y, [x], head_grads=mx.nd.array([1.0, -1.0, 0.5]),
                           retain_graph=True)
    np.testing.assert_allclose(got[0].asnumpy(), SCENE["grad:y"], rtol=1e-6)
    single = mx.autograd.grad(z, x)
    assert isinstance(single, list) == SCENARIOS["grad_single_is_list"]
    np.testing.assert_allclose(single[0].asnumpy(), SCENE["grad:z"], rtol=1e-5)
    np.testing.assert_array_equal(x.grad.asnumpy(), SCENE["grad:buffer"])
    with mx.autograd.record():
        y = x * x
    with pytest.raises(MinimxError, match="create_graph"):
        mx.autograd.grad(y, [x], create_graph=True)


def test_recording_and_training_modes() -> None:
    assert _exec(SCENARIOS["modes_source"], "modes")(mx) == SCENARIOS["modes"]


def test_a_function_instance_is_called_once() -> None:
    sigmoid = _exec(CASES["custom_function"]["source"], "sigmoid")
    used = sigmoid()
    used(_x())
    with pytest.raises(AutogradError, match="only be called once"):
        used(_x())


def test_get_symbol_is_the_recorded_graph() -> None:
    x = _x()
    x.attach_grad()
    c = mx.nd.ones((3,))
    with mx.autograd.record():
        s = mx.nd.relu(x * 2 + c) + mx.nd.exp(x)
    sym = mx.autograd.get_symbol(s)
    want = SCENARIOS["get_symbol"]
    strip = [re.sub(r"\d+$", "", n) for n in sym.list_arguments()]
    assert strip == [re.sub(r"\d+$", "", n) for n in want["arguments"]]
    assert [n["op"] for n in json.loads(sym.tojson())["nodes"]] == want["ops"]


def test_errors_are_mxnets() -> None:
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with pytest.raises(AutogradError, match=re.escape(ERRORS["not_recorded"])):
        mx.nd.ones((2,)).backward()
    with mx.autograd.record():
        z = x * 2
        with pytest.raises(AutogradError, match=re.escape(ERRORS["in_place"])):
            z += 1
        with pytest.raises(AutogradError, match=re.escape(ERRORS["in_place"])):
            x[:] = 3
    with pytest.raises(AutogradError, match=re.escape(ERRORS["heads_mismatch"])):
        mx.autograd.backward([z], [mx.nd.ones((2,)), mx.nd.ones((2,))])
    unrelated = mx.nd.ones((2,))
    unrelated.attach_grad()
    with pytest.raises(AutogradError, match=re.escape(ERRORS["unreachable"])):
        mx.autograd.grad(z, [unrelated], retain_graph=True)
    plain = mx.nd.ones((2,))
    with mx.autograd.record():
        w = x * plain
    with pytest.raises(AutogradError, match=re.escape(ERRORS["no_gradient_variable"])):
        mx.autograd.grad(w, [plain])


def test_linear_regression_trains_to_mxnets_weights() -> None:
    w, b = mx.nd.array(SCENE["linreg:w0"]), mx.nd.array(SCENE["linreg:b0"])
    losses = _exec(SCENARIOS["linreg_source"], "train")(
        mx, mx.nd.array(SCENE["linreg:X"]), mx.nd.array(SCENE["linreg:Y"]), w, b,
        SCENARIOS["linreg"]["steps"], SCENARIOS["linreg"]["lr"])
    np.testing.assert_allclose(losses, SCENE["linreg:losses"], rtol=1e-4)
    np.testing.assert_allclose(w.asnumpy(), SCENE["linreg:w"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b.asnumpy(), SCENE["linreg:b"], rtol=1e-4, atol=1e-5)


def test_dropout_backward_reuses_the_forward_mask() -> None:
    x = mx.nd.array(np.random.RandomState(0).uniform(0.5, 1.5, (50, 40)))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.5)
    y.backward()
    kept = y.asnumpy() != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(x.grad.asnumpy(), kept * 2.0)
    with mx.autograd.record(train_mode=False):
        y = mx.nd.Dropout(x, p=0.5)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())


def test_grad_req_null_and_detach() -> None:
    x, n = _x(), _x()
    x.attach_grad()
    n.attach_grad("null")
    with mx.autograd.record():
        y = x * n + x.detach() * 5
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), SCENE["x"], rtol=1e-6)
    # MXNet clears a 'null' variable with the graph: its grad is None afterwards
    assert (n.grad is None) == (SCENARIOS["null_grad_after"] is None)
    assert x.detach().grad is None and mx.nd.ones((2,)).grad is None
    m = _x()
    m.attach_grad("null")
    assert m.grad.asnumpy().tolist() == SCENARIOS["null_grad_before"]


def test_not_recording_leaves_arrays_out_of_graphs() -> None:
    x = _x()
    x.attach_grad()
    y = x * 2
    with pytest.raises(AutogradError, match=re.escape(ERRORS["not_recorded"])):
        y.backward()
    x[:] = 1   # writing a variable outside record is allowed (an optimizer step)
    np.testing.assert_array_equal(x.asnumpy(), 1)


def test_refusals_name_what_is_wrong() -> None:
    x = _x()
    x.attach_grad("null")
    with mx.autograd.record():
        y = x * 2
    with pytest.raises(AutogradError, match="no inputs in computation graph"):
        y.backward()
    with pytest.raises(AutogradError, match="gradient"):
        mx.autograd.mark_variables([x], [mx.nd.zeros((2,))])
    with pytest.raises(AutogradError, match="grad_req 'sum'"):
        x.attach_grad("sum")
    with pytest.raises(AutogradError, match="dense"):
        x.attach_grad(stype="row_sparse")
    x.attach_grad()
    plain = mx.nd.zeros((3,))
    with mx.autograd.record():
        with pytest.raises(AutogradError, match="part of another"):
            plain[1:] = x[1:]
        with pytest.raises(AutogradError, match="not recorded"):
            x[mx.nd.array([0, 1]), None]

    class Twice(mx.autograd.Function):
        def forward(self, a):
            return a * 2

        def backward(self, dy):
            return dy, dy

    with mx.autograd.record():
        y = Twice()(x)
    with pytest.raises(AutogradError, match="Expecting 1 got 2"):
        y.backward()


def test_found_by_a_fuzz_against_mxnet() -> None:
    # Each as MXNet 1.9.1 does it (a differential fuzz of 7,260 autograd programs).
    x = _x()
    x.attach_grad("null")   # grad of a variable that needs none: MXNet's refusal
    with mx.autograd.record():
        y = x * x
    with pytest.raises(AutogradError, match=re.escape(ERRORS["no_gradient_variable"])):
        mx.autograd.grad([y], [x])
    # An earlier backward cleared what z was computed from (MXNet fails or crashes):
    # the message says so, where a TypeError came.
    a = _x()
    a.attach_grad()
    with mx.autograd.record():
        b = a * 2
        c = b * a
    b.backward()
    with pytest.raises(AutogradError, match=re.escape(ERRORS["not_recorded"])):
        c.backward()
    # The array assigned to the whole of itself while recording writes nothing.
    v = _x()
    v.attach_grad()
    with mx.autograd.record():
        v[:] = v
        w = v * 3
    w.backward()
    np.testing.assert_array_equal(v.grad.asnumpy(), np.full(v.shape, 3.0))

    class Scalar(mx.autograd.Function):
        def forward(self, t):
            return t * 2

        def backward(self, dy):
            return 3.0

    with mx.autograd.record():
        s = Scalar()(v)
    with pytest.raises(AutogradError, match="must return NDArrays, not float"):
        s.backward()


def test_batch_norm_recorded_training_differentiated_in_predict_mode() -> None:
    # MXNet 1.9.1's gradients: backward(train_mode=False) takes the moving statistics,
    # whatever mode the forward ran in (momentum 1 keeps them where they were).
    d = mx.nd.array([[1., 2, 0], [3, 5, 1], [0, 1, 1], [2, 2, 2]])
    gamma = mx.nd.array([0.5, 1.5, 1.])
    d.attach_grad()
    gamma.attach_grad()
    with mx.autograd.record():
        y = mx.nd.BatchNorm(d, gamma, mx.nd.zeros(3), mx.nd.array([0.1, 0.2, 0.3]),
                            mx.nd.array([1., 2, 3]), fix_gamma=False, momentum=1.0)
    y.backward(mx.nd.array(np.arange(12).reshape(4, 3)), train_mode=False)
    np.testing.assert_allclose(d.grad.asnumpy()[0], [0, 1.0603951, 1.1545082], rtol=1e-6)
    np.testing.assert_allclose(gamma.grad.asnumpy(), [25.18741, 31.529081, 15.701312],
                               rtol=1e-6)
