"""`_foreach`, `_while_loop` and `_cond` against MXNet 1.9.1 (tests/fixtures/control_flow,
written by tools/mxnet_control_flow_fixtures.py): MXNet's JSON loads and gives MXNet's
outputs and gradients, `mx.sym.contrib` builds MXNet's JSON, `mx.nd.contrib` gives
MXNet's values; bad bodies raise errors naming the node."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError, OperatorError, ShapeError
from minimx.symbol import control_flow
from tests.onednn_required import require_onednn

FIXTURES = Path(__file__).parents[1] / "fixtures" / "control_flow"
CASES = {c["case"]: c for c in json.loads((FIXTURES / "cases.json").read_text())}
ARRAYS = np.load(FIXTURES / "arrays.npz")
RUNS = [(case, k) for case, c in CASES.items() for k in range(c["input_sets"])]


def _program(case: str):
    scope: dict = {}
    exec(CASES[case]["source"], scope)  # the fixture's program, the source MXNet ran
    return scope["program"]


def _flat(outs) -> list:
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def _arrays(case: str, k: int, kind: str) -> dict[str, np.ndarray]:
    prefix = f"{case}:{k}:{kind}:"
    return {key[len(prefix):]: ARRAYS[key] for key in ARRAYS.files if key.startswith(prefix)}


def _rows(case: str, k: int, j: int, n_outputs: int) -> slice:
    """The rows MXNet sets: a while_loop's stacked outputs stop at its last step."""
    rows = CASES[case]["rows"][k]
    return slice(rows) if rows is not None and j < n_outputs - 2 else slice(None)


def _bind_and_run(sym: mx.sym.Symbol, case: str, k: int) -> tuple[list, dict]:
    inputs = _arrays(case, k, "in")
    ex = sym.bind(mx.cpu(), {n: mx.nd.array(a) for n, a in inputs.items()},
                  args_grad={n: mx.nd.zeros(a.shape) for n, a in inputs.items()})
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    heads = _arrays(case, k, "head")
    ex.backward([mx.nd.array(heads[str(j)]) for j in range(len(outs))])
    return outs, {n: g.asnumpy() for n, g in ex.grad_dict.items()}


def _check(case: str, k: int, outs: list, grads: dict | None, kind: str = "out") -> None:
    want = _arrays(case, k, kind)
    assert len(outs) == len(want)
    for j, got in enumerate(outs):
        np.testing.assert_allclose(got[_rows(case, k, j, len(outs))], want[str(j)],
                                   rtol=1e-5, atol=1e-6, err_msg=f"{case} output {j}")
    for n, g in (grads or {}).items():
        np.testing.assert_allclose(g, _arrays(case, k, "grad")[n], rtol=1e-5, atol=1e-5,
                                   err_msg=f"{case} gradient of {n}")


@pytest.mark.parametrize("case,k", RUNS)
def test_mxnet_json_gives_mxnet_outputs_and_gradients(case: str, k: int) -> None:
    outs, grads = _bind_and_run(mx.sym.load_json(CASES[case]["json"]), case, k)
    _check(case, k, outs, grads)


def test_while_loop_pads_past_the_last_step_with_zeros() -> None:
    outs, _ = _bind_and_run(mx.sym.load_json(CASES["while_early_exit"]["json"]),
                            "while_early_exit", 0)
    assert outs[0].shape == (6, 3) and not outs[0][3:].any() and not outs[1][3:].any()


@pytest.mark.parametrize("case", CASES)
def test_builders_write_mxnet_json(case: str) -> None:
    control_flow.SUBGRAPH_NAMES.clear()  # as the fixture script clears MXNet's count
    with mx.name.NameManager():
        outs = _program(case)(mx.sym, {n: mx.sym.var(n) for n in CASES[case]["shapes"]})
    sym = mx.sym.Group(_flat(outs))
    assert sym.tojson() == CASES[case]["json"]
    assert mx.sym.load_json(sym.tojson()).tojson() == CASES[case]["json"]


@pytest.mark.parametrize("case,k", RUNS)
def test_nd_forms_give_mxnet_values(case: str, k: int) -> None:
    inputs = {n: mx.nd.array(a) for n, a in _arrays(case, k, "in").items()}
    _check(case, k, [o.asnumpy() for o in _flat(_program(case)(mx.nd, inputs))], None, "nd")


