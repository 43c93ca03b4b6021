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


# --- the driver with its evaluator passed in: the search itself, no build, no process ----

HISTORY = tuple(Commit(f"{i:02d}" * 20, f"commit {i}") for i in range(24))


def scripted(first_bad: int, skips: frozenset[int] = frozenset(), seen: list | None = None):
    """An evaluator that marks commit i bad from `first_bad` on (skips: untestable)."""
    index = {c.sha: i for i, c in enumerate(HISTORY)}

    def evaluate(subj, spec, options, facts, events) -> Evaluation:
        i = index[spec.ref]
        if seen is not None:
            seen.append(i)
        mark = Mark.SKIP if i in skips else Mark.BAD if i >= first_bad else Mark.GOOD
        bundle = options.out.resolve()
        return Evaluation(mark, f"scripted {mark.value}", spec.ref, bundle=bundle, duration=1.0)

    return evaluate


def _search(tmp_path: Path) -> tuple[Path, bisector.State]:
    search = dataclasses.replace(SEARCH, good=HISTORY[0].sha, bad=HISTORY[-1].sha)
    out = tmp_path / "b"
    return out, bisector.begin(out, search, SETTINGS, HISTORY)


@pytest.mark.parametrize("first_bad", [1, 7, 12, 23])
def test_the_driver_finds_the_first_bad_commit_with_any_evaluator(
    tmp_path: Path, first_bad: int
) -> None:
    out, state = _search(tmp_path)
    seen: list[int] = []
    done = bisector.drive(out, state, None, None, evaluate=scripted(first_bad, seen=seen))
    answer = bisector.bisect.status(done.bisection)
    assert answer.found == HISTORY[first_bad]
    # both ends are re-checked first, then about log2(24) midpoints
    assert seen[:2] == [23, 0] and len(seen) <= 2 + 5
    assert [s.commit.sha for s in done.steps] == [HISTORY[i].sha for i in seen]
    assert done.elapsed == len(seen)
    # every step was saved as it finished: a resume starts from the same record
    assert bisector.load(out) == done


def test_skips_leave_the_candidates_they_cannot_tell_apart(tmp_path: Path) -> None:
    out, state = _search(tmp_path)
    done = bisector.drive(out, state, None, None, evaluate=scripted(12, skips=frozenset({11})))
    answer = bisector.bisect.status(done.bisection)
    assert answer.found is None
    assert [c.sha for c in answer.candidates] == [HISTORY[11].sha, HISTORY[12].sha]


def test_three_probes_a_round_run_side_by_side_and_agree(tmp_path: Path) -> None:
    import threading

    out, state = _search(tmp_path)
    state = dataclasses.replace(state, settings=dataclasses.replace(SETTINGS, probes=3))
    together = threading.Barrier(3, timeout=10)  # the first round's three probes meet here
    calls = iter(range(1000))
    inner = scripted(12)

    def evaluate(subj, spec, options, facts, events) -> Evaluation:
        assert options.stop is not None  # each run can be stopped by the round
        if next(calls) < 3:
            together.wait()
        return inner(subj, spec, options, facts, events)

    done = bisector.drive(out, state, None, None, evaluate=evaluate)
    assert bisector.bisect.status(done.bisection).found == HISTORY[12]
    numbers = sorted(s.number for s in done.steps)
    assert len(numbers) <= 9 and numbers == list(range(1, len(numbers) + 1))
    assert bisector.load(out) == done


# --- a resume re-derives every mark from its step bundle --------------------------------


def test_a_resume_takes_each_mark_from_its_step_bundle_not_from_the_state(
    tmp_path: Path,
) -> None:
    out, state = _search(tmp_path)
    done = bisector.drive(out, state, None, None, evaluate=scripted(12))
    assert bisector.bisect.status(done.bisection).found == HISTORY[12]
    truth = {s.commit.sha: s.evaluation.mark for s in done.steps}
    # bisect.json edited: the first bad commit's step says good, and a mark no step backs
    doc = json.loads((out / bisector.STATE).read_text())
    edited = next(s for s in doc["state"]["steps"] if s["commit"]["sha"] == HISTORY[12].sha)
    edited["evaluation"]["mark"] = "good"
    doc["state"]["bisection"]["marks"] = [
        [sha, "good" if sha == HISTORY[12].sha else mark]
        for sha, mark in doc["state"]["bisection"]["marks"]
    ] + [[HISTORY[13].sha, "good"]]
    (out / bisector.STATE).write_text(json.dumps(doc))
    believed = bisector.load(out)
    assert believed is not None and believed.bisection.mark_of(HISTORY[12].sha) is Mark.GOOD

    def again(step: bisector.Step, bundle: Path):  # what its bundle says, judged again
        assert bundle == (out / step.evaluation.bundle).resolve()
        return truth[step.commit.sha], "judged again"

    state, notes = bisector.rederive(out, believed, again)
    assert state.bisection.mark_of(HISTORY[12].sha) is Mark.BAD
    assert state.bisection.mark_of(HISTORY[13].sha) is None
    assert bisector.bisect.status(state.bisection).found == HISTORY[12]
    assert any("says good, its bundle says bad" in n for n in notes), notes
    assert any("no step bundle backs" in n for n in notes), notes
    assert bisector.load(out) == state  # saved


def test_a_step_whose_bundle_cannot_be_judged_again_is_probed_again(tmp_path: Path) -> None:
    out, state = _search(tmp_path)
    done = bisector.drive(out, state, None, None, evaluate=scripted(12))
    doc = json.loads((out / bisector.STATE).read_text())
    doc["state"]["steps"][0]["evaluation"]["bundle"] = "../../elsewhere"
    (out / bisector.STATE).write_text(json.dumps(doc))
    loaded = bisector.load(out)
    assert loaded is not None

    def judged(step: bisector.Step, bundle: Path):
        if step.number == 2:
            return "its bundle does not verify"
        return step.evaluation.mark, "judged again"

    state, notes = bisector.rederive(out, loaded, judged)
    assert [s.number for s in state.steps] == [s.number for s in done.steps][2:]
    assert state.bisection.mark_of(done.steps[0].commit.sha) is None  # probed again
    assert any("names no step bundle" in n for n in notes)
    assert any("cannot be judged again (its bundle does not verify)" in n for n in notes)
    again_done = bisector.drive(out, state, None, None, evaluate=scripted(12))
    assert bisector.bisect.status(again_done.bisection).found == HISTORY[12]
