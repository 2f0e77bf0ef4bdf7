"""DNNL subgraphs of a float32 model computing in bfloat16.

`optimize_for('DNNL', dtype='bfloat16')` (or MINIMX_DNNL_DTYPE=bfloat16 at
bind) marks each `_sg_dnnl` node; its plan then runs oneDNN's bf16 primitives
between float32 inputs and outputs. Against the numpy float32 path, a few
layers of bf16 keep every output within a few bf16 steps of the output's
scale (each layer rounds its result to 8 bits of mantissa once).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minimx as mx
from minimx import MinimxError, onednn
from minimx.backends.dnnl.state import DnnlState
from minimx.backends.dnnl.winograd import WINOGRAD
from minimx.base import BackendError
from minimx.graph import Graph

from .helpers import bind, dnnl_nodes, inner_ops, outputs, random_arrays

data = mx.sym.var("data")
SHAPE = {"data": (2, 16, 16, 16)}   # enough 4x4 tiles that float32 runs Winograd
# Relative to the output's scale: 2**-8 per bf16 rounding, over a few layers.
BF16_TOLERANCE = 2.0 ** -6


def net() -> mx.sym.Symbol:
    """conv-bn-relu, a residual sum, max and avg pooling, a concat, a BatchNorm on
    its own, fc-relu, fc and softmax: every kind of node a bf16 plan lowers."""
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=32, name="c1")
    x = mx.sym.relu(mx.sym.BatchNorm(x, fix_gamma=False, name="bn1"))
    side = mx.sym.Convolution(data, kernel=(1, 1), num_filter=32, name="side")
    x = mx.sym.relu(mx.sym.elemwise_add(
        mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=32, name="c2"), side))
    a = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    b = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg")
    x = mx.sym.BatchNorm(mx.sym.concat(a, b, dim=1), fix_gamma=False, name="bn2")
    x = mx.sym.FullyConnected(x, num_hidden=64, name="fc1")
    x = mx.sym.FullyConnected(mx.sym.relu(x), num_hidden=10, name="fc2")
    return mx.sym.softmax(x)


def scaled_arrays(sym, seed: int = 0) -> tuple[dict, dict]:
    """`random_arrays` with weights scaled by 1/sqrt(fan-in), so activations stay O(1)."""
    args, aux = random_arrays(sym, SHAPE, seed)
    for name, w in args.items():
        if name.endswith("weight"):
            args[name] = (w / np.sqrt(np.prod(w.shape[1:]))).astype(np.float32)
    return args, aux


def bf16_dnnl(sym, args: dict, aux: dict):
    return sym.optimize_for("DNNL", args=args, aux=aux, dtype="bfloat16")


def states(ex) -> list[DnnlState]:
    return [s for s in ex._runner._states.values() if isinstance(s, DnnlState)]


def assert_bf16_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == np.float32
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(actual, expected, rtol=0, atol=BF16_TOLERANCE * scale)


@pytest.fixture
def bf16_cpu() -> None:
    """Skip unless oneDNN runs bf16 in hardware here."""
    if not onednn.bf16_native():
        pytest.skip(f"oneDNN's ISA here ({onednn.isa()}) has no bfloat16")


def test_bf16_subgraph_runs_bf16_primitives_close_to_float32(bf16_cpu):
    sym = net()
    args, aux = scaled_arrays(sym)
    part = bf16_dnnl(sym, {k: mx.nd.array(v) for k, v in args.items()},
                     {k: mx.nd.array(v) for k, v in aux.items()})
    (node,) = dnnl_nodes(part)
    assert node.attrs["dtype"] == "bfloat16"
    ex = bind(part, args, aux)
    (got,) = [o.asnumpy() for o in ex.forward()]
    (want,) = outputs(sym, args, aux)
    assert_bf16_close(got, want)
    assert not np.array_equal(got, want)   # it did round somewhere
    steps = [op for state in states(ex) for op, _ in state.compiled.plan.steps]
    weighted = [op for op in steps if op.kind in ("conv", "inner_product")]
    assert len(weighted) == 5
    assert all(op.desc("src").dtype == op.desc("weights").dtype == onednn.BFLOAT16
               for op in weighted)
    kinds = {op.kind for op in steps if op.desc("dst").dtype == onednn.BFLOAT16}
    assert {"conv", "inner_product", "pooling", "concat", "batch_norm"} <= kinds
    # No Winograd in bf16, where float32 would run both 3x3 convolutions so.
    assert [s.kernels for s in states(ex)] == [{WINOGRAD: []}]
    fp32 = bind(sym.optimize_for("DNNL", args={k: mx.nd.array(v) for k, v in args.items()}),
                args, aux)
    fp32.forward()
    assert [len(s.kernels[WINOGRAD]) for s in states(fp32)] == [2]


def test_setting_makes_bind_partition_in_bf16(bf16_cpu, monkeypatch):
    sym = net()
    args, aux = scaled_arrays(sym)
    (want,) = outputs(sym, args, aux)
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    monkeypatch.setenv("MINIMX_DNNL_DTYPE", "bfloat16")
    ex = bind(sym, args, aux)
    (got,) = [o.asnumpy() for o in ex.forward()]
    assert "dtype=bfloat16" in ex.debug_str()
    assert_bf16_close(got, want)
    # a reshape partitions as its bind did, whatever the environment says since
    monkeypatch.delenv("MINIMX_SUBGRAPH_BACKEND")
    monkeypatch.setenv("MINIMX_DNNL_DTYPE", "float32")
    shape = ex.arg_dict["data"].shape
    smaller = ex.reshape(data=(1, *shape[1:]))
    assert "dtype=bfloat16" in smaller.debug_str()
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "DNNL")
    ex = bind(sym, args, aux)
    assert "dtype=bfloat16" not in ex.debug_str()
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_weights_changed_after_bind_are_converted_again(bf16_cpu):
    sym = net()
    args, aux = scaled_arrays(sym)
    part = bf16_dnnl(sym, {"data": mx.nd.array(args["data"])}, None)
    ex = bind(part, args, aux)
    ex.forward()
    new_args, _ = scaled_arrays(sym, seed=1)
    ex.arg_dict["fc1_weight"][:] = new_args["fc1_weight"]
    (got,) = [o.asnumpy() for o in ex.forward()]
    (want,) = outputs(sym, {**args, "fc1_weight": new_args["fc1_weight"]}, aux)
    assert_bf16_close(got, want)


def test_without_bf16_instructions_runs_float32_with_one_warning(monkeypatch):
    monkeypatch.setattr(onednn, "isa", lambda: "avx512_core")
    sym = net()
    args, aux = scaled_arrays(sym)
    with pytest.warns(UserWarning, match=r"bfloat16 .*avx512_core.* float32") as caught:
        part = bf16_dnnl(sym, {"data": mx.nd.array(args["data"])}, None)
    assert len(caught) == 1
    (node,) = dnnl_nodes(part)
    assert "dtype" not in node.attrs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (got,) = outputs(part, args, aux)
    np.testing.assert_allclose(got, outputs(sym, args, aux)[0], rtol=1e-4, atol=1e-5)


def test_unknown_dtypes_are_refused(monkeypatch):
    sym = net()
    with pytest.raises(BackendError, match="dtype 'float16' is not one of float32, bfloat16"):
        sym.optimize_for("DNNL", dtype="float16")
    monkeypatch.setenv("MINIMX_DNNL_DTYPE", "bf16")
    with pytest.raises(MinimxError, match="MINIMX_DNNL_DTYPE='bf16'"):
        sym.optimize_for("DNNL")


def amp_net() -> mx.sym.Symbol:
    """A graph as AMP converts one: the data and the convolution's parameters cast
    to bf16 (amp_cast), BatchNorm's parameters float32, a float32 sum whose
    inputs amp_multicast brings to the widest type, the fully connected layer's
    parameters given in bf16, the logits cast back to float32 for the softmax."""
    x = mx.sym.amp_cast(data, dtype="bfloat16")
    x = mx.sym.Convolution(x, mx.sym.amp_cast(mx.sym.var("c1_weight"), dtype="bfloat16"),
                           mx.sym.amp_cast(mx.sym.var("c1_bias"), dtype="bfloat16"),
                           kernel=(3, 3), pad=(1, 1), num_filter=32, name="c1")
    x = mx.sym.relu(mx.sym.BatchNorm(x, fix_gamma=False, name="bn1"))
    wide = mx.sym.amp_multicast(x, mx.sym.amp_cast(x, dtype="float32"), num_outputs=2)
    x = mx.sym.Pooling(mx.sym.elemwise_add(wide[0], wide[1]), kernel=(2, 2), stride=(2, 2),
                       pool_type="max")
    x = mx.sym.FullyConnected(mx.sym.amp_cast(x, dtype="bfloat16"), num_hidden=10, name="fc")
    return mx.sym.softmax(mx.sym.amp_cast(x, dtype="float32"))


def amp_arrays(sym) -> tuple[dict, dict]:
    """`scaled_arrays` as NDArrays, the fully connected layer's in bfloat16."""
    args, aux = scaled_arrays(sym)
    return ({k: mx.nd.array(v, dtype="bfloat16" if k.startswith("fc") else "float32")
             for k, v in args.items()}, {k: mx.nd.array(v) for k, v in aux.items()})


