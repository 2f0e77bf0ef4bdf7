"""Python custom operators (`mx.operator`, the `Custom` operator) against MXNet 1.9.1.

Fixture group custom_op (tools/mxnet_fixtures.py): a net of FullyConnected, a
scaled relu and a softmax loss, the last two custom operators defined the same
way here as in the script; MXNet's output and gradients of one training pass,
its symbol JSON, and one `mx.nd.Custom` call.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from tests.custom_ops import build_customnet

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "custom_op"


class Failing(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise ValueError("boom")


@mx.operator.register("test_failing")
class FailingProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Failing()


@pytest.fixture(scope="module")
def recorded() -> dict[str, np.ndarray]:
    with np.load(FIXTURES / "customnet.npz") as npz:
        return {k: npz[k] for k in npz.files}


def _train_pass(sym: mx.sym.Symbol, recorded: dict) -> mx.executor.Executor:
    args = {n[4:]: a for n, a in recorded.items() if n.startswith("arg:")}
    ex = sym.bind(mx.cpu(), {n: mx.nd.array(a) for n, a in args.items()},
                  args_grad={n: mx.nd.zeros(a.shape) for n, a in args.items()})
    ex.forward(is_train=True)
    ex.backward()   # the softmax loss does not need the top gradient: none given
    return ex


@pytest.mark.parametrize("engine_type", ["ThreadedEngine", "NaiveEngine"])
def test_custom_net_matches_mxnet(recorded, engine_type):
    previous = type(mx.engine.get_engine()).__name__
    mx.engine.set_engine_type(engine_type)
    try:
        ex = _train_pass(build_customnet(), recorded)
        np.testing.assert_allclose(ex.outputs[0].asnumpy(), recorded["output"], rtol=1e-5,
                                   atol=1e-6)
        for name, grad in ex.grad_dict.items():
            np.testing.assert_allclose(grad.asnumpy(), recorded[f"grad:{name}"], rtol=1e-5,
                                       atol=1e-6, err_msg=name)
    finally:
        mx.engine.set_engine_type(previous)


def test_custom_label_is_created_and_inferred_as_in_mxnet():
    net = build_customnet()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight",
                                    "fc2_bias", "softmax_label"]
    arg_shapes, out_shapes, _ = net.infer_shape(data=(4, 6))
    assert arg_shapes[-1] == (4,) and out_shapes == [(4, 3)]


def test_mxnet_json_loads_runs_and_round_trips(recorded):
    text = (FIXTURES / "customnet-symbol.json").read_text()
    loaded = mx.sym.load_json(text)
    assert loaded.list_arguments() == build_customnet().list_arguments()
    ex = _train_pass(loaded, recorded)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), recorded["output"], rtol=1e-5, atol=1e-6)

    def custom_nodes(graph: dict) -> list:
        return [(n["name"], n["attrs"]) for n in graph["nodes"] if n["op"] == "Custom"]

    again = json.loads(mx.sym.load_json(loaded.tojson()).tojson())
    assert custom_nodes(again) == custom_nodes(json.loads(text)) == [
        ("srelu", {"op_type": "fixture_scaled_relu", "scale": "1.5"}),
        ("softmax", {"op_type": "fixture_softmax"})]


def test_nd_custom_matches_mxnet(recorded):
    out = mx.nd.Custom(mx.nd.array(recorded["nd:in"]), op_type="fixture_scaled_relu", scale=0.5)
    np.testing.assert_allclose(out.asnumpy(), recorded["nd:out"], rtol=1e-6)


def test_module_fit_trains_through_custom_operators():
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (60, 6)).astype(np.float32)
    y = (x[:, 0] > x[:, 1]).astype(np.float32) + (x[:, 2] > 0.5)
    it = mx.io.NDArrayIter(x, y, batch_size=20)
    mod = mx.mod.Module(build_customnet(), label_names=("softmax_label",))
    mx.random.seed(0)
    mod.fit(it, num_epoch=40, optimizer="sgd", optimizer_params={"learning_rate": 2.0},
            initializer=mx.init.Xavier(), eval_metric="acc")
    assert mod.score(it, "acc")[0][1] > 0.9


def test_an_error_in_user_code_names_the_node_and_leaves_the_engine_usable():
    ex = mx.sym.Custom(mx.sym.var("x"), op_type="test_failing", name="bad").simple_bind(
        mx.cpu(), x=(2,))
    ex.forward(x=np.ones(2, np.float32))
    with pytest.raises(mx.MinimxError, match=r"bad \(Custom\).*test_failing.*forward raised "
                                             r"ValueError: boom"):
        ex.outputs[0].asnumpy()
    assert (mx.nd.ones((2,)) * 3).asnumpy().tolist() == [3.0, 3.0]


def test_an_unknown_op_type_is_refused_naming_the_node():
    with pytest.raises(mx.OperatorError, match=r"c \(Custom\).*'nope'.*fixture_softmax"):
        mx.sym.Custom(mx.sym.var("x"), op_type="nope", name="c")


def test_dnnl_leaves_custom_nodes_out_and_says_why():
    fc1 = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc1")
    act = mx.sym.Custom(fc1, op_type="fixture_scaled_relu", name="srelu")
    net = mx.sym.FullyConnected(act, num_hidden=2, name="fc2")
    report = str(mx.subgraph.partition_summary(net, "DNNL", shapes={"data": (2, 3)}))
    assert "Custom is not in the DNNL operator table" in report and "srelu" in report
    partitioned = mx.subgraph.partition(net, "DNNL")
    assert [n["op"] for n in json.loads(partitioned.tojson())["nodes"]
            if n["op"] != "null"] == ["_sg_dnnl", "Custom", "_sg_dnnl"]


class _Recording(mx.operator.CustomOp):
    def __init__(self, seen: list) -> None:
        super().__init__()
        self.seen = seen

    def forward(self, is_train, req, in_data, out_data, aux):
        self.seen.append(("forward", is_train))
        self.assign(out_data[0], req[0], in_data[0] + aux[0])


@mx.operator.register("test_create_arguments")
class _RecordingProp(mx.operator.CustomOpProp):
    seen: list = []

    def list_auxiliary_states(self):
        return ["state"]

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        self.seen.append(("create", in_shapes, in_dtypes))
        return _Recording(self.seen)


def test_create_operator_gets_every_input_and_type_flags_as_in_mxnet():
    # MXNet 1.9.1: shapes and dtypes of the arguments and auxiliary states, the
    # dtypes as type flags (2: float16); forward's is_train an int.
    seen = _RecordingProp.seen
    seen.clear()
    sym = mx.sym.Custom(mx.sym.Variable("x"), op_type="test_create_arguments", name="c")
    ex = sym.simple_bind(mx.cpu(), type_dict={"x": "float16"}, x=(2, 3))
    ex.forward(is_train=True)
    mx.nd.waitall()
    mx.nd.Custom(mx.nd.ones((2,), dtype="int32"), mx.nd.ones((2,), dtype="int32"),
                 op_type="test_create_arguments").wait_to_read()
    assert seen == [("create", [[2, 3], [2, 3]], [2, 2]), ("forward", 1),
                    ("create", [[2], [2]], [4, 4]), ("forward", 0)]
    assert [type(is_train) for what, is_train, *_ in seen if what == "forward"] == [int, int]
