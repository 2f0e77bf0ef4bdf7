"""Every `minimx` command of the README's walkthrough, run on a small checkpoint.

The checkpoint is the 10-class ResNet-18 v1 of tests/fixtures/models, saved
under the README's prefix; inputs are 32x32 rather than 224x224 and batches
1 and 2 rather than 1 and 16, and bench runs few iterations, so that the
walkthrough runs in seconds. Nothing else about the commands changes.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

from minimx.commands import main
from tests.onednn_required import require_onednn
from tests.trace_schema import check_trace

ROOT = Path(__file__).parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "models" / "resnet18_v1_narrow"
SECTION = "## The `minimx` command, for an MXNet model owner"
# README text -> what the test runs instead (each must occur in the walkthrough)
SMALLER = {"data=1,3,224,224": "data=1,3,32,32", "--batch 1,16": "--batch 1,2",
           "--json bench.json": "--json bench.json --warmup 1 --iterations 2 -q"}


def walkthrough() -> list[str]:
    """The commands of the section's first shell block."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index(SECTION):]
    block = section[section.index("```sh\n") + 6:]
    block = block[:block.index("```")]
    return [line for line in block.splitlines() if line.startswith("minimx ")]


def test_walkthrough_covers_every_command() -> None:
    commands = walkthrough()
    assert [shlex.split(c)[1] for c in commands] == \
        ["info", "summary", "partition", "run", "bench", "profile"]
    for readme_text in SMALLER:
        assert any(readme_text in c for c in commands), readme_text


def test_every_walkthrough_command_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    require_onednn()   # the walkthrough uses the DNNL backend
    for suffix in ("-symbol.json", "-0000.params"):
        shutil.copy(f"{FIXTURE}{suffix}", tmp_path / f"resnet18_v1{suffix}")
    io = np.load(f"{FIXTURE}-io.npz")
    np.save(tmp_path / "image.npy", io["data"])
    monkeypatch.chdir(tmp_path)
    outputs = {}
    for command in walkthrough():
        for readme_text, smaller in SMALLER.items():
            command = command.replace(readme_text, smaller)
        argv = shlex.split(command)[1:]
        assert main(argv) == 0, command
        outputs[argv[0]] = capsys.readouterr().out
    assert outputs["info"].startswith("minimx ")
    assert "Total params: " in outputs["summary"]
    assert "backend DNNL (DnnlProperty): 1 subgraph" in outputs["partition"]
    assert Path("resnet18_v1-dnnl-symbol.json").exists() and Path("resnet18_v1.dot").exists()
    best = [int(k) for k in re.findall(r"(\d+): ", outputs["run"].splitlines()[1])]
    assert best == list(np.argsort(io["output"][0])[::-1][:5])
    assert len(json.loads(Path("bench.json").read_text())["results"]) == 4
    assert "operator\n=================" in outputs["profile"]
    assert check_trace(Path("profile.json"))
