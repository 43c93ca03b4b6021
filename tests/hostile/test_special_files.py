"""What is not a regular file where csorch reads one back: a named pipe among a bundle's
logs or in place of one, in place of its manifest or journal, or in the user's source
tree; and JSON nested past the parser's depth. Opening a pipe that has no writer blocks
forever, so each try runs csorch as a child with a deadline: a hang fails the test by
its timeout, and every answer must be an exit code with the file named."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness import csorch, experiment, said

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "tests" / "fixtures" / "e2e"
DEADLINE = 90  # seconds; every try here answers in a few


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd, capture_output=True, text=True, timeout=DEADLINE,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip


def copy(src: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "bundle"
    shutil.copytree(src, dest, symlinks=True)
    return dest


def pipe_instead(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def checker_log(bundle: Path) -> Path:
    """The control's ASan channel file (the evidence of its finding)."""
    logs = bundle / "logs" / "control" / "memcheck" / "sum"
    found = [p for p in logs.glob("r0.launch0.checker.*") if ".started." not in p.name]
    assert len(found) == 1, sorted(p.name for p in logs.iterdir())
    return found[0]


def test_a_named_pipe_added_among_the_logs_does_not_verify(cprog_bundles, tmp_path):
    bundle = copy(cprog_bundles["pass"], tmp_path)
    os.mkfifo(bundle / "logs" / "extra.log")
    done = cli("verify", str(bundle), cwd=tmp_path)
    assert done.returncode == 1, said(done)
    assert "logs/extra.log" in said(done) and "a named pipe" in said(done)


@pytest.mark.parametrize("which", ["output log", "checker log"])
def test_a_named_pipe_in_place_of_a_log_is_no_evidence(cprog_bundles, tmp_path, which):
    bundle = copy(cprog_bundles["pass"], tmp_path)
    log = (
        bundle / "logs" / "control" / "memcheck" / "sum" / "r0.log"
        if which == "output log"
        else checker_log(bundle)
    )
    pipe_instead(log)
    done = cli("verify", str(bundle), cwd=tmp_path)
    assert done.returncode == 1, said(done)
    assert log.relative_to(bundle).as_posix() in said(done) and "named pipe" in said(done)
    judged = cli("compare", "--from", str(bundle), cwd=tmp_path)
    assert judged.returncode == 3, said(judged)  # inconclusive, never the stored PASS
    assert "does not verify" in said(judged)
    gated = cli("gate", str(E2E / "gate-cprog.yaml"), "--from", str(bundle),
                "--out", str(tmp_path / "gate"), cwd=tmp_path)  # fmt: skip
    assert gated.returncode == 3, said(gated)


def test_a_named_pipe_in_place_of_the_manifest_is_a_reason(cprog_bundles, tmp_path):
    bundle = copy(cprog_bundles["pass"], tmp_path)
    pipe_instead(bundle / "manifest.json")
    done = cli("verify", str(bundle), cwd=tmp_path)
    assert done.returncode in (1, 2, 3), said(done)
    assert "manifest.json" in said(done) and "named pipe" in said(done)
    assert "Traceback" not in said(done)


def test_a_named_pipe_in_place_of_the_journal_refuses_the_resume(cprog_bundles, tmp_path):
    bundle = copy(cprog_bundles["pass"], tmp_path)
    pipe_instead(bundle / "journal.jsonl")
    done = cli("run", "--resume", str(bundle), cwd=tmp_path)
    assert done.returncode in (2, 3), said(done)
    assert "journal.jsonl" in said(done) and "named pipe" in said(done)
    assert "Traceback" not in said(done)


@pytest.mark.parametrize("damage", ["nested", "huge number"])
def test_results_json_past_the_parser_is_a_reason_not_a_traceback(cprog_bundles, tmp_path, damage):
    bundle = copy(cprog_bundles["pass"], tmp_path)
    text = "[" * 200_000 + "]" * 200_000 if damage == "nested" else '{"a": ' + "9" * 6000 + "}"
    (bundle / "results.json").write_text(text)
    for verb in (("verify", str(bundle)), ("compare", "--from", str(bundle)),
                 ("report", str(bundle))):  # fmt: skip
        done = cli(*verb, cwd=tmp_path)
        assert "Traceback" not in said(done), (verb, said(done)[-3000:])
        assert done.returncode != 0 or verb[0] == "report", (verb, said(done))
        assert "results.json" in said(done), (verb, said(done))


def test_a_named_pipe_in_the_source_tree_is_refused_by_name(place: Path) -> None:
    os.mkfifo(place / "subject" / "events")
    done = csorch(place, "run", experiment(place), "--backend", "asan", "--out", "b",
                  timeout=DEADLINE)  # fmt: skip
    assert done.returncode == 3, said(done)
    assert "events (a named pipe)" in said(done), said(done)
    assert (place / "subject" / "events").exists()  # the user's tree as it was


@pytest.fixture
def nest():
    """nest(top, depth): `top`/a/a/.../a, `depth` directories below `top` (os.makedirs
    itself recurses), removed bottom-up afterwards (shutil.rmtree, pytest's clean-up of old
    temp dirs included, recurses too)."""
    made: list[Path] = []

    def make(top: Path, depth: int) -> Path:
        top.mkdir(exist_ok=True)
        here = top
        for _ in range(depth):
            here = here / "a"
            here.mkdir()
            made.append(here)
        (here / "deep.txt").write_text("at the bottom\n")
        return here

    yield make
    for here in reversed(made):
        for child in here.iterdir():
            if not child.is_dir() or child.is_symlink():
                child.unlink()
        here.rmdir()


def test_a_directory_nested_past_what_csorch_writes_does_not_verify(
    cprog_bundles, tmp_path, nest
):
    # 1500 levels: Python's own recursive walks (os.walk, rglob) fail near 1000
    bundle = copy(cprog_bundles["pass"], tmp_path)
    nest(bundle / "logs", 1500)
    done = cli("verify", str(bundle), cwd=tmp_path)
    assert done.returncode == 1, said(done)[-3000:]
    assert "directories deep" in said(done) and "Traceback" not in said(done)
    judged = cli("compare", "--from", str(bundle), cwd=tmp_path)
    assert judged.returncode == 3, said(judged)[-3000:]
    assert "Traceback" not in said(judged)


def test_a_source_tree_nested_past_the_bound_is_refused_by_name(place: Path, nest) -> None:
    nest(place / "subject" / "vendor", 1500)
    done = csorch(place, "run", experiment(place), "--backend", "asan", "--out", "b",
                  timeout=DEADLINE)  # fmt: skip
    assert done.returncode == 3, said(done)[-3000:]
    assert "nested more than 200 directories deep" in said(done), said(done)[-3000:]
    assert "Traceback" not in said(done)
