"""`csorch run`: one experiment end to end, with progress bars, then its table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator import bundle, report
from orchestrator.cli.common import (
    DEFAULT_CACHE,
    VERDICT_EXIT,
    Backend,
    CacheDir,
    ExecutorOpt,
    Jobs,
    Repeat,
    SlurmOpt,
    app,
    fail,
    out,
    step_summary,
)
from orchestrator.cli.progress import run_one
from orchestrator.config.experiment import load_experiment, only_cases
from orchestrator.errors import CsorchError
from orchestrator.executors.choice import check_local_only, executor_for
from orchestrator.judge import proposal
from orchestrator.model.job import Fanout
from orchestrator.run import journal, options, places


@app.command("run")
def run_command(
    config: Annotated[
        Path | None, typer.Argument(help="the experiment config (YAML; with --resume: optional)")
    ] = None,
    backend: Backend = "auto",
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="the results bundle (default: results/<experiment>-<time>)"),
    ] = None,
    repeat: Repeat = None,
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
    jobs: Jobs = None,
    cache_dir: CacheDir = DEFAULT_CACHE,
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
            if cache_dir == DEFAULT_CACHE and saved.get("cache"):
                cache_dir = Path(str(saved["cache"]))
            if out_dir is not None and places.resolved(out_dir) != places.resolved(resume):
                raise CsorchError(
                    f"--out {out_dir} with --resume {resume}: a resume continues the run in "
                    "its own directory",
                    hint=f"drop --out: {journal.resume_command('run', resume)}",
                )
            out_dir = resume
        elif config is None:
            raise CsorchError("give CONFIG (or --resume OUT)", hint="csorch run CONFIG [--out DIR]")
        options.check_backend(backend)
        if resume is None and out_dir is not None:
            try:
                options.check_out(out_dir)
            except CsorchError as exc:
                if (out_dir / journal.JOURNAL).is_file():
                    exc.hint += f", or continue that run: {journal.resume_command('run', out_dir)}"
                raise
        places.check_directory(cache_dir, "--cache-dir")
        experiment = only_cases(load_experiment(config), case or [])
        if out_dir is not None:
            places.check_out(
                out_dir,
                sources=places.sources([experiment]),
                cache=cache_dir,
                resuming=resume is not None,
            )
        options.check_repeat(experiment, repeat)
        runner = executor_for(experiment, executor, slurm)
        check_local_only(runner, devices)
        choice, facts = options.choose_backend(backend, options.interpreter_of([experiment]))
        device_list = (
            options.resolve_devices(devices, choice.backend, facts.fast) if runner is None else ()
        )
    except CsorchError as exc:  # a bad config or --devices, or a checker that is missing
        raise fail(exc) from None
    out.print(f"backend: [bold]{choice.backend}[/] ({choice.reason})", highlight=False)
    opts = options.make(
        choice,
        out_dir or options.default_out(experiment.name),
        cache=cache_dir,
        jobs=jobs,
        devices=device_list,
        fanout=fanout,
        repeat=repeat,
        keep_work=keep_work,
        executor=runner,
        resume=resume is not None,
        selected=tuple(case or ()),
    )
    result = run_one(experiment, opts, facts)
    found = proposal.propose(result.experiment, result.attempts)
    if found:  # the config has no target: what every control showed and the fix did not
        out.print(
            f"proposed target (every control shows it, {experiment.expect.fix} does not; "  # type: ignore[union-attr]
            f"paste under expect: in {experiment.config}):",
            highlight=False,
            soft_wrap=True,
        )
        out.print(proposal.target_block(found).rstrip(), highlight=False, markup=False)
    step_summary(report.render("markdown", *bundle.read(result.bundle)), result.bundle)
    raise typer.Exit(VERDICT_EXIT[result.judgement.verdict])
