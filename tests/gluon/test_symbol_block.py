"""`mx.gluon.SymbolBlock` against MXNet 1.9.1's on exported models (tests/fixtures/gluon,
written by tools/mxnet_gluon_fixtures.py).

Outputs of two nets (one input, one output; two of each) for two batch sizes, with
and without the DNNL backend, after writes to parameters and in other dtypes; the
parameters as MXNet lists them; files (save_parameters, export, and MXNet's run of
minimx's export); MXNet's messages for bad files and inputs. fp32 tolerance:
rtol 1e-5, atol 1e-6 (the DNNL path: rtol 1e-4, atol 1e-5).
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import BFLOAT16, MinimxError
from minimx.gluon import (
    Constant,
    DeferredInitializationError,
    InputError,
    Parameter,
    ParameterDict,
    ParameterError,
    SymbolBlock,
)
from tests.onednn_required import require_onednn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gluon"
RECORD = json.loads((FIXTURES / "gluon.json").read_text())
EXPORT_RECORD = json.loads((FIXTURES / "minimx_export.json").read_text())
ARRAYS = np.load(FIXTURES / "gluon.npz")
NETS = RECORD["nets"]
SMALL, LARGE = RECORD["batches"]
BUILTIN = {"AssertionError": AssertionError, "ValueError": ValueError,
           "RuntimeError": RuntimeError}


@pytest.fixture(autouse=True)
def _in_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    # Files are named without a directory, as the tool named them: messages match MXNet's.
    monkeypatch.chdir(FIXTURES)


def _imports(name: str, params: str | None = "default", **kwargs) -> SymbolBlock:
    params = f"{name}-0000.params" if params == "default" else params
    return SymbolBlock.imports(f"{name}-symbol.json", NETS[name]["inputs"], params, **kwargs)


def _inputs(name: str, batch: int = SMALL, dtype=np.float32) -> list[mx.nd.NDArray]:
    return [mx.nd.array(ARRAYS[f"{name}:b{batch}:in:{n}"]).astype(dtype)
            for n in NETS[name]["inputs"]]


def _outputs(value) -> list[np.ndarray]:
    return [o.asnumpy() for o in (value if isinstance(value, list) else [value])]


def _want(name: str, key: str) -> list[np.ndarray]:
    count = 2 if name == "twoio" else 1
    return [ARRAYS[f"{name}:{key}:out{k}"] for k in range(count)]


def _check(got, want, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    got = _outputs(got)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=rtol, atol=atol)


def _table(net: SymbolBlock) -> list[list]:
    return [[n, None if p.shape is None else list(p.shape), str(p.dtype), p.grad_req]
            for n, p in net.collect_params().items()]


@pytest.mark.parametrize("name", NETS)
def test_outputs_are_mxnets_with_one_executor_per_shape(name: str) -> None:
    net = _imports(name)
    first = net(*_inputs(name))
    # One output: an NDArray; several: a list, as MXNet's.
    assert isinstance(first, list) == (name == "twoio")
    _check(first, _want(name, f"b{SMALL}"))
    _check(net(*_inputs(name, LARGE)), _want(name, f"b{LARGE}"))
    again = net(*_inputs(name))
    _check(again, _want(name, f"b{SMALL}"))
    assert len(net._cached_op) == 2
    # Each call returns new arrays: the first results were not overwritten.
    _check(first, _want(name, f"b{SMALL}"))
    assert _outputs(first)[0] is not _outputs(again)[0]


@pytest.mark.parametrize("name", NETS)
@pytest.mark.parametrize("how", ["hybridize", "optimize_for"])
def test_dnnl_backend_partitions_and_gives_mxnets_numbers(name: str, how: str) -> None:
    require_onednn()
    net = _imports(name)
    if how == "hybridize":
        net.hybridize(backend="MKLDNN", static_alloc=True, static_shape=True)
    else:
        net.optimize_for(*_inputs(name), backend="DNNL")
    _check(net(*_inputs(name)), _want(name, "mkldnn"), rtol=1e-4, atol=1e-5)
    _check(net(*_inputs(name, LARGE)), _want(name, f"b{LARGE}"), rtol=1e-4, atol=1e-5)
    ops = [node["op"] for node in json.loads(net._cached_graph[1].tojson())["nodes"]]
    assert "_sg_dnnl" in ops
    assert "Convolution" not in ops
    # MXNet's backend partitioned the same nets into its own fused nodes.
    assert "_sg_mkldnn_conv" in NETS[name]["mkldnn_ops"]


@pytest.mark.parametrize("name", NETS)
@pytest.mark.parametrize("backend", [None, "MKLDNN"])
def test_writes_to_parameters_reach_the_next_forward(name: str, backend: str | None) -> None:
    if backend:
        require_onednn()
    net = _imports(name)
    net.hybridize(backend=backend)
    net(*_inputs(name))
    conv_name, var_name = NETS[name]["written"]
    params = net.collect_params()
    conv, var = params[conv_name], params[var_name]
    conv.set_data(conv.data() * 0.5)
    var.data()[:] = var.data() + 0.5
    tag = "mkldnn" if backend else "plain"
    tolerance = {"rtol": 1e-4, "atol": 1e-5} if backend else {}
    _check(net(*_inputs(name)), _want(name, f"written_{tag}"), **tolerance)


@pytest.mark.parametrize("backend", [None, "MKLDNN"])
def test_replaced_parameter_arrays_are_swapped_in(backend: str | None) -> None:
    if backend:
        require_onednn()
    net, plain = _imports("cnn"), _imports("cnn")
    net.hybridize(backend=backend)
    net(*_inputs("cnn"))
    bias = net.collect_params()["cnn_dense0_bias"]
    old = bias.data()
    bias.reset_ctx(mx.cpu(1))   # new arrays, same values
    assert bias.data() is not old and bias.list_ctx() == [mx.cpu(1)]
    old[:] = 100.0                # no longer read
    _check(net(*_inputs("cnn")), _want("cnn", f"b{SMALL}"), rtol=1e-4, atol=1e-5)
    bias.data()[:] = bias.data() + 1
    np.testing.assert_allclose(net(*_inputs("cnn")).asnumpy(),
                               _want("cnn", f"b{SMALL}")[0] + 1, rtol=1e-4, atol=1e-5)
    # Re-initialized after the first call: its shape unknown (as MXNet leaves a loaded
    # SymbolBlock's), the new arrays wait for the next call.
    for block in (net, plain):
        block.collect_params()["cnn_batchnorm0_running_var"].initialize(
            mx.init.Constant(2.0), force_reinit=True)
        block.collect_params()["cnn_dense0_bias"].initialize(mx.init.Zero(),
                                                            force_reinit=True)
    np.testing.assert_allclose(net(*_inputs("cnn")).asnumpy(),
                               plain(*_inputs("cnn")).asnumpy(), rtol=1e-4, atol=1e-5)
    assert plain.collect_params()["cnn_batchnorm0_running_var"].shape == (8,)


def test_a_parameter_cast_after_a_call_binds_anew() -> None:
    # The executor of a signature seen before was reused with the cast array in it
    # (float32 numbers from a float16 weight); MXNet refuses the mixed dtypes, as a
    # fresh bind does. A net cast whole, then loaded with the saved float32 dtypes,
    # computes in float32 again, as MXNet's.
    net = _imports("cnn")
    net(*_inputs("cnn"))
    net.collect_params()["cnn_dense0_weight"].cast("float16")
    with pytest.raises(mx.DTypeError, match="float16"):
        net(*_inputs("cnn"))
    net = _imports("cnn")
    net.cast("float64")
    assert net(*_inputs("cnn", dtype=np.float64)).dtype == np.float64
    net.collect_params().load(str(FIXTURES / "cnn-0000.params"), cast_dtype=True,
                              dtype_source="saved")
    with pytest.raises(mx.DTypeError):
        net(*_inputs("cnn", dtype=np.float64))
    _check(net(*_inputs("cnn")), _want("cnn", f"b{SMALL}"))


def test_training_mode_computes_as_mxnets_without_moving_the_statistics() -> None:
    # MXNet's values (train_mode and record alike): batch statistics, Dropout dropping;
    # the moving statistics move only in a backward, so predict mode is unchanged after
    data = mx.sym.var("data")
    net = SymbolBlock(mx.sym.BatchNorm(data, fix_gamma=False, name="bn"), data)
    net.initialize(mx.init.One())
    x = mx.nd.array([[0.0], [2.0], [4.0]])
    predicted = [4.9960613e-04, 1.9995004, 3.9985013]
    np.testing.assert_allclose(net(x).asnumpy().ravel(), predicted, rtol=1e-6)
    for mode in (mx.autograd.train_mode, mx.autograd.record):
        with mode():
            np.testing.assert_allclose(net(x).asnumpy().ravel(),
                                       [-0.22451532, 1.0, 2.2245154], rtol=1e-6)
    np.testing.assert_allclose(net(x).asnumpy().ravel(), predicted, rtol=1e-6)
    assert net.collect_params()["bn_moving_mean"].data().asnumpy().tolist() == [1.0]
    drop = SymbolBlock(mx.sym.Dropout(data, p=0.5), data)
    ones = mx.nd.ones((1, 1000))
    assert (drop(ones).asnumpy() == 1).all()
    with mx.autograd.train_mode():
        kept = drop(ones).asnumpy()
    assert set(np.unique(kept)) == {0.0, 2.0} and 0.4 < (kept == 0).mean() < 0.6


def test_imports_on_a_context() -> None:
    net = _imports("twoio", ctx=mx.cpu(1))
    assert net.collect_params().list_ctx() == [mx.cpu(1)]
    outs = net(*[a.as_in_context(mx.cpu(1)) for a in _inputs("twoio")])
    assert [o.context for o in outs] == [mx.cpu(1)] * 2
    _check(outs, _want("twoio", f"b{SMALL}"))


@pytest.mark.parametrize("name", NETS)
def test_casts(name: str) -> None:
    wide = _imports(name)
    wide.cast("float64")
    out = wide(*_inputs(name, dtype=np.float64))
    assert _outputs(out)[0].dtype == np.float64
    _check(out, _want(name, "float64"), rtol=1e-12, atol=1e-12)
    half = _imports(name)
    half.cast("float16")
    # MXNet's dtypes (BatchNorm's parameters stay float32) ...
    assert [row[:3:2] for row in _table(half)] == \
        [row[:3:2] for row in NETS[name]["float16_params"]]
    # ... but MXNet 1.9.1 has no float16 GEMM on the CPU: minimx runs it.
    assert "FP16 gemm on cpu not implemented" in NETS[name]["float16_forward"]["message"]
    out = half(*_inputs(name, dtype=np.float16))
    assert _outputs(out)[0].dtype == np.float16
    _check(out, _want(name, f"b{SMALL}"), rtol=2e-2, atol=2e-2)
    brain = _imports(name)
    brain.cast("bfloat16")
    kept = {n for n, p in brain.collect_params().items() if str(p.dtype) == "float32"}
    assert kept == {n for n, _, dtype, _ in NETS[name]["float16_params"] if dtype == "float32"}
    # MXNet casts BatchNorm's parameters too, and then fails on them.
    assert "This layer requires uniform type" in NETS[name]["bfloat16_forward"]["message"]
    out = brain(*_inputs(name, dtype=BFLOAT16))
    assert _outputs(out)[0].dtype == BFLOAT16
    _check(out, _want(name, f"b{SMALL}"), rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("name", NETS)
def test_parameters_as_mxnet_lists_them(name: str, capsys: pytest.CaptureFixture) -> None:
    record = NETS[name]
    net = _imports(name)
    # A SymbolBlock's parameters have no shape until inference (MXNet's quirk).
    assert _table(net) == record["params"]
    assert list(net._reg_params) == record["reg_params"]
    for pattern, names in record["select"].items():
        assert list(net.collect_params(pattern).keys()) == names
    net.infer_shape(*_inputs(name))
    assert _table(net) == record["params_after_infer_shape"]
    net.infer_type(*_inputs(name))   # float32 inputs: the dtypes stay
    assert _table(net) == record["params_after_infer_shape"]
    assert repr(net) == record["repr"]
    assert repr(net.collect_params()) == record["collect_params_repr"]
    with mx.name.NameManager():
        assert _imports(name).name == record["name"]
    assert net.prefix == "" and net.params.prefix == ""
    net.summary(*_inputs(name))
    assert capsys.readouterr().out == record["summary"]


# Uniform values in BatchNorm's running variance: negative ones give NaNs (as in MXNet).
@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt")
@pytest.mark.parametrize("name", NETS)
def test_initialize_parameters_not_loaded(name: str) -> None:
    net = _imports(name, None)
    with pytest.raises(ParameterError, match="has not been initialized"):
        net(*_inputs(name))
    net.initialize(ctx=mx.cpu())
    # Deferred: the shapes come with the first forward.
    with pytest.raises(DeferredInitializationError):
        net.collect_params()[NETS[name]["written"][0]].data()
    net(*_inputs(name))
    assert _table(net) == NETS[name]["initialized_params"]
    # As MXNet's, the default Uniform(0.07) fills every parameter by its weight rule.
    for param in net.collect_params().values():
        values = param.data().asnumpy()
        assert np.abs(values).max() <= 0.07 and values.std() > 0
    with pytest.warns(UserWarning, match="already initialized"):
        net.initialize()
    net.initialize(mx.init.One(), force_reinit=True)
    assert all((p.data().asnumpy() == 1).all() for p in net.collect_params().values())


@pytest.mark.parametrize("name", NETS)
def test_save_and_load_parameters(name: str, tmp_path: Path) -> None:
    net = _imports(name)
    path = tmp_path / "saved.params"
    net.save_parameters(str(path))
    saved = mx.nd.load(str(path))
    assert list(saved) == NETS[name]["saved_keys"]
    # MXNet 1.9.1 cannot load a SymbolBlock's own save_parameters file (its names lack
    # the prefix the parameters share); minimx loads it by those names.
    assert NETS[name]["load_saved"]["raised"] == "AssertionError"
    for source in (str(path), f"{name}-saved.params", f"{name}-0000.params"):
        other = _imports(name, None)
        other.load_parameters(source)
        _check(other(*_inputs(name)), _want(name, f"b{SMALL}"))
    # Loaded as a ParameterDict (full names), the file lacks every name.
    with pytest.raises(ParameterError, match="is missing in file"):
        _imports(name, None).collect_params().load(str(path))


@pytest.mark.parametrize("name", NETS)
def test_minimx_export_loads_in_mxnet(name: str, tmp_path: Path) -> None:
    # The tool ran minimx's export of these imports through MXNet's SymbolBlock.imports.
    record = EXPORT_RECORD[name]
    assert record["loaded"] and record["max_abs_diff"] <= 1e-6
    assert record["same_nodes_as_mxnet_export"]
    assert record["param_keys"] == record["mxnet_param_keys"]
    # The record holds for today's export: it writes the files MXNet ran.
    net = _imports(name)
    net(*_inputs(name))
    net.export(str(tmp_path / name))
    assert json.loads((tmp_path / f"{name}-symbol.json").read_text()) == \
        json.loads((FIXTURES / f"minimx_{name}-symbol.json").read_text())
    ours = mx.nd.load(str(tmp_path / f"{name}-0000.params"))
    theirs = mx.nd.load(str(FIXTURES / f"minimx_{name}-0000.params"))
    assert list(ours) == list(theirs) == record["param_keys"]
    for key, value in ours.items():
        assert value.asnumpy().tobytes() == theirs[key].asnumpy().tobytes(), key
    again = SymbolBlock.imports(str(tmp_path / f"{name}-symbol.json"), NETS[name]["inputs"],
                                str(tmp_path / f"{name}-0000.params"))
    _check(again(*_inputs(name)), _want(name, f"b{SMALL}"))


def test_export_before_a_forward_writes_every_parameter(tmp_path: Path) -> None:
    # MXNet 1.9.1 writes an empty parameter file here (a departure).
    net = _imports("cnn")
    net.export(str(tmp_path / "early"), epoch=3)
    assert list(mx.nd.load(str(tmp_path / "early-0003.params"))) == \
        EXPORT_RECORD["cnn"]["param_keys"]


def test_export_of_a_partitioned_block_runs_here(tmp_path: Path) -> None:
    require_onednn()
    net = _imports("cnn")
    net.optimize_for(*_inputs("cnn"), backend="MKLDNN")
    net.export(str(tmp_path / "fused"))
    text = (tmp_path / "fused-symbol.json").read_text()
    assert "_sg_dnnl" in text
    again = SymbolBlock.imports(str(tmp_path / "fused-symbol.json"), ["data"],
                                str(tmp_path / "fused-0000.params"))
    _check(again(*_inputs("cnn")), _want("cnn", "mkldnn"), rtol=1e-4, atol=1e-5)


def _expect_mxnets(case: str, call, extra: str | None = None) -> MinimxError:
    """`call` raises a MinimxError of the Python type MXNet raised, whose message holds
    MXNet's."""
    want = RECORD["errors"][case]
    with pytest.raises(MinimxError) as info:
        call()
    assert isinstance(info.value, BUILTIN[want["raised"]])
    assert want["message"] in str(info.value)
    if extra:
        assert extra in str(info.value)
    return info.value


