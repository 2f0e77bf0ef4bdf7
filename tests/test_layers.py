"""The package's layers point one way (docs/design.md gives the order).

Every import of a minimx module, at the top of a file or inside a function,
must reach a lower layer or stay within its own package; an import inside a
function must carry a comment saying why it is not at the top.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "minimx"

# Bottom to top; a unit is a top-level module or package of minimx.
LAYERS = [
    ["base"],
    ["context", "formats", "onednn", "attribute", "name", "engine", "registry"],
    ["ops", "profiler", "recordio", "runtime", "util"],
    ["ndarray", "graph"],
    ["symbol", "interpreter", "io", "operator"],
    ["subgraph", "viz", "image"],
    ["executor", "backends"],
    ["model", "models", "initializer", "optimizer", "lr_scheduler", "metric", "monitor",
     "autograd"],
    ["kvstore"],
    ["gluon", "module"],
    ["contrib", "onnx", "callback", "rnn"],
    ["feedforward", "test_utils"],
    ["__init__"],
    ["commands"],
    ["__main__"],
]
LAYER_OF = {unit: k for k, units in enumerate(LAYERS) for unit in units}


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def unit_of(dotted: str) -> str:
    """The top-level unit of a dotted module path (``minimx.graph.node`` -> graph)."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> tuple[str, str]:
    """(dotted name, dotted package) of a file of the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), ".".join(parts[:-1])
    return ".".join(parts), ".".join(parts[:-1])


def imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The minimx modules (or names in them) one import statement reaches."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "minimx"]
    if node.level:
        base = package.split(".")[:len(package.split(".")) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if target.split(".")[0] != "minimx":
        return []
    if target == "minimx":  # `from minimx import onednn`, `from .. import engine`
        return [f"minimx.{a.name}" for a in node.names]
    return [target]


def function_level(tree: ast.Module) -> set[int]:
    """Line numbers of the imports inside functions."""
    lines = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines.update(n.lineno for n in ast.walk(fn)
                         if isinstance(n, (ast.Import, ast.ImportFrom)))
    return lines


def test_every_unit_has_a_layer():
    units = {unit_of(module_name(p)[0]) for p in modules()} - {"_dnnl"}
    assert units <= set(LAYER_OF), f"add to LAYERS: {sorted(units - set(LAYER_OF))}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path):
    name, package = module_name(path)
    own = unit_of(name) if name != "minimx" else "__init__"
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    upward = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in imported(node, package):
                unit = unit_of(target)
                if unit != own and LAYER_OF.get(unit, -1) >= LAYER_OF[own]:
                    upward.append(f"line {node.lineno}: {own} imports {target}")
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_inside_functions_say_why(path: Path):
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    silent = [n for n in sorted(function_level(ast.parse(source)))
              if "#" not in lines[n - 1] and not lines[n - 2].lstrip().startswith("#")]
    assert not silent, f"imports inside functions without a comment, lines {silent}"
