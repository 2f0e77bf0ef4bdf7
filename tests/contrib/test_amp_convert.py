"""`amp.convert_symbol` / `convert_model` against MXNet 1.9.1's (fixtures in
tests/fixtures/amp, written by tools/mxnet_fixtures.py --only amp)."""
from __future__ import annotations

import gzip
import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import BFLOAT16, DTypeError, MinimxError
from minimx.contrib import amp
from minimx.formats.params_file import load_arrays
from minimx.graph import Graph

FIXTURES = Path(__file__).parent.parent / "fixtures" / "amp"
MODELS = FIXTURES.parent / "models"
CASES: dict[str, dict] = json.loads((FIXTURES / "cases.json").read_text())
NETS = ("ampnet", "resnet18_v1")


def read_gz(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


def structure(text: str) -> tuple[list, list]:
    """Every node's op, name, attributes and inputs, and the heads, from symbol JSON."""
    graph = json.loads(text)
    return ([(n["op"], n["name"], n.get("attrs", {}), [tuple(i[:2]) for i in n["inputs"]])
             for n in graph["nodes"]], [tuple(h[:2]) for h in graph["heads"]])


def kwargs(case: str) -> dict:
    # JSON has no tuples: conditional_fp32_ops rules come back as lists
    return {k: [tuple(r) for r in v] if k == "conditional_fp32_ops" else v
            for k, v in CASES[case].items()}


# The "excluded" case names ampnet's layers, which resnet18_v1 lacks: MXNet
# ignores such names, minimx warns and ignores them.
@pytest.mark.filterwarnings("ignore:amp. excluded_sym_names:UserWarning")
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("net", NETS)
def test_converted_graph_is_mxnets(net: str, case: str) -> None:
    sym = mx.sym.load_json(read_gz(FIXTURES / f"{net}-symbol.json.gz"))
    before = sym.tojson()
    expected = FIXTURES / f"{net}-{case}-amp.json.gz"
    if not expected.exists():   # MXNet's type inference fails on its converted graph
        message = (FIXTURES / f"{net}-{case}-error.txt").read_text()
        assert "Non-uniform data type in Concat" in message
        with pytest.raises(DTypeError, match=r"cat1 \(Concat\): dtype float32 does not "
                                             r"match bfloat16"):
            amp.convert_symbol(sym, target_dtype="bfloat16", **kwargs(case))
        return
    got = amp.convert_symbol(sym, target_dtype="bfloat16", **kwargs(case))
    assert structure(got.tojson()) == structure(read_gz(expected))
    assert sym.tojson() == before   # the caller's symbol is left as it was


def test_the_fixtures_cover_every_kind_of_cast() -> None:
    nodes, _ = structure(read_gz(FIXTURES / "ampnet-default-amp.json.gz"))
    names = [name for op, name, _, _ in nodes if op.startswith("amp_")]
    # to bf16 before Convolution/FC (data, weights, bias), back to fp32 before a
    # conditional op (softrelu) and a fp32 op (Flatten's input after a bf16 sum),
    # a multicast for a sum with an input of unknown type, and fp32 heads.
    assert {"data_amp_cast_bfloat16", "conv1_weight_amp_cast_bfloat16",
            "conv2_output_amp_cast_float32", "pool1_output_amp_multicast",
            "flat1_0_amp_cast_bfloat16", "fc1_output_amp_cast_float32"} <= set(names)


def test_the_lists_are_mxnets() -> None:
    assert amp.list_lp16_ops("bfloat16") == ["Convolution", "FullyConnected"]
    assert len(amp.list_fp32_ops("bfloat16")) == 438
    assert len(amp.list_widest_type_cast("bfloat16")) == 109
    assert amp.list_lp16_fp32_ops("bfloat16")[:3] == ["abs", "_add", "BatchNorm"]
    assert amp.list_conditional_fp32_ops("bfloat16") == [
        ("Activation", "act_type", ["softrelu"]), ("LeakyReLU", "act_type", ["elu", "selu"])]
    assert amp.list_lp16_use_fp32_params("bfloat16")["BatchNorm"][0] == ""
    assert "SoftmaxOutput" in amp.list_loss_output_functions("bfloat16")


@pytest.mark.parametrize("arguments, message", [
    ({"target_dtype": "float16"}, "only bfloat16"),
    ({"target_dtype_ops": ["FullyConnected"], "fp32_ops": ["FullyConnected"]},
     r"\['FullyConnected'\] are in target_dtype_ops and fp32_ops"),
    ({"fp32_ops": ["Activation"], "conditional_fp32_ops": [("Activation", "act_type", ["x"])]},
     "in fp32_ops and conditional_fp32_ops"),
    ({"target_dtype_ops": ["NoSuchOp"]}, r"\['NoSuchOp'\] are in none of the lists"),
    ({"conditional_fp32_ops": [("Activation", "act_type")]}, "is not \\(op name"),
    ({"data_names": ["nope"]}, r"data_names \['nope'\] are not inputs"),
])
def test_bad_arguments_are_refused_as_mxnet_refuses_them(arguments, message) -> None:
    sym = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=10, name="fc")
    with pytest.raises(MinimxError, match=message) as refused:
        amp.convert_symbol(sym, **arguments)
    # The operator lists' checks are MXNet's asserts: AssertionErrors too.
    assert isinstance(refused.value, AssertionError) == ("ops" in str(arguments))



