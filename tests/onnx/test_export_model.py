"""mx.onnx.export_model's arguments as MXNet 1.9 takes them, and its errors."""
from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import minimx as mx
from minimx.onnx import OnnxNotInstalledError
from tests.onnx.test_zoo_export import assert_close, zoo_case

S = mx.sym
RNG = np.random.default_rng(3)


def small_net() -> mx.sym.Symbol:
    """conv-bn-relu-pool-fc-softmax, with a label MXNet's exporter leaves out."""
    data = S.var("data")
    net = S.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    net = S.Activation(S.BatchNorm(net, fix_gamma=False, name="bn"), act_type="relu")
    net = S.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    return S.SoftmaxOutput(S.FullyConnected(net, num_hidden=3, name="fc"), name="softmax")


def small_params(net: mx.sym.Symbol, shape: tuple[int, ...]) -> tuple[dict, dict]:
    args, _, aux = net.infer_shape(data=shape)
    arg_params = {n: mx.nd.array(RNG.standard_normal(s).astype(np.float32))
                  for n, s in zip(net.list_arguments(), args, strict=True)
                  if n not in ("data", "softmax_label")}
    aux_params = {n: mx.nd.array(RNG.uniform(0.5, 1.5, s).astype(np.float32))
                  for n, s in zip(net.list_auxiliary_states(), aux, strict=True)}
    return arg_params, aux_params


def minimx_output(net: mx.sym.Symbol, arg_params: dict, aux_params: dict,
                  data: np.ndarray) -> np.ndarray:
    ex = net.simple_bind(mx.cpu(), grad_req="null", data=data.shape)
    ex.copy_params_from(arg_params, aux_params)
    return ex.forward(is_train=False, data=mx.nd.array(data))[0].asnumpy()


def run(path: str, data: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {"data": data})[0]


@pytest.fixture
def checkpoint(tmp_path: Path) -> tuple[mx.sym.Symbol, dict, dict, str]:
    net = small_net()
    arg_params, aux_params = small_params(net, (2, 3, 8, 8))
    prefix = str(tmp_path / "small")
    mx.model.save_checkpoint(prefix, 3, net, arg_params, aux_params)
    return net, arg_params, aux_params, prefix


def test_every_form_of_params_gives_the_same_model(checkpoint, tmp_path: Path) -> None:
    net, arg_params, aux_params, prefix = checkpoint
    data = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    want = minimx_output(net, arg_params, aux_params, data)
    prefixed = {**{f"arg:{k}": v for k, v in arg_params.items()},
                **{f"aux:{k}": v for k, v in aux_params.items()}}
    numpy_params = {k: v.asnumpy() for k, v in {**arg_params, **aux_params}.items()}
    forms = {
        "files": (f"{prefix}-symbol.json", f"{prefix}-0003.params"),
        "dict": (net, {**arg_params, **aux_params}),
        "prefixed": (net, prefixed),
        "list": (net, [arg_params, aux_params]),
        "numpy": (net, numpy_params),
    }
    for form, (sym, params) in forms.items():
        path = str(tmp_path / f"{form}.onnx")
        assert mx.onnx.export_model(sym, params, [data.shape], np.float32, path) == path
        np.testing.assert_allclose(run(path, data), want, rtol=1e-5, atol=1e-5, err_msg=form)
    assert set(prefixed) == {f"arg:{k}" for k in arg_params} | {f"aux:{k}" for k in aux_params}


def test_graph_names_follow_mxnet(checkpoint, tmp_path: Path,
                                  caplog: pytest.LogCaptureFixture) -> None:
    net, arg_params, aux_params, _ = checkpoint
    with caplog.at_level(logging.INFO, logger="minimx.onnx"):
        path = mx.onnx.export_model(net, {**arg_params, **aux_params}, [(1, 3, 8, 8)],
                                    onnx_file_path=str(tmp_path / "m.onnx"), verbose=True)
    assert "converting conv (Convolution)" in caplog.messages
    model = onnx.load(path)
    assert [i.name for i in model.graph.input] == ["data"]     # the label is left out
    assert [o.name for o in model.graph.output] == ["softmax"]
    assert {t.name for t in model.graph.initializer} >= set(arg_params) | set(aux_params)
    assert model.opset_import[0].version == mx.onnx.OPSET >= 13
    dims = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    assert dims == [1, 3]


