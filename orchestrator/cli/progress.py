"""The command line's listener (run/events.py): what run, gate and compare show while
their experiments run, progress bars for builds and attempts (a pair per experiment when
a gate runs several, with the time left estimated from the attempts so far), and what
each experiment's table looks like after. Where stderr is not a terminal (a CI log) the
bars are not drawn, so each finished attempt is a line of its own: a long GPU gate is
never silent."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from orchestrator import backends, sandbox
from orchestrator.cli.common import err, out
from orchestrator.model import Attempt, Build, Carried, Experiment
from orchestrator.model.job import Fanout, Job
from orchestrator.report import provenance, table
from orchestrator.run import runner
from orchestrator.run.events import Listener


class Shown(Listener):
    """The backend and devices chosen, printed, and Rich progress bars for builds and
    attempts (called from worker threads); `experiment` gives each experiment of a gate
    bars of its own, named for it."""

    def __init__(self, progress: Progress, name: str = "", lines: bool = False) -> None:
        self.progress = progress
        self.at = f"{name}: " if name else ""  # several experiments at once: whose bar
        self.builds = self.runs = -1  # the bars, once the run is planned
        self.phases: dict[Job, str] = {}  # a cluster executor's jobs: queued/running/done
        self.lines = lines  # a line per finished attempt: no bar is drawn
        self.done = self.total = 0
        self.carried = False  # the attempts finished from now on are a stored bundle's

    def backend(self, choice: backends.Choice) -> None:
        out.print(f"backend: [bold]{choice.backend}[/] ({choice.reason})", highlight=False)

    def devices(self, devices: tuple[str, ...], fanout: Fanout) -> None:
        out.print(f"devices: {','.join(devices)} ({fanout.value})", highlight=False)

    def experiment(self, experiment: Experiment) -> Listener:
        return Shown(self.progress, experiment.name, self.lines)

    def planned(self, variants: list[str], jobs: int) -> None:
        self.builds = self.progress.add_task(f"{self.at}building", total=len(variants))
        self.runs = self.progress.add_task(f"{self.at}running", total=jobs)
        self.total = jobs

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
        if self.progress.tasks[self.builds].finished:  # not the last variant's name
            self.progress.update(self.builds, description=f"{self.at}built")

    def attempt_started(self, job: Job) -> None:
        if self.phases:  # a cluster's queue: the counts say more than one name
            return
        self.progress.update(
            self.runs, description=f"{self.at}running {job.variant}/{job.run}/{job.case}"
        )

    def attempt_finished(self, attempt: Attempt) -> None:
        self.progress.advance(self.runs)
        self.done += 1
        if self.progress.tasks[self.runs].finished:  # not the last attempt's name
            self.progress.update(self.runs, description=f"{self.at}ran")
        if self.lines:
            # a carried attempt is the stored one: it did not run now
            how = "carried: " if self.carried else ""
            self.progress.console.print(
                f"  [{self.done}/{self.total}] {escape(self.at)}{how}{escape(said(attempt))}",
                highlight=False,
                soft_wrap=True,
            )

    def carry_decided(self, carried: Carried | None, why_not: str) -> None:
        self.carried = carried is not None
        if carried is not None:
            said = f"[bold]carried[/]: {escape(carried.headline())}"
        else:
            said = f"not carried, running every attempt: {escape(why_not)}"
        self.progress.console.print(f"  {escape(self.at)}{said}", highlight=False, soft_wrap=True)

    def attempt_placed(self, job: Job, phase: str, node: str) -> None:
        self.phases[job] = phase
        counts = {p: list(self.phases.values()).count(p) for p in ("queued", "running", "done")}
        self.progress.update(
            self.runs,
            description=f"{self.at}slurm: {counts['queued']} queued, {counts['running']} running, "
            f"{counts['done']} done",
        )


def said(attempt: Attempt) -> str:
    """One finished attempt in a line: where, how it ended, what the checker found."""
    where = f"{attempt.variant}/{attempt.run}/{attempt.case} r{attempt.repeat}"
    if not attempt.conclusive:
        return f"{where}: inconclusive ({attempt.inconclusive_reason})"
    records = attempt.parse.records if attempt.parse is not None else 0
    found = f", {records} finding record(s)" if records else ""
    return f"{where}: {attempt.outcome.value}{found}"


@contextmanager
def shown() -> Iterator[Shown]:
    """The listener, its bars drawn (on stderr, gone once done) while the block runs;
    where stderr is no terminal, a line per finished attempt instead."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=True) as progress:
        yield Shown(progress, lines=not err.is_terminal)


def table_of(result: runner.RunResult, backend: str, seconds: float | None = None) -> None:
    """Print one experiment's table and where its bundle is (and how long it took)."""
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
    took = f" ({seconds:.0f} s)" if seconds is not None else ""
    fact = sandbox.probe().fact
    if provenance.unsandboxed(fact):
        out.print(f"[bold yellow]sandbox: {escape(fact)}[/]: builds and attempts ran unsandboxed")
    out.print(f"bundle: {result.bundle}{took}", highlight=False)