def test_an_excluded_name_that_matches_no_operator_is_named_in_a_warning() -> None:
    # MXNet ignores it silently; a misspelt name would leave that layer in bfloat16.
    sym = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=10, name="fc")
    with pytest.warns(UserWarning, match=r"excluded_sym_names \['fc1', 'x'\] name no operator"):
        converted = amp.convert_symbol(sym, excluded_sym_names=["fc", "fc1", "x"])
    assert "amp_cast" not in converted.tojson()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert amp.convert_symbol(sym, excluded_sym_names=["fc"]).tojson() == converted.tojson()


def test_mxnets_own_example_converts_as_its_test_expects() -> None:
    # tests/python/mkl/test_contrib_amp.py in MXNet 1.9.1, with elemwise_add for sin.
    x, y = mx.sym.var("x"), mx.sym.var("y")
    res = mx.sym.elemwise_add(mx.sym.FullyConnected(x, y, num_hidden=10, no_bias=True,
                                                    name="fc"), mx.sym.exp(y, name="e"))
    got = amp.convert_symbol(res, target_dtype_ops=["FullyConnected"], fp32_ops=["exp"])
    want = mx.sym.elemwise_add(
        mx.sym.amp_cast(mx.sym.FullyConnected(
            mx.sym.amp_cast(x, dtype="bfloat16", name="x_amp_cast_bfloat16"),
            mx.sym.amp_cast(y, dtype="bfloat16", name="y_amp_cast_bfloat16"),
            num_hidden=10, no_bias=True, name="fc"),
            dtype="float32", name="fc_output_amp_cast_float32"),
        mx.sym.exp(y, name="e"), name=res.name)
    assert structure(got.tojson()) == structure(want.tojson())


# -- convert_model ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def narrow():
    return mx.model.load_checkpoint(str(MODELS / "resnet18_v1_narrow"), 0)


@pytest.mark.parametrize("optional", [False, True], ids=["fp32-params", "bf16-params"])
def test_convert_model_gives_mxnets_symbol_and_params(narrow, optional: bool) -> None:
    sym, args, auxs = narrow
    stem = FIXTURES / f"resnet18_v1_narrow_bf16{'_optional' if optional else ''}"
    csym, cargs, cauxs = amp.convert_model(sym, args, auxs, target_dtype="bfloat16",
                                           cast_optional_params=optional)
    assert structure(csym.tojson()) == structure((stem.with_name(
        stem.name + "-symbol.json")).read_text())
    assert all(a.dtype == np.float32 for a in (*args.values(), *auxs.values()))
    if not optional:   # MXNet leaves the parameters' values and types as they were
        assert all(cargs[k].dtype == np.float32 and
                   (cargs[k].asnumpy() == v.asnumpy()).all() for k, v in args.items())
        return
    want = load_arrays(stem.with_name(stem.name + "-0000.params"))
    got = {**{f"arg:{k}": v for k, v in cargs.items()},
           **{f"aux:{k}": v for k, v in cauxs.items()}}
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        array = got[key].asnumpy()
        assert array.dtype == value.dtype and array.tobytes() == value.tobytes(), key
    # the 20 convolutions' weights, the FC's weight and bias
    assert sum(v.dtype == BFLOAT16 for v in want.values()) == 22


