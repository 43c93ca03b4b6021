"""The progress journal: durable lines, torn and altered lines dropped, identity checks,
log digests. Real files in a temp dir; the runs that write journals are in
tests/e2e/test_faults.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.model import Attempt, Build, BuildKind, Outcome
from orchestrator.run import journal
from orchestrator.run.journal import Journal, ResumeError, attempt_logs, intact
from tests import factories

IDENTITY = {"experiment": "e" * 64, "config_sha256": "c" * 64, "backend": "asan"}


def _attempt(case: str = "sum", repeat: int = 0) -> Attempt:
    return factories.attempt(
        "control", "memcheck", case, repeat, outcome=Outcome.ERROR, log=Path("logs/x.log")
    )


def _begin(tmp_path: Path) -> Journal:
    return Journal.create(tmp_path, IDENTITY, {"jobs": 2}, ["csorch", "run", "x"], "t0")


def _log(tmp_path: Path, stem: str, text: str = "hello\n") -> Path:
    path = tmp_path / "logs" / f"{stem}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_attempts_and_builds_come_back(tmp_path: Path) -> None:
    j = _begin(tmp_path)
    _log(tmp_path, "control/memcheck/sum/r0")
    j.record(_attempt(), tmp_path, "control/memcheck/sum/r0")
    j.record_build(Build("control", BuildKind.COMMAND, ok=True, cache_key="k"), None)
    back = Journal.read(tmp_path)
    assert back.identity == IDENTITY and back.settings == {"jobs": 2}
    assert back.command == ["csorch", "run", "x"] and back.started == "t0"
    [(attempt, logs)] = back.attempts
    assert attempt == _attempt() and list(logs) == ["logs/control/memcheck/sum/r0.log"]
    assert back.builds["control"][0].cache_key == "k" and back.dropped == 0


def test_a_torn_last_line_is_dropped_and_cut_before_the_next_append(tmp_path: Path) -> None:
    j = _begin(tmp_path)
    j.record(_attempt(repeat=0), tmp_path, "a/r0")
    with open(j.path, "a") as f:  # a SIGKILL in the middle of an append
        f.write('{"kind": "attempt", "attempt": {"varia')
    back = Journal.read(tmp_path)
    assert len(back.attempts) == 1 and back.dropped == 1
    back.reopen(["csorch", "run", "--resume", "x"])
    back.record(_attempt(repeat=1), tmp_path, "a/r1")
    again = Journal.read(tmp_path)
    assert [a.repeat for a, _ in again.attempts] == [0, 1] and again.dropped == 0


def test_an_altered_line_is_not_trusted(tmp_path: Path) -> None:
    j = _begin(tmp_path)
    j.record(_attempt(), tmp_path, "a/r0")
    lines = j.path.read_text().splitlines()
    lines[1] = lines[1].replace('"outcome":"error"', '"outcome":"passed"')
    assert '"outcome":"passed"' in lines[1]
    j.path.write_text("\n".join(lines) + "\n")
    back = Journal.read(tmp_path)
    assert back.attempts == [] and back.dropped == 1


@pytest.mark.parametrize("content", ["", "not json\n", json.dumps({"kind": "begin"}) + "\n"])
def test_no_journal_or_a_damaged_header_is_a_clear_error(tmp_path: Path, content: str) -> None:
    if content:
        (tmp_path / journal.JOURNAL).write_text(content)
    with pytest.raises(ResumeError) as caught:
        Journal.read(tmp_path)
    assert str(tmp_path) in caught.value.message


def test_differences_name_what_changed(tmp_path: Path) -> None:
    j = _begin(tmp_path)
    assert j.differences(IDENTITY) == []
    changed = j.differences({**IDENTITY, "backend": "compute-sanitizer"})
    assert changed == ["backend asan -> compute-sanitizer"]


def test_intact_needs_the_same_files_with_the_same_digests(tmp_path: Path) -> None:
    stem = "control/memcheck/sum/r1"
    _log(tmp_path, stem)
    _log(tmp_path, "control/memcheck/sum/r10")  # another attempt: not this one's
    j = _begin(tmp_path)
    j.record(_attempt(repeat=1), tmp_path, stem)
    [(_, logs)] = Journal.read(tmp_path).attempts
    assert [p.name for p in attempt_logs(tmp_path, stem)] == ["r1.log"]
    assert intact(tmp_path, logs, stem)
    _log(tmp_path, stem, "hello, changed\n")
    assert not intact(tmp_path, logs, stem)
    _log(tmp_path, stem)
    (tmp_path / "logs" / f"{stem}.launch1.log").write_text("a second launch\n")
    assert not intact(tmp_path, logs, stem)  # a file the journal does not account for
    (tmp_path / "logs" / f"{stem}.launch1.log").unlink()
    (tmp_path / "logs" / f"{stem}.log").unlink()
    assert not intact(tmp_path, logs, stem)


def test_resume_commands_are_alike() -> None:
    assert journal.resume_command("run", "out dir") == "csorch run --resume 'out dir'"
    assert journal.resume_command("gate", "g") == "csorch gate --resume g"
