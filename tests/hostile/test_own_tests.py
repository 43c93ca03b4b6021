"""Under `cases_from: variant` each variant runs its own tests. A "fix" that changes its
regression test instead of its code (the defect kept, the assertion bent) removes the
failure the control shows: that is no evidence, and the verdict says so (INCONCLUSIVE,
naming the test file). A fix that changes only its code, or its test's comments and
docstrings, still passes. Real runs of `csorch run --backend asan` over a Python subject
whose defect is a wrong result (the target: the case's failure in the plain run)."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
CALC = "def add(a, b):\n    return a - b  # the defect: it subtracts\n"
TEST = (
    "import os\nimport sys\n\n"
    "sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
    "from calc import add  # noqa: E402\n\n\n"
    "def test_add():\n    assert add(2, 2) == 4\n"
)
CONFIG = """\
name: own-tests
source: subject
cases_from: variant
variants:
  - name: fixed
    patches: [fix.patch]
    build: {kind: command, command: ["true"], outputs: []}
  - name: control
    build: {kind: command, command: ["true"], outputs: []}
runs: [{name: plain, checker: none}]
cases: [tests/test_calc.py]
expect: {controls: [control], fix: fixed}
"""


def _patch(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(lines)


def _run(tmp_path: Path, **changes: str) -> tuple[subprocess.CompletedProcess, dict]:
    """The run of the fix that changes calc.py (`calc`) and tests/test_calc.py (`test`)."""
    tree = tmp_path / "subject"
    (tree / "tests").mkdir(parents=True)
    (tree / "calc.py").write_text(CALC)
    (tree / "tests" / "test_calc.py").write_text(TEST)
    paths = {"calc": "calc.py", "test": "tests/test_calc.py"}
    patch = "".join(
        _patch(paths[k], (tree / paths[k]).read_text(), new) for k, new in changes.items()
    )
    (tmp_path / "fix.patch").write_text(patch)
    (tmp_path / "own.yaml").write_text(CONFIG)
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", "own.yaml", "--backend", "asan",
         "--out", "out", "--cache-dir", "cache"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip
    return done, json.loads((tmp_path / "out" / "results.json").read_text())


def test_a_fix_that_bends_its_own_test_does_not_pass(tmp_path: Path) -> None:
    done, results = _run(tmp_path, test=TEST.replace("== 4", "== 0"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert results["verdict"] == "inconclusive"
    (reason,) = [r for r in results["judgement"]["reasons"] if "own test" in r]
    assert reason.startswith("fix fixed changes its own test tests/test_calc.py against control")
    # the control's failure is gone from the fix: the test, not the code, made it so
    outcomes = {(a["variant"], a["outcome"]) for a in results["attempts"]}
    assert outcomes == {("control", "failed"), ("fixed", "passed")}


@pytest.mark.parametrize("reworded", [False, True])
def test_a_fix_of_the_code_passes_its_test_reworded_or_not(tmp_path: Path, reworded) -> None:
    # the code fixed; the test the same, or with a comment and a docstring added
    changes = {"calc": CALC.replace("a - b", "a + b")}
    if reworded:
        header = 'def test_add():\n    """2 and 2."""  # sums\n'
        changes["test"] = TEST.replace("def test_add():\n", header)
    done, results = _run(tmp_path, **changes)
    assert done.returncode == 0, done.stdout + done.stderr
    assert results["verdict"] == "pass"
    fixed = next(b for b in results["builds"] if b["variant"] == "fixed")
    assert [f.split()[0] for f in fixed["case_forms"]] == ["tests/test_calc.py"]


def _rehash(out: Path) -> None:
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["results"]["sha256"] = hashlib.sha256((out / "results.json").read_bytes()).hexdigest()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


@pytest.mark.parametrize("edit", ["same-as-control", "dropped"])
def test_a_fixs_own_tests_edited_in_results_json_do_not_verify(tmp_path: Path, edit) -> None:
    """The bent test's INCONCLUSIVE turned PASS by making the fix's recorded case files the
    control's (or none), the manifest re-hashed: verify reads them again from the tree the
    bundle keeps (its listing and the kept test file) and says results.json was edited."""
    done, results = _run(tmp_path, test=TEST.replace("== 4", "== 0"))
    out = tmp_path / "out"
    verified = subprocess.run(
        [sys.executable, "-m", "orchestrator", "verify", str(out)], capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    builds = {b["variant"]: b for b in results["builds"]}
    builds["fixed"]["case_forms"] = builds["control"]["case_forms"] if edit != "dropped" else []
    if edit == "dropped":
        builds["control"]["case_forms"] = []
    results["verdict"] = "pass"
    results["judgement"].update(verdict="pass", reasons=["fixed removes every target"])
    (out / "results.json").write_text(json.dumps(results, indent=1))
    _rehash(out)
    verified = subprocess.run(
        [sys.executable, "-m", "orchestrator", "verify", str(out), "--problems-only"],
        capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip
    assert verified.returncode == 1, verified.stdout + verified.stderr
    assert "own test files" in verified.stdout and "tests/test_calc.py differs" in verified.stdout
