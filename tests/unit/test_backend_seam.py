"""The backend seam: nothing outside `orchestrator/backends/` asks which backend it holds.

Everything that varies by checker is a method or attribute of `backends.base.Backend`
(its build flags and sanitizer, wrapping a launch, reading a launch's channel, what a
Slurm task needs, what `doctor` says), so a new backend is a subpackage and its entry in
`backends.KINDS`, not an edit in every layer. The rule, read from every module's syntax
tree: outside `backends/`, no comparison (`==`, `!=`, `in`, `not in`) has a sanitizing
backend's name as a literal operand (the names in `backends.KINDS`, and
`compute_sanitizer`), and no `isinstance` names a backend class. A backend's name may
still be data: a key a bundle records, a config's `pytest_args` per backend (looked up
with `backend.name`, compared with nothing).
"""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator import backends

PACKAGE = Path(backends.__file__).resolve().parents[1]
NAMES = frozenset({*backends.KINDS, "compute_sanitizer"})
CLASSES = frozenset({"Asan", "ComputeSanitizer", "NoChecker", "Backend"})


def _literal_names(node: ast.expr) -> set[str]:
    """The backend names among a literal operand (a string, or a tuple/list/set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {n for e in node.elts for n in _literal_names(e)}
    return set()


def _class_names(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Name):
        return {node.id} & CLASSES
    if isinstance(node, ast.Attribute):
        return {node.attr} & CLASSES
    if isinstance(node, ast.Tuple):
        return {n for e in node.elts for n in _class_names(e)}
    return set()


def branches(source: str) -> list[str]:
    """Each place in `source` that branches on a backend's name or type, as `line: text`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = (node.left, *node.comparators)
            named = {n for operand in operands for n in _literal_names(operand)}
            if named:
                found.append(f"{node.lineno}: compares with {sorted(named)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and _class_names(node.args[1])
        ):
            found.append(f"{node.lineno}: isinstance({sorted(_class_names(node.args[1]))})")
    return found


def test_the_rule_sees_a_branch_on_a_backend() -> None:
    assert branches('if backend == "asan":\n    pass\n') == ["1: compares with ['asan']"]
    assert branches('x = b not in ("asan", "compute-sanitizer")\n')
    assert branches("ok = isinstance(checker, backends.Asan)\n")
    assert branches('key = case.args_for(backend.name)\nif kind == "none":\n    pass\n') == []


def test_no_module_outside_backends_branches_on_a_backend() -> None:
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if (PACKAGE / "backends") not in p.parents]
    assert len(outside) > 50
    found = {
        str(p.relative_to(PACKAGE.parent)): hits
        for p in outside
        if (hits := branches(p.read_text(encoding="utf-8")))
    }
    assert found == {}, "ask the backend object instead (backends/base.py): " + repr(found)
