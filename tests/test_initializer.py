"""`mx.init`: MXNet's name rules and its statistics.

MXNet's random generator cannot be reproduced, so the oracle fixtures
(tests/fixtures/training, group training) give, per case of INIT_CASES, the
statistics of MXNet's values under a seed, and the values themselves where
they are not random; minimx must match the values exactly and the statistics
within sampling error."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minimx as mx
from minimx.base import MinimxError, ShapeError

RECORD = json.loads((Path(__file__).parent / "fixtures" / "training" / "training.json")
                    .read_text())["init"]


@pytest.mark.parametrize("case", sorted(RECORD))
def test_statistics_match_mxnets(case: str) -> None:
    spec = RECORD[case]
    mx.random.seed(7)
    arr = mx.nd.zeros(tuple(spec["shape"]))
    eval(spec["init"])(mx.init.InitDesc(spec["param"]), arr)  # noqa: S307  (the fixture's table)
    values = arr.asnumpy().astype(np.float64)
    if spec["values"] is not None:
        np.testing.assert_allclose(values.ravel(), spec["values"], rtol=1e-6)
        return
    n = values.size
    # Sampling error: the mean within 5 standard errors, the deviation within 10%.
    assert abs(values.mean() - spec["mean"]) < 5 * spec["std"] / math.sqrt(n)
    assert values.std() == pytest.approx(spec["std"], rel=0.1)
    if "Uniform" in spec["init"] or ("Xavier" in spec["init"] and "gaussian" not in spec["init"]):
        bound = max(-spec["min"], spec["max"])   # uniform: the extremes reach the bound
        assert values.min() >= -bound * 1.01 and values.max() <= bound * 1.01
        assert values.min() < -bound * 0.95 and values.max() > bound * 0.95


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=2, max_size=4),
       factor=st.sampled_from(["avg", "in", "out"]), magnitude=st.floats(0.5, 4))
def test_xavier_uniform_bound(shape: list[int], factor: str, magnitude: float) -> None:
    arr = mx.nd.zeros(tuple(shape))
    mx.init.Xavier(factor_type=factor, magnitude=magnitude)(mx.init.InitDesc("w_weight"), arr)
    receptive = float(np.prod(shape[2:]))
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    factor_value = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor]
    assert np.abs(arr.asnumpy()).max() <= math.sqrt(magnitude / factor_value) * (1 + 1e-6)


@pytest.mark.parametrize("name, value", [("fc_bias", 0.0), ("bn_gamma", 1.0), ("bn_beta", 0.0),
                                         ("bn_moving_mean", 0.0), ("bn_moving_var", 1.0),
                                         ("bn_running_var", 1.0), ("q_min", 0.0),
                                         ("q_max", 1.0)])
def test_name_rules(name: str, value: float) -> None:
    arr = mx.nd.full((3,), 7.0)
    mx.init.Uniform()(mx.init.InitDesc(name), arr)
    assert arr.asnumpy().tolist() == [value] * 3


def test_declared_init_attribute_wins() -> None:
    w = mx.sym.Variable("fc_weight", init=mx.init.Constant(0.5))
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), weight=w, num_hidden=2, name="fc")
    attrs = net.attr_dict()["fc_weight"]
    assert json.loads(attrs["__init__"]) == ["constant", {"value": 0.5}]
    arr = mx.nd.zeros((2, 3))
    mx.init.Xavier()(mx.init.InitDesc("fc_weight", attrs), arr)
    assert (arr.asnumpy() == 0.5).all()


def test_create_dumps_and_equality() -> None:
    init = mx.init.Xavier("gaussian", "in", 2)
    assert mx.init.create(init.dumps()) == init
    assert mx.init.create("zeros") == mx.init.Zero()
    assert json.loads(mx.init.MSRAPrelu().dumps()) == ["msraprelu",
                                                       {"factor_type": "avg", "slope": 0.25}]


def test_mixed_and_load(tmp_path: Path) -> None:
    # The first matching pattern's initializer, which still applies the name rules.
    mixed = mx.init.Mixed(["fc1", ".*"], [mx.init.One(), mx.init.Constant(2.0)])
    arrays = {name: mx.nd.full((2, 2), 9.0) for name in ("fc1_weight", "fc1_bias", "fc2_weight")}
    for name, arr in arrays.items():
        mixed(mx.init.InitDesc(name), arr)
    assert {n: a.asnumpy()[0, 0] for n, a in arrays.items()} == {
        "fc1_weight": 1.0, "fc1_bias": 0.0, "fc2_weight": 2.0}
    mx.nd.save(str(tmp_path / "p.params"), {"arg:fc_weight": mx.nd.full((2, 2), 3.0)})
    load = mx.init.Load(str(tmp_path / "p.params"), default_init=mx.init.One())
    weight, other = mx.nd.zeros((2, 2)), mx.nd.zeros((2,))
    load("fc_weight", weight)
    load(mx.init.InitDesc("fc2_weight"), other)
    assert weight.asnumpy().tolist() == [[3, 3], [3, 3]] and other.asnumpy().tolist() == [1, 1]


def test_refusals() -> None:
    with pytest.raises(MinimxError, match="unknown initialization pattern for 'data'"):
        mx.init.Uniform()(mx.init.InitDesc("data"), mx.nd.zeros((2,)))
    with pytest.raises(ShapeError, match="cannot be applied to vector fc_weight"):
        mx.init.Xavier()(mx.init.InitDesc("fc_weight"), mx.nd.zeros((3,)))
    with pytest.raises(MinimxError, match="did not match any pattern"):
        mx.init.Mixed(["bias"], [mx.init.Zero()])("fc_weight", mx.nd.zeros((2,)))
    with pytest.raises(MinimxError, match="unknown initializer 'nosuch'"):
        mx.init.create("nosuch")
    with pytest.warns(DeprecationWarning, match="InitDesc"):
        mx.init.Zero()("fc_weight", mx.nd.ones((2,)))


@pytest.mark.parametrize("shape", [(6, 10), (10, 6), (8, 2, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal_times_scale(shape: tuple[int, ...]) -> None:
    arr = mx.nd.zeros(shape)
    mx.init.Orthogonal(scale=2.0, rand_type="normal")(mx.init.InitDesc("w_weight"), arr)
    w = arr.asnumpy().reshape(shape[0], -1).astype(np.float64)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-5)
    with pytest.raises(MinimxError, match="rand_type='sobol' is not 'uniform' or 'normal'"):
        mx.init.Orthogonal(rand_type="sobol")


# mx.init.FusedRNN against MXNet 1.9.1 (tests/fixtures/rnn_cells, FUSED_INIT_CASES in
# tools/mxnet_rnn_fixtures.py), with the fixture's deterministic initializer.
FUSED = json.loads((Path(__file__).parent / "fixtures" / "rnn_cells" / "rnn_cells.json")
                   .read_text())["fused_init"]
FUSED_VALUES = np.load(Path(__file__).parent / "fixtures" / "rnn_cells" / "rnn_cells.npz")


@mx.init.register
class Ramp(mx.init.Initializer):
    """The fixture's: a ramp over each array from an offset its name gives."""
    def _init_weight(self, name: str, arr: mx.nd.NDArray) -> None:
        arr[:] = (np.arange(arr.size).reshape(arr.shape) + sum(map(ord, name)) % 100) * 0.01
    _init_bias = _init_weight


