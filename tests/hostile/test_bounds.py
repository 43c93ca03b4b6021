"""Bounds, locks, signals and messages: sizes that would exhaust memory are refused at
load, one session at a time holds a bundle, a second signal cannot cut the shutdown
short, and usage errors say what was expected (exit 2)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from harness import csorch, experiment, git, said, start

#: a case that outlives its attempt's stop: it ignores SIGTERM, so csorch's shutdown
#: waits out the grace before its SIGKILL
SLOW = "[{name: slow, command: [sh, -c, 'trap \"\" TERM; sleep 20']}]"


def wait_for(predicate, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def test_huge_repeats_in_a_config_are_refused_at_load(place: Path) -> None:
    config = experiment(place, repeats=1_000_000_000_000)
    done = csorch(place, "run", config, "--backend", "asan", "--out", "out", timeout=60)
    assert done.returncode == 2, said(done)[-3000:]
    assert "repeats" in done.stderr and "at most 10,000" in done.stderr
    assert "Traceback" not in said(done)


def test_a_plan_too_large_is_refused_at_load(place: Path) -> None:
    cases = "[" + ", ".join(f"{{name: c{i}, command: [./pick]}}" for i in range(20)) + "]"
    config = experiment(place, repeats=5_000, cases=cases)
    done = csorch(place, "run", config, "--backend", "asan", "--out", "out", timeout=60)
    assert done.returncode == 2, said(done)[-3000:]
    assert "attempts" in done.stderr and "100,000" in done.stderr


def test_a_huge_repeat_flag_is_a_usage_error(place: Path) -> None:
    config = experiment(place)
    done = csorch(place, "run", config, "--backend", "asan", "--out", "o", "--repeat", "1000000000")
    assert done.returncode == 2, said(done)[-3000:]
    assert "MemoryError" not in said(done) and "Traceback" not in said(done)


def test_a_source_that_contains_the_work_directory_is_refused(place: Path) -> None:
    inner = place / "subject" / "inner"  # the cache, and its work dir, in the source
    inner.mkdir()
    config = experiment(place, source=str(place / "subject"))
    done = csorch(place, "run", config, "--backend", "asan", "--out", place / "out",
                  "--cache-dir", inner / "cache")  # fmt: skip
    assert "RecursionError" not in said(done) and "Traceback" not in said(done)
    # refused up front, before the cache (and its work directory) is made in the source
    assert done.returncode == 2, said(done)[-3000:]
    assert "is inside the source tree" in said(done) and not (inner / "cache").exists()


def test_two_sessions_cannot_hold_one_bundle(place: Path) -> None:
    config = experiment(place, cases=SLOW.replace("sleep 20", "sleep 4"), expect=False,
                        runs="[{name: plain, checker: none}]")  # fmt: skip
    first = start(place, "run", config, "--backend", "asan", "--out", "b")
    try:
        wait_for(lambda: list((place / "b" / "logs").rglob("r0.log")))
        second = csorch(place, "run", "--resume", "b", timeout=60)
        assert second.returncode == 2, said(second)[-3000:]
        assert "in use by another csorch session" in second.stderr
        first.communicate(timeout=120)
    finally:
        first.kill()
    doc = json.loads((place / "b" / "results.json").read_text())
    # the first run's case ran to its end: the second one killed nothing of it
    assert [a["nodes"][0]["outcome"] for a in doc["attempts"]] == ["passed", "passed"]
    sessions = [
        json.loads(line)
        for line in (place / "b" / "journal.jsonl").read_text().splitlines()
        if '"session"' in line and '"kind":"session"' in line
    ]
    assert sessions == []  # the second never reopened the journal


def test_a_second_signal_does_not_cut_the_shutdown_short(place: Path) -> None:
    config = experiment(place, cases=SLOW, expect=False, runs="[{name: plain, checker: none}]")
    run = start(place, "run", config, "--backend", "asan", "--out", "b")
    try:
        wait_for(lambda: list((place / "b" / "logs").rglob("r0.log")))
        time.sleep(0.5)
        run.send_signal(signal.SIGINT)
        time.sleep(0.02)
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 3, stderr[-3000:]
    assert "resume with" in stderr
    doc = json.loads((place / "b" / "results.json").read_text())
    assert doc["interrupted"] is True and doc["complete"] is False


# --- messages ----------------------------------------------------------------------------


def test_a_cache_dir_that_is_a_file_is_a_usage_error(place: Path) -> None:
    (place / "cachefile").write_text("")
    config = experiment(place)
    done = csorch(place, "run", config, "--backend", "asan", "--cache-dir", "cachefile")
    assert done.returncode == 2, said(done)[-3000:]
    assert "--cache-dir cachefile is a file" in done.stderr


@pytest.fixture
def bundle(place: Path) -> Path:
    done = csorch(place, "run", experiment(place), "--backend", "asan", "--out", "b")
    assert done.returncode == 0, said(done)[-3000:]
    return place / "b"


def test_gate_from_out_a_file_is_a_usage_error(place: Path, bundle: Path) -> None:
    (place / "afile").write_text("")
    done = csorch(place, "gate", "exp.yaml", "--from", bundle, "--out", "afile")
    assert done.returncode == 2, said(done)[-3000:]
    assert "--out afile is a file" in done.stderr


def test_resume_with_another_out_is_refused(place: Path, bundle: Path) -> None:
    done = csorch(place, "run", "--resume", bundle, "--out", "elsewhere")
    assert done.returncode == 2, said(done)[-3000:]
    assert "--out elsewhere with --resume" in done.stderr
    assert not (place / "elsewhere").exists()


def test_a_resume_refused_for_repeat_says_so(place: Path, bundle: Path) -> None:
    done = csorch(place, "run", "--resume", bundle, "--repeat", "2")
    assert done.returncode == 2, said(done)[-3000:]
    assert "repeat None -> 2" in done.stderr


def test_bisect_in_a_directory_that_is_no_repository(place: Path) -> None:
    config = experiment(place)
    done = csorch(place, "bisect", config, "--good", "HEAD~1", "--bad", "HEAD",
                  "--repo", place / "subject", "--backend", "asan")  # fmt: skip
    assert done.returncode == 2, said(done)[-3000:]
    assert "not a git repository" in done.stderr
    assert "unknown ref" not in done.stderr


def test_a_gate_that_lists_itself_names_the_kind_expected(place: Path) -> None:
    experiment(place)
    gate = place / "gate.yaml"
    gate.write_text("name: g\nexperiments: [exp.yaml, gate.yaml]\n")
    done = csorch(place, "gate", gate, "--backend", "asan", "--out", "g")
    assert done.returncode == 2, said(done)[-3000:]
    assert "this is a gate config; an experiment config" in done.stderr


def test_report_policy_given_an_experiment_names_the_kind_expected(
    place: Path, bundle: Path
) -> None:
    done = csorch(place, "report", bundle, "--policy", "exp.yaml")
    assert done.returncode == 2, said(done)[-3000:]
    assert "this is an experiment config; a gate config" in done.stderr


def test_bisect_subdir_outside_the_repository_is_refused(place: Path) -> None:
    repo = place / "repo"
    repo.mkdir()
    (repo / "ext").mkdir()
    for f in (place / "subject").iterdir():
        (repo / "ext" / f.name).write_bytes(f.read_bytes())
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    config = experiment(place, source=str(repo / "ext"))
    outside = place / "outside"
    outside.mkdir()
    done = csorch(place, "bisect", config, "--good", "HEAD~1", "--bad", "HEAD",
                  "--subdir", "../../..", "--backend", "asan")  # fmt: skip
    assert done.returncode == 2, said(done)[-3000:]
    assert "leads outside the repository" in done.stderr
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"],
                          capture_output=True, text=True).stdout == ""  # fmt: skip