@pytest.mark.parametrize("case,k", RUNS)
def test_dnnl_backend_gives_the_same_outputs(case: str, k: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    require_onednn()
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")  # partitions inference binds only
    sym = mx.sym.load_json(CASES[case]["json"])
    ex = sym.bind(mx.cpu(), {n: mx.nd.array(a) for n, a in _arrays(case, k, "in").items()})
    ops = {n.op for n in sym.get_backend_symbol("DNNL")._topo()}
    assert ops & {"_foreach", "_while_loop", "_cond"}
    _check(case, k, [o.asnumpy() for o in ex.forward()], None)


def test_shapes_and_dtypes_are_inferred_through_the_bodies() -> None:
    sym = mx.sym.load_json(CASES["foreach_rnn"]["json"])
    # h and c (the states) are found from the body: dot(h, u) is added to dot(x, w).
    args, outs, _ = sym.infer_shape(data=(4, 2, 3), w=(3, 5), u=(5, 5), b=(5,))
    assert outs == [(4, 2, 5), (4, 2), (2, 5), (2, 5)]
    assert dict(zip(sym.list_arguments(), args, strict=True)) == {
        "data": (4, 2, 3), "h": (2, 5), "c": (2, 5), "w": (3, 5), "u": (5, 5), "b": (5,)}
    _, out_types, _ = sym.infer_type(data=np.float64)
    assert out_types == [np.float64] * 4
    wl = mx.sym.load_json(CASES["while_early_exit"]["json"])
    assert wl.infer_shape(i=(1,), s=(3,))[1] == [(6, 3), (6, 1), (1,), (3,)]


# -- bad input ----------------------------------------------------------------------------
def test_mismatched_state_shapes_name_the_node() -> None:
    x, h = mx.sym.var("x"), mx.sym.var("h")
    outs, states = mx.sym.contrib.foreach(lambda d, s: (d, [mx.sym.concat(s[0], s[0], dim=0)]),
                                          x, [h], name="grow")
    with pytest.raises(ShapeError, match=r"_foreach\d+ \(_foreach\).*loop state 0"):
        mx.sym.Group([outs, states[0]]).infer_shape(x=(3, 2), h=(2,))


def test_non_scalar_condition_names_the_node() -> None:
    a = mx.sym.var("a")
    out = mx.sym.contrib.cond(a > 0, lambda: a + 1, lambda: a - 1)
    with pytest.raises(ShapeError, match=r"_cond\d+ \(_cond\): the condition must be a scalar"):
        out.infer_shape(a=(2, 3))
    with pytest.raises(MinimxError, match="Cannot convert pred"):
        mx.nd.contrib.cond(mx.nd.ones(3), lambda: 1, lambda: 0)


def test_body_with_the_wrong_number_of_outputs_names_the_node() -> None:
    doc = json.loads(CASES["cond_scalar"]["json"])
    cond = next(n for n in doc["nodes"] if n["op"] == "_cond")
    cond["subgraphs"][2]["heads"].pop()  # the else-branch now has one output of two
    with pytest.raises(OperatorError, match=r"_cond0 \(_cond\): the else-branch must have 2 "
                                            r"outputs, its subgraph has 1"):
        mx.sym.load_json(json.dumps(doc))
    doc = json.loads(CASES["foreach_rnn"]["json"])
    node = next(n for n in doc["nodes"] if n["op"] == "_foreach")
    node["attrs"]["num_out_data"] = "3"
    with pytest.raises(OperatorError, match=r"_foreach0 \(_foreach\): the body returns 1 "
                                            r"states, but takes 2"):
        mx.sym.load_json(json.dumps(doc))


def test_builders_refuse_bad_bodies() -> None:
    i = mx.sym.var("i")
    with pytest.raises(MinimxError, match="The number of loop_vars should be consistent"):
        mx.sym.contrib.while_loop(lambda i: i < 3, lambda i: ([], [i, i]), [i],
                                  max_iterations=3)
    with pytest.raises(MinimxError, match="max_iterations should be specified"):
        mx.sym.contrib.while_loop(lambda i: i < 3, lambda i: ([], [i + 1]), [i])
    with pytest.raises(MinimxError, match="Number of outputs differs"):
        mx.sym.contrib.cond(i < 1, lambda: [i, i], lambda: i)


def test_a_symbolic_loop_over_one_axis_steps_in_one_element_arrays() -> None:
    # MXNet 1.9.1: each step of 1-D data has shape (1,), the stacked outputs (3, 1).
    d, s = mx.sym.var("d"), mx.sym.var("s")
    out, states = mx.sym.contrib.foreach(lambda x, st: ([x * st[0]], [st[0] * 2]), d, [s])
    group = mx.sym.Group(out + states)
    assert group.infer_shape(d=(3,), s=(1,)) == ([(3,), (1,)], [(3, 1), (1,)], [])
    ex = group.bind(mx.cpu(), {"d": mx.nd.array([0, 1, 2]), "s": mx.nd.array([2])},
                    args_grad={"d": mx.nd.zeros(3), "s": mx.nd.zeros(1)})
    assert [o.asnumpy().ravel().tolist() for o in ex.forward(is_train=True)] == \
        [[0, 4, 16], [16]]
    ex.backward([mx.nd.ones((3, 1)), mx.nd.ones((1,))])
    assert ex.grad_dict["d"].asnumpy().tolist() == [2, 4, 8]   # MXNet's gradients
    assert ex.grad_dict["s"].asnumpy().tolist() == [18]
