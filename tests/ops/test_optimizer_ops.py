"""The optimizer update operators against MXNet 1.9.1 (tests/fixtures/optimizer_ops,
tools/mxnet_optimizer_op_fixtures.py): three steps with ``out=weight``, every output and
updated state value for value; and the `mx.optimizer` rules give the operators' numbers."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError

FIXTURES = Path(__file__).parent.parent / "fixtures" / "optimizer_ops"
CASES = json.loads((FIXTURES / "cases.json").read_text())
ARRAYS = np.load(FIXTURES / "cases.npz")
TIMED = ("ftml_update", "lamb_update_phase1", "mp_lamb_update_phase1")


@pytest.mark.parametrize("case", sorted(CASES))
def test_steps_match_mxnet(case: str) -> None:
    spec = CASES[case]
    inputs = [ARRAYS[k] for k in sorted((k for k in ARRAYS.files if k.startswith(f"{case}:in_")),
                                        key=lambda k: int(k.rsplit("_", 1)[1]))]
    nds = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    fn = getattr(mx.nd, spec["op"])
    for step in range(1, spec["steps"] + 1):
        attrs = dict(spec["attrs"], **({"t": step} if spec["op"] in TIMED else {}))
        if spec["op"].endswith("lamb_update_phase1"):
            np.testing.assert_allclose(fn(*nds, **attrs).asnumpy(),
                                       ARRAYS[f"{case}:step{step}_out"], rtol=1e-4, atol=1e-6)
        else:
            weights = [nds[i] for i in spec["weights"]]
            fn(*nds, out=weights if len(weights) > 1 else weights[0], **attrs)
        for i, a in enumerate(nds):
            expected = ARRAYS[f"{case}:step{step}_{i}"]
            assert a.dtype == expected.dtype
            np.testing.assert_allclose(a.asnumpy(), expected, rtol=1e-4, atol=1e-6,
                                       err_msg=f"{case} step {step} input {i}")


def test_states_are_auxiliary_and_the_weight_changes_only_through_out() -> None:
    sym = mx.sym.sgd_mom_update(mx.sym.var("w"), mx.sym.var("g"), mx.sym.var("mom"), lr=0.1)
    assert sym.list_arguments() == ["w", "g"]
    assert sym.list_auxiliary_states() == ["mom"]
    w, g, mom = mx.nd.ones((2,)), mx.nd.ones((2,)), mx.nd.zeros((2,))
    new = mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9)
    assert w.asnumpy().tolist() == [1.0, 1.0]
    np.testing.assert_allclose(new.asnumpy(), [0.9, 0.9], rtol=1e-6)
    np.testing.assert_allclose(mom.asnumpy(), [-0.1, -0.1], rtol=1e-6)


# (optimizer, its arguments, the operator its update runs, the operator's arguments)
RULES = [
    ("sgd", {"momentum": 0.9}, "sgd_mom_update", {"momentum": 0.9}),
    ("nag", {"momentum": 0.9}, "nag_mom_update", {"momentum": 0.9}),
    ("signum", {"momentum": 0.0}, "signsgd_update", {}),
    ("signum", {"momentum": 0.8, "wd_lh": 0.1}, "signum_update",
     {"momentum": 0.8, "wd_lh": 0.1}),
    ("rmsprop", {"gamma1": 0.9}, "rmsprop_update", {"gamma1": 0.9, "epsilon": 1e-8}),
    ("rmsprop", {"gamma1": 0.9, "centered": True}, "rmspropalex_update",
     {"gamma1": 0.9, "epsilon": 1e-8}),
    ("ftrl", {"lamda1": 0.05}, "ftrl_update", {"lamda1": 0.05}),
]


@pytest.mark.parametrize("name, kwargs, op, op_kwargs", RULES,
                         ids=[r[2] for r in RULES])
def test_optimizer_rules_are_the_operators(name, kwargs, op, op_kwargs) -> None:
    rng = np.random.default_rng(3)
    weight, grads = rng.uniform(-1, 1, (3, 4)), rng.uniform(-3, 3, (2, 3, 4))
    common = {"wd": 0.05, "rescale_grad": 0.5, "clip_gradient": 0.6}
    opt = mx.optimizer.create(name, learning_rate=0.1, **kwargs, **common)
    w, w_op = mx.nd.array(weight), mx.nd.array(weight)
    state = opt.create_state(0, w)
    states = [mx.nd.zeros(w.shape) for _ in (state if isinstance(state, tuple) else
                                             [] if state is None else [state])]
    for g in grads:
        opt.update(0, w, mx.nd.array(g), state)
        getattr(mx.nd, op)(w_op, mx.nd.array(g), *states, out=w_op, lr=0.1, **op_kwargs,
                           **common)
        assert w.asnumpy().tolist() == w_op.asnumpy().tolist()


def test_adam_and_ftml_rules_are_the_operators_at_each_step() -> None:
    rng = np.random.default_rng(4)
    weight, grads = rng.uniform(-1, 1, (3, 4)), rng.uniform(-3, 3, (3, 3, 4))
    adam, ftml = mx.optimizer.Adam(learning_rate=0.01), mx.optimizer.FTML(learning_rate=0.01)
    w_adam, w_ftml = mx.nd.array(weight), mx.nd.array(weight)
    s_adam, s_ftml = adam.create_state(0, w_adam), ftml.create_state(0, w_ftml)
    w1, w2 = mx.nd.array(weight), mx.nd.array(weight)
    st1, st2 = [mx.nd.zeros(w1.shape) for _ in range(2)], [mx.nd.zeros(w1.shape) for _ in range(3)]
    for t, g in enumerate(grads, start=1):
        adam.update(0, w_adam, mx.nd.array(g), s_adam)
        ftml.update(0, w_ftml, mx.nd.array(g), s_ftml)
        lr = 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        mx.nd.adam_update(w1, mx.nd.array(g), *st1, lr=lr, out=w1)
        mx.nd.ftml_update(w2, mx.nd.array(g), *st2, lr=0.01, t=t, out=w2)
        assert w_adam.asnumpy().tolist() == w1.asnumpy().tolist()
        assert w_ftml.asnumpy().tolist() == w2.asnumpy().tolist()


def test_bad_parameters_name_the_node_and_the_values() -> None:
    w = mx.nd.ones((2,))
    with pytest.raises(MinimxError, match=r"ftml_update.*t=0"):
        mx.nd.ftml_update(w, w, w.copy(), w.copy(), w.copy(), lr=0.1, t=0).asnumpy()
    with pytest.raises(MinimxError, match=r"sgd_update.*lr"):
        mx.nd.sgd_update(w, w)
    with pytest.raises(MinimxError, match=r"mp_sgd_update.*float32"):
        mx.nd.mp_sgd_update(w.astype("float16"), w.astype("float16"), w.astype("float16"),
                            lr=0.1)


def test_multi_updates_name_their_inputs_per_weight_and_check_lrs() -> None:
    sym = mx.sym.multi_mp_sgd_mom_update(*[mx.sym.var(f"v{i}") for i in range(8)],
                                         num_weights=2, lrs=(0.1, 0.2), wds=(0, 0), name="u")
    assert sym.list_arguments() == ["v0", "v1", "v4", "v5"]
    assert sym.list_auxiliary_states() == ["v2", "v3", "v6", "v7"]
    assert sym.list_outputs() == ["u_output0", "u_output1"]
    w = mx.nd.ones((2,))
    with pytest.raises(MinimxError, match=r"u \(multi_sgd_update\).*num_weights=2.*lrs=\(0.1,\)"):
        mx.nd.multi_sgd_update(w, w, w, w, num_weights=2, lrs=(0.1,), wds=(0, 0), name="u")


# mx.nd.contrib's fronts of the multi-tensor AdamW / LAMB updates (CONTRIB_MULTI_CASES of
# tools/mxnet_optimizer_op_fixtures.py): three steps with out=weights.
MULTI = json.loads((FIXTURES / "contrib_multi.json").read_text())
MULTI_ARRAYS = np.load(FIXTURES / "contrib_multi.npz")


@pytest.mark.parametrize("case", sorted(MULTI))
def test_contrib_multi_updates_match_mxnet(case: str) -> None:
    spec = MULTI[case]
    inputs = {n: [MULTI_ARRAYS[f"{case}:in:{n}:{i}"] for i in range(2)] for n in spec["lists"]}
    nds = {n: [mx.nd.array(a, dtype=a.dtype) for a in group] for n, group in inputs.items()}
    for step in range(1, spec["steps"] + 1):
        given = dict(spec["kwargs"])
        if isinstance(given.get("rescale_grad"), list):
            given["rescale_grad"] = mx.nd.array(given["rescale_grad"])
        if "step_count" in given:
            given["step_count"] = [c + step - 1 for c in given["step_count"]]
        args = [[a.copy() for a in group] if n == "grads" else group for n, group in nds.items()]
        returned = getattr(mx.nd.contrib, spec["fn"])(*args, out=nds["weights"], **given)
        assert all(r is w for r, w in zip(returned, nds["weights"], strict=True))
        for n, group in nds.items():
            for i, a in enumerate(group if n != "grads" else []):
                expected = MULTI_ARRAYS[f"{case}:step{step}:{n}:{i}"]
                assert a.dtype == expected.dtype
                np.testing.assert_allclose(a.asnumpy(), expected, rtol=1e-4, atol=1e-6,
                                           err_msg=f"{case} step {step} {n} {i}")


def test_contrib_multi_update_without_out_returns_new_weights() -> None:
    """MXNet 1.9.1 fails here ("shape must have a valid ndim"); minimx returns the new
    weights and leaves the old ones, as its operator does."""
    weights = [mx.nd.ones((2,)), mx.nd.ones((3,))]
    moments = [[mx.nd.zeros((2,)), mx.nd.zeros((3,))] for _ in range(2)]
    new = mx.nd.contrib.multi_lamb_update(weights, [w.copy() for w in weights], *moments,
                                          step_count=[1, 1], lrs=[0.1, 0.1], wds=[0.0, 0.0])
    assert [w.asnumpy().tolist() for w in weights] == [[1, 1], [1, 1, 1]]
    np.testing.assert_allclose(new[0].asnumpy(), [0.9, 0.9], rtol=1e-5)


def test_adam_moments_take_one_minus_beta_in_float32_as_mxnet() -> None:
    """Three `adam_update` steps with beta1 0.8 and beta2 0.95 give MXNet 1.9.1's float32
    bits exactly (values from its venv): its kernel forms ``1 - beta`` from the float32
    parameter, an ulp from the double ``1 - beta`` rounded, which the moments compound."""
    w, g = mx.nd.array([1.0, -0.5]), mx.nd.array([0.3, 0.7])
    m, v = mx.nd.zeros(2), mx.nd.zeros(2)
    for _ in range(3):
        mx.nd.adam_update(w, g, m, v, out=w, lr=0.1, beta1=0.8, beta2=0.95)
    assert w.asnumpy().tolist() == [0.6660474538803101, -0.8339526057243347]
    assert m.asnumpy().tolist() == [0.14639998972415924, 0.3415999710559845]
    assert v.asnumpy().tolist() == [0.012836254201829433, 0.06988626718521118]
