"""The `minimx` command: every subcommand on a small checkpoint, checked against values."""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx import onednn
from minimx.commands import bench as bench_command
from minimx.commands import main, parser
from tests.onednn_required import require_onednn
from tests.trace_schema import check_trace

MODELS = Path(__file__).parents[1] / "fixtures" / "models"
NAME = "resnet18_v1_narrow"     # 10 classes, with MXNet's output on its input
SHAPE = "data=1,3,32,32"


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The checkpoint copied into the working directory; its prefix."""
    for suffix in ("-symbol.json", "-0000.params", "-io.npz"):
        shutil.copy(MODELS / f"{NAME}{suffix}", tmp_path / f"{NAME}{suffix}")
    monkeypatch.chdir(tmp_path)
    return NAME


def backends() -> list[str]:
    return ["NONE", "DNNL"] if onednn.available() else ["NONE"]


def test_version_and_help_on_every_option(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"minimx {mx.__version__}\n"
    top = parser()
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) == {"demo", "info", "summary", "partition", "run", "bench",
                                     "profile"}
    for name, sub in [("minimx", top), *commands.choices.items()]:
        for action in sub._actions:
            assert action.help, f"{name}: {action.dest} has no help text"


def test_python_dash_m_is_the_same_command() -> None:
    done = subprocess.run([sys.executable, "-m", "minimx", "info"], capture_output=True,
                          text=True, check=True, cwd=Path(__file__).parents[2])
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"minimx {mx.__version__}, Python ")
    # a fresh process: the built-in backends only (tests here may register more)
    listed = lines[2].removeprefix("subgraph backends: ").split(", ")
    assert lines[2].startswith("subgraph backends: ")
    assert set(listed) == {"default", "DNNL", "MKLDNN", "DNNL_QUANTIZE", "MKLDNN_QUANTIZE"}
    if onednn.available():
        bf16 = "in hardware" if onednn.bf16_native() else "not in hardware: DNNL runs it in float32"
        assert lines[1] == (f"oneDNN {onednn.version()}, dispatching to {onednn.isa()} "
                            f"(bfloat16 {bf16})")


def test_summary_prints_print_summary(model: str, capsys) -> None:
    assert main(["summary", model, "--shape", SHAPE]) == 0
    sym = mx.sym.load(f"{model}-symbol.json")
    assert capsys.readouterr().out == mx.viz.summary(sym, shape={"data": (1, 3, 32, 32)})
    # without --shape, a data input is 1x3x224x224 (the help's default), shapes shown
    assert main(["summary", "resnet18_v1"]) == 0
    net = mx.models.get_model("resnet18_v1")
    assert capsys.readouterr().out == mx.viz.summary(net, shape={"data": (1, 3, 224, 224)})


def test_partition_reports_and_writes_the_partitioned_graph(model: str, capsys) -> None:
    require_onednn()
    assert main(["partition", model, "--shape", SHAPE, "--backend", "DNNL",
                 "-o", "part-symbol.json", "--dot", "part.dot"]) == 0
    out = capsys.readouterr().out
    assert "backend DNNL (DnnlProperty): 1 subgraph" in out
    assert re.search(r"fused: conv_bn x\d+, conv_bn_act x\d+, conv_bn_sum_postsum_act x\d+",
                     out)
    assert "convolutions run as Winograd F(4x4, 3x3):" in out
    steps = int(re.search(r"oneDNN steps: (\d+)", out).group(1))
    kernels = re.search(r"kernels: (.*)", out).group(1)
    assert steps == sum(int(n) for n in re.findall(r" x(\d+)", kernels))
    reorders = re.search(r"layout conversions \(reorders\): (\d+)", out)
    assert int(reorders.group(1)) == sum(int(n) for k, n in re.findall(r"(\S+) x(\d+)", kernels)
                                         if k.startswith("reorder["))
    part = mx.sym.load("part-symbol.json")
    assert [n.op for n in part._topo() if not n.is_variable] == ["_sg_dnnl"]
    assert part.list_arguments() == mx.sym.load(f"{model}-symbol.json").list_arguments()
    assert "subgraph cluster_sg_dnnl_0 {" in Path("part.dot").read_text()


def test_partition_says_what_was_left_out_and_why(tmp_path: Path, capsys,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    x = mx.sym.Convolution(mx.sym.var("data"), kernel=(3, 3), num_filter=4, name="conv0")
    mx.sym.Activation(x, act_type="softsign", name="act0").save("net.json")
    assert main(["partition", "net.json", "--backend", "default", "--shape",
                 "data=1,3,8,8"]) == 0
    out = capsys.readouterr().out
    assert "backend default (DefaultSubgraphProperty): 0 subgraphs, 2 operators left out" in out
    assert "  left out: Convolution is not in op_names: conv0\n" in out
    assert "  left out: Activation is not in op_names: act0\n" in out



def test_a_reader_that_stops_early_ends_the_command_quietly() -> None:
    # `minimx info | head -1`: the pipe closes before the command has written all.
    proc = subprocess.Popen([sys.executable, "-m", "minimx", "info"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=Path(__file__).parents[2])
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert err == ""

@pytest.mark.parametrize("backend", backends())
def test_run_gives_mxnets_output(model: str, backend: str, capsys) -> None:
    io = np.load(f"{model}-io.npz")
    np.save("x.npy", io["data"])
    assert main(["run", model, "--epoch", "0", "--input", "x.npy", "--backend", backend,
                 "-o", "out.npy"]) == 0
    np.testing.assert_allclose(np.load("out.npy"), io["output"], rtol=1e-4, atol=1e-5)
    assert main(["run", model, "--input", "x.npy", "--backend", backend, "--top-k", "3"]) == 0
    rows = re.findall(r"^  \[(\d)\] (.*)$", capsys.readouterr().out, re.M)
    assert len(rows) == len(io["output"])
    for row, text in rows:
        best = [int(k) for k in re.findall(r"(\d+): ", text)]
        assert best == list(np.argsort(io["output"][int(row)])[::-1][:3])


def test_bench_keeps_the_given_shapes_without_batch(tmp_path: Path, monkeypatch) -> None:
    # A time-major input: its first axis is the sequence, not the batch.
    seen: list[tuple] = []
    real = bench_command.bind

    def spy(m, shapes, backend):
        seen.append(dict(shapes))
        return real(m, shapes, backend)

    monkeypatch.setattr(bench_command, "bind", spy)
    x = mx.sym.var("data")
    net = mx.sym.RNN(x, mx.sym.var("params"), mx.sym.var("state"), state_size=4,
                     num_layers=1, mode="rnn_tanh")
    net.save(str(tmp_path / "rnn-symbol.json"))
    assert main(["bench", str(tmp_path / "rnn-symbol.json"), "--shape", "data=7,2,3",
                 "--backend", "NONE", "--warmup", "0", "--iterations", "1", "-q",
                 "--json", str(tmp_path / "b.json")]) == 0
    assert seen == [{"data": (7, 2, 3)}]
    assert json.loads((tmp_path / "b.json").read_text())["results"][0]["batch"] == 7


def test_bench_table_and_json(model: str, capsys) -> None:
    names = backends()
    assert main(["bench", model, "--shape", SHAPE, "--backend", ",".join(names),
                 "--batch", "1,2", "--warmup", "1", "--iterations", "3", "-q",
                 "--json", "bench.json"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("machine: ") and "\nthreads: OMP_NUM_THREADS=" in out
    record = json.loads(Path("bench.json").read_text())
    assert record["machine"]["cores"] >= 1 and record["iterations"] == 3
    got = [(r["backend"], r["batch"]) for r in record["results"]]
    assert got == [(b, n) for b in names for n in (1, 2)]
    for r in record["results"]:
        lat = r["latency_ms"]
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"]
        assert r["images_per_second"] == pytest.approx(r["batch"] / lat["mean"] * 1e3)
        assert re.search(rf"^{r['backend']} +{r['batch']} +{r['images_per_second']:.1f} ", out,
                         re.M)


@pytest.mark.parametrize("backend", backends())
def test_profile_writes_a_trace_and_the_table(model: str, backend: str, capsys) -> None:
    assert main(["profile", model, "--shape", SHAPE, "--backend", backend, "--forwards", "2",
                 "--memory", "-o", "trace.json"]) == 0
    out = capsys.readouterr().out
    events = check_trace(Path("trace.json"))
    assert "Device Storage" in out and "Memory: cpu/0" in out
    layers = [e for e in events if e["ph"] == "B" and e.get("cat") == "operator"]
    if backend == "NONE":
        convs = [e for e in layers if e.get("args", {}).get("op") == "Convolution"]
        assert len(convs) == 2 * 20   # 20 convolutions, two forwards
        assert re.search(r"^Convolution +40 ", out, re.M)
    else:
        steps = [e for e in events if e["ph"] == "B" and e.get("cat") == "onednn"]
        assert steps and re.search(r"^conv\[\S+\] +\d+ ", out, re.M)


def test_errors_are_one_line(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["summary", "no_such_model"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("minimx: error: 'no_such_model' is neither a checkpoint prefix")
    assert main(["bench", "resnet18_v1", "--shape", "data=1,x"]) == 1
    assert "expected NAME=D0,D1,..." in capsys.readouterr().err
    with pytest.raises(mx.MinimxError):
        main(["--traceback", "summary", "no_such_model"])
