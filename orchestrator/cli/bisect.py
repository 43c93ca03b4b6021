"""`csorch bisect` and `csorch probe`: the commit that brought (or removed) a target
signature, and one tree judged for `git bisect run`.

Exit codes. bisect: 0 the commit was found; 3 inconclusive (skips leave several
candidates, an end did not re-check as the search assumes, or the run was interrupted:
the command that resumes it is printed); 2 usage (arguments, config, missing checker).
probe speaks `git bisect run`'s protocol: 0 good (the target is absent), 1 bad (it shows
in k of N repeats), 125 skip (the tree cannot be tested: no build, a patch that does not
apply, inconclusive or flaky evidence), and 128 when csorch itself cannot judge (bad
arguments or config, a missing checker, Ctrl-C): git stops on a code above 127, where
1-127 would have marked the commit bad and 125 silently skipped every commit.
"""

from __future__ import annotations

import enum
import os
import signal
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from typer.core import TyperCommand

from orchestrator import cache, host
from orchestrator.bisect import driver, evaluator, history
from orchestrator.bisect.state import Commit, Mark, Status, status
from orchestrator.cli.common import ExitCode, app, choose_backend, err, fail, interrupt, out
from orchestrator.cli.run import interrupted
from orchestrator.cli.slurm import ExecutorOpt, SlurmOpt, executor_for
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import BisectError, CsorchError
from orchestrator.files import file_digest
from orchestrator.model import Build, SourceKind, SourceSpec, TargetPattern
from orchestrator.run import pipeline
from orchestrator.run.options import Options

MARK_STYLE = {Mark.BAD: "bold red", Mark.GOOD: "bold green", Mark.SKIP: "yellow"}


class ProbeExit(enum.IntEnum):
    GOOD = 0
    BAD = 1
    SKIP = 125
    ABORT = 128


PROBE_EXIT = {Mark.GOOD: ProbeExit.GOOD, Mark.BAD: ProbeExit.BAD, Mark.SKIP: ProbeExit.SKIP}


class _GitProtocol(TyperCommand):
    """Bad arguments abort `git bisect run` (128) instead of marking the commit bad (2)."""

    def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
        try:
            return super().parse_args(ctx, args)
        except typer.TyperException as exc:
            if getattr(exc, "exit_code", None) == ExitCode.USAGE:
                exc.exit_code = ProbeExit.ABORT  # type: ignore[attr-defined]
            raise


def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


class _StepEvents(pipeline.Events):
    def __init__(self, progress: Progress, task: int) -> None:
        self.progress, self.task = progress, task
        self.prefix = ""

    def build_started(self, variant: str) -> None:
        self.progress.update(self.task, description=f"{self.prefix}: building")

    def build_finished(self, build: Build) -> None:
        state = "cached" if build.cached else "built" if build.ok else "build failed"
        self.progress.update(self.task, description=f"{self.prefix}: {state}, running")