def test_mxnets_messages_for_bad_files() -> None:
    data = _inputs("cnn")[0]
    _expect_mxnets("missing", lambda: _imports("cnn", "cnn-missing.params"))
    _expect_mxnets("extra", lambda: _imports("cnn", "cnn-extra.params"))
    _expect_mxnets("missing_allowed",
                   lambda: _imports("cnn", "cnn-missing.params", allow_missing=True)(data))
    assert RECORD["errors"]["extra_ignored"]["raised"] is None
    _check(_imports("cnn", "cnn-extra.params", ignore_extra=True)(data),
           _want("cnn", f"b{SMALL}"))
    _expect_mxnets("load_parameters_missing",
                   lambda: _imports("cnn").load_parameters("cnn-missing.params"))
    _expect_mxnets("load_parameters_extra",
                   lambda: _imports("cnn").load_parameters("cnn-extra.params"))
    # MXNet's message for an input name the graph lacks names the graph's input it
    # took for a parameter; minimx adds which name is unknown.
    _expect_mxnets("unknown_input_name", lambda: SymbolBlock.imports(
        "cnn-symbol.json", ["image"], "cnn-0000.params"), extra="['image']")
    _expect_mxnets("uninitialized_data",
                   lambda: _imports("cnn", None).collect_params()["cnn_conv0_weight"].data())


