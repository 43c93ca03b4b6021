"""Progress bars for builds and attempts, and one experiment run with them (`run_one`),
its table printed after: what run, gate and compare show while an experiment runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from orchestrator import host, proc
from orchestrator.cli.common import cannot_write, err, fail, interrupted, out
from orchestrator.errors import CsorchError
from orchestrator.model import Attempt, Build, Experiment
from orchestrator.model.job import Job
from orchestrator.report import table
from orchestrator.run import journal, pipeline
from orchestrator.run.options import Options

T = TypeVar("T")


class _Progress(pipeline.Events):
    """Rich progress bars for builds and attempts (called from worker threads)."""

    def __init__(self, progress: Progress, name: str = "") -> None:
        self.progress = progress
        self.at = f"{name}: " if name else ""  # several experiments at once: whose bar
        self.builds = progress.add_task(f"{self.at}building", total=0)
        self.runs = progress.add_task(f"{self.at}running", total=0)
        self.phases: dict[Job, str] = {}  # a cluster executor's jobs: queued/running/done

    def planned(self, variants: list[str], jobs: int) -> None:
        self.progress.update(self.builds, total=len(variants))
        self.progress.update(self.runs, total=jobs)

    def resumed(self, kept: int, dropped: int) -> None:
        again = (
            f"; {dropped} journaled record(s) not trusted (changed, torn or incomplete) run again"
            if dropped
            else ""
        )
        self.progress.console.print(
            f"resuming: {kept} finished attempt(s) kept (logs verified by digest){again}",
            highlight=False,
        )

    def build_started(self, variant: str) -> None:
        self.progress.update(self.builds, description=f"{self.at}building {variant}")

    def build_finished(self, build: Build) -> None:
        state = "cached" if build.cached else "built" if build.ok else "[red]FAILED[/]"
        self.progress.console.print(f"  {self.at}{build.variant}: {build.kind.value} {state}")
        self.progress.advance(self.builds)

    def attempt_started(self, job: Job) -> None:
        if self.phases:  # a cluster's queue: the counts say more than one name
            return
        self.progress.update(
            self.runs, description=f"{self.at}running {job.variant}/{job.run}/{job.case}"
        )

    def attempt_finished(self, attempt: Attempt) -> None:
        self.progress.advance(self.runs)

    def attempt_placed(self, job: Job, phase: str, node: str) -> None:
        self.phases[job] = phase
        counts = {p: list(self.phases.values()).count(p) for p in ("queued", "running", "done")}
        self.progress.update(
            self.runs,
            description=f"{self.at}slurm: {counts['queued']} queued, {counts['running']} running, "
            f"{counts['done']} done",
        )


def run_one(
    experiment: Experiment, options: Options, facts: host.Facts, resume: str = ""
) -> pipeline.RunResult:
    """Run one experiment with progress bars, then print its table. Ctrl-C or SIGTERM
    leave the bundle marked incomplete, print the command that resumes (`resume`, else
    `csorch run --resume OUT`) and exit INCONCLUSIVE."""
    start = time.monotonic()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    previous = proc.catch_signals()
    try:
        with Progress(*columns, console=err, transient=True) as progress:
            result = pipeline.run_experiment(experiment, options, facts, _Progress(progress))
    except KeyboardInterrupt:
        raise interrupted(resume or journal.resume_command("run", options.out)) from None
    # a resume refused (another run's journal, a changed source), or the host's facts
    # contradicting each other (HostMismatch)
    except CsorchError as exc:
        raise fail(exc) from None
    except OSError as exc:  # the disk is full, the bundle directory went away
        again = resume or journal.resume_command("run", options.out)
        raise cannot_write(exc, again, options.out) from None
    finally:
        proc.restore_signals(previous)
    out.print(
        table.render(
            experiment,
            result.builds,
            result.attempts,
            result.judgement,
            backend=options.backend,
            not_run=result.not_run,
        )
    )
    out.print(f"bundle: {result.bundle} ({time.monotonic() - start:.0f} s)", highlight=False)
    return result


def together(start: Callable[[Callable[[Experiment], pipeline.Events]], T]) -> T:
    """`start(events_for)` (a gate that may run its experiments at once) with one set of
    progress bars, a pair per experiment, shown from the first `events_for` call (a gate
    running one by one shows `run_one`'s bars instead); each experiment's table is the
    caller's to print afterwards (`table_of`)."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    progress = Progress(*columns, console=err, transient=True)
    shown = []

    def events_for(experiment: Experiment) -> pipeline.Events:
        if not shown:
            progress.start()
            shown.append(True)
        return _Progress(progress, experiment.name)

    try:
        return start(events_for)
    finally:
        if shown:
            progress.stop()


def table_of(result: pipeline.RunResult, backend: str) -> None:
    """Print one experiment's table and where its bundle is."""
    out.print(
        table.render(
            result.experiment,
            result.builds,
            result.attempts,
            result.judgement,
            backend=backend,
            not_run=result.not_run,
        )
    )
    out.print(f"bundle: {result.bundle}", highlight=False)