class _Reporter(driver.Reporter):
    """One line per step, and a spinner with the step in flight."""

    def __init__(self, progress: Progress, targets: tuple[TargetPattern, ...]) -> None:
        self.progress, self.targets = progress, targets
        self.task = progress.add_task("", total=None)
        self.step = _StepEvents(progress, self.task)
        self.run_events = self.step

    def started(self, state: driver.State, status: Status) -> None:
        s, commits = state.search, state.bisection.commits
        wanted = "no longer shows" if s.find_fix else "shows"
        targets = "; ".join(_label(t) for t in self.targets)
        self.progress.console.print(
            f"bisecting {len(commits)} commits (first parent) of {s.repo}"
            f"{'/' + s.subdir if s.subdir else ''}: {commits[0].short} (--good) .. "
            f"{commits[-1].short} (--bad), for the first commit that {wanted} [{targets}]",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        if state.steps:
            self.progress.console.print(f"resuming after step {len(state.steps)}", highlight=False)

    def step_started(self, number: int, commit: Commit, status: Status) -> None:
        self.step.prefix = f"step {number} {commit.short} ({status.role})"
        left = f", about {status.steps_left} steps left"
        self.progress.update(self.task, description=self.step.prefix + left)

    def step_finished(self, step: driver.Step, remaining: int) -> None:
        ev = step.evaluation
        style = MARK_STYLE[ev.mark]
        self.progress.console.print(
            f"step {step.number:>2}  {step.commit.short}  {step.role:<8}  "
            f"[{style}]{ev.mark.value.upper():<4}[/]  {escape(ev.reason)}  "
            f"({ev.build}, {ev.duration:.0f} s; {remaining} candidate(s) left)",
            highlight=False,
            soft_wrap=True,
        )


def _label(target: TargetPattern) -> str:
    return " ".join(f"{k}={v}" for k, v in target.to_dict().items() if v not in ("", None))


def _answer(state: driver.State, result: Status, out_dir: Path, wall: float) -> int:
    steps = state.steps
    skipped = sum(1 for s in steps if s.evaluation.mark is Mark.SKIP)
    word = "first fixed commit" if state.search.find_fix else "first bad commit"
    if result.found is not None:
        out.print(
            f"{word}: [bold]{result.found.sha}[/] {escape(result.found.subject)}",
            highlight=False,
            soft_wrap=True,
        )
    else:
        out.print(
            f"inconclusive: skipped commits leave {len(result.candidates)} candidates; "
            f"the {word} is one of:",
            highlight=False,
        )
        for c in result.candidates:
            mark = state.bisection.mark_of(c.sha)
            out.print(
                f"  {c.sha} {escape(c.subject)}" + (f"  ({mark.value})" if mark else ""),
                highlight=False,
                soft_wrap=True,
            )
    out.print(
        f"steps: {len(steps)} ({skipped} skipped); wall time {wall:.0f} s this session, "
        f"{state.elapsed:.0f} s probing in all; evidence: {out_dir / driver.STEPS}",
        highlight=False,
        soft_wrap=True,
    )
    return ExitCode.PASS if result.found is not None else ExitCode.INCONCLUSIVE


@dataclass(frozen=True)
class _Asked:
    """The search as the command line (or a saved state) gives it."""

    config: Path
    good: str
    bad: str
    repo: Path | None
    subdir: str | None
    find_fix: bool
    backend: str
    variant: str | None
    repeat: int | None


def _resumed(resume: Path, cache_dir: Path | None, jobs: int | None) -> tuple[_Asked, Path, int]:
    """The saved search in `resume`, and its settings unless given again."""
    old = driver.load(resume)
    if old is None:
        raise CsorchError(f"{resume} holds no bisection ({driver.STATE} is missing)")
    s = old.search
    if not s.config.is_file() or file_digest(s.config) != s.config_sha256:
        raise CsorchError(
            f"{s.config} changed since the bisection started",
            hint="restore it, or start a new bisection with a new --out",
        )
    asked = _Asked(
        s.config, s.good, s.bad, Path(s.repo), s.subdir, s.find_fix, s.backend, s.variant, s.repeat
    )
    return asked, cache_dir or old.settings.cache, jobs or old.settings.jobs


def _prepare(
    asked: _Asked, out_dir: Path | None, cache_dir: Path | None, jobs: int | None
) -> tuple[Path, driver.State, evaluator.Subject, host.Facts]:
    """Everything a bisection needs before its first probe; CsorchError on bad input."""
    experiment = load_experiment(asked.config)
    choice, facts = choose_backend(asked.backend)
    subj = evaluator.subject(experiment, asked.variant, choice.backend)
    repo, sub = evaluator.locate(experiment, subj.variant, asked.repo, asked.subdir)
    good, bad = history.resolve(repo, asked.good), history.resolve(repo, asked.bad)
    commits = history.chain(repo, good, bad)
    out_dir = (out_dir or Path("results") / f"bisect-{experiment.name}-{_stamp()}").resolve()
    search = driver.Search(
        config=asked.config.resolve(),
        config_sha256=file_digest(asked.config),
        repo=repo,
        subdir=sub,
        good=good,
        bad=bad,
        find_fix=asked.find_fix,
        variant=subj.variant,
        backend=choice.backend,
        repeat=asked.repeat,
    )
    settings = driver.Settings(
        cache=Path(cache_dir or cache.DEFAULT_DIR).resolve(),
        jobs=jobs or min(os.cpu_count() or 1, 8),
        reason=choice.reason,
    )
    return out_dir, driver.begin(out_dir, search, settings, commits), subj, facts


@app.command("bisect")
def bisect_command(
    config: Annotated[Path | None, typer.Argument(help="the experiment config (YAML)")] = None,
    good: Annotated[
        str | None,
        typer.Option(help="the older end (with --find-fix: it still shows the target)"),
    ] = None,
    bad: Annotated[str | None, typer.Option(help="the newer end")] = None,
    repo: Annotated[
        Path | None, typer.Option(help="the git repository (default: the config's source's)")
    ] = None,
    subdir: Annotated[
        str | None, typer.Option(help="the subject's directory in the repository, e.g. ext")
    ] = None,
    find_fix: Annotated[
        bool, typer.Option("--find-fix", help="find the first commit without the target")
    ] = False,
    backend: Annotated[str, typer.Option(help="auto | compute-sanitizer | asan")] = "auto",
    variant: Annotated[
        str | None,
        typer.Option(help="the variant built at each commit (default: the one without patches)"),
    ] = None,
    repeat: Annotated[int | None, typer.Option(min=1, help="N for every run")] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out", help="state and step bundles (default: results/bisect-<name>-<time>)"
        ),
    ] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="the build cache")] = None,
    jobs: Annotated[int | None, typer.Option(min=1, help="child processes at once")] = None,
    resume: Annotated[
        Path | None, typer.Option(help="continue the bisection kept in this --out directory")
    ] = None,
    executor: ExecutorOpt = None,
    slurm: SlurmOpt = None,
) -> None:
    """Find the first commit that shows the config's target signature (or, with
    --find-fix, the first that no longer does)."""
    start = time.monotonic()
    try:
        if resume is not None:
            asked, cache_dir, jobs = _resumed(resume, cache_dir, jobs)
            out_dir = resume
        elif config is None or not good or not bad:
            raise CsorchError(
                "give CONFIG, --good and --bad (or --resume OUT)",
                hint="csorch bisect CONFIG --good REF --bad REF [--find-fix]",
            )
        else:
            asked = _Asked(config, good, bad, repo, subdir, find_fix, backend, variant, repeat)
        out_path, state, subj, facts = _prepare(asked, out_dir, cache_dir, jobs)
        runner = executor_for(subj.experiment, executor, slurm)
    except CsorchError as exc:  # a BisectError here is a range that is not one: usage
        raise fail(exc) from None
    out.print(
        f"backend: [bold]{state.search.backend}[/] ({state.settings.reason})", highlight=False
    )
    out.print(f"state: {out_path / driver.STATE}", highlight=False)
    previous = signal.signal(signal.SIGTERM, interrupt)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    try:
        with Progress(*columns, console=err, transient=True) as progress:
            reporter = _Reporter(progress, subj.targets)
            state = driver.drive(out_path, state, subj, facts, reporter, runner)
    except KeyboardInterrupt:
        raise interrupted(driver.resume_command(out_path)) from None
    except BisectError as exc:
        err.print(f"evidence: {out_path / driver.STEPS}", highlight=False, soft_wrap=True)
        raise _inconclusive(exc) from None
    except CsorchError as exc:  # the host or the cache, not a commit, failed
        raise fail(exc) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    answer = status(state.bisection)
    raise typer.Exit(_answer(state, answer, out_path, time.monotonic() - start))