def test_old_argument_names_and_dynamic_batch(checkpoint, tmp_path: Path) -> None:
    net, arg_params, aux_params, _ = checkpoint
    path = mx.onnx.export_model(net, [arg_params, aux_params], input_shape=[(1, 3, 8, 8)],
                                input_type=[np.float32], onnx_file_path=str(tmp_path / "d.onnx"),
                                dynamic=True, dynamic_input_shapes=[("batch", 3, 8, 8)],
                                run_shape_inference=True)
    model = onnx.load(path)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", 3, 8, 8]
    data = RNG.standard_normal((5, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(run(path, data), minimx_output(net, arg_params, aux_params, data),
                               rtol=1e-5, atol=1e-5)


def test_unsupported_operators_are_all_listed_before_writing(tmp_path: Path) -> None:
    x = S.var("x")
    net = S.gammaln(S.erfinv(x, name="ei") + 1, name="gl")
    net = S.slice_axis(net, axis=2, begin=0, end=2)
    net = S.Pooling(net, kernel=(2,), pooling_convention="same", name="same_pool")
    net = net + S.relu(S.slice_axis(x, axis=2, begin=0, end=2))
    path = tmp_path / "never.onnx"
    with pytest.raises(mx.OperatorError) as err:
        mx.onnx.export_model(net, {}, [(2, 4, 6)], onnx_file_path=str(path))
    message = str(err.value)
    assert "3 node(s)" in message and "ei (erfinv): no ONNX translation" in message
    assert "gl (gammaln): no ONNX translation" in message
    assert "same_pool (Pooling): pooling_convention='same'" in message
    assert not path.exists()


def test_quantized_and_partitioned_graphs_are_refused(tmp_path: Path) -> None:
    net = small_net()
    arg_params, aux_params = small_params(net, (1, 3, 8, 8))
    qsym, qargs, qaux = mx.contrib.quantization.quantize_model(
        net, arg_params, aux_params, calib_mode="none", quantized_dtype="uint8",
        excluded_op_names=["BatchNorm"])   # a quantized BatchNorm needs calibration
    with pytest.raises(mx.OperatorError, match="a quantized graph: ONNX export takes the "
                                               "float32 model"):
        mx.onnx.export_model(qsym, {**qargs, **qaux}, [(1, 3, 8, 8)],
                             onnx_file_path=str(tmp_path / "q.onnx"))
    part = net.optimize_for("DNNL")
    with pytest.raises(mx.OperatorError, match="a partitioned graph"):
        mx.onnx.export_model(part, [arg_params, aux_params], [(1, 3, 8, 8)],
                             onnx_file_path=str(tmp_path / "p.onnx"))


def test_reshape_codes_need_fixed_shapes_when_dynamic(tmp_path: Path) -> None:
    net = S.Reshape(S.var("x"), shape=(0, -3), name="r")
    with pytest.raises(mx.OperatorError, match=r"r \(Reshape\): shape=\(0, -3\)"):
        mx.onnx.export_model(net, {}, [(2, 3, 4)], onnx_file_path=str(tmp_path / "r.onnx"),
                             dynamic=True)
    for fixed in (S.repeat(S.var("x"), repeats=2, axis=1, name="rep"),
                  S.squeeze(S.var("x"), name="rep")):
        with pytest.raises(mx.OperatorError, match=r"rep \(\w+\): needs fixed input shapes"):
            mx.onnx.export_model(fixed, {}, [(2, 3, 4)], dynamic=True,
                                 onnx_file_path=str(tmp_path / "f.onnx"))
    plain = S.Reshape(S.var("x"), shape=(0, -1))
    path = mx.onnx.export_model(plain, {}, [(2, 3, 4)], onnx_file_path=str(tmp_path / "p.onnx"),
                                dynamic=True)
    data = RNG.standard_normal((5, 2, 2)).astype(np.float32)
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": data})
    np.testing.assert_array_equal(got[0], data.reshape(5, 4))


def test_bad_arguments(tmp_path: Path) -> None:
    net = small_net()
    params = dict(zip(("arg", "aux"), small_params(net, (1, 3, 8, 8)), strict=True))
    both = [params["arg"], params["aux"]]
    with pytest.raises(mx.ShapeError, match=r"one shape for each input \['data'\]"):
        mx.onnx.export_model(net, both, [(1, 3, 8, 8), (1, 3), (1,)])
    with pytest.raises(mx.MinimxError, match="pass dynamic=True"):
        mx.onnx.export_model(net, both, [(1, 3, 8, 8)], dynamic_input_shapes=[(None, 3, 8, 8)])
    with pytest.raises(mx.MinimxError, match="params must be a dict"):
        mx.onnx.export_model(net, 3, [(1, 3, 8, 8)])
    with pytest.raises(mx.ShapeError, match="same rank"):
        mx.onnx.export_model(net, both, [(1, 3, 8, 8)], dynamic=True,
                             dynamic_input_shapes=[(None, 3)],
                             onnx_file_path=str(tmp_path / "x.onnx"))
    assert not (tmp_path / "x.onnx").exists()


def test_without_onnx_minimx_imports_and_export_says_how_to_get_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    code = ("import sys; sys.modules['onnx'] = None; import minimx as mx; "
            "print(mx.onnx.get_operator_support()[:1])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "['Activation']"
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(OnnxNotInstalledError, match=r"pip install 'minimx\[onnx\]'") as err:
        mx.onnx.export_model(small_net(), {}, [(1, 3, 8, 8)])
    assert isinstance(err.value, ImportError) and isinstance(err.value, mx.MinimxError)


REFUSED = {
    "lp3_full": (lambda x: S.Pooling(x, kernel=(2, 2), pool_type="lp", p_value=3,
                                     pooling_convention="full"),
                 "pool_type='lp' with pooling_convention='full'"),
    "full_sum": (lambda x: S.Pooling(x, kernel=(2, 2), pool_type="sum",
                                     pooling_convention="full"),
                 "pool_type='sum' with pooling_convention='full'"),
    "bn_axis": (lambda x: S.BatchNorm(x, axis=2), "axis=2 (ONNX normalizes axis 1)"),
    "deconv_target": (lambda x: S.Deconvolution(x, kernel=(2, 2), num_filter=2, stride=(2, 2),
                                                target_shape=(8, 8)), "target_shape"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_parameters_without_an_onnx_form_are_refused(case: str, tmp_path: Path) -> None:
    build, message = REFUSED[case]
    net = build(S.var("x"))
    with pytest.raises(mx.OperatorError, match=re.escape(message)):
        mx.onnx.export_model(net, {}, [(1, 2, 4, 4)] + [None] * (len(net.list_inputs()) - 1),
                             onnx_file_path=str(tmp_path / "r.onnx"))


def test_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Export to ONNX", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    net, params, data = zoo_case("resnet18_v1", classes=1000, size=224)
    arg_params = {n: mx.nd.array(params[n]) for n in net.list_arguments() if n in params}
    aux_params = {n: mx.nd.array(params[n]) for n in net.list_auxiliary_states()}
    monkeypatch.chdir(tmp_path)
    mx.model.save_checkpoint("resnet18_v1", 0, net, arg_params, aux_params)
    exec(code, {"mx": mx})  # noqa: S102  (the README's own lines)
    assert_close(run("resnet18_v1.onnx", data), minimx_output(net, arg_params, aux_params, data))


def test_the_labels_shapes_may_be_given_as_mxnets_call_gives_them(tmp_path: Path) -> None:
    # MXNet's export_model takes the label's shape and type too; minimx's ONNX has no
    # label input (the loss layer's inference needs none), so they are dropped.
    data, label = mx.sym.var("data"), mx.sym.var("label")
    path = mx.onnx.export_model(mx.sym.SoftmaxOutput(data, label), {}, [(3, 4), (3,)],
                                [np.float32] * 2, str(tmp_path / "so.onnx"))
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["data"]
    x = np.random.default_rng(0).random((3, 4), np.float32)
    np.testing.assert_allclose(session.run(None, {"data": x})[0],
                               mx.nd.softmax(mx.nd.array(x)).asnumpy(), rtol=1e-6)
