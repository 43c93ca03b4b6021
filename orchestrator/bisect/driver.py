"""Driving a bisection: the state file, the evaluator in a loop, events for a reporter.

    OUT/bisect.json      the search, the history and every step so far, rewritten
                         atomically after each step
    OUT/steps/NN-SHA/    each step's bundle, with probe.json (its decision) beside it

An interrupted bisection loses only the step in flight: `csorch bisect --resume OUT`,
or the same command again with the same --out, continues from the file, with every mark
re-derived from its step bundle (`rederive`), not read from it. A resume must
be the same search (config digest, repository, subdir, ends, direction, variant,
backend, repeats); anything else is refused rather than mixing the steps of two
searches. Nothing here prints: progress goes to a `Reporter`, which the CLI draws.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator import bisect
from orchestrator.backends import Choice
from orchestrator.bisect import evaluator
from orchestrator.bisect.evaluator import Evaluation, Subject
from orchestrator.bisect.state import Bisection, Commit, Mark, Status, round_of
from orchestrator.errors import CsorchError
from orchestrator.executors.base import Executor
from orchestrator.files import atomic_write, load_json
from orchestrator.host import Facts
from orchestrator.model import SourceSpec
from orchestrator.model.record import Record
from orchestrator.run import journal, options
from orchestrator.run.events import Listener
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
    probes: int = 1  # commits probed side by side in a round (multisection)


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


class Reporter(Listener):
    """The run listener (run/events.py) with a bisection's own steps: it hears each step's
    build and attempts too (when one commit is probed at a time)."""

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
        doc = load_json(path)
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


#: a step's mark and reason judged again from its bundle, or why it cannot be
JudgeAgain = Callable[[Step, Path], "tuple[Mark, str] | str"]


def rederive(out: Path, state: State, again: JudgeAgain) -> tuple[State, tuple[str, ...]]:
    """The state a resume continues from: every mark re-derived from its step's bundle
    (`again`, given the bundle's path), none taken from bisect.json, which anyone who can
    write could have edited; a mark bisect.json gives without a step counts for nothing. A
    step whose bundle cannot be judged again is dropped (its commit is probed again).
    Saved; with one line per step whose record was not believed."""
    steps_dir = (out / STEPS).resolve()
    bisection = dataclasses.replace(state.bisection, marks=())
    kept, notes = [], []
    for step in state.steps:
        name = f"step {step.number} ({step.commit.short})"
        rel = step.evaluation.bundle
        path = (out / rel).resolve() if rel is not None else None
        if path is None or not path.is_relative_to(steps_dir):
            notes.append(f"{name}: {STATE} names no step bundle under {STEPS}/: probed again")
            continue
        if not any(c.sha == step.commit.sha for c in bisection.commits):
            notes.append(f"{name}: not a commit of the range: dropped")
            continue
        got = again(step, path)
        if isinstance(got, str):
            notes.append(f"{name}: its bundle cannot be judged again ({got}): probed again")
            continue
        mark, reason = got
        if mark is not step.evaluation.mark:
            notes.append(
                f"{name}: {STATE} says {step.evaluation.mark.value}, its bundle says "
                f"{mark.value}: the bundle's mark stands"
            )
        evaluation = dataclasses.replace(step.evaluation, mark=mark, reason=reason)
        kept.append(dataclasses.replace(step, evaluation=evaluation))
        bisection = bisection.mark(step.commit.sha, mark)
    if len(state.bisection.marks) > len(state.steps):
        notes.append(f"{STATE} holds marks no step bundle backs: not believed")
    state = dataclasses.replace(state, bisection=bisection, steps=tuple(kept))
    save(out, state)
    return state, tuple(notes)


#: judges one commit's tree: (subject, source, options, facts, progress) -> Evaluation
Evaluate = Callable[[Subject, SourceSpec, Options, Facts, "Listener | None"], Evaluation]


def drive(
    out: Path,
    state: State,
    subj: Subject,
    facts: Facts,
    reporter: Reporter | None = None,
    executor: Executor | None = None,
    evaluate: Evaluate = evaluator.evaluate,
) -> State:
    """Probe until the answer is known, saving the state after every step. Raises
    BisectError when an end does not re-check as the search assumes; on Ctrl-C the
    state of the finished steps stays in `out`. `executor`: where each step's attempts
    run (None: here); `evaluate`: what judges a commit (default: a real run of the
    subject, `evaluator.evaluate`; a test or another tool may pass its own).

    With `settings.probes` J above 1, each round probes J commits side by side (the ends,
    then cuts of the range into J+1 parts: `state.round_of`), each in a thread of its
    own; the steps are saved as they finish, and Ctrl-C stops the round's runs
    (journal.Interrupted: it names the command that resumes)."""
    try:
        return _drive(out, state, subj, facts, reporter or Reporter(), executor, evaluate)
    except KeyboardInterrupt:
        raise journal.Interrupted("bisect", out) from None


def _drive(
    out: Path,
    state: State,
    subj: Subject,
    facts: Facts,
    reporter: Reporter,
    executor: Executor | None,
    evaluate: Evaluate,
) -> State:
    status = bisect.status(state.bisection)
    reporter.started(state, status)
    search, settings = state.search, state.settings
    probes = max(1, settings.probes)
    stop = threading.Event()

    def probe(number: int, commit: Commit) -> Evaluation:
        opts = options.make(
            Choice(search.backend, settings.reason),
            evaluator.fresh_dir(out / STEPS, f"{number:02d}-{commit.short}"),
            cache=settings.cache,
            work=out / ".work",
            jobs=settings.jobs,
            repeat=search.repeat,
            executor=executor,
            stop=stop if probes > 1 else None,
        )
        spec = evaluator.at_commit(search.repo, commit.sha, search.subdir)
        events = reporter if probes == 1 else None
        return evaluate(subj, spec, opts, facts, events)

    while picks := round_of(state.bisection, probes):
        first = max((s.number for s in state.steps), default=0) + 1
        numbered = [(first + k, commit, role) for k, (commit, role) in enumerate(picks)]
        for number, commit, _ in numbered:
            reporter.step_started(number, commit, status)
        if probes == 1:  # here, in the main thread: Ctrl-C reaches its run directly
            ((number, commit, role),) = numbered
            state = _record(out, state, Step(number, commit, role, probe(number, commit)))
            reporter.step_finished(state.steps[-1], state.bisection.remaining)
            status = bisect.status(state.bisection)
            continue
        with cf.ThreadPoolExecutor(max_workers=len(numbered)) as pool:
            running = {pool.submit(probe, n, c): (n, c, role) for n, c, role in numbered}
            try:
                for future in cf.as_completed(running):
                    number, commit, role = running[future]
                    evaluation = future.result()
                    state = _record(out, state, Step(number, commit, role, evaluation))
                    reporter.step_finished(state.steps[-1], state.bisection.remaining)
            except BaseException:
                stop.set()  # the other probes of the round stop their children
                raise
        status = bisect.status(state.bisection)
    return state


def _record(out: Path, state: State, step: Step) -> State:
    """`state` with `step` marked and kept, saved (its bundle made relative to OUT)."""
    ev = step.evaluation
    bundle = ev.bundle.relative_to(out.resolve()) if ev.bundle else None
    step = dataclasses.replace(step, evaluation=dataclasses.replace(ev, bundle=bundle))
    state = dataclasses.replace(
        state,
        bisection=state.bisection.mark(step.commit.sha, ev.mark),
        steps=(*state.steps, step),
        elapsed=state.elapsed + ev.duration,
    )
    save(out, state)
    return state