def _inconclusive(exc: CsorchError) -> typer.Exit:
    err.print(
        f"[bold yellow]inconclusive:[/] {escape(exc.message)}", highlight=False, soft_wrap=True
    )
    if exc.hint:
        err.print(f"[dim]hint:[/] {escape(exc.hint)}", highlight=False, soft_wrap=True)
    return typer.Exit(ExitCode.INCONCLUSIVE)


def _probe_spec(
    subj: evaluator.Subject, repo: Path | None, ref: str | None, subdir: str | None
) -> tuple[str, SourceSpec]:
    """(a label for the bundle, the source to judge): a commit with --repo/--ref/--subdir,
    else the variant's own source (the work tree `git bisect run` has checked out)."""
    if repo is None and ref is None and subdir is None:
        spec = subj.experiment.source
        if spec.kind is SourceKind.PATH:
            return (history.head(Path(spec.location))[:10] or "tree"), spec
        sha = history.resolve(spec.location, spec.ref) if Path(spec.location).is_dir() else ""
        return (sha[:10] or "tree"), spec
    repo_dir, sub = evaluator.locate(subj.experiment, subj.variant, repo, subdir)
    sha = history.resolve(repo_dir, ref or "HEAD")
    return sha[:10], evaluator.at_commit(repo_dir, sha, sub)