def test_mxnets_messages_for_bad_inputs() -> None:
    cnn_data = _inputs("cnn")[0]
    _expect_mxnets("two_inputs_to_cnn", lambda: _imports("cnn")(cnn_data, cnn_data),
                   extra="takes 1 inputs, ['data']")
    _expect_mxnets("one_input_to_twoio", lambda: _imports("twoio")(_inputs("twoio")[0]),
                   extra="takes 2 inputs, ['data0', 'data1']")
    _expect_mxnets("optimize_for_without_backend",
                   lambda: _imports("cnn").optimize_for(cnn_data))
    hybridized = _imports("cnn")
    hybridized.hybridize()
    # (MXNet's message names the block by a process-wide counter.)
    assert "must not be hybridized" in RECORD["errors"]["summary_hybridized"]["message"]
    with pytest.raises(MinimxError, match="must not be hybridized to print summary"):
        hybridized.summary(cnn_data)
    with pytest.raises(InputError, match="Symbol or NDArray"):
        _imports("cnn")(cnn_data.asnumpy())
    # MXNet's words for what is neither.
    with pytest.raises(InputError, match="must be \\(nested\\) list of Symbol or NDArray"):
        _imports("twoio")(_inputs("twoio")[0], _inputs("twoio")[1].asnumpy())
    with pytest.raises(InputError, match="input 1 must be an NDArray"):
        _imports("twoio")(_inputs("twoio")[0], mx.sym.var("vector"))
    net = _imports("cnn")
    net(cnn_data)
    # MXNet changes the shape first and then fails in numpy; minimx refuses first.
    assert RECORD["errors"]["set_data_wrong_shape"]["raised"] == "ValueError"
    bias = net.collect_params()["cnn_dense0_bias"]
    with pytest.raises(ParameterError, match=r"cnn_dense0_bias.*\(3,\).*\(10,\)"):
        bias.set_data(mx.nd.zeros((3,)))
    assert bias.shape is None   # unchanged (MXNet leaves it (3,))
    with pytest.raises(ParameterError, match="no autograd"):
        bias.grad()
    bias.zero_grad()