def test_amp_graph_runs_its_bf16_nodes_in_one_subgraph():
    """Whatever the dtype option: the casts go inside (those of weights into the
    weight cache), the bf16 nodes run bf16 primitives, the output stays float32,
    close to the numpy path's (which rounds to bf16 after each operator)."""
    sym = amp_net()
    args, aux = amp_arrays(sym)
    part = sym.optimize_for("DNNL", args=args, aux=aux)
    (node,) = dnnl_nodes(part)
    assert [n.op for n in Graph(part.outputs).nodes if not n.is_variable] == ["_sg_dnnl"]
    assert {"amp_cast", "amp_multicast"} <= set(inner_ops(node))
    want = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null").forward()[0].asnumpy()
    ex = part.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
    got = ex.forward()[0].asnumpy()
    assert_bf16_close(got, want)
    (state,) = states(ex)
    constants = [s.desc.dtype for s in state.compiled.plan.slots if s.kind == "constant"]
    assert constants.count(onednn.BFLOAT16) == 2   # both layers' weights
    # The convolution's float32 weights are cast by the weight cache, again when they move.
    ex.arg_dict["c1_weight"][:] = -ex.arg_dict["c1_weight"].asnumpy()
    args["c1_weight"] = ex.arg_dict["c1_weight"]
    want = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null").forward()[0].asnumpy()
    assert_bf16_close(ex.forward()[0].asnumpy(), want)