@app.command("probe", cls=_GitProtocol)
def probe_command(
    config: Annotated[Path, typer.Argument(help="the experiment config (YAML)")],
    variant: Annotated[
        str | None,
        typer.Option(help="the variant to build (default: the one without patches)"),
    ] = None,
    backend: Annotated[str, typer.Option(help="auto | compute-sanitizer | asan")] = "auto",
    repo: Annotated[Path | None, typer.Option(help="judge a commit of this repository")] = None,
    ref: Annotated[str | None, typer.Option(help="the commit (default: HEAD)")] = None,
    subdir: Annotated[str | None, typer.Option(help="the subject's directory in it")] = None,
    repeat: Annotated[int | None, typer.Option(min=1, help="N for every run")] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="each probe adds a bundle DIR/<time>-<commit>")
    ] = Path("results") / "probe",
    cache_dir: Annotated[Path, typer.Option(help="the build cache")] = cache.DEFAULT_DIR,
    jobs: Annotated[int | None, typer.Option(min=1, help="child processes at once")] = None,
) -> None:
    """Judge one tree for `git bisect run`: exit 0 good, 1 bad (the target shows in k of
    N repeats), 125 skip (untestable), 128 csorch cannot judge (stops git bisect)."""
    try:
        experiment = load_experiment(config)
        choice, facts = choose_backend(backend)
        subj = evaluator.subject(experiment, variant, choice.backend)
        label, spec = _probe_spec(subj, repo, ref, subdir)
    except CsorchError as exc:
        fail(exc)  # prints; the exit code is git's "abort"
        raise typer.Exit(ProbeExit.ABORT) from None
    options = Options(
        backend=choice.backend,
        reason=choice.reason,
        out=evaluator.fresh_dir(out_dir.resolve(), f"{_stamp()}-{label}"),
        cache=cache_dir,
        work=out_dir.resolve() / ".work",
        jobs=jobs or min(os.cpu_count() or 1, 8),
        repeat=repeat,
    )
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        evaluation = evaluator.evaluate(subj, spec, options, facts)
    except KeyboardInterrupt:
        err.print("interrupted", highlight=False)
        raise typer.Exit(ProbeExit.ABORT) from None
    except CsorchError as exc:  # the host's facts contradict each other: no commit judged
        fail(exc)
        raise typer.Exit(ProbeExit.ABORT) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    style = MARK_STYLE[evaluation.mark]
    out.print(
        f"probe {label} ({choice.backend}): [{style}]{evaluation.mark.value.upper()}[/] "
        f"{escape(evaluation.reason)} ({evaluation.build}, {evaluation.duration:.0f} s); "
        f"bundle: {evaluation.bundle}",
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(PROBE_EXIT[evaluation.mark])