def test_symbols_compose_the_graph() -> None:
    net = _imports("twoio")
    out = net(mx.sym.var("image"), mx.sym.var("vector"))
    assert isinstance(out, list) and len(out) == 2
    assert out[0].list_arguments()[0] == "image"
    assert "vector" in out[1].list_arguments()
    with pytest.raises(InputError, match="Invalid input format"):
        net(mx.sym.var("image"))


def test_hybridize_clears_the_executors_and_keeps_options() -> None:
    net = _imports("cnn")
    net(*_inputs("cnn"))
    net.hybridize(static_alloc=True, forward_bulk_size=4)
    assert net._cached_op is None
    assert ("forward_bulk_size", 4) in net._flags
    net.hybridize(backend="default", op_names=["Convolution"])
    assert net._backend_opts == {"op_names": ["Convolution"]}
    _check(net(*_inputs("cnn")), _want("cnn", f"b{SMALL}"))
    ops = [node["op"] for node in json.loads(net._cached_graph[1].tojson())["nodes"]]
    assert ops.count("_CachedOp") + ops.count("_subgraph_op") == 2
    # MXNet 2's form of the options.
    net.hybridize(backend="default", backend_opts={"op_names": ["Pooling"]})
    assert net._backend_opts == {"op_names": ["Pooling"]}