@pytest.mark.parametrize("optional", [False, True], ids=["fp32-params", "bf16-params"])
def test_converted_model_runs_close_to_mxnets_bf16_output(narrow, optional: bool,
                                                          monkeypatch) -> None:
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    sym, args, auxs = narrow
    stem = FIXTURES / f"resnet18_v1_narrow_bf16{'_optional' if optional else ''}"
    with np.load(stem.with_name(stem.name + "-io.npz")) as io:
        data, want = io["data"], io["output"]
    with np.load(MODELS / "resnet18_v1_narrow-io.npz") as io:
        fp32 = io["output"]
    csym, cargs, cauxs = amp.convert_model(sym, args, auxs, cast_optional_params=optional)
    ex = csym.simple_bind(mx.cpu(), grad_req="null", data=data.shape)
    ex.copy_params_from(cargs, cauxs)
    got = ex.forward(data=mx.nd.array(data))[0].asnumpy()
    assert got.dtype == np.float32
    # Both round each bf16 operator's float32 result once, to nearest even; the
    # float32 sums may differ in order (numpy here, oneDNN in MXNet), so not bit for
    # bit in general (on the machine that wrote this they agree exactly), but far
    # closer to each other than either is to float32.
    scale = np.abs(fp32).max()
    to_fp32 = np.abs(got - fp32).max()
    assert 0 < to_fp32 < 0.02 * scale   # it did run in bfloat16, and stayed close
    assert np.abs(got - want).max() <= to_fp32 / 4


def test_mxnets_bf16_checkpoint_loads_and_runs_as_in_mxnet(monkeypatch) -> None:
    # MXNet's own files: its converted symbol (casts kept) and bfloat16 .params.
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    stem = FIXTURES / "resnet18_v1_narrow_bf16_optional"
    sym, args, auxs = mx.model.load_checkpoint(str(stem), 0)
    assert args["resnetv10_conv0_weight"].dtype == BFLOAT16
    with np.load(f"{stem}-io.npz") as io:
        data, want = io["data"], io["output"]
    ex = sym.simple_bind(mx.cpu(), grad_req="null", data=data.shape)
    assert ex.arg_dict["resnetv10_conv0_weight"].dtype == BFLOAT16   # from __dtype__
    ex.copy_params_from(args, auxs)
    got = ex.forward(data=mx.nd.array(data))[0].asnumpy()
    # (bf16 moves these logits by 0.4% of their largest from float32)
    np.testing.assert_allclose(got, want, rtol=0, atol=np.abs(want).max() / 1000)


def test_convert_model_types_follow_the_dtype_attributes(narrow) -> None:
    sym, args, auxs = narrow
    csym, cargs, _ = amp.convert_model(sym, args, auxs, cast_optional_params=True)
    variables = {n.name: n for n in Graph(csym.outputs).nodes if n.is_variable}
    for name, value in cargs.items():
        flag = variables[name].attrs["__dtype__"]
        assert value.dtype == (BFLOAT16 if flag == "12" else np.float32), name


# -- every model fixture: minimx's bf16 beside MXNet's ----------------------------------------
AGREEMENT = Path(__file__).resolve().parents[2] / "benchmarks" / "int8_agreement.py"
# benchmarks/ is no package: the script (which makes the evaluation images) is loaded
# from its file
_spec = importlib.util.spec_from_file_location("int8_agreement", AGREEMENT)
assert _spec is not None and _spec.loader is not None
agreement_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agreement_script)
MXNET_BF16 = np.load(FIXTURES / "bf16_outputs.npz")
MXNET_FP32 = np.load(FIXTURES.parent / "int8_agreement" / "outputs.npz")


@pytest.mark.parametrize("model", sorted(agreement_script.RECORD["models"]))
def test_every_model_in_bf16_gives_mxnets_bf16_outputs(model: str, monkeypatch) -> None:
    monkeypatch.setenv("MINIMX_SUBGRAPH_BACKEND", "NONE")
    _, images = agreement_script.model_images(model)
    sym, args, auxs = mx.model.load_checkpoint(str(MODELS / model), 0)
    csym, cargs, cauxs = amp.convert_model(sym, args, auxs)
    ex = csym.simple_bind(mx.cpu(), grad_req="null", data=images.shape)
    ex.copy_params_from(cargs, cauxs)
    got = ex.forward(data=mx.nd.array(images))[0].asnumpy()
    want, fp32 = MXNET_BF16[f"{model}:bf16"], MXNET_FP32[f"{model}:fp32"]
    assert (got.argmax(1) == want.argmax(1)).all()
    # One bf16 rounding apart at most, where the float32 sums' order decided it.
    assert np.abs(got - want).max() <= np.abs(want - fp32).max() / 2


