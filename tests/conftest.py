"""Options and fixtures shared by the test tree (registered here so that they work from
any path)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
E2E = ROOT / "tests" / "fixtures" / "e2e"

#: the C-program experiments behind `cprog_bundles`, by the verdict each one gets
CPROG_CONFIGS = {
    "pass": E2E / "c-oob.yaml",  # the fix removes the planted out-of-bounds read
    "fail": E2E / "c-oob-nofix.yaml",  # the "fix" only adds a comment
    "inconclusive": E2E / "c-oob-badpatch.yaml",  # the fix does not apply
}


def csorch_run(config: Path, out: Path, cache: Path, *, cwd: Path) -> subprocess.CompletedProcess:
    """`csorch run CONFIG --backend asan` in a child process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(config), "--backend", "asan",
         "--out", str(out), "--cache-dir", str(cache)],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip


def pytest_addoption(parser):
    parser.addoption(
        "--qext-device",
        action="append",
        choices=("cpu", "cuda"),
        help="device for the regression cases (repeatable; default: all present)",
    )


@pytest.fixture(scope="session")
def run_asan():
    """`csorch_run` for test modules (a fixture: `from conftest import` would find
    whichever conftest.py pytest imported first under that name)."""
    return csorch_run


@pytest.fixture(scope="session")
def cprog_bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real bundles of `csorch run --backend asan` over a tiny C program (seconds each):
    {"pass": ..., "fail": ..., "inconclusive": ...}. Read-only: copy one to change it."""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("the C-program bundles need gcc and make")
    tmp = tmp_path_factory.mktemp("cprog-bundles")
    bundles = {}
    for verdict, config in CPROG_CONFIGS.items():
        out = tmp / verdict
        done = csorch_run(config, out, tmp / "cache", cwd=tmp)
        expected = {"pass": 0, "fail": 1, "inconclusive": 3}[verdict]
        assert done.returncode == expected, done.stdout[-3000:] + done.stderr[-3000:]
        bundles[verdict] = out
    return bundles