def test_a_symbol_block_built_from_symbols() -> None:
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    shared = ParameterDict("")
    weight = shared.get("fc_weight", shape=(3, 4))
    weight.initialize(mx.init.One())
    net = SymbolBlock([fc, mx.sym.relu(fc, name="act")], data, params=shared)
    assert net.collect_params()["fc_weight"] is weight
    net.collect_params()["fc_bias"].initialize(mx.init.Constant(-5.0))
    first, second = net(mx.nd.ones((2, 4)))
    np.testing.assert_allclose(first.asnumpy(), np.full((2, 3), -1.0))
    np.testing.assert_allclose(second.asnumpy(), np.zeros((2, 3)))
    with pytest.raises(InputError, match="must be variable"):
        SymbolBlock(fc, [fc])


def test_input_names_in_call_order() -> None:
    a, b = mx.sym.var("b_second"), mx.sym.var("a_first")
    net = SymbolBlock(mx.sym.elemwise_add(a, b), [b, a])
    assert net.input_names == ["a_first", "b_second"]
    net.input_names.append("x")   # a copy: the block's list is its own
    assert net.input_names == ["a_first", "b_second"]
    out = net(mx.nd.array([1.0]), mx.nd.array([2.0]))
    np.testing.assert_allclose(out.asnumpy(), [3.0])


