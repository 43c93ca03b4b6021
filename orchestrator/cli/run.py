"""`csorch run`: one experiment end to end, with progress bars, then its table."""

from __future__ import annotations

import os
import signal
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from orchestrator import cache, host
from orchestrator.cli.common import (
    VERDICT_EXIT,
    ExitCode,
    app,
    check_backend,
    check_out,
    choose_backend,
    err,
    fail,
    interrupt,
    out,
    resolve_devices,
)
from orchestrator.cli.slurm import ExecutorOpt, SlurmOpt, check_local_only, executor_for
from orchestrator.config.experiment import load_experiment, only_cases
from orchestrator.errors import CsorchError
from orchestrator.model import Attempt, Build, Experiment
from orchestrator.model.job import Fanout, Job
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


def default_out(name: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = Path("results") / f"{name}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = Path("results") / f"{name}-{stamp}-{n}"
    return path


def interrupted(command: str) -> typer.Exit:
    """What every long verb (run, gate, bisect) says on Ctrl-C or SIGTERM."""
    err.print(f"interrupted; resume with: {command}", highlight=False, soft_wrap=True)
    return typer.Exit(ExitCode.INCONCLUSIVE)


def cannot_write(exc: OSError, command: str, out_dir: Path) -> typer.Exit:
    """The bundle or the journal could not be written: what is journaled is kept, the
    verdict is INCONCLUSIVE, and the same command continues once the cause is fixed."""
    where = f" {exc.filename}" if exc.filename else f" in {out_dir}"
    err.print(
        f"[bold red]error:[/] cannot write{where}: {exc.strerror or exc}; the run is "
        f"inconclusive; once fixed, resume with: {command}",
        highlight=False,
        soft_wrap=True,
    )
    return typer.Exit(ExitCode.INCONCLUSIVE)


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


@app.command("run")
def run_command(
    config: Annotated[
        Path | None, typer.Argument(help="the experiment config (YAML; with --resume: optional)")
    ] = None,
    backend: Annotated[
        str,
        typer.Option(
            help="auto | compute-sanitizer | asan (auto: compute-sanitizer where a GPU and "
            "the tool exist, else ASan)"
        ),
    ] = "auto",
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="the results bundle (default: results/<experiment>-<time>)"),
    ] = None,
    repeat: Annotated[int | None, typer.Option(min=1, help="N for every run")] = None,
    devices: Annotated[
        str | None,
        typer.Option(
            help="GPUs to fan out over, e.g. 0,1 (CUDA_VISIBLE_DEVICES per child), or all"
        ),
    ] = None,
    fanout: Annotated[
        Fanout,
        typer.Option(
            help="shard: split the attempts over the devices; replicate: run every attempt "
            "on every device"
        ),
    ] = Fanout.SHARD,
    jobs: Annotated[
        int | None,
        typer.Option(min=1, help="child processes at once (default: CPU count, up to 8)"),
    ] = None,
    cache_dir: Annotated[Path, typer.Option(help="the build cache")] = cache.DEFAULT_DIR,
    keep_work: Annotated[bool, typer.Option(help="keep the scratch trees")] = False,
    case: Annotated[
        list[str] | None, typer.Option("--case", help="run only this config case (repeatable)")
    ] = None,
    executor: ExecutorOpt = None,
    slurm: SlurmOpt = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="continue the run kept in this --out directory (killed or interrupted)"),
    ] = None,
) -> None:
    """Build every variant, run its cases under the checker, and judge causality."""
    try:
        if resume is not None:
            saved = journal.Journal.read(resume).settings
            # the run as it began, unless given again (a difference is refused later)
            config = config or Path(str(saved.get("config", "")))
            backend = saved.get("backend", backend) if backend == "auto" else backend
            case = case or list(saved.get("cases", []))
            repeat = repeat or saved.get("repeat")
            devices = devices or ",".join(saved.get("devices", [])) or None
            fanout = Fanout(saved.get("fanout", fanout.value))
            jobs = jobs or saved.get("jobs")
            if cache_dir == cache.DEFAULT_DIR and saved.get("cache"):
                cache_dir = Path(str(saved["cache"]))
            out_dir = resume
        elif config is None:
            raise CsorchError("give CONFIG (or --resume OUT)", hint="csorch run CONFIG [--out DIR]")
        check_backend(backend)
        if resume is None and out_dir is not None:
            try:
                check_out(out_dir)
            except CsorchError as exc:
                if (out_dir / journal.JOURNAL).is_file():
                    exc.hint += f", or continue that run: {journal.resume_command('run', out_dir)}"
                raise
        experiment = only_cases(load_experiment(config), case or [])
        runner = executor_for(experiment, executor, slurm)
        check_local_only(runner, devices)
        choice, facts = choose_backend(backend)
        device_list = resolve_devices(devices, choice.backend, facts.fast) if runner is None else ()
    except CsorchError as exc:  # a bad config or --devices, or a checker that is missing
        raise fail(exc) from None
    out.print(f"backend: [bold]{choice.backend}[/] ({choice.reason})", highlight=False)
    options = Options(
        backend=choice.backend,
        reason=choice.reason,
        out=out_dir or default_out(experiment.name),
        cache=cache_dir,
        jobs=jobs or min(os.cpu_count() or 1, 8),
        devices=device_list,
        fanout=fanout,
        repeat=repeat,
        keep_work=keep_work,
        executor=runner,
        resume=resume is not None,
        selected=tuple(case or ()),
    )
    result = run_one(experiment, options, facts)
    raise typer.Exit(VERDICT_EXIT[result.judgement.verdict])