@pytest.mark.parametrize("case", sorted(FUSED))
def test_fused_rnn_fills_each_piece_as_mxnet(case: str) -> None:
    """Each unpacked weight and bias from the inner initializer (or the global one,
    through the cell's __init__ attribute), an LSTM's forget-gate biases forget_bias."""
    spec = FUSED[case]
    cell = mx.rnn.FusedRNNCell(prefix="rnn_", **spec["cell"])
    outputs, _ = cell.unroll(2, inputs=mx.sym.Variable("data"), layout="TNC")
    shapes = dict(zip(outputs.list_arguments(),
                      outputs.infer_shape(data=(2, 1, spec["width"]))[0], strict=True))
    assert list(shapes["rnn_parameters"]) == spec["shape"]
    fallback = eval(spec["global"])  # noqa: S307  (the fixture's table)
    if spec["init"] is None:
        attrs = outputs.attr_dict()["rnn_parameters"]
        desc = mx.init.InitDesc("rnn_parameters", attrs)
    else:
        fused = mx.init.FusedRNN(eval(spec["init"]), **spec["cell"])  # noqa: S307
        # MXNet 1.9.1 reaches an inner initializer only this way (its JSON does not load)
        desc = mx.init.InitDesc("rnn_parameters", {"__init__": fused.dumps()})
    arr = mx.nd.zeros(tuple(spec["shape"]))
    fallback(desc, arr)
    np.testing.assert_allclose(arr.asnumpy(), FUSED_VALUES[f"fused_init:{case}"], rtol=1e-6)


def test_fused_rnn_is_an_initializer_by_mxnets_name_and_json() -> None:
    fused = mx.init.FusedRNN(mx.init.One(), 2, 1, "lstm", forget_bias=0.5)
    assert isinstance(fused, mx.init.Initializer) and mx.init.FusedRNN is mx.rnn.FusedRNN
    assert json.loads(fused.dumps()) == ["fusedrnn", {
        "init": '["one", {}]', "num_hidden": 2, "num_layers": 1, "mode": "lstm",
        "bidirectional": False, "forget_bias": 0.5}]
    assert mx.init.create(fused.dumps()) == fused   # MXNet 1.9.1: KeyError 'one'


def test_quantized_graph_parameters_by_their_names_as_mxnet():
    # MXNet's rule for running a quantized graph on dummy data: one random int8 weight
    # value everywhere, zero biases.
    weight, bias = mx.nd.zeros((4, 5), dtype="int8"), mx.nd.ones((4,), dtype="int32")
    init = mx.init.Xavier(magnitude=2.0)
    init(mx.init.InitDesc("fc_weight_quantize"), weight)
    init(mx.init.InitDesc("fc_bias_quantize"), bias)
    values = weight.asnumpy()
    assert weight.dtype == np.int8 and (values == values.flat[0]).all()
    assert -127 <= values.flat[0] < 127 and not bias.asnumpy().any()
