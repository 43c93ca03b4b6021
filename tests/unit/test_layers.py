"""The layout's rule, read from the code: each module imports only from its own package or
a lower layer (docs/architecture.md gives the order), and no module imports itself back
through a circle. Imports under `if TYPE_CHECKING:` count too: a type that needs an
upward import is a sign the type sits in the wrong layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "orchestrator"

#: lowest first; a module may import from its own layer or any earlier one
LAYERS = (
    "errors",
    "files",
    "model",
    "sandbox",
    "proc",
    "host",
    "cache",
    "findings",
    "config",
    "markers",
    "backends",
    "executors",
    "judge",
    "carry",
    "bundle",
    "run",
    "gate",
    "bisect",
    "report",
    "cli",
)
RANK = {name: i for i, name in enumerate(LAYERS)}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The orchestrator modules `path` imports (a `from pkg import name` counts as
    pkg.name when that is a module, else pkg)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("orchestrator")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("orchestrator"):
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
    return found


MODULES = {_module(p): p for p in ROOT.rglob("*.py")}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "root"


def test_every_package_has_a_layer() -> None:
    top = {_layer(m) for m in MODULES} - {"root", "__main__", "__init__"}
    assert top <= set(LAYERS), f"packages with no layer: {sorted(top - set(LAYERS))}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_import(module: str) -> None:
    mine = _layer(module)
    if mine not in RANK:  # orchestrator/__init__ and __main__ sit above everything
        return
    upward = [
        m
        for m in sorted(_imports(MODULES[module]))
        if _layer(m) in RANK and RANK[_layer(m)] > RANK[mine]
    ]
    assert not upward, f"{module} ({mine}) imports from higher layers: {upward}"


def test_no_circle() -> None:
    graph = {m: {i for i in _imports(p) if i in MODULES and i != m} for m, p in MODULES.items()}
    # a package's __init__ re-exporting its modules is not a circle with them
    for m in graph:
        graph[m] = {i for i in graph[m] if not (m.startswith(i + ".") and i in MODULES)}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = path[path.index(n) :] + [n]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_rule_sees_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a module of a low layer that imports the CLI is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from orchestrator.cli import common\nimport orchestrator.report\n")
    assert _imports(bad) == {"orchestrator.cli.common", "orchestrator.report"}
    assert RANK[_layer("orchestrator.cli.common")] > RANK["findings"]
