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

from orchestrator import cache, host, workflow
from orchestrator.cli import (
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
)
from orchestrator.config import load_experiment, only_cases
from orchestrator.errors import CsorchError
from orchestrator.model import Attempt, Build, Experiment
from orchestrator.plan import Fanout, Job, parse_devices
from orchestrator.report import table


class _Progress(workflow.Events):
    """Rich progress bars for builds and attempts (called from worker threads)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.builds = progress.add_task("building", total=0)
        self.runs = progress.add_task("running", total=0)

    def planned(self, variants: list[str], jobs: int) -> None:
        self.progress.update(self.builds, total=len(variants))
        self.progress.update(self.runs, total=jobs)

    def build_started(self, variant: str) -> None:
        self.progress.update(self.builds, description=f"building {variant}")

    def build_finished(self, build: Build) -> None:
        state = "cached" if build.cached else "built" if build.ok else "[red]FAILED[/]"
        self.progress.console.print(f"  {build.variant}: {build.kind.value} {state}")
        self.progress.advance(self.builds)

    def attempt_started(self, job: Job) -> None:
        self.progress.update(self.runs, description=f"running {job.variant}/{job.run}/{job.case}")

    def attempt_finished(self, attempt: Attempt) -> None:
        self.progress.advance(self.runs)


def default_out(name: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = Path("results") / f"{name}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = Path("results") / f"{name}-{stamp}-{n}"
    return path


def run_one(
    experiment: Experiment, options: workflow.Options, facts: host.Host
) -> workflow.RunResult:
    """Run one experiment with progress bars, then print its table. Ctrl-C or SIGTERM
    leave the bundle marked incomplete and exit INCONCLUSIVE."""
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
            result = workflow.run_experiment(experiment, options, facts, _Progress(progress))
    except KeyboardInterrupt:
        err.print(
            f"interrupted: the bundle in {options.out} is marked incomplete",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(ExitCode.INCONCLUSIVE) from None
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
    config: Annotated[Path, typer.Argument(help="the experiment config (YAML)")],
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
        typer.Option(help="GPUs to fan out over, e.g. 0,1 (CUDA_VISIBLE_DEVICES per child)"),
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
) -> None:
    """Build every variant, run its cases under the checker, and judge causality."""
    try:
        # `--devices ''` is a mistake to report, not the same as no --devices
        device_list = parse_devices(devices) if devices is not None else ()
    except ValueError as exc:
        raise fail(CsorchError(f"--devices: {exc}")) from None
    try:
        check_backend(backend)
        if out_dir is not None:
            check_out(out_dir)
        experiment = only_cases(load_experiment(config), case or [])
        choice, facts = choose_backend(backend)
    except CsorchError as exc:  # a bad config, or a checker asked for but missing
        raise fail(exc) from None
    if device_list and choice.backend == "asan":
        raise fail(
            CsorchError(
                "--devices fans out over GPUs; the ASan backend runs on the CPU",
                hint="drop --devices, or use --backend compute-sanitizer",
            )
        )
    out.print(f"backend: [bold]{choice.backend}[/] ({choice.reason})", highlight=False)
    options = workflow.Options(
        backend=choice.backend,
        reason=choice.reason,
        out=out_dir or default_out(experiment.name),
        cache=cache_dir,
        jobs=jobs or min(os.cpu_count() or 1, 8),
        devices=device_list,
        fanout=fanout,
        repeat=repeat,
        keep_work=keep_work,
    )
    result = run_one(experiment, options, facts)
    raise typer.Exit(VERDICT_EXIT[result.judgement.verdict])
