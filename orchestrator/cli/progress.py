"""Progress bars for builds and attempts, and one experiment run with them (`run_one`),
its table printed after: what run, gate and compare show while an experiment runs."""

from __future__ import annotations

import signal
import time

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from orchestrator import host
from orchestrator.cli.common import cannot_write, err, fail, interrupt, interrupted, out
from orchestrator.errors import CsorchError
from orchestrator.model import Attempt, Build, Experiment
from orchestrator.model.job import Job
from orchestrator.report import table
from orchestrator.run import journal, pipeline
from orchestrator.run.options import Options


class _Progress(pipeline.Events):
    """Rich progress bars for builds and attempts (called from worker threads)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.builds = progress.add_task("building", total=0)
        self.runs = progress.add_task("running", total=0)
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
        self.progress.update(self.builds, description=f"building {variant}")

    def build_finished(self, build: Build) -> None:
        state = "cached" if build.cached else "built" if build.ok else "[red]FAILED[/]"
        self.progress.console.print(f"  {build.variant}: {build.kind.value} {state}")
        self.progress.advance(self.builds)

    def attempt_started(self, job: Job) -> None:
        if self.phases:  # a cluster's queue: the counts say more than one name
            return
        self.progress.update(self.runs, description=f"running {job.variant}/{job.run}/{job.case}")

    def attempt_finished(self, attempt: Attempt) -> None:
        self.progress.advance(self.runs)

    def attempt_placed(self, job: Job, phase: str, node: str) -> None:
        self.phases[job] = phase
        counts = {p: list(self.phases.values()).count(p) for p in ("queued", "running", "done")}
        self.progress.update(
            self.runs,
            description=f"slurm: {counts['queued']} queued, {counts['running']} running, "
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
    previous = signal.signal(signal.SIGTERM, interrupt)
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
        signal.signal(signal.SIGTERM, previous)
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
