"""gatedir: the gate directory's manifest, and `csorch verify GATE_DIR`, over a real gate
run (`csorch gate tests/fixtures/e2e/gate-cprog.yaml --backend asan`: a C program built
twice with make, four attempts; about 10 s on 2 cores, once for the module), tampered
with in copies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.bundle.verify import Kind, Status
from orchestrator.gate import manifest as gatedir

ROOT = Path(__file__).resolve().parents[3]
GATE = ROOT / "tests" / "fixtures" / "e2e" / "gate-cprog.yaml"

pytestmark = [
    pytest.mark.process,  # builds and runs under ASan
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("gcc") is None or shutil.which("make") is None,
        reason="the C-program gate needs gcc and make",
    ),
]


def csorch(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], cwd=cwd, capture_output=True, text=True,
        timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip


@pytest.fixture(scope="module")
def gate_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("gate")
    done = csorch("gate", str(GATE), "--backend", "asan", "--out", str(tmp / "g"),
                  "--cache-dir", str(tmp / "cache"), cwd=tmp)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return tmp / "g"


@pytest.fixture
def copy(gate_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(gate_dir, tmp_path / "g"))


def test_the_gate_writes_a_manifest_over_its_files_and_bundles(gate_dir: Path) -> None:
    doc = json.loads((gate_dir / "manifest.json").read_text())
    assert doc["schema"] == gatedir.SCHEMA
    assert set(doc["files"]) == {"gate.json", "report.md", "gate-run.json"}
    assert set(doc["bundles"]) == {"c-oob"}
    result = gatedir.verify_gate(gate_dir)
    assert result.ok
    kinds = {c.kind for c in result.checks if c.status is Status.OK}
    assert {Kind.GATE, Kind.BUNDLE, Kind.RESULTS, Kind.LOG} <= kinds
    assert any(c.path.startswith("c-oob/logs/") for c in result.checks)  # the bundle's own
    done = csorch("verify", str(gate_dir), cwd=gate_dir.parent)
    assert done.returncode == 0 and "0 mismatch, 0 missing, 0 unlisted" in done.stdout


def failing(root: Path) -> list[tuple[str, str, str]]:
    checks = gatedir.verify_gate(root).checks
    return [(c.kind.value, c.path, c.status.value) for c in checks if c.status is not Status.OK
            and c.status is not Status.NOT_CHECKABLE]  # fmt: skip


@pytest.mark.parametrize("name", ["gate.json", "report.md"])
def test_an_edited_gate_file_fails(copy: Path, name: str) -> None:
    with (copy / name).open("a") as f:
        f.write("\n")
    assert failing(copy) == [("gate", name, "mismatch")]
    done = csorch("verify", str(copy), cwd=copy.parent)
    assert done.returncode == 1 and "FAILED" in done.stdout


def test_a_tampered_log_inside_a_bundle_fails(copy: Path) -> None:
    log = next((copy / "c-oob" / "logs").rglob("*.log"))
    log.write_text("clean, honestly\n")
    rel = log.relative_to(copy).as_posix()
    assert ("log", rel, "mismatch") in failing(copy)


def test_a_swapped_bundle_fails_even_though_it_verifies_alone(copy: Path) -> None:
    manifest = copy / "c-oob" / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["command"] = ["an", "other", "run"]  # the bundle is self-consistent, but not the one judged
    manifest.write_text(json.dumps(doc))
    assert failing(copy) == [("bundle", "c-oob", "mismatch")]


def test_added_and_removed_things_fail(copy: Path) -> None:
    (copy / "extra.txt").write_text("x")
    shutil.rmtree(copy / "c-oob")
    assert failing(copy) == [("bundle", "c-oob", "missing"), ("gate", "extra.txt", "unlisted")]


def test_a_gate_directory_without_manifest_does_not_verify(copy: Path) -> None:
    (copy / "manifest.json").unlink()
    assert failing(copy) == [("gate", "manifest.json", "missing")]
    done = csorch("verify", str(copy), cwd=copy.parent)
    assert done.returncode == 1 and "has no manifest" in done.stdout


def test_a_bundle_whose_json_is_not_an_object_is_a_clear_error(copy: Path, gate_dir: Path):
    (copy / "c-oob" / "results.json").write_text("[1, 2, 3]")
    report = csorch("report", str(copy / "c-oob"), cwd=copy.parent)
    assert report.returncode == 2 and "results.json is list JSON, not an object" in report.stderr
    assert "Traceback" not in report.stderr
    gate = csorch("gate", str(GATE), "--from", str(copy), cwd=copy.parent)
    assert gate.returncode == 3, gate.stdout + gate.stderr  # inconclusive, never "fail" (1)
    assert "not an object" in gate.stdout and "Traceback" not in gate.stderr
    shutil.copy(gate_dir / "c-oob" / "results.json", copy / "c-oob" / "results.json")
    (copy / "c-oob" / "manifest.json").write_text("[]")
    report = csorch("report", str(copy / "c-oob"), cwd=copy.parent)
    assert report.returncode == 2 and "manifest.json is list JSON, not an object" in report.stderr
    gate = csorch("gate", str(GATE), "--from", str(copy / "c-oob"), cwd=copy.parent)
    assert gate.returncode == 3 and "Traceback" not in gate.stderr, gate.stdout + gate.stderr


def test_a_gate_that_cannot_write_its_evidence_does_not_pass(gate_dir: Path, tmp_path: Path):
    (tmp_path / "file").write_text("x")
    done = csorch("gate", str(GATE), "--from", str(gate_dir), "--out", str(tmp_path / "file"),
                  cwd=tmp_path)  # fmt: skip
    # refused before anything is judged: a usage error naming the path, never a PASS
    # (a gate.json that cannot be written after the judgement: tests/unit/gate/test_pipeline)
    assert done.returncode == 2 and "is a file" in done.stderr, done.stdout + done.stderr
    assert "gate: PASS" not in done.stdout
    assert "Traceback" not in done.stderr


def test_a_leftover_temporary_is_unlisted_until_the_gate_resumes(copy: Path) -> None:
    """An atomic write's temporary file is evidence of nothing: verify names it, and the
    gate's next write of its directory (a resume) clears it."""
    partial = copy / ".gate.json.4242-0badc0de.tmp"
    partial.write_text('{"verdict": "PASS"')
    assert failing(copy) == [("gate", partial.name, "unlisted")]
    done = csorch("gate", "--resume", str(copy), "--cache-dir", str(copy.parent / "cache"),
                  cwd=copy.parent)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not partial.exists() and failing(copy) == []