def test_a_saved_bf16_partition_loads_and_runs_in_bf16(bf16_cpu):
    sym = net()
    args, aux = scaled_arrays(sym)
    part = bf16_dnnl(sym, {"data": mx.nd.array(args["data"])}, None)
    loaded = mx.sym.load_json(part.tojson())
    (node,) = dnnl_nodes(loaded)
    assert node.attrs["dtype"] == "bfloat16"
    np.testing.assert_array_equal(outputs(loaded, args, aux)[0], outputs(part, args, aux)[0])


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_an_rnn_runs_in_bf16(bf16_cpu, mode):
    # bf16 data, weights and hidden states (the bias and the LSTM's cell states
    # float32): within bf16's rounding of the float32 result, and not that result.
    ins = [mx.sym.var(n) for n in ("data", "params", "state", "cell")[:4 if mode == "lstm" else 3]]
    rnn = mx.sym.RNN(*ins, state_size=8, num_layers=2, mode=mode, bidirectional=True,
                     state_outputs=True)
    sym = mx.sym.Group([rnn[i] for i in range(len(rnn.list_outputs()))])
    shapes = {"data": (5, 3, 6)}
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    rng = np.random.default_rng(0)
    args = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32)
            for n, s in zip(sym.list_arguments(), arg_shapes, strict=True)}
    want = outputs(sym, args, {})
    got = outputs(bf16_dnnl(sym, args, {}), args, {})
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert_bf16_close(g, w)
    # (float32 cells would agree to float32's rounding, some 1e-7)
    assert np.abs(got[0] - want[0]).max() > 1e-4 * np.abs(want[0]).max()


@pytest.mark.parametrize("num_group", [1, 2])
def test_a_tensor_added_to_itself_is_doubled(bf16_cpu, num_group):
    # oneDNN's binary may write over its src but not over src1: add(y, y) wrote
    # its sum over y while still reading y.
    data = mx.sym.var("data")
    y = mx.sym.Deconvolution(data, kernel=(2, 2), num_filter=8, num_group=num_group,
                             no_bias=True, name="d")
    sym = mx.sym.elemwise_add(y, y)
    args, aux = random_arrays(sym, {"data": (1, 8, 4, 4)}, seed=3)
    expected = outputs(sym, args, aux)[0]
    part = mx.subgraph.partition(sym, "DNNL", shapes={"data": (1, 8, 4, 4)}, dtype="bfloat16")
    assert_bf16_close(outputs(part, args, aux)[0], expected)


@pytest.mark.parametrize("op", ["elemwise_add", "elemwise_mul", "maximum"])
@pytest.mark.parametrize("size", [4, 8])
def test_binary_operators_of_four_channel_blocks(bf16_cpu, op, size):
    # A grouped deconvolution of 4 channels a group writes them in blocks of 4
    # (aBcd4b), where oneDNN 3.2's bf16 binary kernel gave wrong values at
    # 64-byte steps (avx512_core_fp16): minimx makes them plain first.
    data = mx.sym.var("data")
    a, b = (mx.sym.Deconvolution(data, kernel=(2, 2), num_filter=8, num_group=2,
                                 no_bias=True, name=name) for name in "ab")
    sym = getattr(mx.sym, op)(a, b)
    shape = (1, 8, size, size)
    args, aux = random_arrays(sym, {"data": shape}, seed=4)
    expected = outputs(sym, args, aux)[0]
    part = mx.subgraph.partition(sym, "DNNL", shapes={"data": shape}, dtype="bfloat16")
    assert_bf16_close(outputs(part, args, aux)[0], expected)