# -- cast names after operators that name their outputs -----------------------------------------
def test_casts_after_sliced_and_swapped_outputs_are_named_as_mxnet_names_them() -> None:
    # MXNet 1.9.1 names a cast <node>_<output name>_amp_cast_<dtype> after every operator with
    # FListOutputNames (SliceChannel's output0/output1, SwapAxis' output), the index otherwise.
    data = mx.sym.var("data")
    halves = mx.sym.SliceChannel(data, num_outputs=2, axis=1, name="split")
    conv = mx.sym.Convolution(halves[1], kernel=(1, 1), num_filter=2, no_bias=True, name="conv")
    sw = mx.sym.SwapAxis(conv, dim1=2, dim2=3, name="sw")
    net = mx.sym.Group([mx.sym.FullyConnected(sw, num_hidden=3, no_bias=True, name="fc"),
                        halves[0]])
    nodes, _ = structure(amp.convert_symbol(net, target_dtype="bfloat16").tojson())
    # MXNet 1.9.1's convert_symbol(net, target_dtype='bfloat16'), tojson(remove_amp_cast=False)
    assert [name for op, name, _, _ in nodes if op.startswith("amp_")] == [
        "split_output1_amp_cast_bfloat16", "conv_weight_amp_cast_bfloat16",
        "conv_output_amp_cast_float32", "sw_output_amp_cast_bfloat16",
        "fc_weight_amp_cast_bfloat16", "fc_output_amp_cast_float32"]


@pytest.mark.parametrize("build, names", [
    # MXNet 1.9.1: the fp32 casts convert_symbol(sym, target_dtype_ops=[], fp32_ops=[],
    # conditional_fp32_ops=[]) puts on the heads of a one-node graph `x`
    (lambda d: mx.sym.SliceChannel(d, num_outputs=2, name="x"),
     ["x_output0_amp_cast_float32", "x_output1_amp_cast_float32"]),
    (lambda d: mx.sym.SwapAxis(d, dim1=1, dim2=2, name="x"), ["x_output_amp_cast_float32"]),
    (lambda d: mx.sym.Pad(d, mode="constant", pad_width=(0, 0, 0, 0, 1, 1, 1, 1), name="x"),
     ["x_output_amp_cast_float32"]),
    (lambda d: mx.sym.L2Normalization(d, name="x"), ["x_output_amp_cast_float32"]),
    (lambda d: mx.sym.InstanceNorm(d, name="x"), ["x_output_amp_cast_float32"]),
    (lambda d: mx.sym.SequenceReverse(d, name="x"), ["x_output_amp_cast_float32"]),
    (lambda d: mx.sym.softmin(d, name="x"), ["x_output_amp_cast_float32"]),
    (lambda d: mx.sym.contrib.MultiBoxPrior(d, sizes=(0.5,), name="x"),
     ["x_output_amp_cast_float32"]),
    (lambda d: mx.sym.RNN(d, mx.sym.var("p"), mx.sym.var("s"), state_size=2, num_layers=1,
                          mode="rnn_tanh", state_outputs=True, name="x"),
     ["x_output_amp_cast_float32", "x_state_output_amp_cast_float32"]),
], ids=["SliceChannel", "SwapAxis", "Pad", "L2Normalization", "InstanceNorm", "SequenceReverse",
        "softmin", "MultiBoxPrior", "RNN"])
def test_head_casts_are_named_by_output_name_where_mxnet_names_outputs(build, names) -> None:
    sym = build(mx.sym.var("data"))
    sym = mx.sym.Group([sym[i] for i in range(len(sym.list_outputs()))])
    converted = amp.convert_symbol(sym, target_dtype_ops=[], fp32_ops=[], conditional_fp32_ops=[])
    nodes, heads = structure(converted.tojson())
    assert [nodes[i][1] for i, _ in heads] == names


def test_saving_without_the_casts_as_mxnet_saves_by_default(tmp_path) -> None:
    x, w = mx.sym.var("x"), mx.sym.var("w")
    sym = mx.sym.FullyConnected(x, w, num_hidden=4, no_bias=True, name="fc") + mx.sym.sin(x)
    converted = amp.convert_symbol(sym, target_dtype="bfloat16")

    def ops(text: str) -> list[str]:
        return [n["op"] for n in json.loads(text)["nodes"] if n["op"] != "null"]
    assert ops(converted.tojson()).count("amp_cast") == 3
    assert ops(converted.tojson(remove_amp_cast=True)) == ops(sym.tojson())
    converted.save(str(tmp_path / "kept.json"), remove_amp_cast=False)
    assert ops((tmp_path / "kept.json").read_text()) == ops(converted.tojson())