def test_parameter_and_constant() -> None:
    param = Parameter("w", shape=(2, 3), init=mx.init.Constant(2.0))
    assert repr(param) == "Parameter w (shape=(2, 3), dtype=<class 'numpy.float32'>)"
    param.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert [a.context for a in param.list_data()] == [mx.cpu(0), mx.cpu(1)]
    with mx.cpu(1):
        assert param.data() is param.list_data()[1]
    with pytest.raises(ParameterError, match="was not initialized on context cpu\\(2\\)"):
        param.data(mx.cpu(2))
    param.set_data(mx.nd.ones((2, 3)))
    assert all((a.asnumpy() == 1).all() for a in param.list_data())
    with pytest.raises(ParameterError, match="grad_req must be one of"):
        param.grad_req = "sometimes"
    assert param.var().attr("__shape__") == "(2, 3)"
    param.cast("float16")
    assert param.data(mx.cpu(0)).dtype == np.float16
    with pytest.raises(ParameterError, match="invalid shape"):
        Parameter("v", shape=(0, 3)).initialize()
    deferred = Parameter("d", shape=(0, 3), allow_deferred_init=True)
    deferred.initialize()
    with pytest.raises(DeferredInitializationError):
        deferred.data()
    const = Constant("c", [[1, 2], [3, 4]])
    assert const.grad_req == "null"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        const.grad_req = "write"
    assert const.grad_req == "null" and "does not support grad_req" in str(caught[0].message)
    const.initialize()
    np.testing.assert_array_equal(const.data().asnumpy(), [[1, 2], [3, 4]])
    params = ParameterDict("p_")
    made = params.get("w", shape=(0, 3))
    assert params.get("w", shape=(4, 0)) is made and made.shape == (4, 3)
    with pytest.raises(ParameterError, match="desired attribute does not match"):
        params.get("w", lr_mult=3.0)
    with pytest.raises(ParameterError, match="no Parameter 'q'"):
        params["q"]


def test_auxiliary_states_may_be_inputs_as_in_mxnet():
    # BatchNorm's statistics given at each call (MXNet's test_subgraph_op network 3).
    bn = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    names = ["data", *bn.list_auxiliary_states()]
    block = mx.gluon.nn.SymbolBlock(bn, [mx.sym.var(n) for n in names])
    block.initialize()
    block.params["bn_beta"].set_data(mx.nd.zeros(3))
    x = mx.nd.ones((2, 3, 4, 4))
    for mean, var in ((0.0, 1.0), (0.5, 4.0)):
        out = block(x, mx.nd.full((3,), mean), mx.nd.full((3,), var))
        np.testing.assert_allclose(out.asnumpy(), (1 - mean) / np.sqrt(var + 1e-3), rtol=1e-6)
    assert sorted(block.params.keys()) == ["bn_beta", "bn_gamma"]
