"""bisector: the state file that lets an interrupted bisection resume, and only the same
search resume from it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from orchestrator.bisect import driver as bisector
from orchestrator.bisect.evaluator import Evaluation
from orchestrator.bisect.state import Commit, Mark
from orchestrator.errors import CsorchError

COMMITS = tuple(Commit(f"{i}" * 40, f"commit {i}") for i in range(1, 6))
SEARCH = bisector.Search(
    config=Path("/c/rng.yaml"),
    config_sha256="ab" * 32,
    repo="/r",
    subdir="ext",
    good=COMMITS[0].sha,
    bad=COMMITS[-1].sha,
    find_fix=False,
    variant="patched",
    backend="asan",
)
SETTINGS = bisector.Settings(cache=Path("/cache"), jobs=2, reason="asked for")


def test_a_fresh_state_is_saved_before_the_first_step(tmp_path: Path) -> None:
    out = tmp_path / "b"
    state = bisector.begin(out, SEARCH, SETTINGS, COMMITS)
    assert state.steps == () and state.bisection.commits == COMMITS
    doc = json.loads((out / bisector.STATE).read_text())
    assert doc["schema"] == bisector.SCHEMA
    assert doc["resume"] == f"csorch bisect --resume {out}"
    assert bisector.load(out) == state


def test_the_same_search_resumes_with_its_steps(tmp_path: Path) -> None:
    out = tmp_path / "b"
    state = bisector.begin(out, SEARCH, SETTINGS, COMMITS)
    ev = Evaluation(Mark.BAD, "the target in 1 of 1", COMMITS[-1].sha, bundle=Path("steps/01"))
    step = bisector.Step(1, COMMITS[-1], "new end", ev)
    state = dataclasses.replace(
        state, bisection=state.bisection.mark(COMMITS[-1].sha, Mark.BAD), steps=(step,)
    )
    bisector.save(out, state)
    faster = dataclasses.replace(SETTINGS, jobs=8)  # settings may change between sessions
    again = bisector.begin(out, SEARCH, faster, COMMITS)
    assert again.steps == (step,) and again.settings.jobs == 8
    assert again.bisection.mark_of(COMMITS[-1].sha) is Mark.BAD


def test_another_search_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "b"
    bisector.begin(out, SEARCH, SETTINGS, COMMITS)
    other = dataclasses.replace(SEARCH, find_fix=True)
    with pytest.raises(CsorchError, match="holds another bisection .*find_fix") as info:
        bisector.begin(out, other, SETTINGS, COMMITS)
    assert "csorch bisect --resume" in info.value.hint


def test_a_directory_with_other_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text("{}")
    with pytest.raises(CsorchError, match="not empty"):
        bisector.begin(tmp_path, SEARCH, SETTINGS, COMMITS)


def test_a_damaged_state_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / bisector.STATE).write_text('{"schema": "csorch.bisect/0"}')
    with pytest.raises(CsorchError, match="not a bisection state"):
        bisector.load(tmp_path)
    assert bisector.load(tmp_path / "absent") is None
