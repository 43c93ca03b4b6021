"""cli.scan: `csorch scan -- COMMAND` on real subjects (the C program under ASan, a pytest
file), as a user types it: the table, the bundle, the exit code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process  # builds and runs a checker in a child process

ROOT = Path(__file__).resolve().parents[3]
CPROG = ROOT / "tests" / "fixtures" / "e2e" / "cprog"


def csorch(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd, capture_output=True, text=True, timeout=240,
        env={**clean, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **env},
    )  # fmt: skip


@pytest.fixture
def gcc() -> None:
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("the C subject needs gcc and make")


def test_scan_of_the_c_program_finds_its_overflow(tmp_path: Path, gcc) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("## an earlier step\n")
    done = csorch(
        "scan", "--backend", "asan", "--source", str(CPROG), "--build", "make",
        "--out", "b", "--cache-dir", "cache", "--", "./pick",
        cwd=tmp_path, GITHUB_STEP_SUMMARY=str(summary),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "heap-buffer-overflow read size 4 in sum" in done.stdout
    assert "verdict: FAIL" in done.stdout and "bundle: " in done.stdout
    results = json.loads((tmp_path / "b" / "results.json").read_text())
    assert results["verdict"] == "fail" and results["complete"] is True
    assert [v["name"] for v in results["experiment"]["variants"]] == ["tree"]
    # the user's tree is scanned on a copy: no binary left in it
    assert not (CPROG / "pick").exists()
    # under GitHub Actions the Markdown section is appended to the job summary
    text = summary.read_text()
    assert text.startswith("## an earlier step\n") and "scan-cprog" in text
    assert "heap-buffer-overflow" in text
    report = csorch("report", "b", "--format", "sarif", cwd=tmp_path)
    assert report.returncode == 0 and '"ruleId": "asan.heap-buffer-overflow.' in report.stdout


def test_scan_of_a_clean_pytest_file_passes(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    done = csorch(
        "scan", "--backend", "asan", "--source", "t", "--out", "b", "--cache-dir", "cache",
        "--", "pytest", "t/test_ok.py", "-q",
        cwd=tmp_path, GITHUB_STEP_SUMMARY=str(tmp_path / "t"),  # a directory: unwritable
    )  # fmt: skip
    # a summary that cannot be written is a warning; the verdict stands
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: $GITHUB_STEP_SUMMARY" in done.stderr
    assert "test_ok" in done.stdout and "verdict: PASS" in done.stdout
    assert json.loads((tmp_path / "b" / "results.json").read_text())["verdict"] == "pass"


def test_a_build_that_fails_is_inconclusive_and_nothing_to_scan_is_usage(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    done = csorch(
        "scan", "--backend", "asan", "--source", "src", "--build", "false",
        "--out", "b", "--cache-dir", "cache", "--", "./prog",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "tree did not build" in done.stdout
    empty = csorch("scan", "--backend", "asan", "--", cwd=tmp_path)
    assert empty.returncode == 2


def test_a_checker_the_backend_cannot_serve_is_refused_before_any_build(tmp_path: Path) -> None:
    """racecheck has no CPU stand-in: on the ASan backend it is a usage error up front,
    not a build and then an inconclusive run."""
    done = csorch(
        "scan", "--backend", "asan", "--checker", "racecheck", "--source", str(CPROG),
        "--build", "make", "--out", str(tmp_path / "out"),
        "--cache-dir", str(tmp_path / "cache"), "--", "./pick",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--checker racecheck on the asan backend" in " ".join(done.stderr.split())
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache" / "entries").exists()
