"""Driving a bisection: the state file, the evaluator in a loop, events for a reporter.

    OUT/bisect.json      the search, the history and every step so far, rewritten
                         atomically after each step
    OUT/steps/NN-SHA/    each step's bundle, with probe.json (its decision) beside it

An interrupted bisection loses only the step in flight: `csorch bisect --resume OUT`,
or the same command again with the same --out, continues from the file. A resume must
be the same search (config digest, repository, subdir, ends, direction, variant,
backend, repeats); anything else is refused rather than mixing the steps of two
searches. Nothing here prints: progress goes to a `Reporter`, which the CLI draws.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from orchestrator import bisect
from orchestrator.bisect import evaluator as probe
from orchestrator.bisect.evaluator import Evaluation, Subject
from orchestrator.bisect.state import Bisection, Commit, Status
from orchestrator.errors import CsorchError
from orchestrator.executors.base import Executor
from orchestrator.files import atomic_write
from orchestrator.host import Facts
from orchestrator.model.record import Record
from orchestrator.run import journal, pipeline
from orchestrator.run.options import Options

STATE = "bisect.json"
SCHEMA = "csorch.bisect/1"
STEPS = "steps"


@dataclass(frozen=True)
class Search(Record):
    """What makes two bisections the same search (a resume must match it)."""

    config: Path
    config_sha256: str
    repo: str
    subdir: str
    good: str  # the old end's full sha (with find_fix it still shows the target)
    bad: str  # the new end's full sha
    find_fix: bool
    variant: str
    backend: str  # resolved: "asan" or "compute-sanitizer"
    repeat: int | None = None  # overrides the config's repeats


@dataclass(frozen=True)
class Settings(Record):
    """How the probes run; a later session may change these."""

    cache: Path
    jobs: int
    reason: str = ""  # why this backend


@dataclass(frozen=True)
class Step(Record):
    number: int  # from 1
    commit: Commit
    role: str  # bisect.NEW_END, OLD_END or MIDPOINT
    evaluation: Evaluation  # its bundle path is relative to OUT


@dataclass(frozen=True)
class State(Record):
    search: Search
    settings: Settings
    bisection: Bisection
    steps: tuple[Step, ...] = ()
    elapsed: float = 0.0  # seconds spent probing, over every session

    def commit(self, sha: str) -> Commit:
        return next(c for c in self.bisection.commits if c.sha == sha)


class Reporter:
    """Progress callbacks; `run_events` sees each step's build and attempts."""

    run_events: pipeline.Events | None = None

    def started(self, state: State, status: Status) -> None: ...
    def step_started(self, number: int, commit: Commit, status: Status) -> None: ...
    def step_finished(self, step: Step, remaining: int) -> None: ...


def resume_command(out: Path) -> str:
    """The command line that continues the bisection kept in `out`."""
    return journal.resume_command("bisect", out)


def save(out: Path, state: State) -> None:
    doc = {"schema": SCHEMA, "resume": resume_command(out), "state": state.to_dict()}
    atomic_write(out / STATE, json.dumps(doc, indent=1))


def load(out: Path) -> State | None:
    """The state kept in `out` (None when there is none); CsorchError if unreadable."""
    path = out / STATE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
        if doc.get("schema") != SCHEMA:
            raise ValueError(f"schema {doc.get('schema')!r}, expected {SCHEMA}")
        return State.from_dict(doc["state"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CsorchError(
            f"{path} is not a bisection state: {exc}", hint="give a new --out"
        ) from None


def begin(out: Path, search: Search, settings: Settings, commits: tuple[Commit, ...]) -> State:
    """The state to continue in `out` (fresh, or resumed when it is the same search)."""
    old = load(out)
    if old is None:
        if out.is_dir() and any(out.iterdir()):
            raise CsorchError(
                f"--out {out} is not empty and holds no bisection", hint="give a new directory"
            )
        state = State(search, settings, Bisection.start(commits, search.find_fix))
    elif old.search != search:
        differ = [
            f"{f.name} {getattr(old.search, f.name)!s:.12} -> {getattr(search, f.name)!s:.12}"
            for f in dataclasses.fields(Search)
            if getattr(old.search, f.name) != getattr(search, f.name)
        ]
        raise CsorchError(
            f"{out} holds another bisection ({'; '.join(differ)})",
            hint=f"continue it with `{resume_command(out)}`, or give a new --out",
        )
    else:
        state = dataclasses.replace(old, settings=settings)
    out.mkdir(parents=True, exist_ok=True)
    save(out, state)
    return state


def drive(
    out: Path,
    state: State,
    subj: Subject,
    facts: Facts,
    reporter: Reporter,
    executor: Executor | None = None,
) -> State:
    """Probe until the answer is known, saving the state after every step. Raises
    BisectError when an end does not re-check as the search assumes; on Ctrl-C the
    state of the finished steps stays in `out`. `executor`: where each step's attempts
    run (None: here)."""
    status = bisect.status(state.bisection)
    reporter.started(state, status)
    search, settings = state.search, state.settings
    while status.next is not None:
        commit, number = status.next, len(state.steps) + 1
        options = Options(
            backend=search.backend,
            reason=settings.reason,
            out=probe.fresh_dir(out / STEPS, f"{number:02d}-{commit.short}"),
            cache=settings.cache,
            work=out / ".work",
            jobs=settings.jobs,
            repeat=search.repeat,
            executor=executor,
        )
        reporter.step_started(number, commit, status)
        spec = probe.at_commit(search.repo, commit.sha, search.subdir)
        evaluation = probe.evaluate(subj, spec, options, facts, reporter.run_events)
        bundle = evaluation.bundle.relative_to(out.resolve()) if evaluation.bundle else None
        step = Step(number, commit, status.role, dataclasses.replace(evaluation, bundle=bundle))
        state = dataclasses.replace(
            state,
            bisection=state.bisection.mark(commit.sha, evaluation.mark),
            steps=(*state.steps, step),
            elapsed=state.elapsed + evaluation.duration,
        )
        save(out, state)
        reporter.step_finished(step, state.bisection.remaining)
        status = bisect.status(state.bisection)
    return state
